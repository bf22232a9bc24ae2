"""Tests of evolve (unit/app)."""
