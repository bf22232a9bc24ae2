"""Tests that kill the statistical gate's mutants (``scripts/mutation --modules promotion/statistical_gate``).

Exact reasons (every word a reader sees), the rule boundaries (the non-inferiority margin, the
credible-regression bound at 0, the saving at exactly the asked minimum), the task list a case
names, and the p = 1 an ineligible pair enters Holm's family with. Boundaries are set on a real
analysis of real rows, with the summary's interval or estimate moved to the boundary.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from tests.unit.promotion.promotion_fixtures import MODEL, record
from tests.unit.promotion.test_statistical_gate import (
    INSUFFICIENT,
    KEEP,
    PROMOTE,
    STATISTICAL,
    arm_rows,
    cheaper,
    only,
    task_rows,
    wins,
)
from wfbench.domain.promotion.decision import GateVerdict
from wfbench.domain.promotion.judging import PairSpec, judge_rows
from wfbench.domain.promotion.policy import DecisionPolicy, PromotionPolicy
from wfbench.domain.promotion.statistical_gate import (
    Claim,
    ClaimPath,
    HolmResult,
    StatisticalCase,
    _claims,
    _not_promoted,
    holm,
    judge_statistically,
)
from wfbench.domain.results.rows import Row
from wfbench.domain.statistics.analysis import non_inferiority_p
from wfbench.domain.statistics.planning import detectability


def case_of(rows: list[Row], policy: PromotionPolicy = STATISTICAL, **resolution: Any) -> StatisticalCase:
    """The pair's real case, its resolution summary changed by ``resolution`` (analysis scale)."""
    table, (decision,) = judge_rows(rows, [PairSpec("cand", "inc")], model=MODEL, policy=policy)
    stats = decision.statistics
    stats = attrs.evolve(stats, resolution=attrs.evolve(stats.resolution, **resolution))
    p_ni = non_inferiority_p(stats, policy.non_inferiority_margin_pts)
    return StatisticalCase(table, stats, "cand", "inc", MODEL, non_inferiority_p=p_ni)


def verdict_of(case: StatisticalCase, policy: PromotionPolicy = STATISTICAL):
    return judge_statistically([case], policy)["cand"]


# --- exact reasons ---------------------------------------------------------------------------


def test_a_resolution_promotion_states_effect_interval_p_value_threshold_and_family() -> None:
    assert only(wins(10)).reasons == (
        "resolution improves by +55.6 points (90% interval [+38.9, +66.7]; one-sided p = 0.0046 "
        "<= 0.0250, Holm over 2 promotion claim(s))",
    )


def test_a_saving_promotion_states_both_paths_and_non_inferiority_in_points_and_percent() -> None:
    assert only(cheaper(0.8)).reasons == (
        "no credible resolution gain: +0.0 points (90% interval [-8.3, +8.3]; one-sided p = 0.6381 "
        "> 0.0500, Holm over 2 promotion claim(s))",
        "resolution is shown non-inferior: +0.0 points, 90% interval [-8.3, +8.3]; against the "
        "-10.0-point margin one-sided p = 0.0179 <= 0.0250, Holm over 2 promotion claim(s)",
        "cost_usd saving 20.0% (90% interval [19.8%, 20.2%]; one-sided p = 0.0046 <= 0.0250, "
        "Holm over 2 promotion claim(s); at least 5.0% required)",
    )


def test_a_credible_regression_is_said_in_full() -> None:
    rows: list[Row] = []
    for index in range(12):
        rows += task_rows(f"t{index:02d}", "111", "100", cand_costs=(0.1, 0.1, 0.1))

    assert only(rows).reasons == (
        "no credible resolution gain: -66.7 points (90% interval [-66.7, -66.7]; one-sided p = 1.0000 "
        "> 0.0250, Holm over 2 promotion claim(s))",
        "resolution is not shown non-inferior: -66.7 points, 90% interval [-66.7, -66.7]; a credible "
        "regression (the whole interval is below 0)",
    )


def test_a_missing_model_names_the_prompt_evidence() -> None:
    assert only(wins(10), model=None).reasons == (
        "a named model is required so prompt evidence cannot drift",
    )


