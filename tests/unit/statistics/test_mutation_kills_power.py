"""Tests that kill the planning searches' mutants (``scripts/mutation --modules statistics/power``).

``tasks_needed`` and ``runs_needed`` against a brute-force scan of every design, on a grid of
variance components and targets, including the exact boundary (a target equal to a design's
MDE is reached) and the refusals (no positive target, nothing varied, an unknown run share).
"""

from __future__ import annotations

import math

import attrs
import pytest

from tests.unit.statistics.test_power import ALPHA, POWER, components
from wfbench.domain.statistics.power import MAX_RUNS, VarianceComponents, mde, runs_needed, tasks_needed

GRID = [(0.0, 0.2), (0.02, 0.2), (0.05, 0.05), (0.2, 0.01), (0.001, 1.5)]
TARGETS = [0.05, 0.1, 0.2, 0.35]


def brute_tasks(comp: VarianceComponents, target: float, runs: int | None) -> int | None:
    for n in range(2, 20_000):
        value = mde(comp, alpha=ALPHA, power=POWER, n_tasks=n, runs=runs)
        if value is not None and value <= target:
            return n
    return None


def brute_runs(comp: VarianceComponents, target: float, n: int) -> int | None:
    for k in range(1, MAX_RUNS + 1):
        value = mde(comp, alpha=ALPHA, power=POWER, n_tasks=n, runs=k)
        if value is not None and value <= target:
            return k
    return None


@pytest.mark.parametrize(("tau2", "sigma2"), GRID)
@pytest.mark.parametrize("runs", [None, 1, 3, 10])
def test_tasks_needed_is_the_first_design_that_reaches(tau2: float, sigma2: float, runs: int | None) -> None:
    comp = components(tau2, sigma2)
    for target in TARGETS:
        assert tasks_needed(comp, target=target, alpha=ALPHA, power=POWER, runs=runs) == brute_tasks(
            comp, target, runs
        ), target


@pytest.mark.parametrize(("tau2", "sigma2"), GRID)
@pytest.mark.parametrize("n", [2, 5, 10, 40])
def test_runs_needed_is_the_first_run_count_that_reaches(tau2: float, sigma2: float, n: int) -> None:
    comp = components(tau2, sigma2, n=n)
    for target in TARGETS:
        assert runs_needed(comp, target=target, alpha=ALPHA, power=POWER, n_tasks=n) == brute_runs(
            comp, target, n
        ), target


def test_a_target_equal_to_a_design_s_mde_is_reached_by_that_design() -> None:
    comp = components(0.02, 0.2)
    at_12 = mde(comp, alpha=ALPHA, power=POWER, n_tasks=12, runs=3)
    assert at_12 is not None
    assert tasks_needed(comp, target=at_12, alpha=ALPHA, power=POWER, runs=3) == 12
    assert tasks_needed(comp, target=math.nextafter(at_12, 0.0), alpha=ALPHA, power=POWER, runs=3) == 13
    at_4_runs = mde(comp, alpha=ALPHA, power=POWER, n_tasks=10, runs=4)
    assert at_4_runs is not None
    assert runs_needed(comp, target=at_4_runs, alpha=ALPHA, power=POWER, n_tasks=10) == 4


def test_the_searches_refuse_what_cannot_be_planned() -> None:
    comp = components(0.02, 0.2)
    flat = components(0.0, 0.0)

    assert tasks_needed(comp, target=0.0, alpha=ALPHA, power=POWER) is None
    assert runs_needed(comp, target=0.0, alpha=ALPHA, power=POWER) is None
    assert tasks_needed(flat, target=0.1, alpha=ALPHA, power=POWER) is None
    assert runs_needed(flat, target=0.1, alpha=ALPHA, power=POWER) is None
    assert runs_needed(comp, target=0.1, alpha=ALPHA, power=POWER, n_tasks=1) is None
    assert runs_needed(comp, target=10.0, alpha=ALPHA, power=POWER, n_tasks=2) == 1
    unknown = components(0.02, None)
    assert tasks_needed(unknown, target=0.1, alpha=ALPHA, power=POWER, runs=3) is None
    assert runs_needed(unknown, target=0.1, alpha=ALPHA, power=POWER) is None
    # The run count asked for is the one planned on (not the design measured).
    assert tasks_needed(comp, target=0.1, alpha=ALPHA, power=POWER, runs=1) != tasks_needed(
        comp, target=0.1, alpha=ALPHA, power=POWER, runs=10
    )


