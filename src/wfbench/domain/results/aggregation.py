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

Streaming: :class:`TableBuilder` takes rows one at a time (``add``) and keeps only what the
aggregates need — per (task, arm) the counters, a health tally and the median fields' values
packed as doubles (8 bytes each; a value a double cannot hold exactly switches that group to
plain Python values, so results never change) — never the rows. :func:`aggregate` and
:meth:`Aggregate.from_rows` are that builder over an iterable: one code path, one pass.
"""

from __future__ import annotations

import math
import operator
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import attrs

from wfbench.domain.results.columns import Columns
from wfbench.domain.results.health import HealthTally
from wfbench.domain.results.rows import CHURN_FIELDS, USAGE_FIELDS, ErrorKind, ReviewValue, Row

__all__ = [
    "MEDIAN_FIELDS",
    "REVIEW_FLAG_METRICS",
    "REVIEW_NUMERIC_METRICS",
    "SAVINGS_FIELDS",
    "Aggregate",
    "AggregateTable",
    "GroupTally",
    "Savings",
    "TableBuilder",
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

#: Every review metric: what a scored row carrying none of them leaves unknown.
_REVIEW_METRICS = frozenset((*REVIEW_NUMERIC_METRICS, *REVIEW_FLAG_METRICS))

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


def _same(values: list[Any]) -> list[Any]:
    return values


def _float_median(values: list[Any]) -> float:
    """``float(_median(values))``, with the one- and two-value groups (most of a wide gate's) inline."""
    count = len(values)
    if count == 1:
        return float(values[0])
    if count == 2:  # ``+`` commutes exactly, so the order sorted() would give does not matter
        return float((values[0] + values[1]) / 2)
    return float(_median(values))


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
        group = GroupTally()
        for row in rows:
            group.add(row)
        return group.build(task, arm)

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


#: The fields a group packs per valid row: the medians, then ``cost_usd``.
_PACKED_FIELDS = (*MEDIAN_FIELDS, "cost_usd")
_COST = len(MEDIAN_FIELDS)
_packed_values = operator.attrgetter(*_PACKED_FIELDS)


class GroupTally:
    """The rows of one (task, arm), accumulated one at a time: what :class:`Aggregate` needs.

    Counters, the smallest task class, a health tally, and per valid row the median fields
    (:class:`~wfbench.domain.results.columns.Columns`), its run number, whether it resolved and
    was scored, and its weighted F1 (what the paired statistics read, :meth:`admissible`); per
    scored row of a review arm the numeric review metrics, which boolean metrics some scored row
    did not give as a boolean and which it gave false. Rows themselves are not kept.
    """

    __slots__ = (
        "_false",
        "_medians",
        "_review",
        "_run_flags",
        "_run_numbers",
        "_unknown",
        "_weighted_f1",
        "has_review",
        "health",
        "kinds",
        "resolved",
        "resolved_fresh",
        "resolved_valid",
        "runs",
        "scored",
        "task_class",
        "transcripts_missing",
        "valid",
    )

    def __init__(self) -> None:
        self.runs = self.valid = self.scored = 0
        self.resolved = self.resolved_fresh = self.resolved_valid = self.transcripts_missing = 0
        self.kinds: Counter[ErrorKind] = Counter()
        self.task_class: str | None = None
        self.health = HealthTally()
        self.has_review = False
        self._medians = Columns(len(_PACKED_FIELDS))
        self._review: Columns | None = None
        #: Review metrics unknown over the scored rows: a boolean one some row did not give as a
        #: boolean, and every one once a scored row carries no review metric at all. (A numeric
        #: metric a row left out is marked unknown by its column.)
        self._unknown: frozenset[str] = frozenset()
        #: Boolean review metrics some scored row gave as false.
        self._false: frozenset[str] = frozenset()
        #: Per valid row: its run number; resolved (bit 0) and scored (bit 1); its weighted F1.
        self._run_numbers: list[int] = []
        self._run_flags = bytearray()
        self._weighted_f1: array[float] | None = None

    def add(self, row: Row) -> None:
        """Count ``row`` (of this group's task and arm)."""
        self.runs += 1
        if row.error_kind is not None:
            self.kinds[row.error_kind] += 1
        if row.task_class is not None and (self.task_class is None or row.task_class < self.task_class):
            self.task_class = row.task_class
        if row.resolved:
            self.resolved += 1
            self.resolved_fresh += not row.reused
        self.transcripts_missing += row.transcript_missing
        self.health.add(row)
        if row.excluded:
            return
        self.valid += 1
        self.resolved_valid += row.resolved
        self._medians.append(_packed_values(row))
        review = row.review
        self.has_review = self.has_review or "review_weighted_f1" in review
        scored = row.error_kind is not ErrorKind.SKILL_NOT_INVOKED
        self._note_run(row, scored)
        if not scored:
            return
        self.scored += 1
        if not review:
            self._unknown = _REVIEW_METRICS
            return
        if self._review is None:
            self._review = Columns(len(REVIEW_NUMERIC_METRICS))
        self._review.append([review.get(name) for name in REVIEW_NUMERIC_METRICS])
        for name in REVIEW_FLAG_METRICS:
            value = review.get(name)
            if value is False:
                self._false |= {name}
            elif value is not True:
                self._unknown |= {name}

    def _note_run(self, row: Row, scored: bool) -> None:
        self._run_numbers.append(row.run)
        self._run_flags.append(bool(row.resolved) | (scored << 1))
        value = row.review.get("review_weighted_f1")
        if self._weighted_f1 is None and value is not None:
            self._weighted_f1 = array("d", [math.nan] * (len(self._run_numbers) - 1))
        if self._weighted_f1 is not None:
            self._weighted_f1.append(_finite_or_nan(value))

    def admissible(self, field: str) -> list[tuple[int, bool, bool, Any]]:
        """``(run, resolved, scored, value)`` of every valid row, in the order added.

        ``field`` is one of :data:`MEDIAN_FIELDS`, ``cost_usd`` or ``review_weighted_f1``; the
        value is what the row carried (``None`` when nothing, or not a finite number for the F1).
        """
        if field == "review_weighted_f1":
            f1 = self._weighted_f1
            values: list[Any] = (
                [None] * len(self._run_numbers)
                if f1 is None
                else [None if math.isnan(value) else value for value in f1]
            )
        else:
            values = self._medians.entries(_PACKED_FIELDS.index(field))
        flags = self._run_flags
        return [
            (run, bool(flag & 1), bool(flag & 2), value)
            for run, flag, value in zip(self._run_numbers, flags, values, strict=True)
        ]

    def costs(self) -> list[Any] | None:
        """``cost_usd`` of every valid row; ``None`` when any is unknown."""
        return self._medians.values(_COST)

    def _median(self, index: int) -> float | None:
        values = self._medians.values(index)
        return None if not values else float(_median(values))

    def _all_medians(self) -> list[float | None]:
        """``_median(i)`` of every packed field, from one copy of the records."""
        return self._medians.reduced(_float_median)

    def _review_metrics(self) -> Mapping[str, ReviewValue]:
        """Review metrics over scored rows; empty unless some valid row carries a weighted F1."""
        if not self.has_review:
            return {}
        columns, unknown = self._review, self._unknown
        out: dict[str, ReviewValue] = {}
        every = [None] * len(REVIEW_NUMERIC_METRICS) if columns is None else columns.reduced(_same)
        for name, column in zip(REVIEW_NUMERIC_METRICS, every, strict=True):
            values = None if name in unknown else column
            out[name] = None if not values else float((min if name in _MIN_REDUCED else _median)(values))
        for name in REVIEW_FLAG_METRICS:
            out[name] = None if not self.scored or name in unknown else name not in self._false
        return out

    def build(self, task: str, arm: str) -> Aggregate:
        """The aggregate of the rows added so far."""
        health = self.health.counters()
        packed = self._all_medians()
        medians = dict(zip(MEDIAN_FIELDS, packed, strict=False))
        return Aggregate(
            task=task,
            arm=arm,
            task_class=self.task_class,
            runs=self.runs,
            valid_runs=self.valid,
            excluded_runs=self.runs - self.valid,
            scored_runs=self.scored,
            resolved=self.resolved,
            resolved_fresh=self.resolved_fresh,
            transcripts_missing=self.transcripts_missing,
            error_kinds=dict(sorted(self.kinds.items())),
            cost_usd=packed[_COST],
            fresh_attempts=health.fresh_attempts,
            admissible=health.admissible,
            execution_failures=health.execution_failures,
            evidence_failures=health.evidence_failures,
            health_reasons=health.reasons,
            review=self._review_metrics(),
            **medians,
        )


class TableBuilder:
    """Rows in, one at a time, grouped once by (task, arm); :meth:`build` is the table."""

    __slots__ = ("_groups",)

    def __init__(self) -> None:
        self._groups: dict[tuple[str, str], GroupTally] = {}

    def add(self, row: Row) -> None:
        """Count ``row`` in its (task, arm) group."""
        key = (row.task, row.arm)
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = GroupTally()
        group.add(row)

    @property
    def groups(self) -> Mapping[tuple[str, str], GroupTally]:
        """The groups so far, in the order their first row arrived."""
        return self._groups

    def build(self) -> AggregateTable:
        """Every group's aggregate, keyed in sorted (task, arm) order."""
        groups = self._groups
        return AggregateTable({key: groups[key].build(*key) for key in sorted(groups)})


def _finite_or_nan(value: Any) -> float:
    """``float(value)`` for a finite number (not a boolean); NaN (read back as ``None``) otherwise."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
        if math.isfinite(number):
            return number
    return math.nan


def aggregate(rows: Iterable[Row]) -> AggregateTable:
    """Group ``rows`` by (task, arm) and aggregate each group; the result ignores row order."""
    builder = TableBuilder()
    for row in rows:
        builder.add(row)
    return builder.build()


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
