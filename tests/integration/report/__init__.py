"""Tests of report (integration)."""
