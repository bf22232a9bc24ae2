"""Tests of cell (unit/app)."""
