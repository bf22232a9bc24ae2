"""Per-task paired effects and their summary: mean, intervals, p-values, counts, MDE.

The task is the unit. Task ``t``'s effect is the difference of the two arms' means over their
admissible runs, on an *analysis scale* where positive always means "the candidate is better":

- :attr:`Scale.DIFFERENCE` — resolution (0/1 per run) and the review metric: ``mean_C − mean_I``,
  reported in points (×100);
- :attr:`Scale.LOG_RATIO` — spend metrics (cost, tokens, duration, turns):
  ``log(mean_I / mean_C)``, reported as savings ``100·(1 − e^{−g})`` %. A task whose mean is
  unknown or zero on either side has no effect on this scale.

The summary of ``n`` effects: their mean; the task-clustered standard error ``s_d/√n``; the
seeded expanded-percentile cluster bootstrap interval and its one-sided p-value for
``H0: effect ≤ 0``; a Student-t interval as a cross-check; wins, losses and ties with the exact
sign-test p-value; the variance components and the minimum detectable effect (``power``).
All sums use ``math.fsum`` (exact, so order never matters).
"""

from __future__ import annotations

import enum
import math
from collections import Counter
from collections.abc import Sequence

import attrs

from wfbench.domain.statistics.config import AnalysisConfig
from wfbench.domain.statistics.distributions import sign_test_p, t_ppf, wilson_interval
from wfbench.domain.statistics.power import VarianceComponents, mde
from wfbench.domain.statistics.resampling import (
    bootstrap_means,
    bootstrap_p_value,
    expanded_tail,
    percentile_interval,
)
from wfbench.domain.statistics.samples import ArmRuns, TaskPair

__all__ = [
    "ArmRate",
    "EffectSummary",
    "Scale",
    "TaskEffect",
    "arm_rates",
    "metric_effect",
    "resolution_effect",
    "summarize",
]


class Scale(enum.StrEnum):
    """How a per-task effect is computed and reported."""

    #: ``mean_C − mean_I``, reported in points (×100).
    DIFFERENCE = "difference"
    #: ``log(mean_I / mean_C)``, reported as savings % (``100·(1 − e^{−g})``).
    LOG_RATIO = "log_ratio"

    @property
    def unit(self) -> str:
        """The unit effects are reported in."""
        return "points" if self is Scale.DIFFERENCE else "savings_pct"

    def present(self, value: float) -> float:
        """An analysis-scale value in the reported unit (monotone increasing)."""
        if self is Scale.DIFFERENCE:
            return 100.0 * value
        return 100.0 * -math.expm1(-value)

    def clamp(self, value: float) -> float:
        """``value`` within the scale's range: a difference of two means of values in [0, 1]
        lies in [−1, 1] (an interval never claims more); a log ratio is unbounded."""
        if self is Scale.DIFFERENCE:
            return min(1.0, max(-1.0, value))
        return value

    def from_presented(self, value: float) -> float:
        """The inverse of :meth:`present` (a target effect on the analysis scale).

        Raises:
            ValueError: a saving of 100 % or more (no finite log ratio).
        """
        if self is Scale.DIFFERENCE:
            return value / 100.0
        if value >= 100.0:
            raise ValueError("a saving must be below 100%")
        return -math.log1p(-value / 100.0)


#: The fewest tasks a Student-t interval is reported for.
MIN_T_TASKS = 3


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


@attrs.frozen
class TaskEffect:
    """One task's effect on the analysis scale, with the runs behind it."""

    task: str
    value: float
    incumbent_runs: int
    candidate_runs: int
    #: Within-task sums of squares (incumbent, candidate) on the scale's run units.
    incumbent_squares: float
    candidate_squares: float

    @property
    def inverse_runs(self) -> float:
        return 1.0 / self.incumbent_runs + 1.0 / self.candidate_runs


def _squares(values: Sequence[float], centre: float, relative: bool) -> float:
    scale = centre if relative else 1.0
    return math.fsum(((value - centre) / scale) ** 2 for value in values)


def resolution_effect(pair: TaskPair) -> TaskEffect:
    """The task's resolution effect: share of runs resolved, candidate minus incumbent."""
    inc = [1.0 if value else 0.0 for value in pair.incumbent.resolved]
    cand = [1.0 if value else 0.0 for value in pair.candidate.resolved]
    inc_mean, cand_mean = _mean(inc), _mean(cand)
    return TaskEffect(
        task=pair.task,
        value=cand_mean - inc_mean,
        incumbent_runs=len(inc),
        candidate_runs=len(cand),
        incumbent_squares=_squares(inc, inc_mean, relative=False),
        candidate_squares=_squares(cand, cand_mean, relative=False),
    )


def _known(runs: ArmRuns) -> list[float] | None:
    values = [value for value in runs.metric if value is not None]
    return values if values and len(values) == len(runs.metric) else None


