"""Tests of provider (unit/adapters)."""
