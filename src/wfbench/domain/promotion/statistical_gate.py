"""The statistical gate policy: paired per-task intervals decide (``docs/statistics.md``).

It keeps the reference gate's preconditions — a named model, both arms on every task, at least
``min_runs`` valid runs per arm with none excluded and equally many in both arms, equal scored
runs, the metric measured (incumbent not zero), and the skill-invocation floor (a task with a
run that never invoked the skill under test needs the candidate to resolve every run) — and
needs at least ``min_tasks`` paired tasks. It drops the reference's per-task resolution and
spend rules and its "margin ≥ 2 runs" path, which measure noise as often as signal. Then, with
the pair's :class:`~wfbench.domain.statistics.analysis.PairStatistics`:

a. **promote** when the resolution gain is significant (the *resolution* claim);
b. else **promote** when the *saving* claim — an intersection-union test of a significant saving
   and non-inferiority on resolution (lower bound above −margin, 10 points), its p-value the larger
   of the two — is significant and the saving is at least ``min_improvement_pct``;
c. else **keep_incumbent** only when the evidence speaks against the candidate: the whole
   resolution interval below 0 (a *credible regression*), or the whole saving interval (not of
   zero width) below ``min_improvement_pct``;
d. else **insufficient_evidence**, saying which part failed and how many tasks would show
   non-inferiority. A sweep without quality signal (no resolved run in either arm, or every
   task's resolution effect alike) never shows non-inferiority.

"Significant" is the claim's one-sided p-value against the Holm step-down threshold over
every promotion claim of the sweep — two per implementation candidate (resolution, saving) —
so the chance that *any* candidate is promoted without a real improvement stays at most
``α`` (0.05 with the default 90 % intervals) however many candidates and paths there are.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence

import attrs

from wfbench.domain.promotion.decision import (
    DecisionKind,
    GateVerdict,
    PolicyVerdict,
    blocking_kind,
    check_model,
    check_scored_runs,
    paired_tasks,
)
from wfbench.domain.promotion.implementation_gate import (
    check_measured,
    check_runs,
    floor_reason,
    implementation_task,
)
from wfbench.domain.promotion.policy import DecisionPolicy, PromotionPolicy
from wfbench.domain.results.aggregation import AggregateTable
from wfbench.domain.statistics.analysis import PairStatistics, non_inferiority_p
from wfbench.domain.statistics.effects import EffectSummary
from wfbench.domain.statistics.planning import detectability

__all__ = ["Claim", "ClaimPath", "HolmResult", "StatisticalCase", "holm", "judge_statistically"]


class ClaimPath(enum.StrEnum):
    """The two ways a candidate may earn promotion."""

    RESOLUTION = "resolution"
    SAVING = "saving"


@attrs.frozen
class Claim:
    """One promotion hypothesis: ``H0: no improvement`` on ``path`` for ``candidate``."""

    candidate: str
    path: ClaimPath
    p_value: float


@attrs.frozen
class HolmResult:
    """Holm's verdict on one claim: its threshold and whether it was rejected (significant)."""

    threshold: float
    rejected: bool
    family: int
    #: The claim would have met its own threshold, but Holm stopped at a smaller p-value.
    stopped: bool = False


def holm(claims: Sequence[Claim], alpha: float) -> dict[tuple[str, ClaimPath], HolmResult]:
    """Holm's step-down procedure over ``claims`` at family-wise level ``alpha``.

    Claims are ranked by p-value (ties by candidate, then path); the ``i``-th smallest (from 0)
    is rejected when its p-value is at most ``alpha/(m − i)`` and every smaller one was.
    """
    ordered = sorted(claims, key=lambda c: (c.p_value, c.candidate, c.path.value))
    family = len(ordered)
    out: dict[tuple[str, ClaimPath], HolmResult] = {}
    going = True
    for rank, claim in enumerate(ordered):
        threshold = alpha / (family - rank)
        meets = claim.p_value <= threshold
        going = going and meets
        out[(claim.candidate, claim.path)] = HolmResult(threshold, going, family, stopped=meets and not going)
    return out


@attrs.frozen
class StatisticalCase:
    """One implementation pair to judge: its aggregates, its analysis and the model."""

    table: AggregateTable
    statistics: PairStatistics
    candidate: str
    incumbent: str
    model: str | None
    tasks: Iterable[str] | None = None
    #: The Holm family the pair's claims belong to (the incumbent's agent: one decision per agent
    #: in a sweep that compares agents); pairs with the same family share one correction.
    family: str | None = None
    #: The one-sided p-value of non-inferiority on resolution (``None``: no quality signal); set by
    #: :func:`judge_statistically`.
    non_inferiority_p: float | None = None