def metric_effect(pair: TaskPair, scale: Scale) -> TaskEffect | None:
    """The task's metric effect on ``scale``; ``None`` when a run's value is unknown, an arm has
    no value, or (log ratio) a mean is not positive."""
    inc, cand = _known(pair.incumbent), _known(pair.candidate)
    if inc is None or cand is None:
        return None
    inc_mean, cand_mean = _mean(inc), _mean(cand)
    relative = scale is Scale.LOG_RATIO
    if relative:
        if not (inc_mean > 0 and cand_mean > 0):
            return None
        value = math.log(inc_mean) - math.log(cand_mean)
    else:
        value = cand_mean - inc_mean
    return TaskEffect(
        task=pair.task,
        value=value,
        incumbent_runs=len(inc),
        candidate_runs=len(cand),
        incumbent_squares=_squares(inc, inc_mean, relative),
        candidate_squares=_squares(cand, cand_mean, relative),
    )


@attrs.frozen
class ArmRate:
    """An arm's resolution rate over the analysed runs, with Wilson's interval."""

    resolved: int
    runs: int
    interval: tuple[float, float] | None

    @property
    def rate(self) -> float | None:
        return self.resolved / self.runs if self.runs else None


@attrs.frozen
class EffectSummary:
    """The paired analysis of one quantity (resolution, or the pair's metric)."""

    name: str
    scale: Scale
    effects: tuple[TaskEffect, ...]
    #: Tasks both arms ran that have no effect on this scale (unknown or zero values).
    unmeasured: tuple[str, ...]
    runs_per_arm: int | None
    estimate: float | None
    se: float | None
    interval: tuple[float, float] | None
    t_interval: tuple[float, float] | None
    p_value: float | None
    wins: int
    losses: int
    ties: int
    sign_test_p: float
    components: VarianceComponents | None
    mde: float | None
    #: Resolution only: each arm's pooled rate (incumbent, candidate).
    rates: tuple[ArmRate, ArmRate] | None = None

    @property
    def n_tasks(self) -> int:
        return len(self.effects)


def _runs_per_arm(effects: Sequence[TaskEffect]) -> int | None:
    counts = Counter(k for e in effects for k in (e.incumbent_runs, e.candidate_runs))
    if not counts:
        return None
    return min(counts, key=lambda runs: (-counts[runs], runs))


def summarize(
    name: str,
    scale: Scale,
    effects: Sequence[TaskEffect],
    *,
    unmeasured: Sequence[str] = (),
    config: AnalysisConfig,
    seed: int,
) -> EffectSummary:
    """Summarise per-task ``effects`` (any order) at ``config``'s two-sided confidence.

    The MDE is for a one-sided test at ``α = config.alpha`` with ``config.power``.
    """
    ordered = tuple(sorted(effects, key=lambda e: e.task))
    values = [e.value for e in ordered]
    n, tail = len(values), config.alpha
    wins = sum(1 for v in values if v > 0)
    losses = sum(1 for v in values if v < 0)
    estimate = se = interval = t_interval = p_value = components = detectable = None
    if n:
        # Never −0.0: 3.11's fsum gives +0.0 for any zero sum, and ``+ 0.0`` keeps it so.
        estimate = _mean(values) + 0.0
        within = [(e.incumbent_squares, e.incumbent_runs) for e in ordered]
        within += [(e.candidate_squares, e.candidate_runs) for e in ordered]
        components = VarianceComponents.estimate(values, within, [e.inverse_runs for e in ordered])
        detectable = mde(components, alpha=tail, power=config.power)
    if n >= 2 and components is not None and estimate is not None:
        se = math.sqrt(components.effect_variance / n)
        half = t_ppf(1.0 - tail, n - 1) * se
        # The estimate is never −0.0 and ``half`` ≥ 0, so neither bound is −0.0 either. With one
        # degree of freedom (2 tasks) t is 6.3 at 90 %: a "saving" of −10,000 % says nothing, so
        # there is no t interval below 3 tasks.
        if n >= MIN_T_TASKS:
            t_interval = (scale.clamp(estimate - half), scale.clamp(estimate + half))
        means = bootstrap_means(values, seed=seed, resamples=config.resamples)
        interval = percentile_interval(means, expanded_tail(tail, n))
        p_value = bootstrap_p_value(means, n)
    return EffectSummary(
        name=name,
        scale=scale,
        effects=ordered,
        unmeasured=tuple(sorted(unmeasured)),
        runs_per_arm=_runs_per_arm(ordered),
        estimate=estimate,
        se=se,
        interval=interval,
        t_interval=t_interval,
        p_value=p_value,
        wins=wins,
        losses=losses,
        ties=n - wins - losses,
        sign_test_p=sign_test_p(wins, losses),
        components=components,
        mde=detectable,
    )


def arm_rates(pairs: Sequence[TaskPair], confidence: float) -> tuple[ArmRate, ArmRate]:
    """Each arm's pooled resolution rate with Wilson's interval (incumbent, candidate).

    Descriptive only: pooling runs across tasks ignores that runs of one task are alike.
    """
    out = []
    for side in ("incumbent", "candidate"):
        runs = [getattr(pair, side) for pair in pairs]
        resolved = sum(sum(r.resolved) for r in runs)
        total = sum(r.runs for r in runs)
        out.append(ArmRate(resolved, total, wilson_interval(resolved, total, confidence)))
    return out[0], out[1]
