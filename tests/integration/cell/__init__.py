"""Tests of cell (integration)."""
