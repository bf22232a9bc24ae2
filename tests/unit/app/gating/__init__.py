"""Tests of gating (unit/app)."""
