"""The paired analysis of one candidate → incumbent pair, and its ``statistics`` object.

:func:`analyze_pair` turns :class:`~wfbench.domain.statistics.samples.PairedSamples` into a
:class:`PairStatistics`: the resolution analysis and the analysis of the pair's metric (savings
for spend metrics, a difference for the review metric), both on the task as the unit
(``docs/statistics.md``). :meth:`PairStatistics.to_mapping` is the ``statistics`` object of a
``promotion.json`` decision; :meth:`PairStatistics.from_mapping` recomputes the analysis from
the samples stored in it and refuses a mapping that disagrees with its own samples.

Reproducible: the seed is the configured one or, by default, derived from a SHA-256 digest of
the per-task effects (sorted, in the canonical orientation, names left out), so the same
evidence gives the same seed and the same numbers on every machine, whatever the row order,
task names or which arm is called the candidate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from wfbench.domain.errors import InputError
from wfbench.domain.statistics.config import (
    DEFAULT_ANALYSIS,
    DEFAULT_CONFIDENCE,
    DEFAULT_POWER,
    DEFAULT_RESAMPLES,
    AnalysisConfig,
)
from wfbench.domain.statistics.distributions import t_ppf
from wfbench.domain.statistics.effects import (
    ArmRate,
    EffectSummary,
    Scale,
    TaskEffect,
    arm_rates,
    metric_effect,
    resolution_effect,
    summarize,
)
from wfbench.domain.statistics.resampling import bootstrap_means, bootstrap_p_value
from wfbench.domain.statistics.samples import REVIEW_METRIC, PairedSamples

__all__ = [
    "DEFAULT_CONFIDENCE",
    "DEFAULT_POWER",
    "DEFAULT_RESAMPLES",
    "METHOD",
    "AnalysisConfig",
    "PairStatistics",
    "TaskEffectView",
    "analyze_pair",
    "derive_seed",
    "has_quality_signal",
    "metric_scale",
    "non_inferiority_p",
]

METHOD = "task-cluster bootstrap, expanded percentile"
RESOLUTION = "resolved"


def metric_scale(metric: str) -> Scale:
    """Spend metrics are compared as log ratios; the review metric as a difference."""
    return Scale.DIFFERENCE if metric == REVIEW_METRIC else Scale.LOG_RATIO


def _canonical(values: Sequence[float]) -> list[float]:
    ordered, mirrored = sorted(values), sorted(-v for v in values)
    return min(ordered, mirrored)


def derive_seed(*effect_lists: Sequence[float]) -> int:
    """A 64-bit seed from the effects alone: sorted, canonically oriented, names left out."""
    text = "|".join(",".join(repr(v + 0.0) for v in _canonical(values)) for values in effect_lists)
    import hashlib  # here, not at import: a gate with no pair to judge never needs it

    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


@attrs.frozen
class TaskEffectView:
    """One task's effects in reported units, with a within-task interval (for forest plots)."""

    task: str
    incumbent_runs: int
    candidate_runs: int
    resolution: float
    resolution_interval: tuple[float, float] | None
    #: ``None`` when the metric has no effect on this task.
    effect: float | None
    effect_interval: tuple[float, float] | None


