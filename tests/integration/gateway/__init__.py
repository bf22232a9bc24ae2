"""Tests of gateway (integration)."""
