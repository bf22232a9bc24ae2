"""The implementation-arm gate: resolution first, then spend (``docs/domain.md`` §6).

Quality comes first lexicographically: a cheaper candidate that resolves less never wins. A
task neither arm resolved (fully and equally measured, no skill-not-invoked run, comparable
metric) leaves the gate and is only held to the failed-task spend cap.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from wfbench.domain.promotion.decision import (
    Decision,
    DecisionKind,
    GateVerdict,
    ImplementationTask,
    blocking_kind,
    check_model,
    check_scored_runs,
    paired_tasks,
)
from wfbench.domain.promotion.policy import (
    DEFAULT_POLICY,
    SKILL_ATTRIBUTABLE_ERROR_KINDS,
    GateKind,
    PromotionPolicy,
)
from wfbench.domain.results.aggregation import Aggregate, AggregateTable

__all__ = [
    "check_measured",
    "check_runs",
    "evaluate_candidate",
    "floor_reason",
    "implementation_task",
]


def _improvement(inc_value: float | None, cand_value: float | None) -> float | None:
    if inc_value is None or cand_value is None or inc_value == 0:
        return None
    return round(100 * (inc_value - cand_value) / inc_value, 1)


def _metric_value(agg: Aggregate, metric: str) -> float | None:
    """The aggregate's median of ``metric`` (one of PROMOTION_METRICS, all ``float | None``)."""
    value: float | None = getattr(agg, metric)
    return value


def implementation_task(
    task: str, inc: Aggregate, cand: Aggregate, policy: PromotionPolicy
) -> ImplementationTask:
    inc_value = _metric_value(inc, policy.metric)
    cand_value = _metric_value(cand, policy.metric)
    improvement = _improvement(inc_value, cand_value)
    fully_measured = (
        min(inc.valid_runs, cand.valid_runs) >= policy.min_runs
        and inc.valid_runs == cand.valid_runs
        and inc.excluded_runs == 0
        and cand.excluded_runs == 0
    )
    skill_attributable = any(
        kind in SKILL_ATTRIBUTABLE_ERROR_KINDS for kind in (*inc.error_kinds, *cand.error_kinds)
    )
    mutually_unresolved = fully_measured and inc.resolved == 0 and cand.resolved == 0
    return ImplementationTask(
        task=task,
        task_class=inc.task_class if inc.task_class is not None else cand.task_class,
        incumbent=inc,
        candidate=cand,
        incumbent_metric=inc_value,
        candidate_metric=cand_value,
        improvement_pct=improvement,
        gated=not (mutually_unresolved and not skill_attributable and improvement is not None),
        quality_floor_enforced=inc.resolved > 0 or skill_attributable,
        skill_attributable_failure=skill_attributable,
    )


def _rate(agg: Aggregate) -> float:
    return agg.resolved / agg.valid_runs if agg.valid_runs else 0.0


def _check_ungated(row: ImplementationTask, policy: PromotionPolicy, verdict: GateVerdict) -> None:
    cap = policy.max_failed_task_regression_pct
    if row.improvement_pct is not None and row.improvement_pct < -cap:
        verdict.regressed(
            f"{row.task}: {policy.metric} regressed {-row.improvement_pct:.1f}% on a task neither arm "
            f"resolved, above the {cap:.1f}% failed-task cap"
        )


def check_runs(row: ImplementationTask, policy: PromotionPolicy, verdict: GateVerdict) -> None:
    """Enough valid runs per arm, none excluded, equally many in both arms."""
    inc, cand, task = row.incumbent, row.candidate, row.task
    if inc.valid_runs < policy.min_runs or cand.valid_runs < policy.min_runs:
        verdict.lacks(
            f"{task}: needs at least {policy.min_runs} valid runs per arm "
            f"(got {inc.valid_runs}/{cand.valid_runs})"
        )
    if inc.excluded_runs > 0 or cand.excluded_runs > 0:
        verdict.lacks(
            f"{task}: promotion requires zero excluded runs in both paired arms "
            f"(got {inc.excluded_runs}/{cand.excluded_runs})"
        )
    if inc.valid_runs != cand.valid_runs:
        verdict.lacks(
            f"{task}: paired arms have different valid run counts ({inc.valid_runs}/{cand.valid_runs} valid; "
            f"{inc.excluded_runs}/{cand.excluded_runs} excluded)"
        )


def _check_quality(row: ImplementationTask, verdict: GateVerdict) -> None:
    inc, cand, task = row.incumbent, row.candidate, row.task
    if _rate(cand) < _rate(inc):
        verdict.regressed(f"{task}: resolution regressed from {_rate(inc):.0%} to {_rate(cand):.0%}")
    if row.quality_floor_enforced and cand.valid_runs > 0 and cand.resolved != cand.valid_runs:
        verdict.regressed(floor_reason(row))


def floor_reason(row: ImplementationTask) -> str:
    """The quality floor's reason: the candidate did not resolve every valid run, and why it must."""
    inc, cand = row.incumbent, row.candidate
    trigger = (
        "a run never invoked the skill under test"
        if row.skill_attributable_failure
        else f"the incumbent resolves {inc.resolved}/{inc.valid_runs}"
    )
    return (
        f"{row.task}: candidate must resolve every valid run for the oracle-backed quality floor "
        f"({trigger}; got {cand.resolved}/{cand.valid_runs})"
    )


