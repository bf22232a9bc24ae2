"""The implementation gate: the reference's acceptance examples (promotion.md §8.1) and each rule."""

from __future__ import annotations

import pytest

from tests.unit.promotion.promotion_fixtures import MODEL, resolved_of, runs, same, table
from wfbench.domain.promotion.gates import DecisionKind, ImplementationTask, evaluate_candidate
from wfbench.domain.promotion.policy import METRIC_WARNING, GateKind, PromotionPolicy

INC, CAND = "workflow", "candidate_workflow"
PROMOTE, KEEP, INSUFFICIENT = (
    DecisionKind.PROMOTE,
    DecisionKind.KEEP_INCUMBENT,
    DecisionKind.INSUFFICIENT_EVIDENCE,
)


def gate(
    *groups,
    policy: PromotionPolicy | None = None,
    model: str | None = MODEL,
    inc: str = INC,
    cand: str = CAND,
    **kw,
):
    return evaluate_candidate(
        table(*groups), candidate=cand, incumbent=inc, model=model, policy=policy or PromotionPolicy(), **kw
    )


def has(decision, text: str) -> bool:
    return any(text in reason for reason in decision.reasons)


def said(decision, text: str) -> bool:
    """The exact reason is among the decision's reasons."""
    return text in decision.reasons


def pair(task: str, inc_specs, cand_specs, inc: str = INC, cand: str = CAND):
    return [*runs(task, inc, inc_specs), *runs(task, cand, cand_specs)]


# --- §8.1 acceptance examples ------------------------------------------------------------


def test_i1_two_cheaper_tasks_on_output_tokens_promote_with_the_subagent_warning() -> None:
    """I1: 12 % and 10 % fewer output tokens: promote, median 11.0, warning mentions subagents."""
    policy = PromotionPolicy(metric="output_tokens")
    inc, cand = "workflow_direct", "candidate_workflow_direct"
    rows = pair("task-a", same(3, output_tokens=1000), same(3, output_tokens=880), inc, cand)
    rows += pair("task-b", same(3, output_tokens=800), same(3, output_tokens=720), inc, cand)

    decision = gate(rows, policy=policy, inc=inc, cand=cand)

    assert decision.kind is PROMOTE
    assert decision.median_improvement_pct == 11.0
    assert decision.metric_warning is not None
    assert "subagent" in decision.metric_warning
    assert decision.gate is GateKind.IMPLEMENTATION


def test_i2_turn_metric_carries_the_warning_and_duration_does_not() -> None:
    """I2: num_turns stamps the main-loop warning; duration_s does not."""
    rows = pair("task-a", same(3, num_turns=10), same(3, num_turns=8))

    turns = gate(rows, policy=PromotionPolicy(metric="num_turns"))
    duration = gate(rows, policy=PromotionPolicy(metric="duration_s"))

    assert (turns.metric, turns.metric_warning) == ("num_turns", METRIC_WARNING)
    assert METRIC_WARNING.startswith("WARNING: token and turn metrics count only the main-loop session")
    assert duration.metric_warning is None


def test_i3_a_cheaper_candidate_that_resolves_less_keeps_the_incumbent() -> None:
    """I3: 3/3 at 0.5 against 2/3 at 0.1: quality first, keep_incumbent."""
    decision = gate(pair("task-a", same(3, cost_usd=0.5), resolved_of(2, 3, cost_usd=0.1)))

    assert decision.kind is KEEP
    assert has(decision, "resolution regressed from 100% to 67%")


def test_i4_one_run_without_a_model_is_insufficient_for_both_reasons() -> None:
    """I4: no model and one run per arm: insufficient_evidence naming both causes.

    The reference's reason says "a named --model": the domain is used by tools without that flag,
    so wfbench's reason names the model, not a CLI option (docs/domain.md §10).
    """
    decision = gate(pair("task-a", same(1), same(1)), model=None)

    assert decision.kind is INSUFFICIENT
    assert has(decision, "a named model is required so prompt evidence cannot drift")
    assert has(decision, "task-a: needs at least 3 valid runs per arm (got 1/1)")


