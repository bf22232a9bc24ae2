"""The power of the statistical gate's *decision*, not of one analysis: planning sizes what promotes.

The statistical gate (``docs/statistics.md``) promotes a candidate on one of two claims, each
tested at the Holm level of the sweep's family (``α/2`` for a lone candidate, whose family is
its two claims):

- **resolution**: the resolution gain is significant — power ``P_R(δ)``;
- **saving**: an intersection-union test — the saving is significant *and* at least the
  required saving, *and* resolution is shown non-inferior (its lower bound above ``−margin``).
  With resolution truly equal the two parts are nearly independent, so its power is
  ``P_NI · P_S(g)``.

Each one-sided test's power on ``n`` tasks with per-task variance ``v`` is the inverse of the MDE
formula: ``T_{n−1}(effect/se − t_{1−α, n−1})``, ``se = √(v/n)``. The saving part asks for the
estimate to reach ``max(required, t·se)``: ``P_S(g) = T_{n−1}((g − max(required, t·se))/se)``.
A design the gate refuses (fewer than ``min_tasks`` tasks or ``min_runs`` runs per arm) has power
0; a quantity without noise to plan on (nothing varied) has unknown power (``None``) — the gate
never takes a zero-width interval as proof of non-inferiority.
"""

from __future__ import annotations

import math

import attrs

from wfbench.domain.statistics.distributions import t_cdf, t_ppf
from wfbench.domain.statistics.power import MAX_TASKS, VarianceComponents

__all__ = ["GateDesign", "claim_power", "decision_power", "saving_mde", "tasks_for_decision"]

#: Doublings of the task search: 2, 4, … 2**19, then MAX_TASKS (as in ``power.tasks_needed``).
_DOUBLINGS: tuple[int, ...] = tuple(min(2**k, MAX_TASKS) for k in range(1, MAX_TASKS.bit_length() + 1))


@attrs.frozen
class GateDesign:
    """What the gate asks of a sweep, on the analysis scale.

    ``alpha`` is each claim's one-sided level after Holm (``α/2`` for one candidate), ``margin``
    the resolution drop the candidate must be shown not to exceed (a difference of rates),
    ``required`` the smallest saving promoted (a log ratio), ``power`` the decision's target.
    """

    alpha: float = 0.025
    margin: float = 0.10
    required: float = 0.0
    power: float = 0.8
    min_tasks: int = 5
    min_runs: int = 1

    def refuses(self, n_tasks: int, runs: int | None) -> bool:
        """The gate answers ``insufficient_evidence`` on this design whatever the data."""
        return n_tasks < max(2, self.min_tasks) or (runs is not None and runs < self.min_runs)


def _se(components: VarianceComponents, n_tasks: int, runs: int | None) -> float | None:
    variance = components.effect_variance_at(runs)
    if variance is None or variance <= 0.0:
        return None
    return math.sqrt(variance / n_tasks)


def claim_power(se: float, n_tasks: int, effect: float, alpha: float) -> float:
    """Power of a one-sided test at ``alpha`` of ``H0: effect ≤ 0`` (``effect`` the true one)."""
    return t_cdf(effect / se - t_ppf(1.0 - alpha, n_tasks - 1), n_tasks - 1)


def _saving_power(se: float, n_tasks: int, saving: float, design: GateDesign) -> float:
    bar = max(design.required, t_ppf(1.0 - design.alpha, n_tasks - 1) * se)
    return t_cdf((saving - bar) / se, n_tasks - 1)


def non_inferiority_power(
    resolution: VarianceComponents, design: GateDesign, n_tasks: int, runs: int | None
) -> float | None:
    """Power to show non-inferiority when resolution is truly equal; ``None`` if unknown."""
    se = _se(resolution, n_tasks, runs)
    return None if se is None else claim_power(se, n_tasks, design.margin, design.alpha)


def decision_power(
    resolution: VarianceComponents,
    metric: VarianceComponents | None,
    design: GateDesign,
    *,
    n_tasks: int,
    runs: int | None,
    gain: float = 0.0,
    saving: float = 0.0,
) -> float | None:
    """The chance the gate promotes a candidate with a true resolution ``gain`` (resolution
    target) or, with resolution equal, a true ``saving`` (log ratio), on ``n_tasks`` × ``runs``."""
    if design.refuses(n_tasks, runs):
        return 0.0
    if gain > 0.0:
        se = _se(resolution, n_tasks, runs)
        return None if se is None else claim_power(se, n_tasks, gain, design.alpha)
    ni = non_inferiority_power(resolution, design, n_tasks, runs)
    se = None if metric is None else _se(metric, n_tasks, runs)
    if ni is None or se is None:
        return None
    return ni * _saving_power(se, n_tasks, saving, design)


def saving_mde(
    resolution: VarianceComponents,
    metric: VarianceComponents,
    design: GateDesign,
    *,
    n_tasks: int,
    runs: int | None = None,
) -> float | None:
    """The smallest true saving (log ratio) the gate promotes with ``design.power``, resolution
    being equal; ``None`` when unknown, refused, or when non-inferiority alone is shown too rarely
    (then no saving is large enough: only more tasks or runs help)."""
    if design.refuses(n_tasks, runs):
        return None
    ni = non_inferiority_power(resolution, design, n_tasks, runs)
    se = _se(metric, n_tasks, runs)
    if ni is None or se is None or ni <= design.power:
        return None
    bar = max(design.required, t_ppf(1.0 - design.alpha, n_tasks - 1) * se)
    return bar + t_ppf(design.power / ni, n_tasks - 1) * se


def tasks_for_decision(
    resolution: VarianceComponents,
    metric: VarianceComponents | None,
    design: GateDesign,
    *,
    runs: int | None,
    gain: float = 0.0,
    saving: float = 0.0,
) -> int | None:
    """The fewest tasks (at ``runs`` per arm) at which :func:`decision_power` reaches
    ``design.power``; ``None`` when unknown, refused at every size, or beyond ``MAX_TASKS``."""

    def reaches(n: int) -> bool:
        value = decision_power(resolution, metric, design, n_tasks=n, runs=runs, gain=gain, saving=saving)
        return value is not None and value >= design.power

    high = next((n for n in _DOUBLINGS if reaches(n)), None)
    if high is None:
        return None
    low = high // 2 if high > 2 else 1
    for _ in _DOUBLINGS:  # a fixed number of halvings: no self-stopping loop
        if high - low <= 1:
            break
        middle = (low + high) // 2
        if reaches(middle):
            high = middle
        else:
            low = middle
    return high
