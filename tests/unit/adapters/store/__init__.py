"""Tests of store (unit/adapters)."""
