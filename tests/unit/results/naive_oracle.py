"""The row-at-a-time aggregation, as it was before the gate and the report became streaming.

Kept verbatim in the tests as an oracle: it holds every row, filters lists per group and
reduces them with ``sorted``; the streaming :class:`~wfbench.domain.results.aggregation.TableBuilder`
and :func:`~wfbench.domain.results.summary.summarize` must give exactly what it gives.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from wfbench.domain.results.aggregation import (
    MEDIAN_FIELDS,
    REVIEW_FLAG_METRICS,
    REVIEW_NUMERIC_METRICS,
    Aggregate,
    AggregateTable,
    is_scored,
)
from wfbench.domain.results.health import (
    HealthCounters,
    _breakdown,
    _evidence_cause,
    is_evidence_failure,
    is_execution_failure,
)
from wfbench.domain.results.rows import ReviewValue, Row


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def _is_number_type(kind: type) -> bool:
    return issubclass(kind, int | float) and not issubclass(kind, bool)


def _reduce(values: Sequence[Any], reducer: Callable[[Sequence[float]], float]) -> float | None:
    if not values or not all(_is_number_type(kind) for kind in set(map(type, values))):
        return None
    return float(reducer(values))


def _all_true(values: Sequence[Any]) -> bool | None:
    if not values or not all(isinstance(value, bool) for value in values):
        return None
    return all(values)


def _review_metrics(valid: Sequence[Row], scored: Sequence[Row]) -> Mapping[str, ReviewValue]:
    if not any("review_weighted_f1" in row.review for row in valid):
        return {}
    out: dict[str, ReviewValue] = {}
    for name in REVIEW_NUMERIC_METRICS:
        values = [row.review.get(name) for row in scored]
        out[name] = _reduce(values, min if name == "review_blocker_recall" else _median)
    for name in REVIEW_FLAG_METRICS:
        out[name] = _all_true([row.review.get(name) for row in scored])
    return out


def naive_count_health(rows: Iterable[Row]) -> HealthCounters:
    fresh = reused = admissible = 0
    execution: Counter[str] = Counter()
    evidence: Counter[str] = Counter()
    for row in rows:
        if row.reused:
            reused += 1
            continue
        fresh += 1
        failed_execution = is_execution_failure(row)
        failed_evidence = is_evidence_failure(row)
        if failed_execution:
            execution[str(row.error_kind)] += 1
        if failed_evidence:
            evidence[_evidence_cause(row)] += 1
        if not (failed_execution or failed_evidence):
            admissible += 1
    n_exec, n_evid = execution.total(), evidence.total()
    reasons: list[str] = []
    if fresh == 0:
        reasons.append("no fresh attempts" + (f" ({reused} reused row(s) only)" if reused else ""))
    if n_exec:
        reasons.append(f"{n_exec}/{fresh} fresh attempt(s) failed to execute ({_breakdown(execution)})")
    if n_evid:
        reasons.append(
            f"{n_evid}/{fresh} fresh attempt(s) produced untrustworthy evidence ({_breakdown(evidence)})"
        )
    return HealthCounters(
        fresh_attempts=fresh,
        reused=reused,
        admissible=admissible,
        execution_failures=n_exec,
        evidence_failures=n_evid,
        reasons=tuple(reasons),
    )


def naive_group(task: str, arm: str, rows: Iterable[Row]) -> Aggregate:
    every = tuple(rows)
    valid = [row for row in every if not row.excluded]
    scored = [row for row in valid if is_scored(row)]
    medians = {name: _reduce([getattr(row, name) for row in valid], _median) for name in MEDIAN_FIELDS}
    kinds = Counter(row.error_kind for row in every if row.error_kind is not None)
    health = naive_count_health(every)
    classes = sorted({row.task_class for row in every if row.task_class is not None})
    return Aggregate(
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


def naive_aggregate(rows: Iterable[Row]) -> AggregateTable:
    groups: defaultdict[tuple[str, str], list[Row]] = defaultdict(list)
    for row in rows:
        groups[(row.task, row.arm)].append(row)
    return AggregateTable({key: naive_group(key[0], key[1], groups[key]) for key in sorted(groups)})


def naive_arm_series(
    rows: Sequence[Row],
) -> tuple[list[tuple[str, float | None]], list[tuple[str, float | None]]]:
    """report.html's per-arm resolve rate and median cost, as it computed them over the rows."""
    arms: dict[str, list[Row]] = {}
    for row in rows:
        arms.setdefault(row.arm, []).append(row)
    rates: list[tuple[str, float | None]] = []
    costs: list[tuple[str, float | None]] = []
    for arm, arm_rows in arms.items():
        valid = [r for r in arm_rows if not r.excluded]
        rates.append((arm, 100.0 * sum(r.resolved for r in valid) / len(valid) if valid else None))
        known = [r.cost_usd for r in valid]
        costs.append((arm, statistics.median(known) if valid and all(c is not None for c in known) else None))  # type: ignore[type-var]
    return rates, costs
