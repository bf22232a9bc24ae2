"""The review gate: the reference's acceptance examples (promotion.md §8.2), each rule, and the
skill-not-invoked counter-example wfbench's scored-run check exists for."""

from __future__ import annotations

import attrs
import pytest

from tests.unit.promotion.promotion_fixtures import MODEL, review_row, review_runs, table
from wfbench.domain.promotion.gates import DecisionKind, ReviewTask, evaluate_pair, evaluate_review_candidate
from wfbench.domain.promotion.policy import GateKind, PromotionPolicy

PROMOTE, KEEP, INSUFFICIENT = (
    DecisionKind.PROMOTE,
    DecisionKind.KEEP_INCUMBENT,
    DecisionKind.INSUFFICIENT_EVIDENCE,
)


def review_gate(*groups, model: str | None = MODEL, policy: PromotionPolicy | None = None):
    return evaluate_review_candidate(
        table(*groups),
        candidate="candidate_review",
        incumbent="review",
        model=model,
        policy=policy or PromotionPolicy(),
    )


def has(decision, text: str) -> bool:
    return any(text in reason for reason in decision.reasons)


def said(decision, text: str) -> bool:
    """The exact reason is among the decision's reasons."""
    return text in decision.reasons


def defect_case(inc: dict, cand: dict, task: str = "case-1"):
    return [*review_runs(task, "review", **inc), *review_runs(task, "candidate_review", **cand)]


CLEAN = {
    "weighted_f1": 1.0,
    "blocker_recall": 1.0,
    "clean_control": True,
    "clean_pass": True,
    "false_positives": 0,
}


# --- §8.2 acceptance examples ------------------------------------------------------------


def test_r1_a_better_weighted_f1_on_a_defect_case_promotes() -> None:
    """R1: F1 0.6 → 0.8 with blocker recall kept and no false positives: promote."""
    decision = review_gate(defect_case({"weighted_f1": 0.6}, {"weighted_f1": 0.8}))

    assert decision.kind is PROMOTE
    assert decision.gate is GateKind.REVIEW
    assert decision.metric == "review_weighted_f1"
    assert said(
        decision, "candidate improved weighted review quality without blocker or clean-control regression"
    )


def test_r2_a_lost_blocker_keeps_the_incumbent() -> None:
    """R2: as R1, but the candidate's blocker recall is 0.0."""
    decision = review_gate(defect_case({"weighted_f1": 0.6}, {"weighted_f1": 0.8, "blocker_recall": 0.0}))

    assert decision.kind is KEEP
    assert has(decision, "case-1: blocker recall regressed")


def test_r3_a_false_positive_on_a_clean_control_keeps_the_incumbent() -> None:
    """R3: a finding on a clean control and a failed clean pass: keep_incumbent."""
    decision = review_gate(defect_case(CLEAN, dict(CLEAN, false_positives=1, clean_pass=False)))

    assert decision.kind is KEEP
    assert has(decision, "case-1: false positives increased on a clean control")
    assert has(decision, "case-1: clean-control verdict regressed")


@pytest.mark.parametrize(
    ("third", "expected"),
    [
        ({"verdict_correct": False}, KEEP),
        ({"blocker_recall": 0.0}, KEEP),
        ({"verdict_correct": False, "blocker_recall": 0.0}, KEEP),
        ({}, PROMOTE),
    ],
)
def test_r4_one_bad_repeat_among_three_keeps_the_incumbent(third: dict, expected: DecisionKind) -> None:
    """R4: through aggregation, one wrong verdict or lost blocker among 3 repeats is enough."""
    rows = review_runs("case-1", "review", weighted_f1=0.5)
    rows += [review_row("case-1", "candidate_review", run, weighted_f1=0.8) for run in (0, 1)]
    rows.append(review_row("case-1", "candidate_review", 2, weighted_f1=0.8, **third))

    assert review_gate(rows).kind is expected


