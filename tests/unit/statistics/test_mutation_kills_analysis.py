"""The statistics object field by field, and every refusal of a stored one with its reason and field
(``scripts/mutation --modules statistics/analysis``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.unit.statistics.test_analysis import FOUR, arm, pair_samples
from tests.unit.statistics.test_planning_view import calm
from wfbench.domain.errors import InputError
from wfbench.domain.statistics.analysis import (
    METHOD,
    AnalysisConfig,
    PairStatistics,
    analyze_pair,
    has_quality_signal,
    metric_scale,
    non_inferiority_p,
)
from wfbench.domain.statistics.effects import EffectSummary, metric_effect, summarize
from wfbench.domain.statistics.resampling import bootstrap_means, bootstrap_p_value
from wfbench.domain.statistics.samples import TaskPair


def _pair(values: tuple[float, float] | None) -> list[float] | None:
    return None if values is None else [values[0], values[1]]


def _expected(summary: EffectSummary, stats: PairStatistics) -> dict[str, Any]:
    present, config, components = summary.scale.present, stats.config, summary.components
    assert summary.interval is not None
    assert summary.t_interval is not None
    assert components is not None
    out: dict[str, Any] = {
        "n_tasks": summary.n_tasks,
        "runs_per_arm": summary.runs_per_arm,
        "metric": summary.name,
        "scale": summary.scale.value,
        "unit": summary.scale.unit,
        "effect": present(summary.estimate),
        "ci_low": present(summary.interval[0]),
        "ci_high": present(summary.interval[1]),
        "confidence": config.confidence,
        "method": METHOD,
        "seed": stats.seed,
        "seed_source": stats.seed_source,
        "resamples": config.resamples,
        "estimate": summary.estimate,
        "se": summary.se,
        "t_ci_low": present(summary.t_interval[0]),
        "t_ci_high": present(summary.t_interval[1]),
        "p_value": summary.p_value,
        "mde": present(summary.mde),
        "alpha": config.alpha,
        "power": config.power,
        "sign_test_p": summary.sign_test_p,
        "wins": summary.wins,
        "losses": summary.losses,
        "ties": summary.ties,
        "tau2": components.tau2,
        "sigma2": components.sigma2,
        "unmeasured_tasks": list(summary.unmeasured),
    }
    if summary.rates is not None:
        for name, rate in zip(("incumbent", "candidate"), summary.rates, strict=True):
            out[name] = {
                "resolved": rate.resolved,
                "runs": rate.runs,
                "rate": rate.rate,
                "wilson": _pair(rate.interval),
            }
    return out


def test_the_statistics_object_names_every_figure_of_both_analyses_in_order() -> None:
    stats = analyze_pair(FOUR, AnalysisConfig(confidence=0.8, power=0.9))
    mapping = stats.to_mapping()

    metric = {key: value for key, value in mapping.items() if key not in ("resolution", "tasks")}
    assert list(metric.items()) == list(_expected(stats.metric, stats).items())
    assert list(mapping["resolution"].items()) == list(_expected(stats.resolution, stats).items())
    assert list(mapping)[-2:] == ["resolution", "tasks"]
    assert mapping["resolution"]["incumbent"]["wilson"][0] < mapping["resolution"]["incumbent"]["wilson"][1]
    assert mapping["ci_low"] < mapping["ci_high"]


def test_each_task_lists_its_samples_then_its_effects_and_their_intervals() -> None:
    stats = analyze_pair(FOUR)
    tasks = stats.to_mapping()["tasks"]

    for sample, view, entry in zip(stats.samples.to_mapping(), stats.task_effects(), tasks, strict=True):
        assert entry == {
            **sample,
            "resolution_pts": view.resolution,
            "resolution_interval": _pair(view.resolution_interval),
            "effect": view.effect,
            "effect_interval": _pair(view.effect_interval),
        }
        assert list(entry)[-4:] == ["resolution_pts", "resolution_interval", "effect", "effect_interval"]
        assert entry["resolution_interval"] is not None
        assert entry["effect_interval"] is not None
        low, high = entry["effect_interval"]
        assert low < high


def test_a_stored_object_keeps_its_analysis_settings() -> None:
    config = AnalysisConfig(confidence=0.8, power=0.9, resamples=500)
    raw = json.loads(json.dumps(analyze_pair(FOUR, config).to_mapping()))

    back = PairStatistics.from_mapping(raw, candidate="cand", incumbent="inc")

    assert back.config == config


@pytest.mark.parametrize(
    ("raw", "reason", "field"),
    [
        ([], "must be an object", "statistics"),
        ({"metric": 3}, "must be a string", "statistics.metric"),
        (
            {"metric": "cost_usd", "tasks": ["t"]},
            "must be an object with a non-empty task id",
            "statistics.tasks[0]",
        ),
        ({"metric": "cost_usd", "tasks": [], "confidence": 2}, None, "statistics.confidence"),
    ],
    ids=["not-an-object", "metric", "task-entry", "settings"],
)
def test_a_malformed_statistics_object_says_what_is_wrong_and_where(
    raw: object, reason: str | None, field: str
) -> None:
    with pytest.raises(InputError) as caught:
        PairStatistics.from_mapping(raw, candidate="cand", incumbent="inc")

    with pytest.raises(InputError) as direct:
        AnalysisConfig(confidence=2)  # type: ignore[arg-type]
    assert (caught.value.reason, caught.value.field) == (reason or direct.value.reason, field)


def test_an_object_that_disagrees_with_its_samples_says_so() -> None:
    raw = analyze_pair(FOUR).to_mapping() | {"effect": 99.0}

    with pytest.raises(InputError) as caught:
        PairStatistics.from_mapping(raw, candidate="cand", incumbent="inc", field="decision.statistics")

    assert (caught.value.reason, caught.value.field) == (
        "disagrees with the analysis of its own samples",
        "decision.statistics",
    )


def test_a_tasks_view_counts_the_runs_of_each_arm() -> None:
    pairs = pair_samples(
        TaskPair("a", arm("10", [1.0, 2.0]), arm("1", [1.0])), TaskPair("b", arm("1", [1.0]), arm("0", [0.5]))
    )

    views = analyze_pair(pairs).task_effects()

    assert [(v.incumbent_runs, v.candidate_runs) for v in views] == [(2, 1), (1, 1)]
    # One degree of freedom (one arm of one task ran twice) is enough for a within-task interval.
    assert all(v.resolution_interval is not None for v in views)
    assert all(v.effect_interval is not None for v in views)


def test_a_task_without_a_measured_metric_has_no_effect_and_no_interval() -> None:
    pairs = pair_samples(
        TaskPair("a", arm("10", [1.0, 2.0]), arm("11", [None, None])),
        TaskPair("b", arm("11", [1.0, 1.5]), arm("01", [0.5, 0.6])),
    )

    unmeasured, measured = analyze_pair(pairs).task_effects()

    assert (unmeasured.effect, unmeasured.effect_interval) == (None, None)
    assert unmeasured.resolution_interval is not None
    assert measured.effect is not None
    assert measured.effect_interval is not None


def test_runs_of_one_give_no_within_task_interval() -> None:
    pairs = pair_samples(TaskPair("a", arm("1"), arm("0")), TaskPair("b", arm("0"), arm("1")))

    assert [(v.resolution_interval, v.effect_interval) for v in analyze_pair(pairs).task_effects()] == [
        (None, None),
        (None, None),
    ]


def test_the_metrics_bootstrap_is_seeded_one_after_resolutions() -> None:
    stats = analyze_pair(FOUR, AnalysisConfig(seed=41))
    scale = metric_scale(FOUR.metric)
    effects = [e for e in (metric_effect(pair, scale) for pair in FOUR.tasks) if e is not None]

    again = summarize(FOUR.metric, scale, effects, config=stats.config, seed=42)

    assert stats.metric.interval == again.interval
    assert stats.metric.p_value == again.p_value


def _signal(*tasks: TaskPair) -> bool:
    return has_quality_signal(analyze_pair(pair_samples(*tasks)))


def test_a_run_resolved_in_either_arm_alone_is_quality_signal_and_two_tasks_suffice() -> None:
    assert _signal(TaskPair("a", arm("110"), arm("000")), TaskPair("b", arm("000"), arm("000")))
    assert _signal(TaskPair("a", arm("000"), arm("100")), TaskPair("b", arm("000"), arm("000")))
    assert not _signal(TaskPair("a", arm("000"), arm("000")), TaskPair("b", arm("000"), arm("000")))
    assert not _signal(TaskPair("a", arm("110"), arm("000")))


def test_non_inferiority_is_tested_against_the_margin_in_points() -> None:
    """Forty tasks' resampled means lie on a 1/120 grid: a margin of 0.84 points puts the null just
    past -1/120, so a null a hair off the margin changes the p-value."""
    stats = calm()
    values = [e.value for e in stats.resolution.effects]
    means = bootstrap_means(values, seed=stats.seed, resamples=stats.config.resamples)

    assert non_inferiority_p(stats, 0.84) == bootstrap_p_value(means, len(values), null=-0.0084)
    assert non_inferiority_p(stats, 0.84) != bootstrap_p_value(means, len(values), null=-0.84 / 101)
