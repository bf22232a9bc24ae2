"""Tests of sandbox (integration)."""