def test_no_paired_task_at_all_is_said() -> None:
    decision = only([record("x", "cand", 0)])

    assert decision.kind is INSUFFICIENT
    assert decision.reasons == ("x: both inc and cand are required", "no paired task results were found")


def test_too_few_tasks_says_why_no_test_could_decide() -> None:
    decision = only([row for row in wins(4) if row.task < "t04"])

    assert decision.reasons == (
        "the statistical policy needs at least 5 paired tasks (got 4); with fewer, no exact test can "
        "show an improvement at the policy's level",
    )


def test_unequal_scored_runs_name_their_task() -> None:
    rows = [r for r in wins(10) if not (r.task == "t00" and r.arm == "cand" and r.run == 2)]
    rows += [record("t00", "cand", 2, resolved=False, error_kind="skill-not-invoked")]
    rows += [record("t00", "cand", 3, resolved=True), record("t00", "inc", 3, resolved=True)]

    assert (
        "t00: paired arms have different scored run counts (4/3 scored; runs that never invoked the "
        "skill under test are not scored)"
    ) in only(rows).reasons


def test_a_task_missing_an_arm_does_not_stop_the_checks_of_the_tasks_after_it() -> None:
    rows = arm_rows("a00", "inc", "111", [1.0] * 3) + wins(10)
    rows += arm_rows("t12", "inc", "1", [1.0]) + arm_rows("t12", "cand", "1", [1.0])

    reasons = only(rows).reasons

    assert reasons[0] == "a00: both inc and cand are required"
    assert "t12: needs at least 3 valid runs per arm (got 1/1)" in " ".join(reasons)
    assert "no paired task results were found" not in reasons


def test_a_case_judges_only_the_tasks_it_names() -> None:
    rows = wins(10) + arm_rows("t99", "inc", "111", [1.0] * 3)
    case = case_of(rows)

    assert verdict_of(case).kind is INSUFFICIENT
    named = attrs.evolve(case, tasks=[f"t{i:02d}" for i in range(12)])
    assert verdict_of(named).kind is PROMOTE


# --- the non-inferiority boundaries ----------------------------------------------------------


def test_the_saving_claim_is_an_intersection_union_test_of_saving_and_non_inferiority() -> None:
    """Its p-value is the larger of the saving's and non-inferiority's; none without quality signal."""
    case = case_of(cheaper(0.8))
    saving = case.statistics.metric.p_value
    assert saving is not None

    for p_ni, expected in ((0.3, 0.3), (saving / 2, saving), (None, 1.0)):
        claims = _claims(attrs.evolve(case, non_inferiority_p=p_ni), eligible=True)
        assert claims[1] == Claim("cand", ClaimPath.SAVING, expected)


@pytest.mark.parametrize(
    ("high", "kind", "credible"),
    [(-0.001, KEEP, True), (0.0, INSUFFICIENT, False), (0.005, INSUFFICIENT, False)],
    ids=["below-0", "at-0", "half-a-point"],
)
def test_only_a_whole_interval_below_0_keeps_the_incumbent_on_resolution(
    high: float, kind: object, credible: bool
) -> None:
    verdict = verdict_of(case_of(wins(10), interval=(-0.5, high), p_value=0.9))

    assert verdict.kind is kind
    assert ("a credible regression" in "\n".join(verdict.reasons)) is credible


def test_a_saving_of_exactly_the_minimum_promotes() -> None:
    rows = cheaper(0.8)
    summary = case_of(rows).statistics.metric
    assert summary.estimate is not None
    exact = summary.scale.present(summary.estimate)
    policy = PromotionPolicy(decision_policy=DecisionPolicy.STATISTICAL, min_improvement_pct=exact)

    assert verdict_of(case_of(rows, policy), policy).kind is PROMOTE
    above = attrs.evolve(policy, min_improvement_pct=exact + 1e-9)
    assert verdict_of(case_of(rows, above), above).kind is INSUFFICIENT  # the interval reaches it


def test_a_saving_interval_wholly_below_the_minimum_keeps_the_incumbent() -> None:
    policy = PromotionPolicy(decision_policy=DecisionPolicy.STATISTICAL, min_improvement_pct=20.3)

    verdict = verdict_of(case_of(cheaper(0.8), policy), policy)

    assert verdict.kind is KEEP
    assert "the whole interval is below the 20.3% required" in "\n".join(verdict.reasons)