@attrs.frozen
class PairStatistics:
    """The paired analysis of one pair: resolution, the metric, the seed and the samples."""

    samples: PairedSamples
    config: AnalysisConfig
    seed: int
    #: Where the seed came from: ``evidence`` (derived) or ``policy`` (configured).
    seed_source: str
    resolution: EffectSummary
    metric: EffectSummary

    @property
    def candidate(self) -> str:
        return self.samples.candidate

    @property
    def incumbent(self) -> str:
        return self.samples.incumbent

    def task_effects(self) -> tuple[TaskEffectView, ...]:
        """Every task's resolution and metric effect in reported units, sorted by task id.

        The within-task interval is ``d_t ± t·√(σ²·(1/K_C + 1/K_I))`` with the pooled run
        variance ``σ²`` of the analysis (its degrees of freedom for ``t``), mapped to the
        reported unit; ``None`` when ``σ²`` is unknown.
        """
        by_task = {e.task: e for e in self.metric.effects}
        return tuple(
            TaskEffectView(
                task=e.task,
                incumbent_runs=e.incumbent_runs,
                candidate_runs=e.candidate_runs,
                resolution=self.resolution.scale.present(e.value),
                resolution_interval=_task_interval(self.resolution, e, self.config),
                effect=None if (m := by_task.get(e.task)) is None else self.metric.scale.present(m.value),
                effect_interval=None if m is None else _task_interval(self.metric, m, self.config),
            )
            for e in self.resolution.effects
        )

    def to_mapping(self) -> dict[str, Any]:
        """The ``statistics`` object: the metric's analysis, ``resolution``, then per-task data."""
        out = self.summary_mapping()
        out["tasks"] = self.task_mappings()
        return out

    def summary_mapping(self) -> dict[str, Any]:
        """The ``statistics`` object without its per-task ``tasks`` (what ``gate --json`` prints)."""
        out = _summary_mapping(self.metric, self)
        out["resolution"] = _summary_mapping(self.resolution, self)
        return out

    def task_mappings(self) -> list[dict[str, Any]]:
        """The ``statistics`` object's ``tasks``: each task's samples, then its effects."""
        views = {view.task: view for view in self.task_effects()}
        return [dict(sample, **_view_mapping(views[sample["task"]])) for sample in self.samples.to_mapping()]

    @classmethod
    def from_mapping(
        cls, raw: Any, *, candidate: str, incumbent: str, field: str = "statistics"
    ) -> PairStatistics:
        """Recompute the analysis from the samples and settings stored in ``raw``.

        Raises:
            InputError: ``raw`` is malformed, or disagrees with what its own samples give.
        """
        if not isinstance(raw, Mapping):
            raise InputError("must be an object", field=field)
        metric = raw.get("metric")
        if not isinstance(metric, str):
            raise InputError("must be a string", field=f"{field}.metric")
        # Each task's reported effects beside its samples are recomputed, not read.
        samples = PairedSamples.from_mapping(
            raw.get("tasks"), candidate=candidate, incumbent=incumbent, metric=metric, field=f"{field}.tasks"
        )
        try:
            config = AnalysisConfig(
                confidence=raw.get("confidence"),  # type: ignore[arg-type]
                resamples=raw.get("resamples"),  # type: ignore[arg-type]
                power=raw.get("power"),  # type: ignore[arg-type]
                # A derived seed is derived again (and must come out the same).
                seed=None if raw.get("seed_source") == "evidence" else raw.get("seed"),
            )
        except InputError as exc:
            raise InputError(exc.reason, field=f"{field}.{exc.field}") from None
        stats = analyze_pair(samples, config)
        if stats.to_mapping() != dict(raw):
            raise InputError("disagrees with the analysis of its own samples", field=field)
        return stats


def _task_interval(
    summary: EffectSummary, effect: TaskEffect, config: AnalysisConfig
) -> tuple[float, float] | None:
    components = summary.components
    if components is None or components.sigma2 is None:  # no task has two runs of an arm (no dof)
        return None
    half = t_ppf(1.0 - config.alpha, components.within_dof) * math.sqrt(
        components.sigma2 * effect.inverse_runs
    )
    scale = summary.scale
    return scale.present(scale.clamp(effect.value - half)), scale.present(scale.clamp(effect.value + half))


def _pair(values: tuple[float, float] | None) -> list[float] | None:
    return None if values is None else [values[0], values[1]]


def _view_mapping(view: TaskEffectView) -> dict[str, Any]:
    return {
        "resolution_pts": view.resolution,
        "resolution_interval": _pair(view.resolution_interval),
        "effect": view.effect,
        "effect_interval": _pair(view.effect_interval),
    }


def _present(summary: EffectSummary, value: float | None) -> float | None:
    return None if value is None else summary.scale.present(value)


def _rate_mapping(rate: ArmRate) -> dict[str, Any]:
    return {"resolved": rate.resolved, "runs": rate.runs, "rate": rate.rate, "wilson": _pair(rate.interval)}


