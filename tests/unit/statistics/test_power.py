"""Variance components, the minimum detectable effect, and the tasks or runs a target needs."""

from __future__ import annotations

import math

import pytest

from wfbench.domain.statistics.distributions import t_ppf
from wfbench.domain.statistics.power import MAX_RUNS, VarianceComponents, mde, runs_needed, tasks_needed

ALPHA, POWER = 0.05, 0.8


def components(tau2: float, sigma2: float | None, n: int = 10, runs: int = 3) -> VarianceComponents:
    """Components whose estimates are exactly ``tau2`` and ``sigma2`` at ``runs`` per arm."""
    within = 0.0 if sigma2 is None else sigma2 * 2 / runs
    return VarianceComponents(
        n_tasks=n,
        effect_variance=tau2 + within,
        sigma2=sigma2,
        inverse_runs=2 / runs,
        within_dof=0 if sigma2 is None else n * 2 * (runs - 1),
    )


def test_components_are_estimated_by_the_method_of_moments() -> None:
    est = VarianceComponents.estimate([0.1, 0.3, 0.5], [(2.0, 3), (1.0, 3), (0.0, 1)], [2 / 3, 2 / 3, 2 / 3])

    assert est.effect_variance == pytest.approx(0.04)
    assert est.sigma2 == 0.75  # 3.0 over 4 degrees of freedom; a single run has none
    assert est.within_dof == 4
    assert est.inverse_runs == pytest.approx(2 / 3)
    assert est.tau2 == 0.0  # 0.04 − 0.75·2/3 is negative: truncated
    assert est.effect_variance_at() == pytest.approx(0.5)  # never below the runs' own noise
    assert est.effect_variance_at(5) == pytest.approx(0.3)


def test_between_task_variance_is_what_the_runs_do_not_explain() -> None:
    est = VarianceComponents.estimate([0.0, 1.0], [(0.5, 2), (0.5, 2), (0.5, 2), (0.5, 2)], [1.0, 1.0])

    assert est.effect_variance == 0.5
    assert est.sigma2 == 0.5
    assert est.tau2 == 0.0
    est = VarianceComponents.estimate([0.0, 2.0], [(0.5, 2)] * 4, [1.0, 1.0])
    assert est.tau2 == pytest.approx(1.5)


def test_without_repeated_runs_the_components_cannot_be_separated() -> None:
    est = VarianceComponents.estimate([0.1, 0.2], [(0.0, 1), (0.0, 1)], [2.0, 2.0])

    assert est.sigma2 is None
    assert est.tau2 is None
    assert est.effect_variance_at() == est.effect_variance
    assert est.effect_variance_at(3) is None


def test_a_single_task_has_no_effect_variance() -> None:
    assert VarianceComponents.estimate([0.4], [(1.0, 3)], [2 / 3]).effect_variance == 0.0


def test_estimate_refuses_mismatched_inputs() -> None:
    with pytest.raises(ValueError, match="one effect"):
        VarianceComponents.estimate([], [], [])
    with pytest.raises(ValueError, match="one effect"):
        VarianceComponents.estimate([0.1], [], [])


def test_the_mde_is_the_textbook_formula() -> None:
    comp = components(tau2=0.02, sigma2=0.2)
    expected = (t_ppf(0.95, 9) + t_ppf(0.8, 9)) * math.sqrt((0.02 + 2 * 0.2 / 3) / 10)

    assert mde(comp, alpha=ALPHA, power=POWER) == pytest.approx(expected, rel=1e-12)
    at_40_by_5 = (t_ppf(0.95, 39) + t_ppf(0.8, 39)) * math.sqrt((0.02 + 2 * 0.2 / 5) / 40)
    assert mde(comp, alpha=ALPHA, power=POWER, n_tasks=40, runs=5) == pytest.approx(at_40_by_5, rel=1e-12)