def test_i5_one_task_over_the_regression_cap_keeps_the_incumbent() -> None:
    """I5: +50 % on one task cannot buy a −25 % regression on another."""
    policy = PromotionPolicy(metric="output_tokens")
    rows = pair("task-a", same(3, output_tokens=1000), same(3, output_tokens=500))
    rows += pair("task-b", same(3, output_tokens=1000), same(3, output_tokens=1250))

    decision = gate(rows, policy=policy)

    assert decision.kind is KEEP
    assert has(decision, "task-b: output_tokens regressed 25.0%, above the 20.0% task cap")


def test_i6_an_excluded_run_makes_the_pair_uneven_and_insufficient() -> None:
    """I6: a cleanup-failure row is excluded: cost 0.6 over 2 valid runs; insufficient."""
    cand = [
        {"cost_usd": 0.5},
        {"cost_usd": 0.7},
        {"cost_usd": 100.0, "resolved": False, "error_kind": "cleanup-failure"},
    ]
    decision = gate(pair("task-a", same(3, cost_usd=1.0), cand))

    (row,) = decision.tasks
    assert (row.candidate.cost_usd, row.candidate.valid_runs, row.candidate.excluded_runs) == (0.6, 2, 1)
    assert decision.kind is INSUFFICIENT
    assert has(decision, "needs at least 3 valid runs")
    assert has(decision, "task-a: paired arms have different valid run counts (3/2 valid; 0/1 excluded)")


def test_i7_the_default_metric_is_cost_and_half_the_cost_promotes() -> None:
    """I7: 3× cost 1.0 against 3× cost 0.5 under the default policy: promote on cost_usd."""
    decision = gate(pair("task-a", same(3, cost_usd=1.0), same(3, cost_usd=0.5)))

    assert decision.kind is PROMOTE
    assert (decision.metric, decision.metric_warning) == ("cost_usd", None)
    assert has(decision, "median cost_usd improvement is 50.0% (required 5.0%)")


def test_i8_an_unmeasured_cost_cannot_be_ranked() -> None:
    """I8: one candidate cost is None: insufficient_evidence."""
    decision = gate(pair("task-a", same(3), [{"cost_usd": 0.1}, {"cost_usd": None}, {"cost_usd": 0.1}]))

    assert decision.kind is INSUFFICIENT
    assert said(
        decision,
        "task-a: cost_usd was not measured on every run in both paired arms; cannot rank on it "
        "(fix cost capture or choose another metric)",
    )


def test_i9_four_valid_against_three_valid_plus_a_session_error_is_insufficient() -> None:
    """I9: the task row records 1 candidate exclusion and 0 incumbent exclusions."""
    cand = [*same(3), {"resolved": False, "error_kind": "session-error"}]
    decision = gate(pair("task-a", same(4), cand))

    (row,) = decision.tasks
    assert decision.kind is INSUFFICIENT
    assert has(decision, "different valid run counts")
    assert (row.to_mapping()["candidate_excluded_runs"], row.to_mapping()["incumbent_excluded_runs"]) == (
        1,
        0,
    )


def test_i10_unverified_evidence_rows_block_promotion_even_with_three_clean_runs() -> None:
    """I10: 3 clean runs plus 7 evidence-unverified: valid 3, resolved 3, still insufficient."""
    cand = [*same(3, cost_usd=0.01), *same(7, resolved=False, error_kind="evidence-unverified")]
    decision = gate(pair("task-a", same(3, cost_usd=1.0), cand))

    (row,) = decision.tasks
    assert (row.candidate.valid_runs, row.candidate.resolved) == (3, 3)
    assert decision.kind is INSUFFICIENT
    assert has(decision, "task-a: promotion requires zero excluded runs in both paired arms (got 0/7)")


def test_i11_a_one_run_margin_under_the_floor_keeps_the_incumbent() -> None:
    """I11: 1/3 against 2/3: the incumbent resolved, so the candidate must resolve every run."""
    decision = gate(pair("task-a", resolved_of(1, 3), resolved_of(2, 3)))

    assert decision.kind is KEEP
    assert has(
        decision,
        "task-a: candidate must resolve every valid run for the oracle-backed quality floor "
        "(the incumbent resolves 1/3; got 2/3)",
    )


