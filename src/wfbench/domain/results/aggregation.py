"""Aggregation of result rows per (task, arm), and savings of an arm against a baseline.

Which rows count (``docs/concepts.md``, "Which rows count"):

- **excluded** rows (``Row.excluded``: an excluded error kind, or ``review_evidence_valid``
  false) count in ``runs``, ``excluded_runs`` and ``error_kinds`` only;
- every other row is **valid**: it spent real tokens, so efficiency medians (usage, cost,
  duration, turns, churn) are taken over valid rows;
- **scored** rows are the valid rows whose ``error_kind`` is not ``skill-not-invoked``.

Where wfbench deliberately differs from the reference (``docs/domain.md`` §10, and
"unknown is not zero"):

1. Quality medians (every ``review_*`` metric) are taken over *scored* rows only, and the
   aggregate exposes ``scored_runs``. The reference keeps skill-not-invoked rows in its
   quality medians (its pinned "known gap": F1 1.0 + an uninvoked 0.0 gives 0.5); it measured
   that dropping them while ``valid_runs`` still counts them can flip ``keep_incumbent`` to
   ``promote``. The gate therefore checks ``scored_runs`` for paired equality, so fewer
   scored runs can never make a candidate look better.
2. A median over zero rows, or over rows of which any is unknown (``None``), is ``None``. The
   reference reports 0 for a median over zero valid rows and assumes usage is always present;
   an unmeasured value must never read as a measured zero.
3. ``review_verdict_correct``, ``review_clean_control`` and ``review_clean_pass`` over zero
   scored rows are ``None`` (the reference's ``all()`` of nothing would be true).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import attrs

from wfbench.domain.results.health import count_health
from wfbench.domain.results.rows import CHURN_FIELDS, USAGE_FIELDS, ErrorKind, ReviewValue, Row

__all__ = [
    "MEDIAN_FIELDS",
    "REVIEW_FLAG_METRICS",
    "REVIEW_NUMERIC_METRICS",
    "SAVINGS_FIELDS",
    "Aggregate",
    "AggregateTable",
    "Savings",
    "aggregate",
    "is_scored",
    "saving_pct",
    "savings",
]

#: Row fields whose aggregate is the median over valid rows.
MEDIAN_FIELDS = (*USAGE_FIELDS, "duration_s", "num_turns", *CHURN_FIELDS)

#: Numeric review metrics: median over scored rows (``review_blocker_recall``: the minimum).
REVIEW_NUMERIC_METRICS = tuple(
    f"review_{name}"
    for name in (
        "true_positives",
        "false_positives",
        "false_negatives",
        "precision",
        "recall",
        "f1",
        "weighted_precision",
        "weighted_recall",
        "weighted_f1",
        "blocker_recall",
        "severity_accuracy",
        "category_accuracy",
        "grounded_evidence",
    )
)

#: Boolean review metrics: true only when true on every scored row.
REVIEW_FLAG_METRICS = ("review_verdict_correct", "review_clean_control", "review_clean_pass")

_MIN_REDUCED = frozenset({"review_blocker_recall"})

#: The metrics :func:`savings` compares.
SAVINGS_FIELDS = (*USAGE_FIELDS, "cost_usd", "duration_s", "num_turns")


def is_scored(row: Row) -> bool:
    """True when the row counts in quality medians: valid, and the skill under test was invoked."""
    return not row.excluded and row.error_kind is not ErrorKind.SKILL_NOT_INVOKED


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def _is_number_type(kind: type) -> bool:
    return issubclass(kind, int | float) and not issubclass(kind, bool)


def _reduce(values: Sequence[Any], reducer: Callable[[Sequence[float]], float]) -> float | None:
    """``reducer`` over ``values``; ``None`` when there are none or any is not a number."""
    # Each distinct type is checked once (not each value): the hot loop of aggregate().
    if not values or not all(_is_number_type(kind) for kind in set(map(type, values))):
        return None
    return float(reducer(values))


def _all_true(values: Sequence[Any]) -> bool | None:
    """True when every value is true; ``None`` when there are none or any is not a boolean."""
    if not values or not all(isinstance(value, bool) for value in values):
        return None
    return all(values)


def _review_metrics(valid: Sequence[Row], scored: Sequence[Row]) -> Mapping[str, ReviewValue]:
    """Review metrics over scored rows; empty unless some valid row carries a weighted F1."""
    if not any("review_weighted_f1" in row.review for row in valid):
        return {}
    out: dict[str, ReviewValue] = {}
    for name in REVIEW_NUMERIC_METRICS:
        values = [row.review.get(name) for row in scored]
        out[name] = _reduce(values, min if name in _MIN_REDUCED else _median)
    for name in REVIEW_FLAG_METRICS:
        out[name] = _all_true([row.review.get(name) for row in scored])
    return out


@attrs.frozen
class Aggregate:
    """Every run of one task under one arm, summarised. Build it with :meth:`from_rows`.

    Medians are ``float | None``: ``None`` when there is no valid row or any valid row's value
    is unknown. ``review`` holds the ``review_*`` metrics (empty for non-review arms).
    """

    task: str
    arm: str
    task_class: str | None
    runs: int
    valid_runs: int
    excluded_runs: int
    #: Valid rows that are not skill-not-invoked: the denominator of quality medians.
    scored_runs: int
    #: Rows with ``resolved`` true, over all rows.
    resolved: int
    resolved_fresh: int
    transcripts_missing: int
    error_kinds: Mapping[ErrorKind, int]
    input_tokens: float | None
    cache_creation_input_tokens: float | None
    cache_read_input_tokens: float | None
    output_tokens: float | None
    cost_usd: float | None
    duration_s: float | None
    num_turns: float | None
    diff_files: float | None
    diff_insertions: float | None
    diff_deletions: float | None
    fresh_attempts: int
    admissible: int
    execution_failures: int
    evidence_failures: int
    health_reasons: tuple[str, ...]
    review: Mapping[str, ReviewValue] = attrs.field(factory=dict)

    @classmethod
    def from_rows(cls, task: str, arm: str, rows: Iterable[Row]) -> Aggregate:
        """Aggregate ``rows`` (all of one task and arm; the caller groups them)."""
        every = tuple(rows)
        valid = [row for row in every if not row.excluded]
        scored = [row for row in valid if is_scored(row)]
        medians = {name: _reduce([getattr(row, name) for row in valid], _median) for name in MEDIAN_FIELDS}
        kinds = Counter(row.error_kind for row in every if row.error_kind is not None)
        health = count_health(every)
        classes = sorted({row.task_class for row in every if row.task_class is not None})
        return cls(
            task=task,
            arm=arm,
            task_class=classes[0] if classes else None,
            runs=len(every),
            valid_runs=len(valid),
            excluded_runs=len(every) - len(valid),
            scored_runs=len(scored),
            resolved=sum(1 for row in every if row.resolved),
            resolved_fresh=sum(1 for row in every if row.resolved and not row.reused),
            transcripts_missing=sum(1 for row in every if row.transcript_missing),
            error_kinds=dict(sorted(kinds.items())),
            cost_usd=_reduce([row.cost_usd for row in valid], _median),
            fresh_attempts=health.fresh_attempts,
            admissible=health.admissible,
            execution_failures=health.execution_failures,
            evidence_failures=health.evidence_failures,
            health_reasons=health.reasons,
            review=_review_metrics(valid, scored),
            **medians,
        )

    def value(self, name: str) -> float | bool | None:
        """A metric by its row field name: a median, ``cost_usd`` or a ``review_*`` metric."""
        if name.startswith("review_"):
            return self.review.get(name)
        if name in (*MEDIAN_FIELDS, "cost_usd"):
            result: float | None = getattr(self, name)
            return result
        raise KeyError(name)

    def to_mapping(self) -> dict[str, Any]:
        """The aggregate with the reference's field names (``class``, ``error_kinds`` as strings)."""
        out: dict[str, Any] = {
            "task": self.task,
            "arm": self.arm,
            "class": self.task_class,
            "runs": self.runs,
            "valid_runs": self.valid_runs,
            "excluded_runs": self.excluded_runs,
            "scored_runs": self.scored_runs,
            "resolved": self.resolved,
            "resolved_fresh": self.resolved_fresh,
            "transcripts_missing": self.transcripts_missing,
            "error_kinds": {kind.value: count for kind, count in self.error_kinds.items()},
        }
        for name in (*USAGE_FIELDS, "cost_usd", "duration_s", "num_turns", *CHURN_FIELDS):
            out[name] = getattr(self, name)
        out |= {
            "fresh_attempts": self.fresh_attempts,
            "admissible": self.admissible,
            "execution_failures": self.execution_failures,
            "evidence_failures": self.evidence_failures,
            "health_reasons": list(self.health_reasons),
        }
        out.update(self.review)
        return out


