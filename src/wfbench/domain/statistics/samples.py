"""Run-level samples of one candidate → incumbent pair: what the paired analysis reads.

The analysis starts from rows, never from medians: for every task where both arms have at
least one admissible run, each arm's runs contribute their resolution (0/1) and their value of
the pair's metric. Admissible means *valid* (``Row.excluded`` is false), the rows the gates'
resolve denominators and spend medians count; a run that never invoked the skill under test
counts, unresolved, as the reference gate counts it. For the review metric
(``review_weighted_f1``) only *scored* runs carry a value (as in the quality medians).

A value the rows do not carry is ``None``; the task then has no effect on that metric (it is
left out of that metric's analysis, never read as zero).

:meth:`PairedSamples.to_mapping` is stored inside ``promotion.json`` (``statistics.tasks``),
so apply-time validation can recompute the analysis from the evidence alone.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from wfbench.domain.errors import InputError
from wfbench.domain.results.aggregation import is_scored
from wfbench.domain.results.rows import Row
from wfbench.domain.results.summary import RowSummary

__all__ = ["REVIEW_METRIC", "ArmRuns", "PairedSamples", "TaskPair", "paired_samples", "summary_samples"]

#: The review gate's metric (a difference of weighted F1, not a ratio).
REVIEW_METRIC = "review_weighted_f1"


@attrs.frozen
class ArmRuns:
    """One arm's admissible runs on one task, in run order."""

    resolved: tuple[bool, ...]
    #: The pair's metric per run (``None`` where not measured); may be shorter than
    #: ``resolved`` for the review metric, which only scored runs carry.
    metric: tuple[float | None, ...]

    @property
    def runs(self) -> int:
        """Admissible runs."""
        return len(self.resolved)

    def to_mapping(self) -> dict[str, Any]:
        return {"resolved": list(self.resolved), "metric": list(self.metric)}


@attrs.frozen
class TaskPair:
    """Both arms' runs on one task."""

    task: str
    incumbent: ArmRuns
    candidate: ArmRuns

    def swapped(self) -> TaskPair:
        """The same task with the arms' roles exchanged."""
        return TaskPair(self.task, incumbent=self.candidate, candidate=self.incumbent)


@attrs.frozen
class PairedSamples:
    """Every task both arms ran admissibly, sorted by task id."""

    candidate: str
    incumbent: str
    metric: str
    tasks: tuple[TaskPair, ...]

    def swapped(self) -> PairedSamples:
        """The arms' roles exchanged (the analysis of this is the mirror image)."""
        return PairedSamples(
            candidate=self.incumbent,
            incumbent=self.candidate,
            metric=self.metric,
            tasks=tuple(task.swapped() for task in self.tasks),
        )

    def to_mapping(self) -> list[dict[str, Any]]:
        """One entry per task: ``task``, then each arm's ``resolved`` and ``metric`` per run."""
        return [
            {"task": t.task, "incumbent": t.incumbent.to_mapping(), "candidate": t.candidate.to_mapping()}
            for t in self.tasks
        ]

    @classmethod
    def from_mapping(
        cls, raw: Any, *, candidate: str, incumbent: str, metric: str, field: str = "tasks"
    ) -> PairedSamples:
        """Read what :meth:`to_mapping` wrote.

        Raises:
            InputError: an entry is malformed or a task repeats (the field is named).
        """
        if not isinstance(raw, list):
            raise InputError("must be a list", field=field)
        tasks = [_task_from_mapping(item, f"{field}[{index}]") for index, item in enumerate(raw)]
        names = [task.task for task in tasks]
        if len(set(names)) != len(names) or names != sorted(names):
            raise InputError("must list each task once, sorted by id", field=field)
        return cls(candidate=candidate, incumbent=incumbent, metric=metric, tasks=tuple(tasks))


def _runs_from_mapping(raw: Any, field: str) -> ArmRuns:
    if not isinstance(raw, Mapping):
        raise InputError("must be an object", field=field)
    resolved, metric = raw.get("resolved"), raw.get("metric")
    if not isinstance(resolved, list) or not resolved or not all(isinstance(v, bool) for v in resolved):
        raise InputError("must be a non-empty list of true/false", field=f"{field}.resolved")
    if not isinstance(metric, list) or not all(
        value is None
        or (isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value))
        for value in metric
    ):
        raise InputError("must be a list of finite numbers or null", field=f"{field}.metric")
    return ArmRuns(tuple(resolved), tuple(None if v is None else float(v) for v in metric))