def test_i12a_a_task_neither_arm_resolved_supplies_no_quality_signal() -> None:
    """I12a: both 0/3 at very different costs: ungated, insufficient, floor not met."""
    decision = gate(pair("task-a", resolved_of(0, 3, cost_usd=1.0), resolved_of(0, 3, cost_usd=0.01)))

    (row,) = decision.tasks
    assert decision.kind is INSUFFICIENT
    assert decision.ungated_tasks == ("task-a",)
    assert said(decision, "no task supplied quality signal: neither arm resolved a run anywhere in the set")
    assert row.candidate_quality_floor_met is False


def test_i12b_two_of_three_on_both_sides_fails_the_floor() -> None:
    """I12b: both 2/3: gated, and the candidate misses the quality floor."""
    decision = gate(pair("task-a", resolved_of(2, 3, cost_usd=1.0), resolved_of(2, 3, cost_usd=0.01)))

    assert decision.kind is KEEP
    assert has(decision, "oracle-backed quality floor")


def _i13(impossible_cost: float):
    rows = pair("task-a", resolved_of(1, 3, cost_usd=1.0), resolved_of(3, 3, cost_usd=1.0))
    rows += pair(
        "task-impossible", resolved_of(0, 3, cost_usd=1.0), resolved_of(0, 3, cost_usd=impossible_cost)
    )
    return gate(rows)


def test_i13_an_impossible_task_leaves_the_gate_and_the_margin_promotes() -> None:
    """I13: margin 2 on task-a promotes; task-impossible is ungated and named once."""
    decision = _i13(1.3)

    assert decision.kind is PROMOTE
    assert decision.ungated_tasks == ("task-impossible",)
    assert decision.gated_tasks == ("task-a",)
    assert [row.gated for row in decision.tasks] == [True, False]
    assert decision.median_improvement_pct == 0.0
    assert not has(decision, "above the")
    expected = (
        "not gated on 1 task(s) neither arm resolved: task-impossible (evidence base: 1/2 paired tasks gated)"
    )
    assert [reason for reason in decision.reasons if reason.startswith("not gated")] == [expected]
    assert said(
        decision,
        "candidate improves total task resolution by 2 runs (at least 2 required) with no task regression",
    )


def test_i14_an_ungated_task_over_the_failed_task_cap_keeps_the_incumbent() -> None:
    """I14: the impossible task costs 9× as much (−800 %): keep_incumbent."""
    decision = _i13(9.0)

    assert decision.kind is KEEP
    assert decision.ungated_tasks == ("task-impossible",)
    assert has(
        decision,
        "task-impossible: cost_usd regressed 800.0% on a task neither arm resolved, "
        "above the 100.0% failed-task cap",
    )


def test_i15_a_candidate_that_never_invoked_the_skill_cannot_hide_as_an_impossible_task() -> None:
    """I15: 0/3 skill-not-invoked at 1 % of the cost stays gated and fails the floor.

    Our scored-run check also fires (3/0 scored), but a measured regression keeps the incumbent.
    """
    inc = same(3, cost_usd=1.0, resolved=False)
    cand = same(3, cost_usd=0.01, resolved=False, error_kind="skill-not-invoked")
    decision = gate(pair("task-a", inc, cand))

    (row,) = decision.tasks
    assert decision.ungated_tasks == ()
    assert (row.gated, row.skill_attributable_failure, row.quality_floor_enforced) == (True, True, True)
    assert decision.kind is KEEP
    assert has(decision, "(a run never invoked the skill under test; got 0/3)")
    assert said(
        decision,
        "task-a: paired arms have different scored run counts "
        "(3/0 scored; runs that never invoked the skill under test are not scored)",
    )


