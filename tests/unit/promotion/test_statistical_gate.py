"""The statistical gate policy: preconditions, non-inferiority, resolution, saving, MDE, Holm.

Every rule has a test here that fails when the rule is removed; the reference's decision is
recorded beside the statistical one.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from tests.unit.promotion.promotion_fixtures import MODEL, record
from wfbench.domain.promotion.decision import DecisionKind
from wfbench.domain.promotion.judging import PairSpec, judge_rows
from wfbench.domain.promotion.policy import DecisionPolicy, PromotionPolicy
from wfbench.domain.promotion.statistical_gate import Claim, ClaimPath, holm
from wfbench.domain.results.rows import Row

STATISTICAL = PromotionPolicy(decision_policy=DecisionPolicy.STATISTICAL)
PROMOTE, KEEP, INSUFFICIENT = (
    DecisionKind.PROMOTE,
    DecisionKind.KEEP_INCUMBENT,
    DecisionKind.INSUFFICIENT_EVIDENCE,
)


def arm_rows(task: str, arm: str, pattern: str, costs: Sequence[float], **fields: object) -> list[Row]:
    """``pattern`` "110": three runs, the first two resolved (unresolved ones oracle-failed)."""
    out = []
    for run, (flag, cost) in enumerate(zip(pattern, costs, strict=True)):
        resolved = flag == "1"
        extra = {} if resolved else {"error_kind": "oracle-failed"}
        out.append(record(task, arm, run, resolved=resolved, cost_usd=cost, **(extra | dict(fields))))  # type: ignore[arg-type]
    return out


def task_rows(
    task: str,
    inc: str,
    cand: str,
    inc_costs: Sequence[float] = (1.0, 1.0, 1.0),
    cand_costs: Sequence[float] = (1.0, 1.0, 1.0),
    candidate: str = "cand",
) -> list[Row]:
    return arm_rows(task, "inc", inc, inc_costs) + arm_rows(task, candidate, cand, cand_costs)


def decide(rows: list[Row], policy: PromotionPolicy = STATISTICAL, model: str | None = MODEL, pairs=None):
    specs = pairs or [PairSpec("cand", "inc")]
    return judge_rows(rows, specs, model=model, policy=policy)[1]


def only(rows: list[Row], **kw):
    (decision,) = decide(rows, **kw)
    return decision


def joined(decision) -> str:
    return "\n".join(decision.reasons)


def wins(count: int, total: int = 12) -> list[Row]:
    """``count`` tasks where the candidate resolves 3/3 against the incumbent's 1/3; the rest tie at 2/3."""
    rows: list[Row] = []
    for index in range(total):
        task = f"t{index:02d}"
        rows += task_rows(task, "100", "111") if index < count else task_rows(task, "110", "110")
    return rows


# --- promotion on resolution ----------------------------------------------------------------


def test_a_credible_resolution_gain_promotes() -> None:
    decision = only(wins(10))

    assert decision.kind is PROMOTE
    assert decision.policy is DecisionPolicy.STATISTICAL
    assert "resolution improves by +55.6 points" in joined(decision)
    assert "Holm over 2 promotion claim(s)" in joined(decision)


def test_one_task_regressing_does_not_block_a_candidate_better_on_the_rest() -> None:
    """The reference blocks on any per-task drop; the statistical policy weighs the whole set."""
    rows = wins(11)[: 11 * 6] + task_rows("t11", "111", "110")

    decision = only(rows)
    reference = next(v for v in decision.verdicts if v.policy is DecisionPolicy.REFERENCE)

    assert decision.kind is PROMOTE
    assert reference.kind is KEEP
    assert "resolution regressed" in "\n".join(reference.reasons)


def test_the_statistical_policy_decides_by_default_and_the_reference_s_verdict_is_recorded() -> None:
    rows = wins(11)[: 11 * 6] + task_rows("t11", "111", "110")

    decision = only(rows, policy=PromotionPolicy())
    chosen = only(rows, policy=PromotionPolicy(decision_policy=DecisionPolicy.REFERENCE))

    assert decision.policy is DecisionPolicy.STATISTICAL
    assert decision.kind is PROMOTE
    assert decision.to_mapping()["by_policy"]["reference"]["decision"] == "keep_incumbent"
    assert chosen.policy is DecisionPolicy.REFERENCE
    assert chosen.kind is KEEP
    assert chosen.to_mapping()["by_policy"]["statistical"]["decision"] == "promote"


