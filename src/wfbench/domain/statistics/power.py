"""Variance components, the minimum detectable effect, and how many tasks or runs a target needs.

The model behind it (``docs/statistics.md``): the paired effect of task ``t`` measured with
``K`` runs per arm is ``d_t = δ + u_t + e_t``, where ``u_t`` is the task's own deviation from
the mean effect (variance ``τ²``, between tasks) and ``e_t`` the run-to-run noise of the two
arms' means (variance ``σ²·(1/K_C + 1/K_I)``, with ``σ²`` the pooled within-task run
variance). So ``Var(d_t) = τ² + 2σ²/K`` for a balanced design, and the mean over ``n`` tasks has
variance ``(τ² + 2σ²/K)/n``.

Estimates (method of moments): ``σ²`` pools every (task, arm) sample variance by its degrees
of freedom; ``τ² = max(0, s_d² − σ²·mean(1/K_C + 1/K_I))`` with ``s_d²`` the sample variance of
the per-task effects. A one-sided test at level ``α`` with power ``1 − β`` then detects

    MDE(n, K) = (t_{1−α, n−1} + t_{1−β, n−1}) · √((τ² + 2σ²/K) / n)

and the planning functions search the smallest ``n`` (at a given ``K``) or ``K`` (at a given
``n``) whose MDE reaches a target. More runs only shrink the ``2σ²/K`` part: when ``τ²`` alone
keeps the MDE above the target, no number of runs is enough and only tasks help.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs

from wfbench.domain.statistics.distributions import t_ppf

__all__ = ["VarianceComponents", "mde", "runs_needed", "tasks_needed"]

#: Search limits of the planning functions (beyond them the answer is "not reachable").
MAX_TASKS = 1_000_000
MAX_RUNS = 1_000
#: The designs :func:`tasks_needed`'s doubling tries: 2, 4, 8, … 2**19, then :data:`MAX_TASKS`.
_DOUBLINGS: tuple[int, ...] = tuple(min(2**k, MAX_TASKS) for k in range(1, MAX_TASKS.bit_length() + 1))


@attrs.frozen
class VarianceComponents:
    """What the per-task effects and their runs say about noise, on the analysis scale."""

    n_tasks: int
    #: Sample variance (``n − 1``) of the per-task effects; 0.0 with one task.
    effect_variance: float
    #: Pooled within-task run variance; ``None`` when no (task, arm) has two runs.
    sigma2: float | None
    #: Mean over tasks of ``1/K_C + 1/K_I`` (``2/K`` for a balanced design).
    inverse_runs: float
    #: Degrees of freedom of ``sigma2``: the sum of ``K − 1`` over every (task, arm).
    within_dof: int = 0

    @classmethod
    def estimate(
        cls, effects: Sequence[float], within: Sequence[tuple[float, int]], inverse_runs: Sequence[float]
    ) -> VarianceComponents:
        """From the per-task effects, each (task, arm)'s ``(sum of squares, runs)``, and each
        task's ``1/K_C + 1/K_I``.

        Raises:
            ValueError: no effects, or ``inverse_runs`` does not have one entry per effect.
        """
        if not effects or len(inverse_runs) != len(effects):
            raise ValueError("one effect and one inverse run count per task are required")
        n = len(effects)
        mean = math.fsum(effects) / n
        variance = math.fsum((value - mean) ** 2 for value in effects) / (n - 1) if n > 1 else 0.0
        dof = sum(runs - 1 for _, runs in within if runs > 1)
        sigma2 = math.fsum(squares for squares, runs in within if runs > 1) / dof if dof else None
        return cls(
            n_tasks=n,
            effect_variance=variance,
            sigma2=sigma2,
            inverse_runs=math.fsum(inverse_runs) / n,
            within_dof=dof,
        )

    @property
    def tau2(self) -> float | None:
        """Between-task variance of the true effects (truncated at 0); ``None`` without ``σ²``."""
        return None if self.sigma2 is None else _tau2(self, self.sigma2)

    def effect_variance_at(self, runs: int | None = None) -> float | None:
        """``Var(d_t)`` with ``runs`` per arm (``None``: the design measured); ``None`` when
        the runs' share cannot be separated (no within-task variance)."""
        if runs is None:
            if self.sigma2 is None:
                return self.effect_variance
            return max(self.effect_variance, self.sigma2 * self.inverse_runs)
        sigma2 = self.sigma2  # τ² is known exactly when σ² is
        if sigma2 is None:
            return None
        return _tau2(self, sigma2) + 2.0 * sigma2 / runs


