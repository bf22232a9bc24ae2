"""Properties of the promotion gates over generated rows (Hypothesis), and the policy object."""

from __future__ import annotations

import datetime as dt
import json
import math
import random

import pytest
from hypothesis import Phase, find, given, settings
from hypothesis import strategies as st

from tests.strategies import paired_gate_rows
from tests.unit.promotion.promotion_fixtures import MODEL
from wfbench.domain.errors import InputError
from wfbench.domain.promotion.evidence import PromotionEvidence, RunStatus
from wfbench.domain.promotion.gates import DecisionKind, evaluate_candidate, evaluate_review_candidate
from wfbench.domain.promotion.policy import (
    CANDIDATE_ARMS,
    DEFAULT_GATES,
    DEFAULT_POLICY,
    PROMOTION_METRICS,
    GateKind,
    PromotionPolicy,
    check_candidate_arms,
    metric_warning,
)
from wfbench.domain.results.aggregation import aggregate

INC, CAND = "workflow", "candidate_workflow"
NOW = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
_policies = st.builds(
    PromotionPolicy,
    metric=st.sampled_from(PROMOTION_METRICS),
    min_runs=st.integers(min_value=1, max_value=3),
    min_improvement_pct=st.sampled_from([0.0, 5.0, 20.0]),
)


def _implementation(rows, policy=DEFAULT_POLICY):
    return evaluate_candidate(aggregate(rows), candidate=CAND, incumbent=INC, model=MODEL, policy=policy)


def _review(rows, policy=DEFAULT_POLICY):
    return evaluate_review_candidate(
        aggregate(rows), candidate="candidate_review", incumbent="review", model=MODEL, policy=policy
    )


@given(rows=paired_gate_rows(), policy=_policies)
def test_the_gate_never_promotes_a_candidate_that_resolves_fewer_runs_on_a_gated_task(rows, policy) -> None:
    """On every gated task of a promotion, the candidate resolved at least as many runs."""
    decision = _implementation(rows, policy)

    if decision.kind is DecisionKind.PROMOTE:
        for row in decision.tasks:
            if row.gated:
                assert row.candidate.resolved >= row.incumbent.resolved


@given(rows=paired_gate_rows(), policy=_policies)
def test_a_candidate_with_fewer_scored_runs_is_never_promoted(rows, policy) -> None:
    """Implementation gate: unequal scored runs on a gated task never promote."""
    decision = _implementation(rows, policy)

    if any(row.gated and row.candidate.scored_runs != row.incumbent.scored_runs for row in decision.tasks):
        assert decision.kind is not DecisionKind.PROMOTE


@given(rows=paired_gate_rows(incumbent="review", candidate="candidate_review", review=True), policy=_policies)
def test_a_review_candidate_with_fewer_scored_runs_is_never_promoted(rows, policy) -> None:
    """Review gate: skill-not-invoked rows out of the median can never buy a promotion."""
    decision = _review(rows, policy)

    if any(row.candidate.scored_runs != row.incumbent.scored_runs for row in decision.tasks):
        assert decision.kind is not DecisionKind.PROMOTE


@given(rows=paired_gate_rows(), seed=st.integers(min_value=0, max_value=2**16))
def test_the_decision_does_not_depend_on_row_order(rows, seed) -> None:
    """Shuffling the rows gives the same decision, reasons included."""
    shuffled = list(rows)
    random.Random(seed).shuffle(shuffled)

    assert _implementation(shuffled) == _implementation(rows)


@given(rows=paired_gate_rows(), aborted=st.booleans())
def test_evidence_round_trips_and_an_aborted_sweep_never_promotes(rows, aborted) -> None:
    """parse(serialize(evidence)) == evidence; aborted evidence holds no promote."""
    status = RunStatus.ABORTED if aborted else RunStatus.COMPLETE
    evidence = PromotionEvidence.build(
        [_implementation(rows)], policy=DEFAULT_POLICY, generated_at=NOW, run_status=status
    )

    assert PromotionEvidence.from_mapping(json.loads(json.dumps(evidence.to_mapping()))) == evidence
    if aborted:
        assert all(d.kind is DecisionKind.INSUFFICIENT_EVIDENCE for d in evidence.decisions)


def test_the_generated_rows_do_reach_promote() -> None:
    """The strategy is not vacuous: it produces promotions (for both gates)."""
    lenient = PromotionPolicy(min_runs=2, min_improvement_pct=0.0)
    quick = settings(phases=[Phase.generate], max_examples=2000, database=None, derandomize=True)
    find(
        paired_gate_rows(),
        lambda rows: _implementation(rows, lenient).kind is DecisionKind.PROMOTE,
        settings=quick,
    )
    find(
        paired_gate_rows(incumbent="review", candidate="candidate_review", review=True),
        lambda rows: _review(rows, lenient).kind is DecisionKind.PROMOTE,
        settings=quick,
    )