def _summary_mapping(summary: EffectSummary, stats: PairStatistics) -> dict[str, Any]:
    interval, t_interval = summary.interval, summary.t_interval
    components = summary.components
    out: dict[str, Any] = {
        "n_tasks": summary.n_tasks,
        "runs_per_arm": summary.runs_per_arm,
        "metric": summary.name,
        "scale": summary.scale.value,
        "unit": summary.scale.unit,
        "effect": _present(summary, summary.estimate),
        "ci_low": None if interval is None else summary.scale.present(interval[0]),
        "ci_high": None if interval is None else summary.scale.present(interval[1]),
        "confidence": stats.config.confidence,
        "method": METHOD,
        "seed": stats.seed,
        "seed_source": stats.seed_source,
        "resamples": stats.config.resamples,
        "estimate": summary.estimate,
        "se": summary.se,
        "t_ci_low": None if t_interval is None else summary.scale.present(t_interval[0]),
        "t_ci_high": None if t_interval is None else summary.scale.present(t_interval[1]),
        "p_value": summary.p_value,
        "mde": _present(summary, summary.mde),
        "alpha": stats.config.alpha,
        "power": stats.config.power,
        "sign_test_p": summary.sign_test_p,
        "wins": summary.wins,
        "losses": summary.losses,
        "ties": summary.ties,
        "tau2": None if components is None else components.tau2,
        "sigma2": None if components is None else components.sigma2,
        "unmeasured_tasks": list(summary.unmeasured),
    }
    if summary.rates is not None:
        out["incumbent"] = _rate_mapping(summary.rates[0])
        out["candidate"] = _rate_mapping(summary.rates[1])
    return out


def analyze_pair(samples: PairedSamples, config: AnalysisConfig = DEFAULT_ANALYSIS) -> PairStatistics:
    """The paired analysis of ``samples`` (see the module docstring)."""
    scale = metric_scale(samples.metric)
    resolution = [resolution_effect(pair) for pair in samples.tasks]
    measured: list[TaskEffect] = []
    unmeasured: list[str] = []
    for pair in samples.tasks:
        effect = metric_effect(pair, scale)
        if effect is None:
            unmeasured.append(pair.task)
        else:
            measured.append(effect)
    if config.seed is None:
        seed = derive_seed([e.value for e in resolution], [e.value for e in measured])
        source = "evidence"
    else:
        seed, source = config.seed, "policy"
    res_summary = attrs.evolve(
        summarize(RESOLUTION, Scale.DIFFERENCE, resolution, config=config, seed=seed),
        rates=arm_rates(samples.tasks, config.confidence),
    )
    metric_summary = summarize(
        samples.metric, scale, measured, unmeasured=unmeasured, config=config, seed=seed + 1
    )
    return PairStatistics(
        samples=samples,
        config=config,
        seed=seed,
        seed_source=source,
        resolution=res_summary,
        metric=metric_summary,
    )


def has_quality_signal(stats: PairStatistics) -> bool:
    """Whether resolution can speak at all: some run resolved, and the tasks' effects differ.

    With no resolved run in either arm, or every task's effect alike (a zero-width interval),
    the interval measures nothing; it never proves non-inferiority (a broken oracle, or a
    candidate that gives up early, looks exactly like that).
    """
    res = stats.resolution
    values = [e.value for e in res.effects]
    resolved = res.rates is not None and res.rates[0].resolved + res.rates[1].resolved > 0
    return resolved and len(values) >= 2 and min(values) != max(values)


def non_inferiority_p(stats: PairStatistics, margin_pts: float) -> float | None:
    """One-sided p-value for ``H0: resolution effect ≤ −margin`` (the same seeded resamples as
    the resolution interval, so the interval's lower bound is above ``−margin`` at level ``α``
    exactly when this is at most ``α``); ``None`` without quality signal."""
    if not has_quality_signal(stats):
        return None
    values = [e.value for e in stats.resolution.effects]
    means = bootstrap_means(values, seed=stats.seed, resamples=stats.config.resamples)
    return bootstrap_p_value(means, len(values), null=-margin_pts / 100.0)