def test_i16_an_unmeasured_cost_keeps_an_unresolved_task_gated() -> None:
    """I16: both 0/3 but one candidate cost is None: gated and insufficient."""
    cand = [{"cost_usd": None}, {"cost_usd": 0.1}, {"cost_usd": 0.1}]
    decision = gate(pair("task-a", resolved_of(0, 3), [dict(s, resolved=False) for s in cand]))

    assert decision.ungated_tasks == ()
    assert decision.kind is INSUFFICIENT
    assert has(decision, "was not measured on every run")


@pytest.mark.parametrize("k", [0, 1])
def test_i17_partial_progress_on_a_task_the_incumbent_never_solves_is_not_a_floor_failure(k: int) -> None:
    """I17: k=0 leaves task-hard ungated; k=1 gates it without a floor and decides on the median."""
    rows = pair("task-a", same(3, cost_usd=1.0), same(3, cost_usd=0.5))
    rows += pair("task-hard", resolved_of(0, 3, cost_usd=1.0), resolved_of(k, 3, cost_usd=1.0))

    decision = gate(rows)

    assert decision.kind is PROMOTE
    if k == 0:
        assert decision.ungated_tasks == ("task-hard",)
        assert decision.median_improvement_pct == 50.0
    else:
        hard = decision.tasks[1]
        assert decision.ungated_tasks == ()
        assert hard.quality_floor_enforced is False
        assert not has(decision, "quality floor")
        assert said(
            decision,
            "total resolution improved by only 1 run — within the noise floor (2 required); "
            "deciding on efficiency instead",
        )
        assert decision.median_improvement_pct == 25.0


def test_i18_one_gated_task_of_three_is_too_thin_an_evidence_base() -> None:
    """I18: two impossible tasks out of three: insufficient, evidence base too thin."""
    rows = pair("task-a", resolved_of(1, 3, cost_usd=1.0), resolved_of(3, 3, cost_usd=0.1))
    for task in ("task-x", "task-y"):
        rows += pair(task, resolved_of(0, 3, cost_usd=1.0), resolved_of(0, 3, cost_usd=1.0))

    decision = gate(rows)

    assert decision.kind is INSUFFICIENT
    assert decision.gated_tasks == ("task-a",)
    assert has(
        decision, "promotion evidence base is too thin: 1/3 paired tasks are gated (at least 50% required)"
    )


def test_i19_two_more_resolved_runs_promote_at_equal_cost() -> None:
    """I19: 1/3 against 3/3 at the same cost: promote on resolution."""
    decision = gate(pair("task-a", resolved_of(1, 3), resolved_of(3, 3)))

    assert decision.kind is PROMOTE
    assert has(decision, "at least 2 required")


# --- each rule, removed, fails a test -----------------------------------------------------


def test_a_task_missing_one_arm_is_insufficient_and_produces_no_task_row() -> None:
    """A task with only incumbent rows is named and skipped."""
    rows = pair("task-a", same(3, cost_usd=1.0), same(3, cost_usd=0.5)) + runs("task-b", INC, same(3))

    decision = gate(rows)

    assert decision.kind is INSUFFICIENT
    assert has(decision, "task-b: both workflow and candidate_workflow are required")
    assert [row.task for row in decision.tasks] == ["task-a"]


def test_a_pinned_task_set_requires_every_pinned_task() -> None:
    """``tasks`` pins the set: a pinned task without rows is insufficient."""
    rows = pair("task-a", same(3, cost_usd=1.0), same(3, cost_usd=0.5))

    assert gate(rows).kind is PROMOTE
    assert gate(rows, tasks=["task-a", "task-z"]).kind is INSUFFICIENT


def test_an_empty_table_has_no_paired_task_results() -> None:
    """No rows at all: insufficient, with the reference's reason."""
    decision = gate([])

    assert decision.kind is INSUFFICIENT
    assert decision.reasons == ("no paired task results were found",)


def test_an_empty_model_name_counts_as_no_model() -> None:
    """An empty string is not a named model."""
    decision = gate(pair("task-a", same(3, cost_usd=1.0), same(3, cost_usd=0.5)), model="")

    assert decision.kind is INSUFFICIENT


