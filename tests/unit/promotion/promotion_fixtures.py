"""Row builders for the promotion tests (the reference's default ``record()``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from wfbench.domain.results.aggregation import AggregateTable, aggregate
from wfbench.domain.results.rows import ErrorKind, Row

MODEL = "pinned-model"


def record(task: str, arm: str, run: int, **fields: Any) -> Row:
    """The reference's default record: resolved, cost 0.5, output_tokens 400, 10 turns, 60 s."""
    values: dict[str, Any] = {
        "ok": True,
        "resolved": True,
        "cost_usd": 0.5,
        "output_tokens": 400,
        "num_turns": 10,
        "duration_s": 60.0,
        "task_class": "bugfix",
    }
    values.update(fields)
    kind = values.pop("error_kind", None)
    review = values.pop("review", {})
    return Row(
        task=task,
        arm=arm,
        run=run,
        error_kind=None if kind is None else ErrorKind(kind),
        review=review,
        **values,
    )


def runs(task: str, arm: str, specs: Sequence[dict[str, Any]], start: int = 0) -> list[Row]:
    """One row per spec, numbered from ``start``."""
    return [record(task, arm, start + index, **spec) for index, spec in enumerate(specs)]


def same(count: int, **fields: Any) -> list[dict[str, Any]]:
    """``count`` identical specs ("3×" in the reference's tables)."""
    return [dict(fields) for _ in range(count)]


def resolved_of(count: int, total: int, **fields: Any) -> list[dict[str, Any]]:
    """``total`` specs of which the first ``count`` resolved (unresolved ones are oracle-failed)."""
    return [
        dict(fields, resolved=index < count, **({} if index < count else {"error_kind": "oracle-failed"}))
        for index in range(total)
    ]


def table(*groups: Iterable[Row]) -> AggregateTable:
    """Aggregate every group of rows into one table."""
    return aggregate([row for group in groups for row in group])


def review_row(task: str, arm: str, run: int, **metrics: Any) -> Row:
    """A review-arm row; ``metrics`` are review metric names without the ``review_`` prefix."""
    defaults: dict[str, Any] = {
        "weighted_f1": 0.6,
        "blocker_recall": 1.0,
        "false_positives": 0,
        "verdict_correct": True,
        "clean_control": False,
        "clean_pass": False,
    }
    defaults.update(metrics)
    kind = defaults.pop("error_kind", None)
    review = {f"review_{name}": value for name, value in defaults.items()}
    return record(task, arm, run, review=review, review_evidence_valid=True, error_kind=kind, resolved=False)


def review_runs(task: str, arm: str, count: int = 3, **metrics: Any) -> list[Row]:
    """``count`` identical review rows."""
    return [review_row(task, arm, run, **metrics) for run in range(count)]
