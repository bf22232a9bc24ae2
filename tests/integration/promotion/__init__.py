"""Tests of promotion (integration)."""
