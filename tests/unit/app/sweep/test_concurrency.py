"""The concurrency limit's history as a record, a file beside the results, and report lines."""

from __future__ import annotations

from wfbench.app.sweep import concurrency
from wfbench.app.sweep.scheduler import LimitEvent
from wfbench.domain.sweep.pacing import LimitChanged
from wfbench.domain.sweep.scheduling import Cell

EVENT = LimitEvent(at=12.34567, change=LimitChanged(8, 4, "throttled", 3, 529), cell=Cell("t1", "review", 2))


def test_a_limit_change_is_recorded_with_its_cell_time_and_status() -> None:
    assert concurrency.limit_record(EVENT) == {
        "at_s": 12.346,
        "old": 8,
        "new": 4,
        "reason": "throttled",
        "status": 529,
        "task": "t1",
        "arm": "review",
        "run": 2,
    }


def test_report_lines_summarize_then_list_each_change() -> None:
    document = {"workers": 8, "retries": 3, "limit_history": [concurrency.limit_record(EVENT)]}

    assert concurrency.report_lines(document) == (
        "3 throttled attempt(s) ran again; the limit on concurrent cells (at most 8) changed 1 time(s).",
        "12.346 s: 8 → 4 (throttled 529, t1/review/run 2)",
    )
    assert concurrency.report_lines(None) == ()
