"""Tests of gateway (unit/adapters)."""