# --- Holm's family ---------------------------------------------------------------------------


@pytest.mark.parametrize("rows", [wins(10), cheaper(0.8)], ids=["resolution-gain", "saving"])
def test_an_ineligible_pair_enters_the_family_at_p_1_and_an_eligible_one_at_its_own_p(
    rows: list[Row],
) -> None:
    case = case_of(rows)
    res, saving = case.statistics.resolution.p_value, case.statistics.metric.p_value
    assert min(p for p in (res, saving) if p is not None) < 0.01  # a p-value a mutant would let through

    blocked = _claims(case, eligible=False)
    eligible = _claims(case, eligible=True)

    assert [(c.path, c.p_value) for c in blocked] == [(ClaimPath.RESOLUTION, 1.0), (ClaimPath.SAVING, 1.0)]
    assert [(c.path, c.p_value) for c in eligible] == [
        (ClaimPath.RESOLUTION, res),
        (
            ClaimPath.SAVING,
            max(saving, case.non_inferiority_p if case.non_inferiority_p is not None else 1.0),
        ),
    ]


def test_a_p_value_exactly_at_its_holm_threshold_is_significant() -> None:
    results = holm([Claim("a", ClaimPath.RESOLUTION, 0.025), Claim("a", ClaimPath.SAVING, 0.5)], 0.05)

    assert results[("a", ClaimPath.RESOLUTION)] == HolmResult(0.025, True, 2)
    assert results[("a", ClaimPath.SAVING)] == HolmResult(0.05, False, 2)


def test_a_decision_carries_policy_and_statistics_whenever_it_has_either() -> None:
    """``policy``, ``by_policy`` and ``statistics`` appear with statistics or verdicts alone."""
    decision = only(wins(10))
    assert decision.statistics is not None
    assert decision.verdicts

    verdicts_only = attrs.evolve(decision, statistics=None).to_mapping()
    statistics_only = attrs.evolve(decision, verdicts=()).to_mapping()
    neither = attrs.evolve(decision, statistics=None, verdicts=()).to_mapping()

    assert verdicts_only["statistics"] is None
    assert verdicts_only["policy"] == "statistical"
    assert statistics_only["statistics"] == decision.statistics.to_mapping()
    assert statistics_only["by_policy"] == {}
    assert not {"policy", "by_policy", "statistics"} & set(neither)


# --- why nothing was promoted (#27's labels) --------------------------------------------------


def test_a_saving_short_of_the_ask_with_resolution_shown_non_inferior_names_only_the_saving() -> None:
    """Non-inferiority shown, the saving's interval reaching past the ask but its estimate short:
    insufficient evidence, said as "no credible saving", no non-inferiority reason, and the
    detectability sentence of the gate's design."""
    rows = cheaper(0.8)
    summary = case_of(rows).statistics.metric
    exact = summary.scale.present(summary.estimate)
    policy = PromotionPolicy(decision_policy=DecisionPolicy.STATISTICAL, min_improvement_pct=exact + 1e-9)
    case = case_of(rows, policy)
    assert case.non_inferiority_p is not None
    assert case.non_inferiority_p <= 0.025

    verdict = verdict_of(case, policy)

    assert verdict.kind is INSUFFICIENT
    assert not any(r.startswith("resolution is not shown non-inferior") for r in verdict.reasons)
    assert any(r.startswith("no credible saving: ") for r in verdict.reasons)
    reach = detectability(case.statistics, design=policy.gate_design(2))
    assert verdict.reasons[-1] == f"insufficient evidence: {reach.sentence}"


def test_a_saving_without_an_interval_is_neither_credible_nor_below_the_ask() -> None:
    case = case_of(wins(0))
    stats = case.statistics
    stats = attrs.evolve(stats, metric=attrs.evolve(stats.metric, interval=None))
    verdict = verdict_of(attrs.evolve(case, statistics=stats))

    assert verdict.kind is INSUFFICIENT
    assert not any("saving" in r.split(":")[0] for r in verdict.reasons)


