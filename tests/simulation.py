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


@attrs.frozen
class UShaped:
    """A generator the gate's authors did not tune to: U-shaped per-task pass rates, shared
    environment flakes, heavy-tailed cost, and a *known* true mean effect on resolution.

    Task ``t``'s incumbent rate ``p_t ~ Beta(shape, shape)`` (most tasks nearly always or nearly
    never resolve). A flake (probability ``flake`` per task and run index) fails run ``r`` of *both*
    arms (a shared environment fault) and costs a third of a run. The candidate's rate is
    ``p_t + g·(1 − p_t)`` for a gain, ``p_t·(1 − h)`` for a harm, with ``g``, ``h`` chosen so the
    expected *observed* effect is exactly ``effect`` (``E[p_t] = ½``, flakes attenuate by
    ``1 − flake``); ``spread`` adds ``± spread`` by task with a random sign (mean 0). Cost: a
    per-task level ``lognormal(0, 1.2)``, run noise ``lognormal(0, 0.35)`` with a 5 % chance of a
    3x spike; the candidate's level is ``e^{−saving}`` of the incumbent's.
    """

    tasks: int
    runs: int = 3
    effect: float = 0.0
    spread: float = 0.0
    saving: float = 0.0
    shape: float = 0.4
    flake: float = 0.08

    def candidate_rate(self, p: float, shift: float) -> float:
        scaled = self.effect / (0.5 * (1.0 - self.flake))
        rate = p + scaled * (1.0 - p) if scaled >= 0 else p * (1.0 + scaled)
        return min(1.0, max(0.0, rate + shift))


def _cost(rnd: random.Random, level: float) -> float:
    spike = 3.0 if rnd.random() < 0.05 else 1.0
    return level * spike * rnd.lognormvariate(0.0, 0.35)


def u_shaped_rows(scenario: UShaped, rnd: random.Random) -> list[Row]:
    """One sweep of the :class:`UShaped` generator, as rows."""
    rows = []
    for index in range(scenario.tasks):
        p = rnd.betavariate(scenario.shape, scenario.shape)
        shift = rnd.choice((scenario.spread, -scenario.spread))
        level = rnd.lognormvariate(0.0, 1.2)
        flakes = [rnd.random() < scenario.flake for _ in range(scenario.runs)]
        arms = (
            ("incumbent", p, level),
            ("candidate", scenario.candidate_rate(p, shift), level * math.exp(-scenario.saving)),
        )
        for arm, rate, arm_level in arms:
            for run in range(scenario.runs):
                resolved = not flakes[run] and rnd.random() < rate
                cost = _cost(rnd, arm_level) / (3.0 if flakes[run] else 1.0)
                rows.append(
                    Row(
                        task=f"task-{index:03d}",
                        arm=arm,
                        run=run,
                        ok=True,
                        resolved=resolved,
                        error_kind=None if resolved else ErrorKind.ORACLE_FAILED,
                        cost_usd=cost,
                        extra={"model": MODEL},
                    )
                )
    return rows


def any_rows(scenario: Scenario | UShaped, rnd: random.Random) -> list[Row]:
    """A sweep of whichever generator ``scenario`` belongs to."""
    return u_shaped_rows(scenario, rnd) if isinstance(scenario, UShaped) else sweep_rows(scenario, rnd)


def statistical_policy(**settings: object) -> PromotionPolicy:
    return PromotionPolicy(decision_policy=DecisionPolicy.STATISTICAL, **settings)  # type: ignore[arg-type]


def decide(
    scenario: Scenario | UShaped, rnd: random.Random, policy: PromotionPolicy
) -> tuple[DecisionKind, object]:
    """The statistical decision on one simulated sweep, and its statistics."""
    _, (decision,) = judge_rows(any_rows(scenario, rnd), PAIR, model=MODEL, policy=policy)
    return decision.kind, decision.statistics


def promote_rate(scenario: Scenario | UShaped, *, sweeps: int, seed: int, policy: PromotionPolicy) -> float:
    """The share of ``sweeps`` simulated sweeps the policy promotes."""
    rnd = random.Random(seed)
    promoted = sum(1 for _ in range(sweeps) if decide(scenario, rnd, policy)[0] is DecisionKind.PROMOTE)
    return promoted / sweeps