def test_the_mde_shrinks_with_tasks_and_runs_and_grows_with_power() -> None:
    comp = components(tau2=0.02, sigma2=0.2)
    base = mde(comp, alpha=ALPHA, power=POWER)

    assert mde(comp, alpha=ALPHA, power=POWER, n_tasks=20) < base  # type: ignore[operator]
    assert mde(comp, alpha=ALPHA, power=POWER, runs=6) < base  # type: ignore[operator]
    assert mde(comp, alpha=ALPHA, power=0.9) > base  # type: ignore[operator]
    assert mde(comp, alpha=0.025, power=POWER) > base  # type: ignore[operator]


def test_no_mde_below_two_tasks_or_for_other_runs_without_run_variance() -> None:
    assert mde(components(0.1, 0.1, n=1), alpha=ALPHA, power=POWER) is None
    assert mde(components(0.0, 0.0), alpha=ALPHA, power=POWER) is None  # nothing varied
    assert mde(components(0.1, None), alpha=ALPHA, power=POWER, runs=5) is None
    assert mde(components(0.1, None), alpha=ALPHA, power=POWER) is not None


@pytest.mark.parametrize("target", [0.05, 0.1, 0.2, 0.33])
def test_tasks_needed_is_the_fewest_that_reach_the_target(target: float) -> None:
    comp = components(tau2=0.03, sigma2=0.2)

    needed = tasks_needed(comp, target=target, alpha=ALPHA, power=POWER, runs=3)

    assert needed is not None
    assert mde(comp, alpha=ALPHA, power=POWER, n_tasks=needed, runs=3) <= target  # type: ignore[operator]
    if needed > 2:
        assert mde(comp, alpha=ALPHA, power=POWER, n_tasks=needed - 1, runs=3) > target  # type: ignore[operator]


def test_tasks_needed_is_two_when_two_suffice_and_none_when_unknowable() -> None:
    assert tasks_needed(components(0.0, 0.001), target=0.5, alpha=ALPHA, power=POWER) == 2
    assert tasks_needed(components(0.0, 0.0), target=0.1, alpha=ALPHA, power=POWER) is None
    assert tasks_needed(components(0.1, None), target=0.1, alpha=ALPHA, power=POWER, runs=5) is None
    assert tasks_needed(components(0.1, 0.1), target=0.0, alpha=ALPHA, power=POWER) is None


def test_tasks_needed_gives_up_beyond_its_search_limit() -> None:
    assert tasks_needed(components(1.0, 1.0), target=1e-6, alpha=ALPHA, power=POWER) is None


@pytest.mark.parametrize("target", [0.12, 0.2, 0.3])
def test_runs_needed_is_the_fewest_that_reach_the_target(target: float) -> None:
    comp = components(tau2=0.01, sigma2=0.25, n=30)

    needed = runs_needed(comp, target=target, alpha=ALPHA, power=POWER)

    assert needed is not None
    assert mde(comp, alpha=ALPHA, power=POWER, runs=needed) <= target  # type: ignore[operator]
    if needed > 1:
        assert mde(comp, alpha=ALPHA, power=POWER, runs=needed - 1) > target  # type: ignore[operator]


def test_no_number_of_runs_beats_the_between_task_variance() -> None:
    """With τ² = 0.1 over 10 tasks the MDE never drops below ~0.26, however many runs."""
    comp = components(tau2=0.1, sigma2=0.2)

    assert runs_needed(comp, target=0.2, alpha=ALPHA, power=POWER) is None
    assert tasks_needed(comp, target=0.2, alpha=ALPHA, power=POWER, runs=3) is not None


def test_runs_needed_edge_cases() -> None:
    assert runs_needed(components(0.0, 0.001), target=0.5, alpha=ALPHA, power=POWER) == 1
    assert runs_needed(components(0.0, 0.0), target=0.1, alpha=ALPHA, power=POWER) is None
    assert runs_needed(components(0.1, None), target=0.5, alpha=ALPHA, power=POWER) is None
    assert runs_needed(components(0.0, 0.1, n=1), target=0.5, alpha=ALPHA, power=POWER) is None
    assert runs_needed(components(0.0, 0.1), target=0.0, alpha=ALPHA, power=POWER) is None
    assert (
        runs_needed(components(0.0, 100.0, n=3), target=0.01, alpha=ALPHA, power=POWER) is None
    )  # > MAX_RUNS
    assert MAX_RUNS == 1000
