"""Tests of corpus (integration)."""