def test_a_zero_incumbent_metric_cannot_be_ranked() -> None:
    """An incumbent cost of 0 gives no improvement figure: insufficient."""
    decision = gate(pair("task-a", same(3, cost_usd=0.0), same(3, cost_usd=0.0)))

    assert decision.kind is INSUFFICIENT
    assert has(decision, "task-a: incumbent cost_usd is zero; choose a metric with signal")
    assert decision.tasks[0].improvement_pct is None


def test_a_regression_exactly_at_the_task_cap_is_tolerated() -> None:
    """−20.0 % is at the cap, not above it; −20.1 % is above it."""
    at_cap = gate(
        pair("task-a", same(3, cost_usd=1.0), same(3, cost_usd=1.2)),
        policy=PromotionPolicy(min_improvement_pct=-50),
    )
    over = gate(
        pair("task-a", same(3, cost_usd=1.0), same(3, cost_usd=1.201)),
        policy=PromotionPolicy(min_improvement_pct=-50),
    )

    assert at_cap.kind is PROMOTE
    assert over.kind is KEEP


def test_an_ungated_task_exactly_at_the_failed_task_cap_is_tolerated() -> None:
    """An impossible task at exactly twice the cost (−100.0 %) is not over the cap."""
    rows = pair("task-a", resolved_of(1, 3, cost_usd=1.0), resolved_of(3, 3, cost_usd=1.0))
    rows += pair("task-impossible", resolved_of(0, 3, cost_usd=1.0), resolved_of(0, 3, cost_usd=2.0))

    assert gate(rows).kind is PROMOTE


def test_the_median_must_reach_the_minimum_improvement() -> None:
    """5.0 % promotes under the default policy; 4.9 % keeps the incumbent."""
    exactly = gate(pair("task-a", same(3, cost_usd=1.0), same(3, cost_usd=0.95)))
    short = gate(pair("task-a", same(3, cost_usd=1.0), same(3, cost_usd=0.951)))

    assert exactly.kind is PROMOTE
    assert short.kind is KEEP
    assert has(short, "median cost_usd improvement is 4.9% (required 5.0%)")


def test_the_median_ignores_ungated_tasks() -> None:
    """An ungated task's cheaper spend does not feed the median."""
    rows = pair("task-a", same(3, cost_usd=1.0), same(3, cost_usd=1.0))
    rows += pair("task-b", same(3, cost_usd=1.0), same(3, cost_usd=1.0))
    rows += pair("task-impossible", resolved_of(0, 3, cost_usd=1.0), resolved_of(0, 3, cost_usd=0.1))

    decision = gate(rows)

    assert decision.median_improvement_pct == 0.0
    assert decision.kind is KEEP


def test_a_gate_without_any_improvement_figure_reports_a_zero_median() -> None:
    """All gated improvements unknown: the median is None, printed as 0.0."""
    rows = pair("task-a", same(3, cost_usd=None), same(3, cost_usd=None))

    decision = gate(rows)

    assert decision.median_improvement_pct is None


def test_insufficient_evidence_takes_precedence_over_a_regression() -> None:
    """A missing model and a resolution regression: insufficient_evidence wins."""
    decision = gate(pair("task-a", same(3), resolved_of(0, 3)), model=None)

    assert decision.kind is INSUFFICIENT
    assert has(decision, "resolution regressed")


def test_a_resolution_win_does_not_override_a_spend_regression() -> None:
    """Margin 2 but one task over the task cap: keep_incumbent."""
    rows = pair("task-a", resolved_of(1, 3, cost_usd=1.0), resolved_of(3, 3, cost_usd=1.0))
    rows += pair("task-b", same(3, cost_usd=1.0), same(3, cost_usd=1.5))

    assert gate(rows).kind is KEEP


def test_the_floor_passes_when_the_candidate_resolves_every_run() -> None:
    """Incumbent 1/3, candidate 3/3: the floor is enforced and met."""
    decision = gate(pair("task-a", resolved_of(1, 3), resolved_of(3, 3)))

    (row,) = decision.tasks
    assert (row.quality_floor_enforced, row.candidate_quality_floor_met) == (True, True)
    assert not has(decision, "quality floor")