def _screen(case: StatisticalCase, policy: PromotionPolicy) -> GateVerdict:
    """The preconditions, in the reference gate's words (plus the task count)."""
    verdict = GateVerdict()
    check_model(case.model, "prompt", verdict)
    paired = False
    for task in paired_tasks(case.table, (case.candidate, case.incumbent), case.tasks):
        inc, cand = case.table.get(task, case.incumbent), case.table.get(task, case.candidate)
        if inc is None or cand is None:
            verdict.lacks(f"{task}: both {case.incumbent} and {case.candidate} are required")
            continue
        paired = True
        row = implementation_task(task, inc, cand, policy)
        check_runs(row, policy, verdict)
        check_scored_runs(task, inc, cand, policy.min_runs, verdict)
        check_measured(row, policy, verdict)
        if row.skill_attributable_failure and cand.resolved != cand.valid_runs:
            verdict.regressed(floor_reason(row))
    analysed = case.statistics.resolution.n_tasks
    if not paired:
        verdict.lacks("no paired task results were found")
    elif analysed < policy.min_tasks:  # too few tasks to judge, but a measured regression still counts
        verdict.unscorable(
            f"the statistical policy needs at least {policy.min_tasks} paired tasks (got {analysed}); "
            "with fewer, no exact test can show an improvement at the policy's level"
        )
    return verdict


def _points(summary: EffectSummary) -> str:
    low, high = _presented_interval(summary)
    return f"[{low:+z.1f}, {high:+z.1f}]"


def _percent(summary: EffectSummary) -> str:
    low, high = _presented_interval(summary)
    return f"[{low:z.1f}%, {high:z.1f}%]"


def _presented_interval(summary: EffectSummary) -> tuple[float, float]:
    assert summary.interval is not None  # the task-count precondition guarantees an interval
    return summary.scale.present(summary.interval[0]), summary.scale.present(summary.interval[1])


def _presented(summary: EffectSummary) -> float:
    assert summary.estimate is not None  # as for the interval: the task-count precondition
    return summary.scale.present(summary.estimate)


def _p_value(summary: EffectSummary) -> float:
    assert summary.p_value is not None  # as for the interval: the task-count precondition
    return summary.p_value


def _significance(result: HolmResult, p_value: float) -> str:
    base = f"one-sided p = {p_value:.4f}"
    family = f"Holm over {result.family} promotion claim(s)"
    if result.rejected:
        return f"{base} <= {result.threshold:.4f}, {family}"
    if result.stopped:
        return f"{base} <= {result.threshold:.4f} but {family} stopped at a smaller p-value"
    return f"{base} > {result.threshold:.4f}, {family}"


def _ni_text(case: StatisticalCase, policy: PromotionPolicy, p_ni: float | None, result: HolmResult) -> str:
    res, conf = case.statistics.resolution, f"{case.statistics.config.confidence:.0%}"
    margin = policy.non_inferiority_margin_pts
    head = f"{_presented(res):+z.1f} points, {conf} interval {_points(res)}"
    if p_ni is None:
        return (
            f"no quality signal on resolution ({head}): no run resolved in either arm or every task's"
            f" effect is the same, so nothing shows the candidate within {margin:.1f} points"
        )
    return f"{head}; against the -{margin:.1f}-point margin {_significance(result, p_ni)}"


def _saving_text(case: StatisticalCase, policy: PromotionPolicy, result: HolmResult) -> str:
    """The saving with its own p-value against the claim's Holm threshold."""
    saving, conf = case.statistics.metric, f"{case.statistics.config.confidence:.0%}"
    p_value = _p_value(saving)
    own = HolmResult(result.threshold, p_value <= result.threshold, result.family)
    return (
        f"{policy.metric} saving {_presented(saving):z.1f}% ({conf} interval {_percent(saving)}; "
        f"{_significance(own, p_value)}; at least {policy.min_improvement_pct:.1f}% required)"
    )


def _wholly_below(saving: EffectSummary, minimum_pct: float) -> bool:
    """The whole saving interval is below the minimum; a zero-width one (nothing varied) says nothing."""
    low, high = _presented_interval(saving)
    return low < high < minimum_pct


