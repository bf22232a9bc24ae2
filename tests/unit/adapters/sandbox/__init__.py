"""Tests of sandbox (unit/adapters)."""