def test_r5_no_results_are_insufficient() -> None:
    """R5: empty results: insufficient_evidence."""
    decision = review_gate([])

    assert decision.kind is INSUFFICIENT
    assert said(decision, "no paired review task results were found")


# --- wfbench's deliberate difference: scored runs ----------------------------------------


def test_the_measured_counter_example_does_not_promote() -> None:
    """One real run at 0.9 plus two skill-not-invoked rows at 0.0 must not promote.

    Differs from the reference on purpose: with skill-not-invoked rows out of the quality median
    the candidate's F1 is 0.9 over 3 valid runs, which alone would promote (the reference
    measured exactly this flip); our paired scored-run check makes it insufficient_evidence.
    """
    rows = review_runs("case-1", "review", weighted_f1=0.5)
    rows.append(review_row("case-1", "candidate_review", 0, weighted_f1=0.9))
    rows += [
        review_row("case-1", "candidate_review", run, weighted_f1=0.0, error_kind="skill-not-invoked")
        for run in (1, 2)
    ]

    decision = review_gate(rows)

    (row,) = decision.tasks
    assert row.candidate.review["review_weighted_f1"] == 0.9
    assert (row.candidate.valid_runs, row.incumbent.valid_runs) == (3, 3)
    assert decision.kind is INSUFFICIENT
    assert said(
        decision,
        "case-1: paired arms have different scored run counts "
        "(3/1 scored; runs that never invoked the skill under test are not scored)",
    )


def test_equal_but_too_few_scored_runs_cannot_promote() -> None:
    """Both arms skip the skill once in three: 2/2 scored is below min_runs 3."""
    rows = [
        *review_runs("case-1", "review", 2, weighted_f1=0.5),
        review_row("case-1", "review", 2, weighted_f1=0.0, error_kind="skill-not-invoked"),
        *review_runs("case-1", "candidate_review", 2, weighted_f1=0.9),
        review_row("case-1", "candidate_review", 2, weighted_f1=0.0, error_kind="skill-not-invoked"),
    ]

    decision = review_gate(rows)

    assert decision.kind is INSUFFICIENT
    assert said(
        decision,
        "case-1: needs at least 3 scored runs per arm "
        "(got 2/2; runs that never invoked the skill under test are not scored)",
    )


def test_a_regression_with_unequal_scored_runs_still_keeps_the_incumbent() -> None:
    """A measured regression outranks a scored-run shortfall: keep_incumbent, both reasons given."""
    rows = review_runs("case-1", "review", weighted_f1=0.8)
    rows.append(review_row("case-1", "candidate_review", 0, weighted_f1=0.4))
    rows += [
        review_row("case-1", "candidate_review", r, weighted_f1=0.0, error_kind="skill-not-invoked")
        for r in (1, 2)
    ]

    decision = review_gate(rows)

    assert decision.kind is KEEP
    assert has(decision, "different scored run counts")
    assert has(decision, "weighted review score regressed")


# --- each rule, removed, fails a test -----------------------------------------------------


def test_review_evidence_without_a_model_is_insufficient() -> None:
    """No model: insufficient with the review wording."""
    decision = review_gate(defect_case({"weighted_f1": 0.6}, {"weighted_f1": 0.8}), model=None)

    assert decision.kind is INSUFFICIENT
    assert has(decision, "a named model is required so review evidence cannot drift")


def test_a_case_missing_one_arm_is_insufficient_and_produces_no_row() -> None:
    """Only incumbent rows for a case: named, skipped."""
    rows = defect_case({"weighted_f1": 0.6}, {"weighted_f1": 0.8}) + review_runs("case-2", "review")

    decision = review_gate(rows)

    assert decision.kind is INSUFFICIENT
    assert has(decision, "case-2: both review and candidate_review are required")
    assert [row.task for row in decision.tasks] == ["case-1"]