def _not_promoted(
    case: StatisticalCase, policy: PromotionPolicy, verdict: GateVerdict, result: HolmResult
) -> DecisionKind:
    """Why no claim held: ``keep_incumbent`` only when the evidence speaks against the candidate."""
    stats, p_ni = case.statistics, case.non_inferiority_p
    res, saving = stats.resolution, stats.metric
    ni_shown = p_ni is not None and p_ni <= result.threshold
    reach = detectability(stats, design=policy.gate_design(result.family))
    if _presented_interval(res)[1] < 0:
        conf = f"{stats.config.confidence:.0%}"
        verdict.reasons.append(
            f"resolution is not shown non-inferior: {_presented(res):+z.1f} points, {conf} interval "
            f"{_points(res)}; a credible regression (the whole interval is below 0)"
        )
        return DecisionKind.KEEP_INCUMBENT
    if saving.interval is not None and _wholly_below(saving, policy.min_improvement_pct):
        verdict.reasons.append(
            f"no credible saving: {_saving_text(case, policy, result)}; the whole interval is below "
            f"the {policy.min_improvement_pct:.1f}% required"
        )
        verdict.reasons.append(f"no credible improvement: {reach.sentence}")
        return DecisionKind.KEEP_INCUMBENT
    if saving.interval is not None:
        p_saving = _p_value(saving)
        lead = (
            "the saving alone is credible but the saving claim also needs resolution shown non-inferior"
            if p_saving <= result.threshold and _presented(saving) >= policy.min_improvement_pct
            else "no credible saving"
        )
        verdict.reasons.append(f"{lead}: {_saving_text(case, policy, result)}")
    if not ni_shown:
        reason = _ni_text(case, policy, p_ni, result)
        verdict.reasons.append(f"resolution is not shown non-inferior: {reason}")
    verdict.reasons.append(f"insufficient evidence: {reach.sentence}")
    return DecisionKind.INSUFFICIENT_EVIDENCE


def _conclude(
    case: StatisticalCase,
    policy: PromotionPolicy,
    verdict: GateVerdict,
    results: Mapping[tuple[str, ClaimPath], HolmResult],
) -> DecisionKind:
    stats = case.statistics
    res, saving = stats.resolution, stats.metric
    conf = f"{stats.config.confidence:.0%}"
    res_result = results[(case.candidate, ClaimPath.RESOLUTION)]
    res_text = (
        f"{_presented(res):+z.1f} points ({conf} interval {_points(res)}; "
        f"{_significance(res_result, _p_value(res))})"
    )
    if res_result.rejected:
        verdict.reasons.append(f"resolution improves by {res_text}")
        return DecisionKind.PROMOTE
    verdict.reasons.append(f"no credible resolution gain: {res_text}")
    saving_result = results[(case.candidate, ClaimPath.SAVING)]
    if (
        saving_result.rejected
        and saving.interval is not None
        and _presented(saving) >= policy.min_improvement_pct
    ):
        reason = _ni_text(case, policy, case.non_inferiority_p, saving_result)
        verdict.reasons.append(f"resolution is shown non-inferior: {reason}")
        verdict.reasons.append(_saving_text(case, policy, saving_result))
        return DecisionKind.PROMOTE
    return _not_promoted(case, policy, verdict, saving_result)


def _claims(case: StatisticalCase, eligible: bool) -> list[Claim]:
    """The pair's two claims; an ineligible pair's are entered at p = 1 (never significant).

    The saving claim is an intersection-union test: the saving is significant *and* resolution is
    shown non-inferior, so its p-value is the larger of the two (1 without quality signal).
    """
    stats = case.statistics
    res, saving = stats.resolution, stats.metric
    p_res = res.p_value if eligible and res.p_value is not None else 1.0
    p_ni = case.non_inferiority_p  # an ineligible pair's saving is already at p = 1
    p_saving = saving.p_value if eligible and saving.p_value is not None else 1.0
    return [
        Claim(case.candidate, ClaimPath.RESOLUTION, p_res),
        Claim(case.candidate, ClaimPath.SAVING, max(p_saving, 1.0 if p_ni is None else p_ni)),
    ]


def judge_statistically(
    cases: Sequence[StatisticalCase], policy: PromotionPolicy
) -> dict[str, PolicyVerdict]:
    """The statistical policy's verdict on every implementation pair of one sweep, by candidate.

    Holm's correction runs over the claims of one family (:attr:`StatisticalCase.family`): the
    candidates that compete for one agent's incumbent, never one agent's against another's.
    """
    screened: dict[str, tuple[GateVerdict, DecisionKind | None]] = {}
    for case in cases:
        verdict = _screen(case, policy)
        screened[case.candidate] = (verdict, blocking_kind(verdict))
    margin = policy.non_inferiority_margin_pts
    cases = [attrs.evolve(c, non_inferiority_p=non_inferiority_p(c.statistics, margin)) for c in cases]
    results: dict[tuple[str, ClaimPath], HolmResult] = {}
    for family in dict.fromkeys(case.family for case in cases):
        members = [case for case in cases if case.family == family]
        claims = [claim for case in members for claim in _claims(case, screened[case.candidate][1] is None)]
        results.update(holm(claims, policy.analysis.alpha))
    out: dict[str, PolicyVerdict] = {}
    for case in cases:
        verdict, forced = screened[case.candidate]
        kind = forced if forced is not None else _conclude(case, policy, verdict, results)
        out[case.candidate] = PolicyVerdict(DecisionPolicy.STATISTICAL, kind, tuple(verdict.reasons))
    return out
