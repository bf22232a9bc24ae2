"""Calibration of the statistical gate on simulated sweeps (seeded, a few seconds each).

The longer run, with more sweeps and B = 2,000, is ``bench/statistics_calibration.py``
(figures in ``docs/statistics.md``). These live outside ``tests/unit`` so the mutation run
does not repeat them for every mutant. Each bound below has a margin of several binomial
standard errors at these sweep counts; the seeds are fixed so a run is reproducible.
"""

from __future__ import annotations

import random

import pytest

from tests.simulation import Scenario, promote_rate, statistical_policy, sweep_rows
from wfbench.domain.statistics.analysis import AnalysisConfig, analyze_pair
from wfbench.domain.statistics.samples import paired_samples

ALPHA = 0.05
FAST = statistical_policy(resamples=1000)


@pytest.mark.parametrize("tasks", [8, 12, 20])
@pytest.mark.parametrize("spread", [0.0, 0.2], ids=["identical-arms", "effects-vary-by-task"])
def test_with_no_true_effect_the_policy_promotes_at_most_nominal_alpha_plus_two_points(
    tasks: int, spread: float
) -> None:
    rate = promote_rate(Scenario(tasks=tasks, spread=spread), sweeps=200, seed=100 + tasks, policy=FAST)

    assert rate <= ALPHA + 0.02


def test_a_true_twenty_point_gain_on_forty_tasks_is_promoted_in_at_least_eighty_percent() -> None:
    scenario = Scenario(tasks=40, effect=0.2, low=0.1, high=0.7)

    assert promote_rate(scenario, sweeps=150, seed=7, policy=FAST) >= 0.8


def _detected(effect: float, sweeps: int, seed: int) -> tuple[float, float]:
    """Share of sweeps whose one-sided 5 % resolution test rejects, and the mean printed MDE."""
    rnd, config = random.Random(seed), AnalysisConfig(resamples=1000)
    hits, mdes = 0, []
    for _ in range(sweeps):
        rows = sweep_rows(Scenario(tasks=40, effect=effect, low=0.15, high=0.65), rnd)
        samples = paired_samples(rows, candidate="candidate", incumbent="incumbent", metric="cost_usd")
        res = analyze_pair(samples, config).resolution
        hits += res.p_value is not None and res.p_value <= ALPHA
        mdes.append(res.mde)
    return hits / sweeps, sum(mdes) / len(mdes)  # type: ignore[arg-type]


def test_the_printed_mde_is_within_fifteen_percent_of_the_simulated_eighty_percent_power_effect() -> None:
    """Power at 0.85·MDE is below 80 % and at 1.15·MDE above it: the 80 % point lies within ±15 %."""
    _, printed = _detected(0.15, sweeps=60, seed=3)

    below, _ = _detected(0.85 * printed, sweeps=200, seed=4)
    above, _ = _detected(1.15 * printed, sweeps=200, seed=5)

    assert below < 0.8 < above
