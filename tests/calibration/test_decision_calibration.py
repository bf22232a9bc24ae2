"""Calibration of the gate's *decision* (its promote rate), on two generators (issue #27).

The analysis's p-value alone can be right while the decision built on it is not; these measure
what the gate does. ``classic`` is ``tests.simulation.Scenario``; ``ushaped`` is
``tests.simulation.UShaped`` (U-shaped pass rates, shared flakes, heavy-tailed cost). The
longer run (1,000+ sweeps per cell, B = 2,000) is ``bench/statistics_calibration.py --only
decision-*``, with its figures in ``docs/statistics.md``; here fewer sweeps, fixed seeds, and
bounds a few binomial standard errors from the measured rates.
"""

from __future__ import annotations

import math

import pytest

from tests.simulation import Scenario, UShaped, any_rows, promote_rate, statistical_policy
from wfbench.domain.promotion.planning import PlanRequest, parse_effect, plan_pairs
from wfbench.domain.statistics.config import AnalysisConfig

FAST = statistical_policy(resamples=1000)
ANY_RUNS = statistical_policy(resamples=1000, min_runs=1)
GENERATORS = {"classic": Scenario, "ushaped": UShaped}


@pytest.mark.parametrize("generator", list(GENERATORS))
@pytest.mark.parametrize(("tasks", "runs", "spread"), [(8, 3, 0.0), (20, 1, 0.2), (12, 5, 0.2)])
def test_with_no_true_difference_the_gate_promotes_rarely(
    generator: str, tasks: int, runs: int, spread: float
) -> None:
    scenario = GENERATORS[generator](tasks=tasks, runs=runs, spread=spread)

    assert promote_rate(scenario, sweeps=150, seed=tasks * 10 + runs, policy=ANY_RUNS) <= 0.06


@pytest.mark.parametrize("generator", list(GENERATORS))
def test_a_cheaper_candidate_ten_points_worse_is_not_promoted(generator: str) -> None:
    harmful = GENERATORS[generator](tasks=40, runs=3, effect=-0.10, saving=-math.log(0.7))

    assert promote_rate(harmful, sweeps=150, seed=27, policy=FAST) <= 0.07


def test_a_cheaper_sweep_where_nothing_resolves_is_never_promoted() -> None:
    dead = Scenario(tasks=6, low=0.0, high=0.0, saving=-math.log(0.76))

    assert promote_rate(dead, sweeps=100, seed=6, policy=FAST) == 0.0


def _planned(scenario: UShaped, target: str) -> tuple[int, int]:
    import random

    pilot = any_rows(scenario, random.Random(14))
    request = PlanRequest(
        pairs={"candidate": "incumbent"},
        targets=(parse_effect(target),),
        config=AnalysisConfig(resamples=1000),
    )
    ((_, plan),) = plan_pairs(pilot, request)[0].plans
    assert plan.recommended is not None
    return plan.recommended.n_tasks, plan.recommended.runs


@pytest.mark.parametrize(
    ("target", "fields"),
    [("30%", {"saving": -math.log(0.7)}), ("20pts", {"effect": 0.2})],
    ids=["saving-30", "gain-20pts"],
)
def test_at_the_design_plan_recommends_the_gate_promotes_the_planned_effect(
    target: str, fields: dict[str, float]
) -> None:
    tasks, runs = _planned(UShaped(tasks=20, runs=3, **fields), target)

    rate = promote_rate(UShaped(tasks=tasks, runs=runs, **fields), sweeps=100, seed=3, policy=FAST)

    assert runs >= 3  # the gate's default --min-runs
    assert rate >= 0.65