def test_a_gain_on_too_few_tasks_is_not_credible() -> None:
    decision = only(wins(2))

    assert decision.kind is not PROMOTE
    assert "no credible resolution gain" in joined(decision)


# --- preconditions --------------------------------------------------------------------------


def test_a_missing_model_is_insufficient() -> None:
    decision = only(wins(10), model=None)

    assert decision.kind is INSUFFICIENT
    assert "a named model is required" in joined(decision)


def test_fewer_than_min_tasks_is_insufficient() -> None:
    rows = [row for row in wins(4) if row.task < "t04"]

    decision = only(rows)

    assert decision.kind is INSUFFICIENT
    assert "needs at least 5 paired tasks (got 4)" in joined(decision)
    lenient = only(rows, policy=PromotionPolicy(decision_policy="statistical", min_tasks=4))  # type: ignore[arg-type]
    assert "paired tasks" not in joined(lenient)


def test_too_few_runs_per_arm_is_insufficient() -> None:
    rows = wins(10) + arm_rows("t12", "inc", "1", [1.0]) + arm_rows("t12", "cand", "1", [1.0])

    decision = only(rows)

    assert decision.kind is INSUFFICIENT
    assert "t12: needs at least 3 valid runs per arm (got 1/1)" in joined(decision)


def test_an_excluded_run_is_insufficient() -> None:
    rows = wins(10) + arm_rows("t00", "cand", "0", [1.0], error_kind="session-error")

    decision = only(rows)

    assert decision.kind is INSUFFICIENT
    assert "zero excluded runs" in joined(decision)


def test_unequal_scored_runs_are_insufficient() -> None:
    rows = [r for r in wins(10) if not (r.task == "t00" and r.arm == "cand" and r.run == 2)]
    rows += [record("t00", "cand", 2, resolved=False, error_kind="skill-not-invoked")]
    rows += [record("t00", "cand", 3, resolved=True)]
    rows += [record("t00", "inc", 3, resolved=True)]

    decision = only(rows)

    assert decision.kind in (INSUFFICIENT, KEEP)
    assert "scored run counts" in joined(decision)


def test_an_unmeasured_metric_is_insufficient() -> None:
    rows = wins(10)
    rows[0] = record("t00", "inc", 0, resolved=True, cost_usd=None)

    decision = only(rows)

    assert decision.kind is INSUFFICIENT
    assert "cost_usd was not measured" in joined(decision)


def test_a_task_missing_an_arm_is_insufficient() -> None:
    decision = only(wins(10) + arm_rows("t99", "inc", "111", [1.0] * 3))

    assert decision.kind is INSUFFICIENT
    assert "t99: both inc and cand are required" in joined(decision)


def test_no_rows_at_all_is_insufficient() -> None:
    decision = only([record("x", "cand", 0)])

    assert decision.kind is INSUFFICIENT
    assert "x: both inc and cand are required" in joined(decision)


def test_the_skill_invocation_floor_holds() -> None:
    rows = [r for r in wins(12) if not (r.task == "t00" and r.arm == "cand")]
    rows += [record("t00", "cand", i, resolved=i < 2) for i in range(2)]
    rows += [record("t00", "cand", 2, resolved=False, error_kind="skill-not-invoked")]
    rows = [r for r in rows if not (r.task == "t00" and r.arm == "inc")]
    rows += [record("t00", "inc", i, resolved=i < 2) for i in range(2)]
    rows += [record("t00", "inc", 2, resolved=False, error_kind="skill-not-invoked")]

    decision = only(rows)

    assert decision.kind is KEEP
    assert "a run never invoked the skill under test; got 2/3" in joined(decision)


# --- (a) non-inferiority --------------------------------------------------------------------


def test_a_credible_regression_keeps_the_incumbent() -> None:
    rows: list[Row] = []
    for index in range(12):
        rows += task_rows(f"t{index:02d}", "111", "100", cand_costs=(0.1, 0.1, 0.1))

    decision = only(rows)

    assert decision.kind is KEEP
    assert "not shown non-inferior" in joined(decision)
    assert "credible regression" in joined(decision)