@attrs.frozen
class AggregateTable:
    """Aggregates keyed by ``(task, arm)``, in sorted key order. Read-only."""

    by_cell: Mapping[tuple[str, str], Aggregate] = attrs.field(factory=dict)

    def __getitem__(self, key: tuple[str, str]) -> Aggregate:
        return self.by_cell[key]

    def __contains__(self, key: object) -> bool:
        return key in self.by_cell

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self.by_cell)

    def __len__(self) -> int:
        return len(self.by_cell)

    def items(self) -> Iterable[tuple[tuple[str, str], Aggregate]]:
        """``((task, arm), aggregate)`` pairs in sorted order."""
        return self.by_cell.items()

    def get(self, task: str, arm: str) -> Aggregate | None:
        """The aggregate of ``arm`` on ``task``, or ``None`` when that arm has no rows there."""
        return self.by_cell.get((task, arm))

    def tasks(self) -> tuple[str, ...]:
        """Every task with at least one row, sorted."""
        return tuple(sorted({task for task, _ in self.by_cell}))

    def arms(self) -> tuple[str, ...]:
        """Every arm with at least one row, sorted."""
        return tuple(sorted({arm for _, arm in self.by_cell}))

    def for_task(self, task: str) -> Mapping[str, Aggregate]:
        """``{arm: aggregate}`` for one task (the shape the reference's gate reads)."""
        return {arm: agg for (each, arm), agg in self.by_cell.items() if each == task}


