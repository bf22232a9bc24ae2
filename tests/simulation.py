"""Simulated paired sweeps for calibrating the statistical gate (tests and ``bench/``).

One sweep: ``tasks`` tasks × 2 arms × ``runs`` runs, as result rows. Each task has its own
incumbent resolve probability ``p_t ~ Uniform(low, high)`` and its own cost level
(``lognormal(0, 0.5)``); each run resolves with its arm's probability and costs the task's level
times run noise ``lognormal(0, cost_noise)``. The candidate's probability is ``p_t + effect_t``:
``effect`` on every task, plus ``± spread`` with a random sign per task (effects that vary by
task, whose *population* mean is ``effect``; a sample of tasks averages a little more or less);
its cost is the incumbent's level × ``e^{−saving}``.
"""

from __future__ import annotations

import math
import random

import attrs

from wfbench.domain.promotion.decision import DecisionKind
from wfbench.domain.promotion.judging import PairSpec, judge_rows
from wfbench.domain.promotion.policy import DecisionPolicy, PromotionPolicy
from wfbench.domain.results.rows import ErrorKind, Row

MODEL = "pinned-model"
PAIR = (PairSpec("candidate", "incumbent"),)


@attrs.frozen
class Scenario:
    """What a simulated sweep looks like (see the module docstring)."""

    tasks: int
    runs: int = 3
    effect: float = 0.0
    spread: float = 0.0
    saving: float = 0.0
    low: float = 0.25
    high: float = 0.75
    cost_noise: float = 0.3


def sweep_rows(scenario: Scenario, rnd: random.Random) -> list[Row]:
    """One simulated sweep's rows."""
    rows = []
    for index in range(scenario.tasks):
        p = rnd.uniform(scenario.low, scenario.high)
        shift = scenario.effect + rnd.choice((scenario.spread, -scenario.spread))
        level = rnd.lognormvariate(0.0, 0.5)
        for arm, rate, factor in (
            ("incumbent", p, 1.0),
            ("candidate", min(1.0, max(0.0, p + shift)), math.exp(-scenario.saving)),
        ):
            for run in range(scenario.runs):
                resolved = rnd.random() < rate
                rows.append(
                    Row(
                        task=f"task-{index:03d}",
                        arm=arm,
                        run=run,
                        ok=True,
                        resolved=resolved,
                        error_kind=None if resolved else ErrorKind.ORACLE_FAILED,
                        cost_usd=level * factor * rnd.lognormvariate(0.0, scenario.cost_noise),
                        extra={"model": MODEL},
                    )
                )
    return rows


def statistical_policy(**settings: object) -> PromotionPolicy:
    return PromotionPolicy(decision_policy=DecisionPolicy.STATISTICAL, **settings)  # type: ignore[arg-type]


def decide(scenario: Scenario, rnd: random.Random, policy: PromotionPolicy) -> tuple[DecisionKind, object]:
    """The statistical decision on one simulated sweep, and its statistics."""
    _, (decision,) = judge_rows(sweep_rows(scenario, rnd), PAIR, model=MODEL, policy=policy)
    return decision.kind, decision.statistics


def promote_rate(scenario: Scenario, *, sweeps: int, seed: int, policy: PromotionPolicy) -> float:
    """The share of ``sweeps`` simulated sweeps the policy promotes."""
    rnd = random.Random(seed)
    promoted = sum(1 for _ in range(sweeps) if decide(scenario, rnd, policy)[0] is DecisionKind.PROMOTE)
    return promoted / sweeps