#: A 1-point margin: cheaper(0.8)'s credible 20 % saving can no longer show non-inferiority.
TIGHT = PromotionPolicy(decision_policy=DecisionPolicy.STATISTICAL, non_inferiority_margin_pts=1.0)


def with_metric(case: StatisticalCase, **metric: Any) -> StatisticalCase:
    """``case`` with its metric summary changed by ``metric`` (analysis scale)."""
    stats = case.statistics
    return attrs.evolve(case, statistics=attrs.evolve(stats, metric=attrs.evolve(stats.metric, **metric)))


def test_a_credible_saving_without_non_inferiority_is_said_in_full_with_the_gates_design() -> None:
    verdict = verdict_of(case_of(cheaper(0.8), TIGHT), TIGHT)

    assert verdict.kind is INSUFFICIENT
    assert verdict.reasons[1:3] == (
        "the saving alone is credible but the saving claim also needs resolution shown non-inferior: "
        "cost_usd saving 20.0% (90% interval [19.8%, 20.2%]; one-sided p = 0.0046 <= 0.0250, "
        "Holm over 2 promotion claim(s); at least 5.0% required)",
        "resolution is not shown non-inferior: +0.0 points, 90% interval [-8.3, +8.3]; against the "
        "-1.0-point margin one-sided p = 0.3621 > 0.0250, Holm over 2 promotion claim(s)",
    )
    assert "a saving also needs resolution shown within 1 points" in verdict.reasons[3]


def test_a_saving_p_value_exactly_at_its_threshold_is_credible_alone() -> None:
    case = with_metric(case_of(cheaper(0.8), TIGHT), p_value=0.025)

    reasons = verdict_of(case, TIGHT).reasons

    assert reasons[1].startswith("the saving alone is credible but the saving claim also needs ")
    assert "one-sided p = 0.0250 <= 0.0250, Holm over 2" in reasons[1]


def test_a_saving_of_exactly_the_ask_is_credible_alone() -> None:
    summary = case_of(cheaper(0.8)).statistics.metric
    exact = summary.scale.present(summary.estimate)
    policy = attrs.evolve(TIGHT, min_improvement_pct=exact)

    reasons = verdict_of(case_of(cheaper(0.8), policy), policy).reasons

    assert reasons[1].startswith("the saving alone is credible but the saving claim also needs ")


def test_a_saving_that_is_not_significant_says_its_p_value_is_above_the_threshold() -> None:
    verdict = verdict_of(case_of(cheaper(0.97, noise=0.3)))

    assert verdict.kind is INSUFFICIENT
    assert verdict.reasons[1] == (
        "no credible saving: cost_usd saving 0.6% (90% interval [-5.1%, 5.3%]; one-sided p = 0.4502 "
        "> 0.0250, Holm over 2 promotion claim(s); at least 5.0% required)"
    )


def test_non_inferiority_at_exactly_its_threshold_is_shown() -> None:
    """The saving claim meets its threshold but the saving misses the ask by a hair: the only
    reason given is the saving, never non-inferiority."""
    summary = case_of(cheaper(0.8)).statistics.metric
    exact = summary.scale.present(summary.estimate)
    policy = PromotionPolicy(decision_policy=DecisionPolicy.STATISTICAL, min_improvement_pct=exact + 1e-9)
    case = case_of(cheaper(0.8), policy)
    assert case.non_inferiority_p is not None
    at_threshold = HolmResult(case.non_inferiority_p, True, 2)  # the p-value is exactly the threshold

    verdict = GateVerdict()
    kind = _not_promoted(case, policy, verdict, at_threshold)

    assert kind is INSUFFICIENT
    assert not any(r.startswith("resolution is not shown non-inferior") for r in verdict.reasons)


def test_a_saving_interval_reaching_exactly_the_ask_is_not_wholly_below_it() -> None:
    summary = case_of(cheaper(0.8)).statistics.metric
    high = summary.scale.present(summary.interval[1])
    policy = PromotionPolicy(decision_policy=DecisionPolicy.STATISTICAL, min_improvement_pct=high)

    assert verdict_of(case_of(cheaper(0.8), policy), policy).kind is INSUFFICIENT
    below = attrs.evolve(policy, min_improvement_pct=high + 1e-9)
    assert verdict_of(case_of(cheaper(0.8), below), below).kind is KEEP