def _task_from_mapping(raw: Any, field: str) -> TaskPair:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("task"), str) or not raw["task"]:
        raise InputError("must be an object with a non-empty task id", field=field)
    return TaskPair(
        task=raw["task"],
        incumbent=_runs_from_mapping(raw.get("incumbent"), f"{field}.incumbent"),
        candidate=_runs_from_mapping(raw.get("candidate"), f"{field}.candidate"),
    )


def _metric_values(rows: Sequence[Row], metric: str) -> tuple[float | None, ...]:
    if metric == REVIEW_METRIC:
        values = [row.review.get(metric) for row in rows if is_scored(row)]
    else:
        values = [getattr(row, metric) for row in rows]
    return tuple(_number(value) for value in values)


def _number(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _arm_runs(rows: Sequence[Row], metric: str) -> ArmRuns:
    ordered = sorted(rows, key=lambda row: row.run)
    return ArmRuns(tuple(row.resolved for row in ordered), _metric_values(ordered, metric))


def _check_metric(metric: str) -> None:
    if metric != REVIEW_METRIC and metric not in ("output_tokens", "cost_usd", "duration_s", "num_turns"):
        raise InputError(f"unsupported promotion metric: {metric}", field="metric")


def summary_samples(
    summary: RowSummary,
    *,
    candidate: str,
    incumbent: str,
    metric: str,
    tasks: Iterable[str] | None = None,
) -> PairedSamples:
    """:func:`paired_samples` from a one-pass :class:`RowSummary` instead of the rows (equal results).

    Raises:
        InputError: ``metric`` is not a row field the analysis can read.
    """
    _check_metric(metric)
    wanted = None if tasks is None else set(tasks)
    pairs = []
    for task in sorted(summary.tasks):
        if wanted is not None and task not in wanted:
            continue
        inc = summary.admissible_runs(task, incumbent, metric)
        cand = summary.admissible_runs(task, candidate, metric)
        if inc and cand:
            pairs.append(TaskPair(task, _summary_runs(inc, metric), _summary_runs(cand, metric)))
    return PairedSamples(candidate=candidate, incumbent=incumbent, metric=metric, tasks=tuple(pairs))


def _summary_runs(runs: Sequence[tuple[int, bool, bool, Any]], metric: str) -> ArmRuns:
    ordered = sorted(runs, key=lambda run: run[0])
    review = metric == REVIEW_METRIC
    values = [value for _, _, scored, value in ordered if scored or not review]
    return ArmRuns(tuple(resolved for _, resolved, _, _ in ordered), tuple(_number(v) for v in values))


def paired_samples(
    rows: Iterable[Row],
    *,
    candidate: str,
    incumbent: str,
    metric: str,
    tasks: Iterable[str] | None = None,
) -> PairedSamples:
    """The pair's run-level samples from ``rows`` (any order; other arms are ignored).

    ``tasks`` restricts the analysis to those tasks; a task where either arm has no admissible
    run is left out (the gates already refuse such evidence).

    Raises:
        InputError: ``metric`` is not a row field the analysis can read.
    """
    _check_metric(metric)
    wanted = None if tasks is None else set(tasks)
    groups: defaultdict[tuple[str, str], list[Row]] = defaultdict(list)
    for row in rows:
        if row.arm in (candidate, incumbent) and not row.excluded and (wanted is None or row.task in wanted):
            groups[(row.task, row.arm)].append(row)
    pairs = []
    for task in sorted({task for task, _ in groups}):
        inc, cand = groups.get((task, incumbent)), groups.get((task, candidate))
        if inc and cand:
            pairs.append(TaskPair(task, _arm_runs(inc, metric), _arm_runs(cand, metric)))
    return PairedSamples(candidate=candidate, incumbent=incumbent, metric=metric, tasks=tuple(pairs))