def test_half_of_the_tasks_gated_is_enough() -> None:
    """1 of 2 tasks gated passes the evidence-base ratio."""
    rows = pair("task-a", resolved_of(1, 3), resolved_of(3, 3))
    rows += pair("task-impossible", resolved_of(0, 3), resolved_of(0, 3))

    assert gate(rows).kind is PROMOTE


def test_the_evidence_base_ratio_comes_from_the_policy() -> None:
    """A stricter ratio turns the 1-of-2 case insufficient."""
    rows = pair("task-a", resolved_of(1, 3), resolved_of(3, 3))
    rows += pair("task-impossible", resolved_of(0, 3), resolved_of(0, 3))

    decision = gate(rows, policy=PromotionPolicy(min_gated_task_ratio=0.75))

    assert decision.kind is INSUFFICIENT
    assert has(decision, "(at least 75% required)")


def test_min_runs_comes_from_the_policy() -> None:
    """With min_runs 2, two runs per arm are enough."""
    rows = pair("task-a", same(2, cost_usd=1.0), same(2, cost_usd=0.5))

    assert gate(rows).kind is INSUFFICIENT
    assert gate(rows, policy=PromotionPolicy(min_runs=2)).kind is PROMOTE


def test_an_uneven_but_unresolved_pair_stays_gated() -> None:
    """Both 0 resolved but 3 against 4 valid runs: not fully measured, so gated and insufficient."""
    decision = gate(pair("task-a", resolved_of(0, 3), resolved_of(0, 4)))

    assert decision.ungated_tasks == ()
    assert decision.kind is INSUFFICIENT


@pytest.mark.parametrize("side", ["incumbent", "candidate"])
def test_exclusions_on_either_side_keep_an_unresolved_pair_gated(side: str) -> None:
    """Zero resolved but an excluded run on one side: the task stays gated."""
    extra = [{"resolved": False, "error_kind": "infra-error"}]
    base = resolved_of(0, 3)
    rows = pair(
        "task-a", base + (extra if side == "incumbent" else []), base + (extra if side == "candidate" else [])
    )

    decision = gate(rows)

    assert decision.ungated_tasks == ()


def test_fewer_than_min_runs_on_both_sides_keeps_an_unresolved_pair_gated() -> None:
    """Two unresolved runs per arm are not fully measured under min_runs 3."""
    decision = gate(pair("task-a", resolved_of(0, 2), resolved_of(0, 2)))

    assert decision.ungated_tasks == ()


def test_a_skill_not_invoked_run_in_the_incumbent_also_keeps_the_task_gated() -> None:
    """The skill-attributable test covers both arms' error kinds."""
    inc = [*resolved_of(0, 2), {"resolved": False, "error_kind": "skill-not-invoked"}]
    decision = gate(pair("task-a", inc, resolved_of(0, 3)))

    assert decision.tasks[0].skill_attributable_failure is True
    assert decision.ungated_tasks == ()


def test_the_task_class_is_taken_from_the_candidate_when_the_incumbent_has_none() -> None:
    """The task row's class falls back to the candidate's."""
    decision = gate(pair("task-a", same(3, task_class=None), same(3, task_class="feature")))

    assert decision.tasks[0].task_class == "feature"
    assert decision.tasks[0].to_mapping()["class"] == "feature"


def test_any_candidate_incumbent_pairing_is_accepted() -> None:
    """Arms are data: a custom pair is judged like a preset."""
    rows = pair("task-a", same(3, cost_usd=1.0), same(3, cost_usd=0.5), inc="my_skill", cand="my_skill_v2")

    decision = gate(rows, inc="my_skill", cand="my_skill_v2")

    assert (decision.kind, decision.incumbent_arm, decision.candidate_arm) == (
        PROMOTE,
        "my_skill",
        "my_skill_v2",
    )


def test_other_arms_in_the_table_do_not_affect_the_pair() -> None:
    """Baseline rows on another task are not a missing pair."""
    rows = pair("task-a", same(3, cost_usd=1.0), same(3, cost_usd=0.5)) + runs("task-z", "baseline", same(3))

    assert gate(rows).kind is PROMOTE