def test_runs_needed_plans_for_the_number_of_tasks_asked_not_the_number_measured() -> None:
    comp = components(0.001, 0.2, n=10)
    for n in (2, 5, 40):
        assert runs_needed(comp, target=0.2, alpha=ALPHA, power=POWER, n_tasks=n) == brute_runs(comp, 0.2, n)
    assert runs_needed(comp, target=0.2, alpha=ALPHA, power=POWER, n_tasks=40) != runs_needed(
        comp, target=0.2, alpha=ALPHA, power=POWER
    )


def test_runs_needed_reaches_exactly_max_runs_and_no_further() -> None:
    """The last run count searched is MAX_RUNS itself; one more than that is "not reachable"."""
    comp = components(0.0, 0.2)
    at_max = mde(comp, alpha=ALPHA, power=POWER, runs=MAX_RUNS)
    past_max = mde(comp, alpha=ALPHA, power=POWER, runs=MAX_RUNS + 1)
    assert at_max is not None
    assert past_max is not None
    assert runs_needed(comp, target=at_max, alpha=ALPHA, power=POWER) == MAX_RUNS
    assert runs_needed(comp, target=past_max, alpha=ALPHA, power=POWER) is None
    assert runs_needed(comp, target=10.0, alpha=ALPHA, power=POWER) == 1


def test_no_run_count_helps_when_the_tasks_alone_use_the_whole_budget() -> None:
    """tau2 exactly the budget: even infinitely many runs leave 2σ²/K > 0 over it."""
    comp = components(0.02, 0.2)
    only_tasks = mde(attrs.evolve(comp, sigma2=0.0, effect_variance=0.02), alpha=ALPHA, power=POWER, runs=1)
    assert only_tasks is not None
    assert runs_needed(comp, target=only_tasks, alpha=ALPHA, power=POWER) is None
    assert tasks_needed(comp, target=0.0, alpha=ALPHA, power=POWER, runs=3) is None
    assert tasks_needed(comp, target=-0.1, alpha=ALPHA, power=POWER, runs=3) is None


def test_the_searches_answer_whole_numbers() -> None:
    comp = components(0.02, 0.2)
    for target in TARGETS:
        tasks = tasks_needed(comp, target=target, alpha=ALPHA, power=POWER, runs=3)
        runs = runs_needed(comp, target=target, alpha=ALPHA, power=POWER, n_tasks=40)
        assert tasks is None or type(tasks) is int
        assert runs is None or type(runs) is int


@pytest.mark.parametrize(("effects", "inverse_runs"), [((), ()), ((0.1, 0.2), (0.5,)), ((0.1,), (0.5, 0.5))])
def test_variance_components_refuse_a_task_without_its_inverse_run_count_in_these_words(
    effects: tuple[float, ...], inverse_runs: tuple[float, ...]
) -> None:
    with pytest.raises(ValueError, match=r"^one effect and one inverse run count per task are required$"):
        VarianceComponents.estimate(effects, [], inverse_runs)


def test_the_effect_variance_at_a_run_count_needs_the_within_task_variance() -> None:
    single = VarianceComponents.estimate([0.1, 0.3], [(0.0, 1), (0.0, 1)], [2.0, 2.0])
    assert single.sigma2 is None
    assert single.effect_variance_at(4) is None
    assert single.effect_variance_at() == single.effect_variance

    measured = VarianceComponents.estimate([0.1, 0.3], [(0.02, 3), (0.04, 3)], [2 / 3, 2 / 3])
    assert measured.sigma2 == pytest.approx(0.015)
    assert measured.effect_variance_at(4) == pytest.approx(measured.tau2 + 2 * 0.015 / 4)
