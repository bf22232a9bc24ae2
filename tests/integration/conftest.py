"""Fixtures shared by the sweep test modules: the demo sweep runs once per test session."""

from __future__ import annotations

from tests.support.demo_run import demo_corpus, demo_out

__all__ = ["demo_corpus", "demo_out"]