def check_measured(row: ImplementationTask, policy: PromotionPolicy, verdict: GateVerdict) -> bool:
    """True when both arms' metric is measured and the incumbent's is not zero; else a reason."""
    metric, task = policy.metric, row.task
    if row.incumbent_metric is None or row.candidate_metric is None:
        verdict.lacks(
            f"{task}: {metric} was not measured on every run in both paired arms; cannot rank on it "
            "(fix cost capture or choose another metric)"
        )
        return False
    if row.improvement_pct is None:
        verdict.lacks(f"{task}: incumbent {metric} is zero; choose a metric with signal")
        return False
    return True


def _check_metric(row: ImplementationTask, policy: PromotionPolicy, verdict: GateVerdict) -> None:
    task, metric = row.task, policy.metric
    if (
        check_measured(row, policy, verdict)
        and row.improvement_pct is not None
        and row.improvement_pct < -policy.max_task_regression_pct
    ):
        verdict.regressed(
            f"{task}: {metric} regressed {-row.improvement_pct:.1f}%, above the "
            f"{policy.max_task_regression_pct:.1f}% task cap"
        )


def _check_evidence_base(
    rows: Sequence[ImplementationTask], policy: PromotionPolicy, verdict: GateVerdict
) -> None:
    ungated = [row.task for row in rows if not row.gated]
    gated = len(rows) - len(ungated)
    if ungated:
        verdict.reasons.append(
            f"not gated on {len(ungated)} task(s) neither arm resolved: {', '.join(ungated)} "
            f"(evidence base: {gated}/{len(rows)} paired tasks gated)"
        )
    if not rows:
        verdict.lacks("no paired task results were found")
    elif gated == 0:
        verdict.lacks("no task supplied quality signal: neither arm resolved a run anywhere in the set")
    elif gated < policy.min_gated_task_ratio * len(rows):
        verdict.lacks(
            f"promotion evidence base is too thin: {gated}/{len(rows)} paired tasks are gated "
            f"(at least {policy.min_gated_task_ratio:.0%} required)"
        )


def _decide_implementation(
    rows: Sequence[ImplementationTask], policy: PromotionPolicy, verdict: GateVerdict
) -> tuple[DecisionKind, float | None]:
    improvements = [row.improvement_pct for row in rows if row.gated and row.improvement_pct is not None]
    import statistics  # here, not at import: a gate with no pair to judge never needs it

    median = round(statistics.median(improvements), 1) if improvements else None
    forced = blocking_kind(verdict)
    if forced is not None:
        return forced, median
    margin = sum(row.candidate.resolved - row.incumbent.resolved for row in rows)
    if margin >= 2:
        verdict.reasons.append(
            f"candidate improves total task resolution by {margin} runs (at least 2 required) "
            "with no task regression"
        )
        return DecisionKind.PROMOTE, median
    if margin == 1:
        verdict.reasons.append(
            "total resolution improved by only 1 run — within the noise floor (2 required); "
            "deciding on efficiency instead"
        )
    shown = 0.0 if median is None else median
    verdict.reasons.append(
        f"median {policy.metric} improvement is {shown:.1f}% (required {policy.min_improvement_pct:.1f}%)"
    )
    if median is not None and median >= policy.min_improvement_pct:
        return DecisionKind.PROMOTE, median
    return DecisionKind.KEEP_INCUMBENT, median


def evaluate_candidate(
    table: AggregateTable,
    *,
    candidate: str,
    incumbent: str,
    model: str | None,
    policy: PromotionPolicy = DEFAULT_POLICY,
    tasks: Iterable[str] | None = None,
) -> Decision:
    """Judge an implementation candidate against its incumbent (``docs/domain.md`` §6).

    ``tasks`` pins the task set (default: every task where either arm has rows); a task where
    one arm has no rows makes the evidence insufficient.
    """
    verdict = GateVerdict()
    check_model(model, "prompt", verdict)
    rows: list[ImplementationTask] = []
    for task in paired_tasks(table, (candidate, incumbent), tasks):
        inc, cand = table.get(task, incumbent), table.get(task, candidate)
        if inc is None or cand is None:
            verdict.lacks(f"{task}: both {incumbent} and {candidate} are required")
            continue
        row = implementation_task(task, inc, cand, policy)
        rows.append(row)
        if not row.gated:
            _check_ungated(row, policy, verdict)
            continue
        check_runs(row, policy, verdict)
        check_scored_runs(task, inc, cand, policy.min_runs, verdict)
        _check_quality(row, verdict)
        _check_metric(row, policy, verdict)
    _check_evidence_base(rows, policy, verdict)
    kind, median = _decide_implementation(rows, policy, verdict)
    return Decision(
        kind=kind,
        candidate_arm=candidate,
        incumbent_arm=incumbent,
        gate=GateKind.IMPLEMENTATION,
        metric=policy.metric,
        model=model,
        reasons=tuple(verdict.reasons),
        tasks=tuple(rows),
        median_improvement_pct=median,
    )