def _tau2(components: VarianceComponents, sigma2: float) -> float:
    return max(0.0, components.effect_variance - sigma2 * components.inverse_runs)


def _multiplier(n_tasks: int, alpha: float, power: float) -> float:
    return t_ppf(1.0 - alpha, n_tasks - 1) + t_ppf(power, n_tasks - 1)


def mde(
    components: VarianceComponents,
    *,
    alpha: float,
    power: float,
    n_tasks: int | None = None,
    runs: int | None = None,
) -> float | None:
    """The minimum detectable effect (analysis scale) with ``n_tasks`` and ``runs`` per arm.

    Defaults are the design measured. ``None`` below two tasks, for another run count when the
    within-task variance is unknown, and when nothing varied at all (no estimate to plan on).
    """
    n = components.n_tasks if n_tasks is None else n_tasks
    if n < 2:
        return None
    variance = components.effect_variance_at(runs)
    if variance is None or variance <= 0.0:
        # No variation at all: the estimate says "any effect", which no sweep can promise.
        return None
    return _multiplier(n, alpha, power) * math.sqrt(variance / n)


def tasks_needed(
    components: VarianceComponents, *, target: float, alpha: float, power: float, runs: int | None = None
) -> int | None:
    """The fewest tasks (at ``runs`` per arm) whose MDE is at most ``target``; ``None`` if unknown
    or beyond :data:`MAX_TASKS`.

    No design reaches a target that is not positive, nor one whose MDE is unknown (``mde`` is
    ``None`` for every ``n``): the doubling then ends at :data:`MAX_TASKS` (20 steps) with ``None``.
    """

    def reaches(n: int) -> bool:
        value = mde(components, alpha=alpha, power=power, n_tasks=n, runs=runs)
        return value is not None and value <= target

    # A fixed sequence, not a loop that stops itself: a wrong stop rule cannot spin forever.
    high = next((n for n in _DOUBLINGS if reaches(n)), None)
    if high is None:
        return None
    low = high // 2 if high > 2 else 1  # reaches(low) is false (or low is below the minimum)
    for _ in _DOUBLINGS:  # as many halvings as doublings close any bracket; again no self-stopping loop
        if high - low <= 1:
            break
        middle = (low + high) // 2
        if reaches(middle):
            high = middle
        else:
            low = middle
    return high


def runs_needed(
    components: VarianceComponents, *, target: float, alpha: float, power: float, n_tasks: int | None = None
) -> int | None:
    """The fewest runs per arm (with ``n_tasks``) whose MDE is at most ``target``; ``None`` when
    the between-task variance alone keeps it above the target, or it is unknown."""
    n = components.n_tasks if n_tasks is None else n_tasks
    sigma2 = components.sigma2
    if not target > 0 or n < 2 or sigma2 is None or sigma2 == 0.0:
        return None  # unknown, or no run noise to average (more runs change nothing)
    tau2 = _tau2(components, sigma2)
    budget = (target / _multiplier(n, alpha, power)) ** 2 * n  # the largest Var(d_t) that reaches it
    # The first run count within the budget, by a plain scan of at most MAX_RUNS steps: the closed
    # form ceil(2σ²/(budget − τ²)) needs rounding guards, and guards that correct a wrong start hide
    # it (mutation testing cannot tell them apart). None when τ² alone is over the budget.
    return next((runs for runs in range(1, MAX_RUNS + 1) if tau2 + 2.0 * sigma2 / runs <= budget), None)
