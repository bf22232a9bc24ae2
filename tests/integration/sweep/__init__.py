"""Tests of sweep (integration)."""