@pytest.mark.parametrize(("inc_n", "cand_n"), [(2, 2), (3, 4), (4, 3)])
def test_too_few_or_uneven_review_runs_are_insufficient(inc_n: int, cand_n: int) -> None:
    """Fewer than min_runs, or unequal counts, are insufficient."""
    rows = review_runs("case-1", "review", inc_n, weighted_f1=0.6) + review_runs(
        "case-1", "candidate_review", cand_n, weighted_f1=0.8
    )

    decision = review_gate(rows)

    assert decision.kind is INSUFFICIENT
    assert has(decision, f"case-1: needs 3 valid paired runs with zero exclusions (got {inc_n}/{cand_n})")


@pytest.mark.parametrize("side", ["review", "candidate_review"])
def test_an_excluded_review_run_on_either_side_is_insufficient(side: str) -> None:
    """A review-evidence-invalid repeat on either side blocks the decision."""
    rows = defect_case({"weighted_f1": 0.6}, {"weighted_f1": 0.8})
    rows.append(review_row("case-1", side, 9, weighted_f1=0.8, error_kind="review-evidence-invalid"))

    decision = review_gate(rows)

    assert decision.kind is INSUFFICIENT
    assert has(decision, "needs 3 valid paired runs with zero exclusions")


def test_min_runs_comes_from_the_policy_in_the_review_gate() -> None:
    """With min_runs 2, two paired repeats suffice."""
    rows = review_runs("case-1", "review", 2, weighted_f1=0.6) + review_runs(
        "case-1", "candidate_review", 2, weighted_f1=0.8
    )

    assert review_gate(rows, policy=PromotionPolicy(min_runs=2)).kind is PROMOTE


@pytest.mark.parametrize(
    ("side", "metric"),
    [
        ("inc", "weighted_f1"),
        ("cand", "weighted_f1"),
        ("inc", "false_positives"),
        ("cand", "false_positives"),
    ],
)
def test_missing_defect_metrics_are_incomplete_and_skip_the_other_checks(side: str, metric: str) -> None:
    """A null F1 or false-positive count on a defect case: insufficient; later checks skipped."""
    inc, cand = {"weighted_f1": 0.6}, {"weighted_f1": 0.8, "blocker_recall": 0.0}
    (inc if side == "inc" else cand)[metric] = None

    decision = review_gate(defect_case(inc, cand))

    assert decision.kind is INSUFFICIENT
    assert has(decision, "case-1: structured review quality metrics are incomplete")
    assert not has(decision, "blocker recall regressed")


@pytest.mark.parametrize(
    ("side", "metric"),
    [("inc", "clean_pass"), ("cand", "clean_pass"), ("inc", "false_positives"), ("cand", "false_positives")],
)
def test_missing_clean_control_metrics_are_incomplete(side: str, metric: str) -> None:
    """A clean control needs both false-positive counts and both clean-pass flags."""
    inc, cand = dict(CLEAN), dict(CLEAN)
    (inc if side == "inc" else cand)[metric] = None

    assert has(review_gate(defect_case(inc, cand)), "structured review quality metrics are incomplete")


def test_a_clean_control_does_not_need_a_weighted_f1() -> None:
    """F1 may be null on a clean control; the case is still judged (and cannot improve)."""
    decision = review_gate(defect_case(dict(CLEAN, weighted_f1=None), dict(CLEAN, weighted_f1=None)))

    assert not has(decision, "incomplete")
    assert decision.kind is KEEP
    assert said(decision, "candidate did not improve weighted review quality on any corpus case")


def test_a_defect_case_does_not_need_clean_pass() -> None:
    """clean_pass may be null on a defect case."""
    decision = review_gate(
        defect_case({"weighted_f1": 0.6, "clean_pass": None}, {"weighted_f1": 0.8, "clean_pass": None})
    )

    assert decision.kind is PROMOTE


def test_an_unknown_candidate_verdict_is_insufficient() -> None:
    """verdict_correct null on the candidate: insufficient."""
    decision = review_gate(defect_case({"weighted_f1": 0.6}, {"weighted_f1": 0.8, "verdict_correct": None}))

    assert decision.kind is INSUFFICIENT
    assert has(decision, "case-1: candidate verdict evidence is incomplete")


