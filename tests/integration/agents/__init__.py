"""Tests of agents (integration)."""
