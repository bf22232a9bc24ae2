"""One pass over a stream of rows: everything the gate and the reports read, never the rows.

``wfbench gate`` and ``wfbench report`` used to hold every row of ``results.jsonl`` in memory
and scan them again per task; here rows arrive one at a time (from the JSONL store's line-by-line
reader, or any iterable), are grouped once by (task, arm) and counted in the same pass. Memory is
what the aggregates need: per (task, arm) the counters and the values its medians are taken over
(8 bytes per value, see :mod:`~wfbench.domain.results.columns`).

The API, for the gate, the reports and other tools:

- :func:`summarize` (``Iterable[Row] -> RowSummary``) consumes the iterable once;
  :class:`SummaryBuilder` is the same thing for a caller that feeds rows itself (``add(row)``,
  then ``build()``), e.g. to observe other fields of each row in the same pass;
- :class:`RowSummary` holds the :class:`~wfbench.domain.results.aggregation.AggregateTable`
  (sorted (task, arm) keys), the tasks and arms in the order their first row appeared (a sweep
  writes task-major, so this is sweep order), per-arm totals over every task
  (:class:`ArmSummary`: resolve counts, median cost, health counters), row counts, the rows'
  evidence diagnostics, and per (task, arm) the admissible runs' run number, resolution and
  metric values (:meth:`RowSummary.admissible_runs`: what the paired statistics read);
- :func:`as_summary` lets a function take either rows or a summary, so callers that already
  summarized (the CLI's ``report``: one pass for the gate and both reports) do not pay twice.

Everything here equals what the row-at-a-time functions give over the same rows
(``aggregate``, ``classify_sweep_health``, a per-arm median over valid rows): the golden tests
(``tests/cli/test_gate_golden.py``) and the properties in ``tests/unit/results/test_summary.py``
pin it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from wfbench.domain.results.aggregation import AggregateTable, GroupTally, TableBuilder, _median
from wfbench.domain.results.health import ArmHealth, HealthCounters, HealthTally
from wfbench.domain.results.rows import ErrorKind, Row

__all__ = ["ArmSummary", "RowSummary", "SummaryBuilder", "as_summary", "summarize"]


@attrs.frozen
class ArmSummary:
    """One arm over every task: what per-arm plots and the health section read."""

    arm: str
    runs: int
    valid_runs: int
    #: Valid rows with ``resolved`` true.
    resolved_valid: int
    #: Median ``cost_usd`` over the arm's valid rows; ``None`` without valid rows or when any is unknown.
    cost_usd: float | None
    health: HealthCounters

    @property
    def resolve_rate(self) -> float | None:
        """Percent of valid rows resolved; ``None`` without valid rows."""
        return 100.0 * self.resolved_valid / self.valid_runs if self.valid_runs else None


@attrs.frozen
class RowSummary:
    """What one pass over a sweep's rows leaves: the aggregates, the orders, per-arm totals."""

    table: AggregateTable
    #: Tasks in the order their first row appeared.
    tasks: tuple[str, ...]
    #: Arms in the order their first row appeared.
    arms: tuple[str, ...]
    by_arm: Mapping[str, ArmSummary]
    #: ``((task, arm, run), evidence_diagnostics)`` of every row that has any, in row order.
    diagnostics: tuple[tuple[tuple[str, str, int], tuple[Any, ...]], ...] = ()
    _groups: Mapping[tuple[str, str], GroupTally] = attrs.field(
        factory=dict, repr=False, eq=False, alias="groups"
    )

    def admissible_runs(self, task: str, arm: str, field: str) -> list[tuple[int, bool, bool, Any]]:
        """``(run, resolved, scored, value of field)`` of each valid row of (task, arm), in row order
        (see :meth:`GroupTally.admissible`); empty when that arm has no rows there."""
        group = self._groups.get((task, arm))
        return [] if group is None else group.admissible(field)

    @property
    def rows(self) -> int:
        """How many rows were summarized."""
        return sum(arm.runs for arm in self.by_arm.values())

    @property
    def excluded_rows(self) -> int:
        """Rows kept out of medians and resolve denominators."""
        return sum(arm.runs - arm.valid_runs for arm in self.by_arm.values())

    def count_kind(self, kind: ErrorKind) -> int:
        """How many rows carry ``error_kind == kind``."""
        return sum(agg.error_kinds.get(kind, 0) for _, agg in self.table.items())

    def health(self, arms_checked: Sequence[str]) -> Mapping[str, ArmHealth]:
        """Health of each arm in ``arms_checked`` (in that order), as ``classify_sweep_health`` gives it."""
        out: dict[str, ArmHealth] = {}
        for arm in arms_checked:
            summary = self.by_arm.get(arm)
            counters = summary.health if summary is not None else HealthTally().counters()
            out[arm] = ArmHealth(arm=arm, status=counters.status, counters=counters)
        return out


class SummaryBuilder:
    """Rows in one at a time (:meth:`add`); :meth:`build` is the :class:`RowSummary`."""

    __slots__ = ("_diagnostics", "_table")

    def __init__(self) -> None:
        self._table = TableBuilder()
        self._diagnostics: list[tuple[tuple[str, str, int], tuple[Any, ...]]] = []

    def add(self, row: Row) -> None:
        """Count one row."""
        self._table.add(row)
        found = row.extra.get("evidence_diagnostics")
        if isinstance(found, list) and found:
            self._diagnostics.append((row.cell, tuple(found)))

    def build(self) -> RowSummary:
        """The summary of every row added so far."""
        groups = self._table.groups
        tasks = tuple(dict.fromkeys(task for task, _ in groups))
        arms = tuple(dict.fromkeys(arm for _, arm in groups))
        of_arm: dict[str, list[GroupTally]] = {arm: [] for arm in arms}
        for (_, arm), group in groups.items():
            of_arm[arm].append(group)
        by_arm = {arm: _arm_summary(arm, members) for arm, members in of_arm.items()}
        return RowSummary(
            table=self._table.build(),
            tasks=tasks,
            arms=arms,
            by_arm=by_arm,
            diagnostics=tuple(self._diagnostics),
            groups=dict(groups),
        )


def _arm_summary(arm: str, groups: Sequence[GroupTally]) -> ArmSummary:
    tally = HealthTally()
    costs: list[Any] | None = []
    for group in groups:
        tally.merge(group.health)
        values = group.costs()
        if values is None:
            costs = None
        elif costs is not None:
            costs.extend(values)
    return ArmSummary(
        arm=arm,
        runs=sum(group.runs for group in groups),
        valid_runs=sum(group.valid for group in groups),
        resolved_valid=sum(group.resolved_valid for group in groups),
        cost_usd=float(_median(costs)) if costs else None,
        health=tally.counters(),
    )


def summarize(rows: Iterable[Row]) -> RowSummary:
    """Summarize ``rows`` in one pass (the iterable is consumed once)."""
    builder = SummaryBuilder()
    for row in rows:
        builder.add(row)
    return builder.build()


def as_summary(rows: RowSummary | Iterable[Row]) -> RowSummary:
    """``rows`` itself when it is already a summary, else :func:`summarize` of it."""
    return rows if isinstance(rows, RowSummary) else summarize(rows)
