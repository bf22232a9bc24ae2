"""Plan the next sweep from a pilot's rows — ``wfbench plan RESULTS --effect 10%`` (pure).

For every candidate → incumbent pair present in the rows, the pilot's run-level samples give the
variance components (between-task ``τ²``, within-task run ``σ²``); from them the domain lays out
the minimum detectable effect over a grid of tasks × runs per arm, prices each design at
``2·n·K`` sessions × the pilot's median session cost, and recommends the cheapest design that
reaches each target effect (a saving in % on the metric, or a resolution change in points).

It lives beside the gate (``promotion``), not in ``statistics``, because it sizes the *gate's*
decision: the request binds a :class:`PromotionPolicy` (its runs floor, tasks floor, margin and
saving), and ``statistics`` sits below ``promotion`` in the domain's layers.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

import attrs

from wfbench.domain.errors import InputError
from wfbench.domain.promotion.policy import PROMOTION_METRICS, PromotionPolicy
from wfbench.domain.results.rows import Row
from wfbench.domain.statistics.analysis import PairStatistics, analyze_pair
from wfbench.domain.statistics.config import DEFAULT_ANALYSIS, AnalysisConfig
from wfbench.domain.statistics.gate_power import GateDesign
from wfbench.domain.statistics.planning import DEFAULT_RUN_COUNTS, DEFAULT_TASK_COUNTS, Plan, plan
from wfbench.domain.statistics.samples import paired_samples

__all__ = ["PairPlan", "PlanRequest", "Target", "parse_effect", "plan_pairs"]


@attrs.frozen
class Target:
    """An effect to plan for: a saving on the metric (``%``) or a resolution change (points)."""

    value: float
    on_resolution: bool

    def text(self) -> str:
        return f"{self.value:g} points" if self.on_resolution else f"{self.value:g}%"


def parse_effect(text: str) -> Target:
    """``10%`` (a saving on the metric) or ``10pts`` (resolution points).

    Raises:
        InputError: no unit, an unknown unit, or not a positive number (a saving below 100 %).
    """
    raw = text.strip().lower()
    suffix = next((s for s in ("points", "pts", "pt", "%") if raw.endswith(s)), None)
    if suffix is None:
        raise InputError(
            f"give a unit: 10% (a saving) or 10pts (resolution points), got {text!r}", field="--effect"
        )
    number, on_resolution = raw[: -len(suffix)].strip(), suffix != "%"
    try:
        value = float(number)
    except ValueError:
        raise InputError(f"not a number: {text!r}", field="--effect") from None
    if not 0 < value < (1000 if on_resolution else 100):
        raise InputError(f"must be positive (a saving below 100%): {text!r}", field="--effect")
    return Target(value, on_resolution)


@attrs.frozen
class PlanRequest:
    """What to plan: the pairs, the metric, the targets, the grid and the analysis settings."""

    pairs: Mapping[str, str]
    metric: str = "cost_usd"
    targets: tuple[Target, ...] = (Target(5.0, on_resolution=False), Target(10.0, on_resolution=True))
    task_counts: tuple[int, ...] = DEFAULT_TASK_COUNTS
    run_counts: tuple[int, ...] = DEFAULT_RUN_COUNTS
    config: AnalysisConfig = DEFAULT_ANALYSIS
    #: The gate whose decision is planned (its runs floor, tasks floor, margin and saving).
    policy: PromotionPolicy = attrs.field(factory=lambda: PromotionPolicy(decision_policy="statistical"))

    def design(self, stats: PairStatistics) -> GateDesign:
        """The gate's design at this request's analysis settings: a lone candidate's two claims
        (Holm's first step, ``α/2``)."""
        return attrs.evolve(self.policy.gate_design(), alpha=stats.config.alpha / 2, power=stats.config.power)


@attrs.frozen
class PairPlan:
    """One pair's pilot analysis and a plan per target."""

    candidate: str
    incumbent: str
    statistics: PairStatistics
    #: Median cost of one session over the pilot's valid runs of both arms (``None``: unknown).
    session_cost: float | None
    plans: tuple[tuple[Target, Plan], ...]


def _session_cost(rows: Sequence[Row], arms: tuple[str, str]) -> float | None:
    costs = [
        row.cost_usd for row in rows if row.arm in arms and not row.excluded and row.cost_usd is not None
    ]
    return float(statistics.median(costs)) if costs else None


def plan_pairs(rows: Sequence[Row], request: PlanRequest) -> tuple[PairPlan, ...]:
    """A :class:`PairPlan` for every pair of ``request`` whose arms both have rows.

    Raises:
        InputError: an unsupported metric, or no pair with rows of both arms.
    """
    if request.metric not in PROMOTION_METRICS:
        raise InputError(f"unsupported promotion metric: {request.metric}", field="--metric")
    present = {row.arm for row in rows}
    out = []
    for candidate, incumbent in request.pairs.items():
        if candidate not in present or incumbent not in present:
            continue
        samples = paired_samples(rows, candidate=candidate, incumbent=incumbent, metric=request.metric)
        stats = analyze_pair(samples, request.config)
        cost = _session_cost(rows, (candidate, incumbent))
        plans = tuple(
            (
                target,
                plan(
                    stats,
                    target=target.value,
                    on_resolution=target.on_resolution,
                    design=request.design(stats),
                    session_cost=cost,
                    task_counts=request.task_counts,
                    run_counts=request.run_counts,
                ),
            )
            for target in request.targets
        )
        out.append(PairPlan(candidate, incumbent, stats, cost, plans))
    if not out:
        pairs = ", ".join(f"{c}={i}" for c, i in request.pairs.items())
        raise InputError(
            f"no candidate=incumbent pair has rows of both arms (looked for {pairs}); name one with --pair"
        )
    return tuple(out)
