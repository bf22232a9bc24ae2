"""The decision power at its edges: small samples' degrees of freedom, defaults, planned runs,
a target power of 1, whole-number task counts."""

from __future__ import annotations

import math

import attrs
import pytest

from tests.unit.statistics.test_gate_power import COST, DESIGN, RES
from wfbench.domain.statistics.distributions import t_cdf, t_ppf
from wfbench.domain.statistics.gate_power import (
    GateDesign,
    claim_power,
    decision_power,
    non_inferiority_power,
    saving_mde,
    tasks_for_decision,
)


@pytest.mark.parametrize("n", [5, 6, 8])
def test_the_saving_claim_uses_n_minus_1_degrees_of_freedom_at_few_tasks(n: int) -> None:
    lenient = attrs.evolve(DESIGN, required=0.0)
    se_cost = math.sqrt(COST.effect_variance_at(3) / n)  # type: ignore[operator]
    bar = t_ppf(1 - 0.025, n - 1) * se_cost
    expected = non_inferiority_power(RES, lenient, n, 3) * t_cdf((0.5 - bar) / se_cost, n - 1)  # type: ignore[operator]

    assert decision_power(RES, COST, lenient, n_tasks=n, runs=3, saving=0.5) == pytest.approx(
        expected, rel=1e-12
    )


def test_without_an_effect_the_power_is_that_of_no_saving() -> None:
    assert decision_power(RES, COST, DESIGN, n_tasks=40, runs=3) == decision_power(
        RES, COST, DESIGN, n_tasks=40, runs=3, saving=0.0
    )
    assert tasks_for_decision(RES, COST, DESIGN, runs=3) is None  # no saving is never promoted at 80%


def test_a_resolution_gain_is_planned_at_the_runs_asked() -> None:
    one, ten = (decision_power(RES, COST, DESIGN, n_tasks=40, runs=runs, gain=0.1) for runs in (3, 10))
    se_ten = math.sqrt(RES.effect_variance_at(10) / 40)  # type: ignore[operator]
    assert ten == pytest.approx(claim_power(se_ten, 40, 0.1, 0.025))
    assert ten > one  # more runs shrink the run noise of the resolution claim


def test_a_target_power_of_one_is_reached_once_the_power_rounds_to_one() -> None:
    certain = attrs.evolve(DESIGN, power=1.0)
    found = tasks_for_decision(RES, COST, certain, runs=3, gain=0.9)
    assert found is not None
    assert decision_power(RES, COST, certain, n_tasks=found, runs=3, gain=0.9) == 1.0
    assert decision_power(RES, COST, certain, n_tasks=found - 1, runs=3, gain=0.9) < 1.0


@pytest.mark.parametrize("effect", [{"gain": 0.2}, {"gain": 0.05}, {"saving": 0.3}, {"saving": 0.15}])
def test_the_task_search_answers_a_whole_number(effect: dict[str, float]) -> None:
    found = tasks_for_decision(RES, COST, DESIGN, runs=3, **effect)
    assert type(found) is int


def test_two_tasks_are_enough_for_a_gate_that_asks_for_two() -> None:
    assert not GateDesign(min_tasks=2).refuses(2, 1)
    assert GateDesign(min_tasks=2).refuses(1, 1)


def test_the_saving_mde_of_a_design_with_too_few_runs_is_none() -> None:
    wide = attrs.evolve(DESIGN, margin=0.6)  # non-inferiority alone would be shown at one run
    assert non_inferiority_power(RES, wide, 40, 1) > 0.8  # type: ignore[operator]

    assert saving_mde(RES, COST, wide, n_tasks=40, runs=1) is None


@pytest.mark.parametrize(("n", "runs"), [(5, 3), (6, None), (40, 10)])
def test_at_the_saving_mde_the_decision_power_is_exactly_the_target(n: int, runs: int | None) -> None:
    """With no saving required, the MDE's bar is the t test's, at ``n − 1`` degrees of freedom and the
    runs asked (both for non-inferiority and for the saving)."""
    lenient = attrs.evolve(DESIGN, required=0.0, margin=0.6, min_runs=1)
    found = saving_mde(RES, COST, lenient, n_tasks=n, runs=runs)
    assert found is not None

    power = decision_power(RES, COST, lenient, n_tasks=n, runs=runs, saving=found)

    assert power == pytest.approx(0.8, rel=1e-9)


def test_no_saving_mde_when_non_inferiority_alone_only_just_reaches_a_target_power_of_one() -> None:
    certain = attrs.evolve(DESIGN, power=1.0, margin=5.0)
    assert non_inferiority_power(RES, certain, 40, 3) == 1.0

    assert saving_mde(RES, COST, certain, n_tasks=40, runs=3) is None
