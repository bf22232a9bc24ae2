"""Tests of sweep (unit/app)."""
