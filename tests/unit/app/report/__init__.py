"""Tests of report (unit/app)."""
