"""The sweep's finish step writes through the ``SweepDirectory`` port (the in-memory fake here).

No disk: what a sweep leaves beside its rows (both reports, the evidence, the concurrency
history) is asserted on ``MemorySweepDirectory``.
"""

from __future__ import annotations

import datetime as dt
import json

from tests.unit.promotion.promotion_fixtures import review_row
from wfbench.adapters.store.memory_sweep import MemorySweepDirectory
from wfbench.app.corpus.arms import preset_arms
from wfbench.app.sweep import concurrency
from wfbench.app.sweep.finish import FinishInput, finish_sweep

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def _finish(directory: MemorySweepDirectory, *, candidate: bool) -> list[str]:
    presets = preset_arms()
    names = ["review", "candidate_review"] if candidate else ["review"]
    rows = [review_row("case-1", name, run, weighted_f1=0.7) for name in names for run in range(3)]
    notes: list[str] = []
    data = FinishInput(
        corpus=None,
        tasks=(),
        arms=[presets[name] for name in names],
        rows=rows,
        out_dir="unused",
        directory=directory,
        model="claude-sonnet-4-5",
        tripped=False,
        cancelled=False,
        now=NOW,
    )
    finish_sweep(data, note=notes.append)
    return notes


def _reports_and_evidence(writes: list[str]) -> list[str]:
    """The writes besides the static pages report.html links (tasks/, arms/, cells/…html): those only."""
    pages = [w for w in writes if w.startswith(("tasks/", "arms/", "cells/")) and w.endswith(".html")]
    assert pages, "report.html's task, arm and cell pages are written beside it"
    return [w for w in writes if w not in pages]


def test_a_sweep_with_a_candidate_writes_both_reports_and_its_evidence() -> None:
    directory = MemorySweepDirectory()

    _finish(directory, candidate=True)

    assert _reports_and_evidence(directory.writes) == ["report.md", "report.html", "promotion.json"]
    (decision,) = directory.json("promotion.json")["decisions"]
    assert decision["candidate_arm"] == "candidate_review"
    assert b"candidate_review" in directory.files["report.md"]


def test_a_sweep_without_a_candidate_writes_reports_and_no_evidence() -> None:
    directory = MemorySweepDirectory()

    _finish(directory, candidate=False)

    assert _reports_and_evidence(directory.writes) == ["report.md", "report.html"]


def test_the_concurrency_history_is_written_only_when_something_happened() -> None:
    directory = MemorySweepDirectory()

    concurrency.write_history(directory, [], workers=4, retries=0)
    assert directory.writes == []
    concurrency.write_history(directory, [], workers=4, retries=2)

    assert json.loads(directory.files[concurrency.CONCURRENCY_NAME]) == {
        "workers": 4,
        "retries": 2,
        "limit_history": [],
    }
