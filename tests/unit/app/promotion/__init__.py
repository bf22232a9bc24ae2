"""Tests of promotion (unit/app)."""
