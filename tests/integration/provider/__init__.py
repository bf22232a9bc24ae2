"""Tests of provider (integration)."""
