"""plan's pure use case: effects with units, the request's gate design, pairs planned from rows."""

from __future__ import annotations

import math

import attrs
import pytest

from tests.unit.promotion.promotion_fixtures import record
from wfbench.domain.errors import InputError
from wfbench.domain.promotion.planning import PlanRequest, Target, parse_effect, plan_pairs
from wfbench.domain.promotion.policy import PromotionPolicy
from wfbench.domain.statistics.analysis import analyze_pair
from wfbench.domain.statistics.config import AnalysisConfig
from wfbench.domain.statistics.planning import DEFAULT_RUN_COUNTS, DEFAULT_TASK_COUNTS
from wfbench.domain.statistics.samples import paired_samples


def pilot(tasks: int = 6) -> list:
    """``tasks`` tasks x 3 runs: the candidate ~20% cheaper, one unresolved incumbent run per task."""
    rows = []
    for t in range(tasks):
        for run in range(3):
            cost = 1.0 + 0.1 * t + 0.05 * run
            resolved = run != (t % 3)
            rows.append(record(f"t{t}", "inc", run, cost_usd=cost, resolved=resolved))
            rows.append(record(f"t{t}", "cand", run, cost_usd=0.8 * cost, resolved=True))
    return rows


@pytest.mark.parametrize(
    ("text", "target"),
    [
        ("10%", Target(10.0, on_resolution=False)),
        ("99.5%", Target(99.5, on_resolution=False)),
        ("15pts", Target(15.0, on_resolution=True)),
        ("3 pt", Target(3.0, on_resolution=True)),
        (" 7.5 POINTS ", Target(7.5, on_resolution=True)),
        ("999pts", Target(999.0, on_resolution=True)),
    ],
)
def test_an_effect_is_a_saving_in_percent_or_resolution_points(text: str, target: Target) -> None:
    assert parse_effect(text) == target


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("10", "give a unit: 10% (a saving) or 10pts (resolution points), got '10'"),
        ("10x", "give a unit: 10% (a saving) or 10pts (resolution points), got '10x'"),
        ("ten%", "not a number: 'ten%'"),
        ("%", "not a number: '%'"),
        ("0%", "must be positive (a saving below 100%): '0%'"),
        ("100%", "must be positive (a saving below 100%): '100%'"),
        ("-5pts", "must be positive (a saving below 100%): '-5pts'"),
        ("1000pts", "must be positive (a saving below 100%): '1000pts'"),
    ],
)
def test_a_bad_effect_is_refused_naming_the_option(text: str, reason: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_effect(text)
    assert (caught.value.reason, caught.value.field) == (reason, "--effect")


def test_a_target_says_its_unit() -> None:
    assert Target(10.0, on_resolution=False).text() == "10%"
    assert Target(7.5, on_resolution=True).text() == "7.5 points"


def test_a_request_plans_the_default_targets_and_grid_for_the_statistical_gate() -> None:
    request = PlanRequest(pairs={"cand": "inc"})
    assert request.metric == "cost_usd"
    assert request.targets == (Target(5.0, on_resolution=False), Target(10.0, on_resolution=True))
    assert (request.task_counts, request.run_counts) == (DEFAULT_TASK_COUNTS, DEFAULT_RUN_COUNTS)
    assert request.policy == PromotionPolicy(decision_policy="statistical")


def test_the_design_is_the_gates_at_half_the_analysis_alpha_and_its_power() -> None:
    policy = PromotionPolicy(decision_policy="statistical", min_runs=2, min_improvement_pct=10.0)
    config = AnalysisConfig(confidence=0.8, power=0.9)
    request = PlanRequest(pairs={"cand": "inc"}, policy=policy, config=config)
    stats = analyze_pair(
        paired_samples(pilot(), candidate="cand", incumbent="inc", metric="cost_usd"), config
    )

    design = request.design(stats)

    assert design.alpha == pytest.approx(0.05)  # one-sided 0.1 of an 80% interval, halved by Holm
    assert design.power == 0.9
    assert (design.min_runs, design.min_tasks, design.margin) == (2, 5, pytest.approx(0.10))
    assert design.required == pytest.approx(-math.log(0.9))


def test_each_pair_with_rows_of_both_arms_is_planned_per_target_with_the_median_session_cost() -> None:
    rows = pilot()
    rows.append(record("t0", "inc", 3, cost_usd=99.0, error_kind="session-error", resolved=False))
    rows.append(record("t0", "other", 0, cost_usd=50.0))
    rows.append(record("t1", "cand", 3, cost_usd=None, resolved=False))
    targets = (Target(10.0, on_resolution=False), Target(20.0, on_resolution=True))
    request = PlanRequest(pairs={"cand": "inc", "ghost": "inc"}, targets=targets, task_counts=(5, 10))

    (pair,) = plan_pairs(rows, request)

    assert (pair.candidate, pair.incumbent) == ("cand", "inc")
    costs = sorted(r.cost_usd for r in pilot())
    assert pair.session_cost == pytest.approx((costs[17] + costs[18]) / 2)  # excluded, other arms, None: out
    assert [target for target, _ in pair.plans] == list(targets)
    saving, gain = (plan for _, plan in pair.plans)
    assert (saving.quantity, saving.unit, saving.target) == ("cost_usd", "savings_pct", 10.0)
    assert (gain.quantity, gain.unit, gain.target) == ("resolved", "points", 20.0)
    # t1's run without a cost leaves t1 without a saving: the grid adds the pilot's own 5 tasks.
    assert (pair.statistics.resolution.n_tasks, pair.statistics.metric.n_tasks) == (6, 5)
    assert {cell.n_tasks for cell in saving.cells} == {5, 10}
    assert {cell.n_tasks for cell in gain.cells} == {5, 6, 10}


def test_a_pilot_without_costs_plans_without_a_price() -> None:
    rows = [r for r in pilot() if r.arm == "inc"] + [
        record(r.task, "cand", r.run, cost_usd=None, output_tokens=300) for r in pilot() if r.arm == "cand"
    ]
    request = PlanRequest(pairs={"cand": "inc"}, metric="output_tokens")
    (pair,) = plan_pairs(rows, request)
    costs = sorted(r.cost_usd for r in rows if r.arm == "inc")
    assert pair.session_cost == pytest.approx((costs[8] + costs[9]) / 2)
    unpriced = [record(r.task, r.arm, r.run, cost_usd=None, output_tokens=r.output_tokens) for r in rows]
    ((_, plan),) = plan_pairs(unpriced, attrs.evolve(request, targets=(Target(10.0, False),)))[0].plans
    assert plan_pairs(unpriced, request)[0].session_cost is None
    assert all(cell.cost is None for cell in plan.cells)


def test_an_unsupported_metric_is_refused_naming_the_option() -> None:
    with pytest.raises(InputError) as caught:
        plan_pairs(pilot(), PlanRequest(pairs={"cand": "inc"}, metric="tokens"))
    assert (caught.value.reason, caught.value.field) == ("unsupported promotion metric: tokens", "--metric")


def test_no_pair_with_rows_of_both_arms_is_refused_listing_the_pairs_looked_for() -> None:
    rows = [r for r in pilot() if r.arm == "inc"]
    with pytest.raises(InputError) as caught:
        plan_pairs(rows, PlanRequest(pairs={"cand": "inc", "b": "a"}))
    assert caught.value.reason == (
        "no candidate=incumbent pair has rows of both arms (looked for cand=inc, b=a); name one with --pair"
    )


def test_a_saving_of_less_than_one_percent_is_a_target_too() -> None:
    assert parse_effect("0.5%") == Target(0.5, on_resolution=False)


def test_a_pair_without_rows_does_not_stop_the_pairs_after_it() -> None:
    (pair,) = plan_pairs(pilot(), PlanRequest(pairs={"ghost": "inc", "cand": "inc"}))

    assert pair.candidate == "cand"


def test_each_plan_uses_the_requests_analysis_grid_and_the_pilots_session_cost() -> None:
    config = AnalysisConfig(confidence=0.8, power=0.9)
    request = PlanRequest(pairs={"cand": "inc"}, config=config, task_counts=(10,), run_counts=(2,))

    (pair,) = plan_pairs(pilot(), request)

    assert pair.statistics.config == config
    assert pair.session_cost is not None
    for _, grid in pair.plans:
        assert {(cell.n_tasks, cell.runs) for cell in grid.cells} == {(6, 2), (10, 2)}
        assert all(cell.cost == pytest.approx(cell.sessions * pair.session_cost) for cell in grid.cells)
