"""What a sweep could detect, and how big the next one must be: detectability and run planning.

:func:`detectability` says, in one sentence, which effects the analysed sweep had 80 % power to
detect and whether that reaches the effect asked for — and if not, how many tasks (at the same
runs) or runs (on the same tasks) would. :func:`plan` lays out the MDE over a grid of tasks ×
runs per arm with each cell's cost (``2·n·K`` sessions × the measured cost of a session) and
recommends the cheapest design that reaches a target effect.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from wfbench.domain.statistics.analysis import PairStatistics
from wfbench.domain.statistics.effects import EffectSummary, Scale
from wfbench.domain.statistics.power import mde, runs_needed, tasks_needed

__all__ = [
    "DEFAULT_RUN_COUNTS",
    "DEFAULT_TASK_COUNTS",
    "Detectability",
    "Plan",
    "PlanCell",
    "describe_effect",
    "detectability",
    "plan",
]

DEFAULT_TASK_COUNTS = (5, 10, 20, 40, 80, 160, 320)
DEFAULT_RUN_COUNTS = (1, 2, 3, 5, 10)


def describe_effect(summary: EffectSummary, value: float) -> str:
    """``a cost_usd saving of ≥ 18.0%`` / ``a resolution change of ≥ 21.3 points``."""
    if summary.scale is Scale.LOG_RATIO:
        return f"a {summary.name} saving of >= {value:.1f}%"
    name = "resolution" if summary.name == "resolved" else summary.name
    return f"a {name} change of >= {value:.1f} points"


def _beyond_scale(summary: EffectSummary, value: float) -> bool:
    """An MDE of more than 100 points on a difference of rates: no change of that size exists."""
    return summary.scale is Scale.DIFFERENCE and value > 100.0


def _no_change(summary: EffectSummary, value: float, lead: str) -> str:
    name = "resolution" if summary.name == "resolved" else summary.name
    return f"{lead} {name} change (its MDE, {value:.1f} points, exceeds the 100-point scale)"


def _target(summary: EffectSummary, value: float) -> str:
    return f"{value:.1f}%" if summary.scale is Scale.LOG_RATIO else f"{value:.1f} points"


@attrs.frozen
class Detectability:
    """What the sweep could detect (reported units), and what reaching the target would take."""

    n_tasks: int
    runs_per_arm: int | None
    #: The metric's MDE (savings % or points) and the resolution MDE (points); ``None`` if unknown.
    metric_mde: float | None
    resolution_mde: float | None
    target: float | None
    #: True when the metric's MDE is at most the target (or no target was given).
    can_detect_target: bool
    #: Tasks in all (at ``runs_per_arm``) and runs per arm (on these tasks) that would reach it.
    tasks_needed: int | None
    runs_needed: int | None
    sentence: str


def _needs(
    summary: EffectSummary, target: float, alpha: float, power: float
) -> tuple[int | None, int | None]:
    components = summary.components
    if components is None:
        return None, None
    goal = summary.scale.from_presented(target)
    return (
        # At the runs measured (``None``): needs no run variance, so one run per arm plans too.
        tasks_needed(components, target=goal, alpha=alpha, power=power),
        runs_needed(components, target=goal, alpha=alpha, power=power),
    )


def _shortfall(summary: EffectSummary, target: float, tasks: int | None, runs: int | None) -> str:
    options = []
    if tasks is not None:
        more = tasks - summary.n_tasks
        options.append(f"{tasks} tasks at {summary.runs_per_arm} runs ({more} more)")
    if runs is not None:
        options.append(f"{runs} runs per arm on these {summary.n_tasks} tasks")
    advice = " or ".join(options) + " would" if options else "no design within reach would"
    if tasks is not None and runs is None:
        sigma2 = None if summary.components is None else summary.components.sigma2
        if sigma2 is None:
            advice += "; whether more runs would is unknown (no task has two runs of an arm)"
        elif sigma2 == 0.0:
            advice += "; more runs alone would not (the runs of a task do not vary)"
        else:
            advice += "; more runs alone would not (the tasks themselves differ too much)"
    return f"it cannot detect the {_target(summary, target)} asked for: {advice}"


def detectability(stats: PairStatistics, *, target: float | None = None) -> Detectability:
    """What ``stats``'s sweep could detect with its power, against ``target`` on the metric
    (savings % for spend metrics, points for the review metric)."""
    metric, res = stats.metric, stats.resolution
    alpha, power = stats.config.alpha, stats.config.power
    metric_mde = None if metric.mde is None else metric.scale.present(metric.mde)
    res_mde = None if res.mde is None else res.scale.present(res.mde)
    design = f"{res.n_tasks} tasks x {res.runs_per_arm} runs"
    known = [(s, v) for s, v in ((metric, metric_mde), (res, res_mde)) if v is not None]
    parts = [describe_effect(s, v) for s, v in known if not _beyond_scale(s, v)]
    beyond = [(s, v) for s, v in known if _beyond_scale(s, v)]
    if not known:
        why = (
            "it needs at least two paired tasks"
            if res.n_tasks < 2
            else "nothing varied between its runs or tasks, so there is no noise to plan on"
        )
        sentence = f"this sweep ({design}) cannot say what it could detect: {why}"
        if target is not None:
            sentence += f"; it cannot tell whether it could detect the {_target(metric, target)} asked for"
        return Detectability(res.n_tasks, res.runs_per_arm, None, None, target, False, None, None, sentence)
    reach = f"with {power:.0%} power (one-sided alpha = {alpha:g})"
    if parts:
        sentence = f"this sweep ({design}) can detect {' and '.join(parts)} {reach}"
        if beyond:
            sentence += " but " + " and ".join(_no_change(s, v, "no") for s, v in beyond)
    else:
        sentence = (
            f"this sweep ({design}) cannot detect "
            + " or ".join(_no_change(s, v, "any") for s, v in beyond)
            + f" {reach}"
        )
    can, tasks, runs = True, None, None
    if target is not None:
        can = metric_mde is not None and metric_mde <= target
        if can:
            sentence += f", so it could detect the {_target(metric, target)} asked for"
        elif metric_mde is None:
            sentence += f"; it cannot say whether it could detect the {_target(metric, target)} asked for"
        else:
            tasks, runs = _needs(metric, target, alpha, power)
            sentence += "; " + _shortfall(metric, target, tasks, runs)
    return Detectability(
        n_tasks=res.n_tasks,
        runs_per_arm=res.runs_per_arm,
        metric_mde=metric_mde,
        resolution_mde=res_mde,
        target=target,
        can_detect_target=can,
        tasks_needed=tasks,
        runs_needed=runs,
        sentence=sentence,
    )


@attrs.frozen
class PlanCell:
    """One design: tasks × runs per arm, its sessions and cost, and the MDE it would have."""

    n_tasks: int
    runs: int
    sessions: int
    #: ``sessions × cost of a session``; ``None`` when the pilot's cost is unknown.
    cost: float | None
    #: In reported units (savings % or points); ``None`` when it cannot be estimated.
    mde: float | None
    reaches: bool


@attrs.frozen
class Plan:
    """The MDE grid for one quantity and the cheapest design that reaches ``target``."""

    quantity: str
    unit: str
    target: float
    cells: tuple[PlanCell, ...]
    #: The cheapest design reaching the target: the fewest tasks at each of the grid's run
    #: counts, priced, cheapest first (fewer sessions, then more tasks, on a tie).
    recommended: PlanCell | None


@attrs.frozen
class _Grid:
    summary: EffectSummary
    alpha: float
    power: float
    session_cost: float | None
    target: float

    def cell(self, n: int, runs: int) -> PlanCell:
        components, value = self.summary.components, None
        if components is not None:
            raw = mde(components, alpha=self.alpha, power=self.power, n_tasks=n, runs=runs)
            value = None if raw is None else self.summary.scale.present(raw)
        sessions = 2 * n * runs
        cost = None if self.session_cost is None else sessions * self.session_cost
        return PlanCell(n, runs, sessions, cost, value, value is not None and value <= self.target)


def plan(
    summary: EffectSummary,
    *,
    target: float,
    alpha: float,
    power: float,
    session_cost: float | None = None,
    task_counts: Sequence[int] = DEFAULT_TASK_COUNTS,
    run_counts: Sequence[int] = DEFAULT_RUN_COUNTS,
) -> Plan:
    """The MDE of ``summary``'s quantity over ``task_counts`` × ``run_counts`` and the cheapest
    design reaching ``target`` (reported units). Needs the pilot's run variance to vary runs."""
    grid = _Grid(summary, alpha, power, session_cost, target)
    tasks = sorted({n for n in (*task_counts, summary.n_tasks) if n >= 2})
    runs_grid = sorted({k for k in run_counts if k >= 1})
    cells = tuple(grid.cell(n, k) for k in runs_grid for n in tasks)
    candidates = []
    components = summary.components
    if components is not None:
        goal = summary.scale.from_presented(target)
        for runs in runs_grid:
            needed = tasks_needed(components, target=goal, alpha=alpha, power=power, runs=runs)
            if needed is not None:
                candidates.append(grid.cell(needed, runs))
    best = min(
        candidates,
        key=lambda c: (c.cost if c.cost is not None else c.sessions, c.sessions, -c.n_tasks),
        default=None,
    )
    return Plan(summary.name, summary.scale.unit, target, cells, best)
