"""Tests of store (integration)."""
