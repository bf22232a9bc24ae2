"""The review-arm gate: weighted F1, blocker recall, verdicts, clean controls (``docs/domain.md`` §7).

Cost and duration play no part. Improvement can only come from defect (non-clean) cases, so a
corpus made only of clean controls can never promote; the incumbent's verdict is not checked.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from wfbench.domain.promotion.decision import (
    Decision,
    DecisionKind,
    GateVerdict,
    ReviewTask,
    blocking_kind,
    check_model,
    check_scored_runs,
    paired_tasks,
)
from wfbench.domain.promotion.policy import DEFAULT_POLICY, REVIEW_METRIC, GateKind, PromotionPolicy
from wfbench.domain.results.aggregation import Aggregate, AggregateTable

__all__ = ["evaluate_review_candidate"]


def _review_value(agg: Aggregate, name: str) -> Any:
    return agg.review.get(f"review_{name}")


def _is_clean(inc: Aggregate, cand: Aggregate) -> bool:
    flag = _review_value(inc, "clean_control")
    if flag is None:
        flag = _review_value(cand, "clean_control")
    return flag is True


def _check_review_runs(
    task: str, inc: Aggregate, cand: Aggregate, min_runs: int, verdict: GateVerdict
) -> None:
    if (
        min(inc.valid_runs, cand.valid_runs) < min_runs
        or inc.valid_runs != cand.valid_runs
        or inc.excluded_runs > 0
        or cand.excluded_runs > 0
    ):
        verdict.lacks(
            f"{task}: needs {min_runs} valid paired runs with zero exclusions "
            f"(got {inc.valid_runs}/{cand.valid_runs})"
        )


def _review_quality(row: ReviewTask, policy: PromotionPolicy, verdict: GateVerdict) -> bool:
    """Run the per-case quality checks; True when the candidate improved weighted F1 enough."""
    inc, cand, task = row.incumbent, row.candidate, row.task
    needed = ("false_positives", "clean_pass") if row.clean_control else ("weighted_f1", "false_positives")
    if any(_review_value(agg, name) is None for agg in (inc, cand) for name in needed):
        verdict.lacks(f"{task}: structured review quality metrics are incomplete")
        return False
    verdict_correct = _review_value(cand, "verdict_correct")
    if verdict_correct is None:
        verdict.lacks(f"{task}: candidate verdict evidence is incomplete")
    elif verdict_correct is not True:
        verdict.regressed(f"{task}: candidate verdict was incorrect on a valid repeat")
    inc_blocker, cand_blocker = _review_value(inc, "blocker_recall"), _review_value(cand, "blocker_recall")
    if (inc_blocker is None) != (cand_blocker is None):
        verdict.lacks(f"{task}: blocker recall evidence is incomplete")
    elif inc_blocker is not None and cand_blocker < inc_blocker:
        verdict.regressed(f"{task}: blocker recall regressed")
    if row.clean_control:
        if _review_value(cand, "false_positives") > _review_value(inc, "false_positives"):
            verdict.regressed(f"{task}: false positives increased on a clean control")
        if _review_value(inc, "clean_pass") is True and _review_value(cand, "clean_pass") is False:
            verdict.regressed(f"{task}: clean-control verdict regressed")
        return False
    inc_f1, cand_f1 = _review_value(inc, "weighted_f1"), _review_value(cand, "weighted_f1")
    if cand_f1 + 1e-9 < inc_f1:
        verdict.regressed(f"{task}: weighted review score regressed")
    return bool(cand_f1 >= inc_f1 + policy.review_min_improvement)


def _decide_review(rows: Sequence[ReviewTask], improved: bool, verdict: GateVerdict) -> DecisionKind:
    if not rows:
        verdict.lacks("no paired review task results were found")
    forced = blocking_kind(verdict)
    if forced is not None:
        return forced
    if not improved:
        verdict.reasons.append("candidate did not improve weighted review quality on any corpus case")
        return DecisionKind.KEEP_INCUMBENT
    verdict.reasons.append(
        "candidate improved weighted review quality without blocker or clean-control regression"
    )
    return DecisionKind.PROMOTE


def evaluate_review_candidate(
    table: AggregateTable,
    *,
    candidate: str,
    incumbent: str,
    model: str | None,
    policy: PromotionPolicy = DEFAULT_POLICY,
    tasks: Iterable[str] | None = None,
) -> Decision:
    """Judge a review candidate against its incumbent (``docs/domain.md`` §7).

    Cost and duration play no part; improvement can only come from defect (non-clean) cases.
    """
    verdict = GateVerdict()
    check_model(model, "review", verdict)
    rows: list[ReviewTask] = []
    improved = False
    for task in paired_tasks(table, (candidate, incumbent), tasks):
        inc, cand = table.get(task, incumbent), table.get(task, candidate)
        if inc is None or cand is None:
            verdict.lacks(f"{task}: both {incumbent} and {candidate} are required")
            continue
        task_class = inc.task_class if inc.task_class is not None else cand.task_class
        row = ReviewTask(task, task_class, inc, cand, clean_control=_is_clean(inc, cand))
        rows.append(row)
        _check_review_runs(task, inc, cand, policy.min_runs, verdict)
        check_scored_runs(task, inc, cand, policy.min_runs, verdict)
        improved = _review_quality(row, policy, verdict) or improved
    kind = _decide_review(rows, improved, verdict)
    return Decision(
        kind=kind,
        candidate_arm=candidate,
        incumbent_arm=incumbent,
        gate=GateKind.REVIEW,
        metric=REVIEW_METRIC,
        model=model,
        reasons=tuple(verdict.reasons),
        tasks=tuple(rows),
    )
