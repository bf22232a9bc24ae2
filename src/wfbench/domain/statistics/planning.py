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
from wfbench.domain.statistics.gate_power import (
    GateDesign,
    decision_power,
    non_inferiority_power,
    saving_mde,
    tasks_for_decision,
)
from wfbench.domain.statistics.power import mde, tasks_needed

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
#: The most runs per arm the planner suggests on the same tasks.
MAX_PLANNED_RUNS = 100


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
    """What the sweep's *decision* could detect (reported units), and what reaching more would take.

    The MDEs are the gate's: each claim at its one-sided level after Holm, the saving's including
    the chance that non-inferiority is shown (``gate_power``)."""

    n_tasks: int
    runs_per_arm: int | None
    #: The metric's decision MDE (savings % or points) and the resolution MDE (points); ``None`` if
    #: unknown or unreachable at this design.
    metric_mde: float | None
    resolution_mde: float | None
    target: float | None
    #: True when the metric's MDE is at most the target (or no target was given).
    can_detect_target: bool
    #: Tasks in all (at ``runs_per_arm``) and runs per arm (on these tasks) that would reach it.
    tasks_needed: int | None
    runs_needed: int | None
    sentence: str
    #: Tasks (at ``runs_per_arm``) that show non-inferiority with the design's power, when these do not.
    non_inferiority_tasks: int | None = None


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


def default_design(stats: PairStatistics, target: float | None = None, claims: int = 2) -> GateDesign:
    """The gate's design for a lone candidate: ``α/claims`` per claim, a 10-point margin, and
    ``target`` as the saving it requires (none when ``None``)."""
    required = 0.0 if target is None else stats.metric.scale.from_presented(target)
    return GateDesign(alpha=stats.config.alpha / claims, power=stats.config.power, required=required)


def _runs_for(stats: PairStatistics, design: GateDesign, **effect: float) -> int | None:
    res, metric = stats.resolution, stats.metric
    if res.components is None:
        return None
    for runs in range(max(1, design.min_runs), MAX_PLANNED_RUNS + 1):
        value = decision_power(
            res.components, metric.components, design, n_tasks=res.n_tasks, runs=runs, **effect
        )
        if value is not None and value >= design.power:
            return runs
    return None


def _designs_for(stats: PairStatistics, design: GateDesign, saving: float) -> tuple[int | None, int | None]:
    """Tasks (at the sweep's runs) and runs per arm (on its tasks) at which the gate promotes ``saving``."""
    res = stats.resolution
    if res.components is None:
        return None, None
    tasks = tasks_for_decision(res.components, stats.metric.components, design, runs=None, saving=saving)
    return tasks, _runs_for(stats, design, saving=saving)


def _ni_tasks(stats: PairStatistics, design: GateDesign) -> int | None:
    """Tasks that show non-inferiority with the design's power (``None`` if these already do)."""
    res = stats.resolution
    if res.components is None or res.n_tasks < 2:
        return None
    current = non_inferiority_power(res.components, design, res.n_tasks, None)
    if current is None or current >= design.power:
        return None
    return tasks_needed(res.components, target=design.margin, alpha=design.alpha, power=design.power)


def _decision_mdes(stats: PairStatistics, design: GateDesign) -> tuple[float | None, float | None]:
    metric, res = stats.metric, stats.resolution
    metric_mde = res_mde = None
    if res.components is not None:  # below two tasks neither MDE exists (mde and the gate say so)
        raw = mde(res.components, alpha=design.alpha, power=design.power)
        res_mde = None if raw is None else res.scale.present(raw)
        if metric.components is not None and metric.n_tasks >= 2:
            raw = saving_mde(res.components, metric.components, design, n_tasks=res.n_tasks)
            metric_mde = None if raw is None else metric.scale.present(raw)
    return metric_mde, res_mde


def detectability(
    stats: PairStatistics, *, target: float | None = None, design: GateDesign | None = None
) -> Detectability:
    """What ``stats``'s sweep could have the gate promote with its power, against ``target`` on
    the metric (savings % for spend metrics, points for the review metric). ``design`` is the
    gate's (default: :func:`default_design`, requiring no saving)."""
    metric, res = stats.metric, stats.resolution
    gate = design if design is not None else default_design(stats)
    metric_mde, res_mde = _decision_mdes(stats, gate)
    design_text = f"{res.n_tasks} tasks x {res.runs_per_arm} runs"
    ni_tasks = _ni_tasks(stats, gate)
    known = [(s, v) for s, v in ((metric, metric_mde), (res, res_mde)) if v is not None]
    parts = [describe_effect(s, v) for s, v in known if not _beyond_scale(s, v)]
    beyond = [(s, v) for s, v in known if _beyond_scale(s, v)]
    if not known and ni_tasks is None:  # (one task has neither)
        why = (
            "it needs at least two paired tasks"
            if res.n_tasks < 2
            else "nothing varied between its runs or tasks, so there is no noise to plan on"
        )
        sentence = f"this sweep ({design_text}) cannot say what it could detect: {why}"
        if target is not None:
            sentence += f"; it cannot tell whether it could detect the {_target(metric, target)} asked for"
        return Detectability(res.n_tasks, res.runs_per_arm, None, None, target, False, None, None, sentence)
    reach = (
        f"with {gate.power:.0%} power (the gate's one-sided alpha = {gate.alpha:g} per claim after Holm"
        f"; a saving also needs resolution shown within {100 * gate.margin:g} points)"
    )
    if parts:
        sentence = f"this sweep ({design_text}) can detect {' and '.join(parts)} {reach}"
        for s, v in beyond:  # at most one: the other quantity is among the parts
            sentence += f" but {_no_change(s, v, 'no')}"
    else:  # a known MDE or the non-inferiority shortfall, so every known MDE is beyond the scale
        sentence = (
            f"this sweep ({design_text}) cannot detect "
            + " or ".join(_no_change(s, v, "any") for s, v in beyond)
            + f" {reach}"
        )
    if ni_tasks is not None:
        sentence += (
            f"; it shows resolution non-inferior too rarely: {ni_tasks} tasks at {res.runs_per_arm} runs"
            f" ({ni_tasks - res.n_tasks} more) would show it with {gate.power:.0%} power"
        )
    can, tasks, runs = True, None, None
    if target is not None:
        can = metric_mde is not None and metric_mde <= target
        if can:
            sentence += f", so it could detect the {_target(metric, target)} asked for"
        elif metric.mde is None:  # no noise on the metric to plan on
            sentence += f"; it cannot say whether it could detect the {_target(metric, target)} asked for"
        else:
            tasks, runs = _designs_for(stats, gate, metric.scale.from_presented(target))
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
        non_inferiority_tasks=ni_tasks,
    )


