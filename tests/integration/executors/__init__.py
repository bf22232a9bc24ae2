"""Tests of executors (integration)."""