def test_a_task_row_lists_the_reference_fields() -> None:
    """The per-task row carries every field apply and the report read."""
    (row,) = gate(pair("task-a", resolved_of(2, 3, cost_usd=1.0), resolved_of(3, 3, cost_usd=0.5))).tasks

    mapping = row.to_mapping()

    assert isinstance(row, ImplementationTask)
    assert mapping["incumbent_resolved"] == "2/3"
    assert mapping["candidate_resolved"] == "3/3"
    assert (mapping["incumbent_metric"], mapping["candidate_metric"], mapping["improvement_pct"]) == (
        1.0,
        0.5,
        50.0,
    )
    assert mapping["incumbent"]["valid_runs"] == 3
    assert (mapping["incumbent_scored_runs"], mapping["candidate_scored_runs"]) == (3, 3)
    assert mapping["candidate_quality_floor_met"] is True


def test_a_resolution_rate_over_zero_valid_runs_is_zero() -> None:
    """An arm whose every run was excluded has rate 0, so a candidate at 0 does not regress."""
    inc = same(3, resolved=False, error_kind="session-error")
    decision = gate(pair("task-a", inc, resolved_of(0, 3)))

    assert not has(decision, "resolution regressed")
    assert decision.kind is INSUFFICIENT


def test_a_candidate_with_no_valid_run_is_not_held_to_the_floor() -> None:
    """The floor needs at least one valid candidate run (C_runs > 0)."""
    cand = same(3, resolved=False, error_kind="session-error")
    decision = gate(pair("task-a", resolved_of(1, 3), cand))

    assert not has(decision, "quality floor")
    assert decision.tasks[0].candidate_quality_floor_met is False


def test_decision_mapping_has_the_reference_fields() -> None:
    """The decision object carries the reference's fields (plus gate and model)."""
    decision = gate(pair("task-a", same(3, cost_usd=1.0), same(3, cost_usd=0.5)))

    mapping = decision.to_mapping()

    assert mapping["decision"] == "promote"
    assert mapping["gate"] == "implementation"
    assert (mapping["incumbent_arm"], mapping["candidate_arm"]) == (INC, CAND)
    assert mapping["gated_tasks"] == ["task-a"]
    assert mapping["ungated_tasks"] == []
    assert mapping["model"] == MODEL
    assert mapping["median_improvement_pct"] == 50.0
    assert mapping["reasons"] == list(decision.reasons)


def test_improvement_is_rounded_to_one_decimal() -> None:
    """3.0 → 2.0 is a 33.3 % improvement (not 33.33…)."""
    (row,) = gate(pair("task-a", same(3, cost_usd=3.0), same(3, cost_usd=2.0))).tasks

    assert row.improvement_pct == 33.3


def test_the_median_improvement_is_rounded_to_one_decimal() -> None:
    """Improvements 33.3 and 10.0 have the median 21.65, reported to one decimal."""
    rows = pair("task-a", same(3, cost_usd=3.0), same(3, cost_usd=2.0))
    rows += pair("task-b", same(3, cost_usd=1.0), same(3, cost_usd=0.9))

    decision = gate(rows)

    assert decision.median_improvement_pct == round((33.3 + 10.0) / 2, 1)
    assert decision.median_improvement_pct != (33.3 + 10.0) / 2


def test_an_excluded_incumbent_run_alone_blocks_promotion() -> None:
    """One excluded incumbent run (and none on the candidate) is insufficient."""
    inc = [*same(3, cost_usd=1.0), {"resolved": False, "error_kind": "infra-error"}]
    decision = gate(pair("task-a", inc, same(3, cost_usd=0.5)))

    assert decision.kind is INSUFFICIENT
    assert said(decision, "task-a: promotion requires zero excluded runs in both paired arms (got 1/0)")


def test_too_few_incumbent_runs_alone_are_insufficient() -> None:
    """Two incumbent runs against three candidate runs: both run checks name the shortfall."""
    decision = gate(pair("task-a", same(2, cost_usd=1.0), same(3, cost_usd=0.5)))

    assert said(decision, "task-a: needs at least 3 valid runs per arm (got 2/3)")