@attrs.frozen
class PlanCell:
    """One design: tasks × runs per arm, its sessions and cost, its decision MDE and power."""

    n_tasks: int
    runs: int
    sessions: int
    #: ``sessions × cost of a session``; ``None`` when the pilot's cost is unknown.
    cost: float | None
    #: The gate's MDE in reported units (savings % or points); ``None`` when it cannot be
    #: estimated or no effect reaches the decision's power at this design.
    mde: float | None
    reaches: bool
    #: The chance the gate promotes a candidate with the target effect; ``None`` if unknown.
    power: float | None = None
    #: The gate answers ``insufficient_evidence`` on this design whatever the data.
    refused: bool = False


@attrs.frozen
class Plan:
    """The decision's MDE and power grid for one target and the cheapest design that reaches it."""

    quantity: str
    unit: str
    target: float
    cells: tuple[PlanCell, ...]
    #: The cheapest design reaching the target: the fewest tasks at each of the grid's run
    #: counts the gate accepts, priced, cheapest first (fewer sessions, then more tasks, on a tie).
    recommended: PlanCell | None


@attrs.frozen
class _Grid:
    stats: PairStatistics
    on_resolution: bool
    design: GateDesign
    session_cost: float | None
    target: float

    @property
    def summary(self) -> EffectSummary:
        return self.stats.resolution if self.on_resolution else self.stats.metric

    def effect(self) -> dict[str, float]:
        goal = self.summary.scale.from_presented(self.target)
        return {"gain": goal} if self.on_resolution else {"saving": goal}

    def _mde(self, n: int, runs: int) -> float | None:
        res, summary = self.stats.resolution.components, self.summary
        if res is None or summary.components is None or self.design.refuses(n, runs):
            return None
        if self.on_resolution:
            raw = mde(res, alpha=self.design.alpha, power=self.design.power, n_tasks=n, runs=runs)
        else:
            raw = saving_mde(res, summary.components, self.design, n_tasks=n, runs=runs)
        return None if raw is None else summary.scale.present(raw)

    def cell(self, n: int, runs: int) -> PlanCell:
        res = self.stats.resolution.components
        power = None
        if res is not None:
            power = decision_power(
                res, self.stats.metric.components, self.design, n_tasks=n, runs=runs, **self.effect()
            )
        sessions = 2 * n * runs
        cost = None if self.session_cost is None else sessions * self.session_cost
        reaches = power is not None and power >= self.design.power
        return PlanCell(
            n, runs, sessions, cost, self._mde(n, runs), reaches, power, self.design.refuses(n, runs)
        )


def plan(
    stats: PairStatistics,
    *,
    target: float,
    on_resolution: bool,
    design: GateDesign,
    session_cost: float | None = None,
    task_counts: Sequence[int] = DEFAULT_TASK_COUNTS,
    run_counts: Sequence[int] = DEFAULT_RUN_COUNTS,
) -> Plan:
    """The gate's MDE and power over ``task_counts`` × ``run_counts`` for a resolution gain or (with
    resolution equal) a saving of ``target`` (reported units), and the cheapest design at which the
    gate promotes it with ``design.power``. Needs the pilot's run variance to vary runs."""
    grid = _Grid(stats, on_resolution, design, session_cost, target)
    summary = grid.summary
    tasks = sorted({n for n in (*task_counts, summary.n_tasks) if n >= 2})
    runs_grid = sorted({k for k in run_counts if k >= 1})
    cells = tuple(grid.cell(n, k) for k in runs_grid for n in tasks)
    candidates = []
    res = stats.resolution.components
    if res is not None:
        for runs in runs_grid:
            if runs < design.min_runs:
                continue  # the gate refuses the design at any size
            needed = tasks_for_decision(res, stats.metric.components, design, runs=runs, **grid.effect())
            if needed is not None:
                candidates.append(grid.cell(needed, runs))
    # A cell's cost is its sessions times the pilot's one session cost: the fewest sessions is
    # the cheapest, priced or not.
    best = min(candidates, key=lambda c: (c.sessions, -c.n_tasks), default=None)
    return Plan(summary.name, summary.scale.unit, target, cells, best)