def test_a_wrong_candidate_verdict_is_a_regression() -> None:
    """verdict_correct false on the candidate: keep_incumbent."""
    decision = review_gate(defect_case({"weighted_f1": 0.6}, {"weighted_f1": 0.8, "verdict_correct": False}))

    assert decision.kind is KEEP
    assert has(decision, "case-1: candidate verdict was incorrect on a valid repeat")


def test_the_incumbents_verdict_is_not_checked() -> None:
    """A wrong incumbent verdict does not block the candidate (reference note)."""
    decision = review_gate(defect_case({"weighted_f1": 0.6, "verdict_correct": False}, {"weighted_f1": 0.8}))

    assert decision.kind is PROMOTE


@pytest.mark.parametrize("side", ["inc", "cand"])
def test_blocker_recall_known_on_one_side_only_is_incomplete(side: str) -> None:
    """Exactly one null blocker recall: insufficient."""
    inc, cand = {"weighted_f1": 0.6}, {"weighted_f1": 0.8}
    (inc if side == "inc" else cand)["blocker_recall"] = None

    decision = review_gate(defect_case(inc, cand))

    assert decision.kind is INSUFFICIENT
    assert has(decision, "case-1: blocker recall evidence is incomplete")


def test_blocker_recall_unknown_on_both_sides_is_fine() -> None:
    """No blockers labelled: both null, nothing to compare."""
    decision = review_gate(
        defect_case(
            {"weighted_f1": 0.6, "blocker_recall": None}, {"weighted_f1": 0.8, "blocker_recall": None}
        )
    )

    assert decision.kind is PROMOTE


def test_a_higher_blocker_recall_is_not_a_regression() -> None:
    """The candidate may find more blockers."""
    decision = review_gate(defect_case({"weighted_f1": 0.6, "blocker_recall": 0.5}, {"weighted_f1": 0.8}))

    assert decision.kind is PROMOTE


def test_fewer_false_positives_on_a_clean_control_is_fine() -> None:
    """Equal or fewer clean-control findings do not regress."""
    decision = review_gate(defect_case(dict(CLEAN, false_positives=1, clean_pass=False), CLEAN))

    assert not has(decision, "false positives increased")
    assert not has(decision, "clean-control verdict regressed")


def test_a_clean_pass_lost_without_new_false_positives_is_a_regression() -> None:
    """Incumbent passes the clean control, candidate does not (e.g. wrong verdict): keep."""
    decision = review_gate(defect_case(CLEAN, dict(CLEAN, clean_pass=False)))

    assert decision.kind is KEEP
    assert has(decision, "clean-control verdict regressed")
    assert not has(decision, "false positives increased")


def test_a_lower_weighted_f1_on_a_defect_case_is_a_regression() -> None:
    """0.6 → 0.5 regresses; an equal score neither regresses nor improves."""
    lower = review_gate(defect_case({"weighted_f1": 0.6}, {"weighted_f1": 0.5}))
    equal = review_gate(defect_case({"weighted_f1": 0.6}, {"weighted_f1": 0.6}))

    assert lower.kind is KEEP
    assert has(lower, "case-1: weighted review score regressed")
    assert equal.kind is KEEP
    assert not has(equal, "regressed")
    assert said(equal, "candidate did not improve weighted review quality on any corpus case")


def test_the_improvement_must_reach_the_minimum_points() -> None:
    """The policy's minimum gain is inclusive: +0.25 improves, +0.245 does not."""
    enough = review_gate(
        defect_case({"weighted_f1": 0.5}, {"weighted_f1": 0.75}),
        policy=PromotionPolicy(review_min_improvement=0.25),
    )
    short = review_gate(
        defect_case({"weighted_f1": 0.5}, {"weighted_f1": 0.745}),
        policy=PromotionPolicy(review_min_improvement=0.25),
    )

    assert enough.kind is PROMOTE
    assert short.kind is KEEP