def test_the_decision_and_task_row_mappings_have_exactly_the_documented_keys() -> None:
    """promotion.json's decision object and task rows carry these keys, in this order."""
    decision = gate(pair("task-a", same(3, cost_usd=1.0), same(3, cost_usd=0.5)))

    assert list(decision.to_mapping()) == [
        "gate",
        "candidate_arm",
        "incumbent_arm",
        "decision",
        "metric",
        "metric_warning",
        "median_improvement_pct",
        "model",
        "gated_tasks",
        "ungated_tasks",
        "reasons",
        "tasks",
    ]
    assert list(decision.tasks[0].to_mapping()) == [
        "task",
        "class",
        "incumbent_resolved",
        "candidate_resolved",
        "incumbent",
        "candidate",
        "incumbent_excluded_runs",
        "candidate_excluded_runs",
        "incumbent_scored_runs",
        "candidate_scored_runs",
        "candidate_quality_floor_met",
        "quality_floor_enforced",
        "incumbent_metric",
        "candidate_metric",
        "improvement_pct",
        "gated",
        "skill_attributable_failure",
    ]
    assert decision.to_mapping()["metric_warning"] is None
    assert (
        gate(pair("t", same(3), same(3)), policy=PromotionPolicy(metric="num_turns")).to_mapping()[
            "metric_warning"
        ]
        == METRIC_WARNING
    )


def test_the_incumbents_task_class_is_reported_when_both_arms_have_one() -> None:
    """The task row's class is the incumbent's."""
    decision = gate(pair("task-a", same(3, task_class="bugfix"), same(3, task_class="feature")))

    assert decision.tasks[0].task_class == "bugfix"


def test_a_task_missing_an_arm_does_not_stop_the_tasks_after_it() -> None:
    """The first task (sorted) lacks the candidate; the next task is still judged."""
    rows = runs("task-0", INC, same(3)) + pair("task-a", same(3, cost_usd=1.0), same(3, cost_usd=0.5))

    decision = gate(rows)

    assert [row.task for row in decision.tasks] == ["task-a"]
    assert said(decision, "task-0: both workflow and candidate_workflow are required")


def test_one_excluded_candidate_run_is_named_as_an_exclusion() -> None:
    """I9's exclusion is itself a reason: zero exclusions are required (got 0/1)."""
    cand = [*same(3), {"resolved": False, "error_kind": "session-error"}]

    decision = gate(pair("task-a", same(3), cand))

    assert said(decision, "task-a: promotion requires zero excluded runs in both paired arms (got 0/1)")


def test_the_floor_applies_to_a_single_valid_candidate_run() -> None:
    """One valid unresolved candidate run against a resolving incumbent fails the floor."""
    decision = gate(pair("task-a", resolved_of(1, 1), resolved_of(0, 1)), policy=PromotionPolicy(min_runs=1))

    assert has(decision, "oracle-backed quality floor (the incumbent resolves 1/1; got 0/1)")


def test_a_candidate_with_only_excluded_rows_is_not_judged_by_the_floor_even_if_one_claims_resolved() -> None:
    """The floor needs a valid candidate run; a resolved flag on an excluded row does not count as one."""
    cand = same(3, resolved=True, error_kind="session-error")

    decision = gate(pair("task-a", resolved_of(1, 3), cand))

    assert not has(decision, "quality floor")


def test_every_ungated_task_is_listed_in_the_one_reason() -> None:
    """I18: both impossible tasks are named, comma-separated, in one reason."""
    rows = pair("task-a", resolved_of(1, 3, cost_usd=1.0), resolved_of(3, 3, cost_usd=0.1))
    for task in ("task-x", "task-y"):
        rows += pair(task, resolved_of(0, 3, cost_usd=1.0), resolved_of(0, 3, cost_usd=1.0))

    decision = gate(rows)

    assert said(
        decision,
        "not gated on 2 task(s) neither arm resolved: task-x, task-y (evidence base: 1/3 paired tasks gated)",
    )