def test_an_interval_below_the_margin_but_around_0_is_insufficient_and_says_how_many_tasks_would_do() -> None:
    rows: list[Row] = []
    patterns = [
        ("111", "100"),
        ("100", "111"),
        ("110", "100"),
        ("100", "110"),
        ("111", "110"),
        ("110", "111"),
    ]
    for index in range(12):
        inc, cand = patterns[index % 6]
        rows += task_rows(f"t{index:02d}", inc, cand, cand_costs=(0.5, 0.5, 0.5))

    decision = only(rows)

    assert decision.kind is INSUFFICIENT
    assert "resolution is not shown non-inferior: +0.0 points, 90% interval [-25.0, +25.0]" in joined(
        decision
    )
    assert "the saving alone is credible but the saving claim also needs resolution shown" in joined(decision)
    assert "193 tasks at 3 runs (181 more) would show it with 80% power" in joined(decision)
    assert "credible regression" not in joined(decision)


def test_the_margin_is_the_policy_s() -> None:
    rows: list[Row] = []
    patterns = [
        ("111", "100"),
        ("100", "111"),
        ("110", "100"),
        ("100", "110"),
        ("111", "110"),
        ("110", "111"),
    ]
    for index in range(12):
        inc, cand = patterns[index % 6]
        rows += task_rows(f"t{index:02d}", inc, cand, cand_costs=(0.5, 0.5, 0.5))
    lenient = PromotionPolicy(decision_policy=DecisionPolicy.STATISTICAL, non_inferiority_margin_pts=60.0)

    assert only(rows, policy=lenient).kind is PROMOTE


# --- (c) saving, (d) detectability, (e) keep ------------------------------------------------


#: Resolution that varies by task (quality signal) with a mean effect of 0: one task each way.
SIGNAL = {0: ("110", "111"), 1: ("111", "110")}


def cheaper(factor: float, tasks: int = 12, noise: float = 0.02, signal: bool = True) -> list[Row]:
    rows: list[Row] = []
    for index in range(tasks):
        wobble = 1 + noise * ((index % 3) - 1)
        inc, cand = SIGNAL.get(index, ("111", "111")) if signal else ("111", "111")
        rows += task_rows(
            f"t{index:02d}",
            inc,
            cand,
            inc_costs=(1.0, 1.0 * wobble, 1.0),
            cand_costs=(factor, factor / wobble, factor * wobble),
        )
    return rows


def test_a_credible_saving_above_the_minimum_promotes() -> None:
    decision = only(cheaper(0.8))

    assert decision.kind is PROMOTE
    assert "cost_usd saving 20.0%" in joined(decision)
    assert "no credible resolution gain" in joined(decision)
    assert "resolution is shown non-inferior: +0.0 points" in joined(decision)


@pytest.mark.parametrize("resolved", ["111", "000"], ids=["every-run-resolved", "nothing-resolved"])
def test_a_saving_without_quality_signal_is_never_promoted(resolved: str) -> None:
    """A zero-width resolution interval (every task alike) proves nothing: a broken oracle, or a
    candidate that gives up early, looks exactly like this."""
    rows: list[Row] = []
    for index in range(6):
        rows += task_rows(f"t{index:02d}", resolved, resolved, cand_costs=(0.76, 0.75, 0.77))

    decision = only(rows)

    assert decision.kind is INSUFFICIENT
    assert "no quality signal on resolution (+0.0 points, 90% interval [+0.0, +0.0])" in joined(decision)


def test_a_credible_saving_below_the_minimum_keeps_the_incumbent() -> None:
    policy = PromotionPolicy(decision_policy=DecisionPolicy.STATISTICAL, min_improvement_pct=30.0)

    decision = only(cheaper(0.8), policy=policy)

    assert decision.kind is KEEP
    assert "no credible saving" in joined(decision)
    assert "no credible improvement: this sweep" in joined(decision)


def test_a_sweep_where_nothing_varied_cannot_say_what_it_could_detect() -> None:
    decision = only(cheaper(1.0, noise=0.0, signal=False))

    assert decision.kind is INSUFFICIENT
    assert "cannot say what it could detect" in joined(decision)


def test_a_sweep_too_small_to_show_non_inferiority_is_insufficient_and_says_how_many_tasks_would() -> None:
    rows: list[Row] = []
    for index in range(6):
        spread = (0.3, 1.0, 2.5) if index % 2 else (2.0, 0.6, 0.9)
        inc, cand = SIGNAL.get(index, ("111", "111"))
        rows += task_rows(f"t{index:02d}", inc, cand, inc_costs=spread, cand_costs=spread[::-1])

    decision = only(rows)

    assert decision.kind is INSUFFICIENT
    assert "resolution is not shown non-inferior: +0.0 points, 90% interval [-16.7, +16.7]" in joined(
        decision
    )
    assert "37 tasks at 3 runs (31 more) would show it with 80% power" in joined(decision)


