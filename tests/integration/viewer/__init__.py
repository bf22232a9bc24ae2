"""Tests of viewer (integration)."""
