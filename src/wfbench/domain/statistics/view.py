"""What a report shows of a decision's ``statistics``: effect ± interval per pair and per task, and
the one sentence on what the sweep could and could not detect.

:func:`statistics_view` reads the ``statistics`` object of a ``promotion.json`` decision (it is
recomputed from its own samples, so a report never shows numbers the samples do not give) and
returns values ready to print: :class:`EffectLine` per quantity, the per-task
:class:`~wfbench.domain.statistics.analysis.TaskEffectView` rows (a forest plot's data), and the
:class:`~wfbench.domain.statistics.planning.Detectability` sentence against the policy's target.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from wfbench.domain.statistics.analysis import PairStatistics, TaskEffectView
from wfbench.domain.statistics.effects import EffectSummary, Scale
from wfbench.domain.statistics.planning import Detectability, detectability

#: The fewest tasks whose interval a report prints (with two, a t quantile of 6.3 makes it absurd).
MIN_INTERVAL_TASKS = 3

__all__ = ["EffectLine", "StatisticsView", "effect_line", "statistics_view"]


@attrs.frozen
class EffectLine:
    """One quantity's paired effect in reported units (points, or savings %)."""

    quantity: str
    unit: str
    n_tasks: int
    runs_per_arm: int | None
    effect: float | None
    low: float | None
    high: float | None
    confidence: float
    p_value: float | None
    mde: float | None

    def text(self) -> str:
        """``resolution: +8.3 points, 90% interval [-2.1, +18.7] (12 tasks x 3 runs)``."""
        design = f"({self.n_tasks} tasks x {self.runs_per_arm} runs)"
        if self.effect is None:
            return f"{self.quantity}: n/a {design}"
        if self.n_tasks < MIN_INTERVAL_TASKS:
            interval_text = "n/a (too few tasks for an interval)"
            value = f"{self.effect:z.1f}%" if self.unit == "savings_pct" else f"{self.effect:+z.1f} points"
            return f"{self.quantity}: {value}, {self.confidence:.0%} interval {interval_text} {design}"
        if self.unit == "savings_pct":
            value = f"{self.effect:z.1f}%"
            interval = (
                "n/a" if self.low is None or self.high is None else f"[{self.low:z.1f}%, {self.high:z.1f}%]"
            )
        else:
            value = f"{self.effect:+z.1f} points"
            interval = (
                "n/a" if self.low is None or self.high is None else f"[{self.low:+z.1f}, {self.high:+z.1f}]"
            )
        return f"{self.quantity}: {value}, {self.confidence:.0%} interval {interval} {design}"


def effect_line(summary: EffectSummary, confidence: float) -> EffectLine:
    """:class:`EffectLine` of one analysed quantity."""
    present = summary.scale.present
    if summary.scale is Scale.LOG_RATIO:
        quantity = f"{summary.name} saving"
    else:
        quantity = "resolution" if summary.name == "resolved" else summary.name
    interval = summary.interval
    return EffectLine(
        quantity=quantity,
        unit=summary.scale.unit,
        n_tasks=summary.n_tasks,
        runs_per_arm=summary.runs_per_arm,
        effect=None if summary.estimate is None else present(summary.estimate),
        low=None if interval is None else present(interval[0]),
        high=None if interval is None else present(interval[1]),
        confidence=confidence,
        p_value=summary.p_value,
        mde=None if summary.mde is None else present(summary.mde),
    )


@attrs.frozen
class StatisticsView:
    """A decision's statistics, ready for a report."""

    resolution: EffectLine
    metric: EffectLine
    tasks: tuple[TaskEffectView, ...]
    detectability: Detectability


def statistics_view(
    raw: Mapping[str, Any], *, candidate: str, incumbent: str, target: float | None = None
) -> StatisticsView:
    """The view of a decision's ``statistics`` object; ``target`` is the metric effect the policy
    asks for (savings %, e.g. its ``min_improvement_pct``).

    Raises:
        InputError: the object is malformed or disagrees with its own samples.
    """
    stats = PairStatistics.from_mapping(raw, candidate=candidate, incumbent=incumbent)
    confidence = stats.config.confidence
    return StatisticsView(
        resolution=effect_line(stats.resolution, confidence),
        metric=effect_line(stats.metric, confidence),
        tasks=stats.task_effects(),
        detectability=detectability(stats, target=target),
    )