# --- the policy object --------------------------------------------------------------------


def test_the_default_pairing_is_the_references() -> None:
    """candidate_workflow→workflow, candidate_workflow_direct→workflow_direct, candidate_review→review."""
    assert dict(CANDIDATE_ARMS) == {
        "candidate_workflow": "workflow",
        "candidate_workflow_direct": "workflow_direct",
        "candidate_review": "review",
    }
    assert DEFAULT_GATES["candidate_review"] is GateKind.REVIEW
    assert DEFAULT_GATES["candidate_workflow_direct"] is GateKind.IMPLEMENTATION


def test_the_default_policy_has_the_references_thresholds() -> None:
    """cost_usd, 3 runs, 5 %, 20 %, 100 %, half the tasks gated, +0.01 F1."""
    policy = PromotionPolicy.default()

    assert policy == DEFAULT_POLICY
    assert (policy.metric, policy.min_runs, policy.min_improvement_pct) == ("cost_usd", 3, 5.0)
    assert (policy.max_task_regression_pct, policy.max_failed_task_regression_pct) == (20.0, 100.0)
    assert (policy.min_gated_task_ratio, policy.review_min_improvement) == (0.5, 0.01)


@pytest.mark.parametrize(
    ("kwargs", "field", "reason"),
    [
        ({"metric": "vibes"}, "metric", "unsupported promotion metric: vibes"),
        ({"min_runs": 0}, "min_runs", "must be an integer of at least 1"),
        ({"min_runs": True}, "min_runs", "must be an integer of at least 1"),
        ({"min_runs": 2.5}, "min_runs", "must be an integer of at least 1"),
        ({"min_improvement_pct": math.nan}, "min_improvement_pct", "must be a finite number"),
        ({"max_task_regression_pct": math.inf}, "max_task_regression_pct", "must be a finite number"),
        ({"review_min_improvement": "0.01"}, "review_min_improvement", "must be a finite number"),
        ({"min_gated_task_ratio": False}, "min_gated_task_ratio", "must be a finite number"),
    ],
)
def test_a_bad_threshold_is_refused_and_named(kwargs, field: str, reason: str) -> None:
    """Each invalid tunable raises an InputError naming it."""
    with pytest.raises(InputError) as caught:
        PromotionPolicy(**kwargs)

    assert caught.value.field == field
    assert caught.value.reason == reason


def test_every_promotion_metric_is_accepted() -> None:
    """The four metrics construct a policy; only tokens and turns carry the warning."""
    for metric in PROMOTION_METRICS:
        assert PromotionPolicy(metric=metric).metric == metric
    assert [metric_warning(m) is not None for m in PROMOTION_METRICS] == [True, False, False, True]


@pytest.mark.parametrize(
    ("arms", "reason"),
    [
        ([], "promotion policy requires unique candidate arms"),
        (["candidate_review", "candidate_review"], "promotion policy requires unique candidate arms"),
        (["candidate_review", "baseline"], "unsupported candidate arm: baseline"),
    ],
)
def test_candidate_arm_lists_are_checked(arms: list[str], reason: str) -> None:
    """Empty, repeated or unpaired candidate arms are refused."""
    with pytest.raises(InputError) as caught:
        check_candidate_arms(arms)

    assert caught.value.reason == reason


def test_custom_pairs_make_custom_candidates_acceptable() -> None:
    """Arms are data: an arm in the caller's pairing is a valid candidate."""
    check_candidate_arms(["candidate_workflow", "candidate_review"])
    check_candidate_arms(["my_v2"], {"my_v2": "my_v1"})

    with pytest.raises(InputError):
        check_candidate_arms(["candidate_review"], {"my_v2": "my_v1"})


def test_one_run_is_the_smallest_accepted_minimum() -> None:
    """min_runs 1 is valid; the arm-list errors name the --arms field."""
    assert PromotionPolicy(min_runs=1).min_runs == 1

    with pytest.raises(InputError) as caught:
        check_candidate_arms([])

    assert caught.value.field == "arms"


def test_an_unpaired_arm_error_names_the_arms_field() -> None:
    """'unsupported candidate arm' is reported against --arms."""
    with pytest.raises(InputError) as caught:
        check_candidate_arms(["baseline"])

    assert caught.value.field == "arms"
