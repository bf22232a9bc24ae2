"""Tests of repo (integration)."""