def test_a_case_is_clean_when_the_candidate_alone_says_so() -> None:
    """The incumbent lacks clean_control: the candidate's flag decides."""
    inc = dict(CLEAN, clean_control=None)
    decision = review_gate(defect_case(inc, dict(CLEAN, false_positives=1, clean_pass=False)))

    (row,) = decision.tasks
    assert row.clean_control is True
    assert decision.kind is KEEP


def test_a_case_without_any_clean_flag_is_a_defect_case() -> None:
    """Neither arm says clean: judged on weighted F1."""
    decision = review_gate(
        defect_case({"weighted_f1": 0.6, "clean_control": None}, {"weighted_f1": 0.8, "clean_control": None})
    )

    assert decision.tasks[0].clean_control is False
    assert decision.kind is PROMOTE


def test_only_clean_controls_can_never_promote() -> None:
    """A corpus of clean controls keeps the incumbent even when everything passes."""
    decision = review_gate(defect_case(CLEAN, CLEAN))

    assert decision.kind is KEEP


def test_the_review_task_row_carries_both_sides_metrics() -> None:
    """The row lists F1, blocker recall, false positives and clean pass per side."""
    (row,) = review_gate(defect_case({"weighted_f1": 0.6}, {"weighted_f1": 0.8})).tasks

    mapping = row.to_mapping()

    assert isinstance(row, ReviewTask)
    assert (mapping["incumbent_weighted_f1"], mapping["candidate_weighted_f1"]) == (0.6, 0.8)
    assert (mapping["incumbent_blocker_recall"], mapping["candidate_false_positives"]) == (1.0, 0.0)
    assert mapping["gated"] is True
    assert mapping["clean_control"] is False
    assert mapping["class"] == "bugfix"


def test_evaluate_pair_picks_the_review_gate_from_the_data() -> None:
    """A pair whose rows carry review metrics is judged by the review gate, under any arm names."""
    rows = [
        *review_runs("case-1", "rev_a", weighted_f1=0.6),
        *review_runs("case-1", "rev_b", weighted_f1=0.8),
    ]

    decision = evaluate_pair(table(rows), candidate="rev_b", incumbent="rev_a", model=MODEL)

    assert (decision.gate, decision.kind) == (GateKind.REVIEW, PROMOTE)


def test_evaluate_pair_honours_an_explicit_gate() -> None:
    """An explicit gate kind wins over inference."""
    rows = [
        *review_runs("case-1", "rev_a", weighted_f1=0.6),
        *review_runs("case-1", "rev_b", weighted_f1=0.8),
    ]

    decision = evaluate_pair(
        table(rows), candidate="rev_b", incumbent="rev_a", model=MODEL, gate=GateKind.IMPLEMENTATION
    )

    assert decision.gate is GateKind.IMPLEMENTATION


def test_the_review_task_row_has_exactly_the_documented_keys() -> None:
    """Both sides' F1, blocker recall, false positives and clean pass, plus scored runs."""
    decision = review_gate(
        defect_case({"weighted_f1": 0.6, "clean_pass": None}, {"weighted_f1": 0.8, "blocker_recall": 0.5})
    )

    mapping = decision.tasks[0].to_mapping()

    assert mapping == {
        "task": "case-1",
        "class": "bugfix",
        "incumbent": decision.tasks[0].incumbent.to_mapping(),
        "candidate": decision.tasks[0].candidate.to_mapping(),
        "gated": True,
        "clean_control": False,
        "incumbent_scored_runs": 3,
        "candidate_scored_runs": 3,
        "incumbent_weighted_f1": 0.6,
        "incumbent_blocker_recall": 1.0,
        "incumbent_false_positives": 0.0,
        "incumbent_clean_pass": None,
        "candidate_weighted_f1": 0.8,
        "candidate_blocker_recall": 0.5,
        "candidate_false_positives": 0.0,
        "candidate_clean_pass": False,
    }
    assert decision.to_mapping()["gate"] == "review"
    assert decision.to_mapping()["ungated_tasks"] == []
    assert decision.gated_tasks == ("case-1",)