def test_no_change_at_all_keeps_the_incumbent() -> None:
    decision = only(cheaper(1.0))

    assert decision.kind is KEEP
    assert "no credible saving: cost_usd saving 0.0% (90% interval [-0.3%, 0.3%]" in joined(decision)
    assert "the whole interval is below the 5.0% required" in joined(decision)


# --- Holm across candidates ------------------------------------------------------------------


def test_holm_steps_down_and_stops_at_the_first_miss() -> None:
    claims = [
        Claim("a", ClaimPath.RESOLUTION, 0.01),
        Claim("a", ClaimPath.SAVING, 0.04),
        Claim("b", ClaimPath.RESOLUTION, 0.03),
        Claim("b", ClaimPath.SAVING, 0.5),
    ]

    result = holm(claims, 0.05)

    assert result[("a", ClaimPath.RESOLUTION)].rejected
    assert result[("a", ClaimPath.RESOLUTION)].threshold == 0.0125
    assert not result[("b", ClaimPath.RESOLUTION)].rejected  # 0.03 > 0.05/3
    assert not result[("a", ClaimPath.SAVING)].rejected
    assert result[("a", ClaimPath.SAVING)].threshold == 0.025
    assert result[("b", ClaimPath.SAVING)].threshold == 0.05


def test_holm_marks_a_claim_that_met_its_threshold_after_the_stop() -> None:
    result = holm([Claim("a", ClaimPath.RESOLUTION, 0.03), Claim("a", ClaimPath.SAVING, 0.04)], 0.05)

    assert not result[("a", ClaimPath.SAVING)].rejected
    assert result[("a", ClaimPath.SAVING)].stopped
    assert not result[("a", ClaimPath.RESOLUTION)].stopped


def test_holm_rejects_everything_when_every_p_value_is_small() -> None:
    result = holm([Claim("a", ClaimPath.RESOLUTION, 0.001), Claim("b", ClaimPath.RESOLUTION, 0.002)], 0.05)

    assert all(r.rejected for r in result.values())


def test_the_family_spans_every_candidate_of_the_sweep() -> None:
    rows = wins(10) + [
        r.__class__(
            **{
                **{f: getattr(r, f) for f in ("task", "run", "ok", "resolved", "error_kind", "cost_usd")},
                "arm": "cand2",
            }
        )
        for r in wins(10)
        if r.arm == "cand"
    ]
    pairs = [PairSpec("cand", "inc"), PairSpec("cand2", "inc")]

    first, second = decide(rows, pairs=pairs)

    assert "Holm over 4 promotion claim(s)" in joined(first)
    assert first.kind is PROMOTE
    assert second.kind is PROMOTE


def test_a_blocked_candidate_s_claims_are_never_significant() -> None:
    rows = wins(10)
    for index in range(10):
        rows += arm_rows(f"t{index:02d}", "cand2", "111", [1.0, 1.0, 1.0])
    pairs = [PairSpec("cand", "inc"), PairSpec("cand2", "inc")]

    first, second = decide(rows, pairs=pairs, model=MODEL)

    assert second.kind is INSUFFICIENT  # t10, t11 lack cand2
    assert first.kind is PROMOTE


@pytest.mark.parametrize("policy", [PromotionPolicy(), STATISTICAL])
def test_review_pairs_keep_the_review_gate_under_either_policy(policy: PromotionPolicy) -> None:
    flags = {"review_verdict_correct": True, "review_clean_control": False, "review_clean_pass": False}
    rows = [
        record(
            task,
            arm,
            run,
            review={
                "review_weighted_f1": f1,
                "review_blocker_recall": 1.0,
                "review_false_positives": 0,
                **flags,
            },
        )
        for task in ("r1", "r2")
        for arm, f1 in (("review", 0.5), ("candidate_review", 0.8))
        for run in range(3)
    ]

    (decision,) = decide(rows, policy=policy, pairs=[PairSpec("candidate_review", "review")])

    assert decision.kind is PROMOTE
    assert [v.kind for v in decision.verdicts] == [PROMOTE, PROMOTE]
    assert decision.statistics is not None
    assert decision.statistics.to_mapping()["unit"] == "points"


def test_a_measured_regression_outranks_too_few_tasks() -> None:
    rows = task_rows("t00", "111", "111")[:3]
    rows += [record("t00", "cand", i, resolved=False, error_kind="skill-not-invoked") for i in range(3)]

    decision = only(rows)

    assert decision.kind is KEEP
    assert "needs at least 5 paired tasks (got 1)" in joined(decision)
