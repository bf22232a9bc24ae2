"""Tests of executors (unit/adapters)."""