@pytest.mark.parametrize("side", ["rev_a", "rev_b"])
def test_either_arm_carrying_review_metrics_makes_a_review_pair(side: str) -> None:
    """Gate inference looks at both the candidate's and the incumbent's aggregates."""
    from tests.unit.promotion.promotion_fixtures import runs, same
    from wfbench.domain.promotion.gates import infer_gate

    other = "rev_b" if side == "rev_a" else "rev_a"
    agg = table(
        review_runs("case-1", side), runs("case-1", other, same(3)), review_runs("case-1", "unrelated")
    )

    assert infer_gate(agg, candidate="rev_b", incumbent="rev_a") is GateKind.REVIEW
    assert (
        infer_gate(table(runs("case-1", "rev_a", same(3))), candidate="rev_b", incumbent="rev_a")
        is GateKind.IMPLEMENTATION
    )


def test_evaluate_pair_passes_the_pinned_task_set_on() -> None:
    """A pinned task without rows makes the pair insufficient through evaluate_pair too."""
    rows = [
        *review_runs("case-1", "rev_a", weighted_f1=0.6),
        *review_runs("case-1", "rev_b", weighted_f1=0.8),
    ]

    decision = evaluate_pair(
        table(rows), candidate="rev_b", incumbent="rev_a", model=MODEL, tasks=["case-1", "case-2"]
    )

    assert decision.kind is INSUFFICIENT


def test_the_incumbents_clean_flag_wins_when_the_arms_disagree() -> None:
    """Incumbent clean, candidate not: judged as a clean control (F1 may be null)."""
    inc = dict(CLEAN, weighted_f1=None)
    cand = dict(CLEAN, weighted_f1=None, clean_control=False)

    decision = review_gate(defect_case(inc, cand))

    assert decision.tasks[0].clean_control is True
    assert not has(decision, "incomplete")


def test_a_weighted_f1_lower_by_at_most_the_tolerance_is_not_a_regression() -> None:
    """Float noise of 1e-9 is not a regression."""
    decision = review_gate(defect_case({"weighted_f1": 0.5 + 1e-9}, {"weighted_f1": 0.5}))

    assert not has(decision, "weighted review score regressed")


def test_review_rows_report_the_incumbents_class_and_the_model() -> None:
    """The task row's class is the incumbent's; the decision records the model."""
    rows = [
        attrs.evolve(row, task_class="security") for row in review_runs("case-1", "review", weighted_f1=0.6)
    ]
    rows += review_runs("case-1", "candidate_review", weighted_f1=0.8)

    decision = review_gate(rows)

    assert decision.tasks[0].task_class == "security"
    assert decision.model == MODEL


def test_a_review_case_missing_an_arm_does_not_stop_the_cases_after_it() -> None:
    """The first case lacks the candidate; the next case is still judged."""
    rows = review_runs("case-0", "review") + defect_case({"weighted_f1": 0.6}, {"weighted_f1": 0.8})

    decision = review_gate(rows)

    assert [row.task for row in decision.tasks] == ["case-1"]


@pytest.mark.parametrize("side", ["rev_a", "rev_b"])
def test_evaluate_pair_infers_review_from_either_arm(side: str) -> None:
    """evaluate_pair asks about both arms: review metrics on one side alone pick the review gate."""
    from tests.unit.promotion.promotion_fixtures import runs, same

    other = "rev_b" if side == "rev_a" else "rev_a"
    agg = table(review_runs("case-1", side), runs("case-1", other, same(3)))

    decision = evaluate_pair(agg, candidate="rev_b", incumbent="rev_a", model=MODEL)

    assert decision.gate is GateKind.REVIEW


def test_a_review_case_takes_the_candidates_class_when_the_incumbent_has_none() -> None:
    """The class falls back to the candidate's."""
    rows = [attrs.evolve(row, task_class=None) for row in review_runs("case-1", "review", weighted_f1=0.6)]
    rows += [attrs.evolve(row, task_class="feature") for row in review_runs("case-1", "candidate_review")]

    assert review_gate(rows).tasks[0].task_class == "feature"
