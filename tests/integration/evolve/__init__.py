"""Tests of evolve (integration)."""