def aggregate(rows: Iterable[Row]) -> AggregateTable:
    """Group ``rows`` by (task, arm) and aggregate each group; the result ignores row order."""
    groups: defaultdict[tuple[str, str], list[Row]] = defaultdict(list)
    for row in rows:
        groups[(row.task, row.arm)].append(row)
    return AggregateTable({key: Aggregate.from_rows(key[0], key[1], groups[key]) for key in sorted(groups)})


def saving_pct(base: float | None, arm: float | None) -> float | None:
    """``round(100·(base − arm)/base, 1)``: positive when the arm is cheaper than the baseline.

    ``None`` when either side is unknown (unknown is not zero). When the baseline is 0 the
    ratio is undefined: 0.0 if the arm is 0 too (nothing to save), else ``None``. (The
    reference report prints 0.0 for any zero baseline, hiding an arm that costs more.)
    """
    if base is None or arm is None:
        return None
    if base == 0:
        return 0.0 if arm == 0 else None
    return round(100 * (base - arm) / base, 1)


@attrs.frozen
class Savings:
    """Percent saved by ``arm`` against ``baseline`` per metric of :data:`SAVINGS_FIELDS`."""

    task: str
    arm: str
    baseline: str
    input_tokens: float | None
    cache_creation_input_tokens: float | None
    cache_read_input_tokens: float | None
    output_tokens: float | None
    cost_usd: float | None
    duration_s: float | None
    num_turns: float | None

    def get(self, name: str) -> float | None:
        """The saving for one metric of :data:`SAVINGS_FIELDS`."""
        if name not in SAVINGS_FIELDS:
            raise KeyError(name)
        result: float | None = getattr(self, name)
        return result


def savings(baseline: Aggregate, arm: Aggregate) -> Savings:
    """Savings of ``arm`` against ``baseline`` (normally the same task), per metric."""
    values = {name: saving_pct(getattr(baseline, name), getattr(arm, name)) for name in SAVINGS_FIELDS}
    return Savings(task=arm.task, arm=arm.arm, baseline=baseline.arm, **values)
