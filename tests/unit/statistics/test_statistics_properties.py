"""Properties of the paired analysis (Hypothesis): what must not change, and what must mirror."""

from __future__ import annotations

import math
import random

import attrs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.strategies import paired_sample_sets, rows_of
from wfbench.domain.statistics.analysis import AnalysisConfig, analyze_pair
from wfbench.domain.statistics.effects import EffectSummary
from wfbench.domain.statistics.samples import ArmRuns, PairedSamples, paired_samples

FAST = AnalysisConfig(resamples=200)
# Each example runs the bootstrap: on a loaded shared machine generation can look "too slow".
TOLERANT = settings(suppress_health_check=[HealthCheck.too_slow])


def _summaries(samples: PairedSamples, config: AnalysisConfig = FAST) -> dict[str, object]:
    mapping = analyze_pair(samples, config).to_mapping()
    mapping.pop("tasks")
    return mapping


@TOLERANT
@given(paired_sample_sets(), st.randoms(use_true_random=False))
def test_the_analysis_ignores_row_order(samples: PairedSamples, rnd: random.Random) -> None:
    rows = rows_of(samples)
    shuffled = list(rows)
    rnd.shuffle(shuffled)

    def analysed(these: list) -> dict[str, object]:
        rebuilt = paired_samples(these, candidate="candidate", incumbent="incumbent", metric="cost_usd")
        return analyze_pair(rebuilt, FAST).to_mapping()

    assert analysed(shuffled) == analysed(rows)


@TOLERANT
@given(paired_sample_sets(), st.randoms(use_true_random=False))
def test_renaming_tasks_consistently_changes_no_number(samples: PairedSamples, rnd: random.Random) -> None:
    names = [pair.task for pair in samples.tasks]
    shuffled = list(names)
    rnd.shuffle(shuffled)
    rename = dict(zip(names, (f"renamed-{name}" for name in shuffled), strict=True))
    renamed = attrs.evolve(
        samples,
        tasks=tuple(
            sorted((attrs.evolve(p, task=rename[p.task]) for p in samples.tasks), key=lambda p: p.task)
        ),
    )

    assert _summaries(renamed) == _summaries(samples)
    per_task = {t["task"]: t for t in analyze_pair(samples, FAST).to_mapping()["tasks"]}
    for entry in analyze_pair(renamed, FAST).to_mapping()["tasks"]:
        original = per_task[next(old for old, new in rename.items() if new == entry["task"])]
        assert entry | {"task": original["task"]} == original


def _assert_mirrored(forward: EffectSummary, backward: EffectSummary) -> None:
    assert forward.n_tasks == backward.n_tasks
    if forward.estimate is None:
        assert backward.estimate is None
        return
    assert backward.estimate == -forward.estimate
    assert (backward.wins, backward.losses, backward.ties) == (forward.losses, forward.wins, forward.ties)
    assert backward.sign_test_p == forward.sign_test_p
    assert backward.se == forward.se
    assert backward.mde == forward.mde
    if forward.interval is None:
        assert backward.interval is None
        assert backward.t_interval is None
        return
    assert backward.interval == (-forward.interval[1] + 0.0, -forward.interval[0] + 0.0)
    if forward.t_interval is None:  # fewer than 3 tasks: no t interval either way
        assert backward.t_interval is None
        return
    assert backward.t_interval == (-forward.t_interval[1] + 0.0, -forward.t_interval[0] + 0.0)


@TOLERANT
@given(paired_sample_sets())
def test_swapping_the_arms_negates_the_effect_and_mirrors_the_interval(samples: PairedSamples) -> None:
    forward, backward = analyze_pair(samples, FAST), analyze_pair(samples.swapped(), FAST)

    assert backward.seed == forward.seed
    _assert_mirrored(forward.resolution, backward.resolution)
    _assert_mirrored(forward.metric, backward.metric)


def _with_mean_runs(runs: ArmRuns, extra: int) -> ArmRuns:
    costs = [value for value in runs.metric if value is not None]
    mean = math.fsum(costs) / len(costs)
    unanimous = len(set(runs.resolved)) == 1
    resolved = runs.resolved + (runs.resolved[0],) * extra if unanimous else runs.resolved
    return ArmRuns(resolved, runs.metric + (mean,) * extra)


def _width(summary: EffectSummary) -> float:
    assert summary.interval is not None
    return summary.interval[1] - summary.interval[0]


@TOLERANT
@given(paired_sample_sets(), st.integers(min_value=1, max_value=3))
def test_adding_runs_equal_to_each_task_s_mean_does_not_widen_the_interval(
    samples: PairedSamples, extra: int
) -> None:
    grown = attrs.evolve(
        samples,
        tasks=tuple(
            attrs.evolve(
                p,
                incumbent=_with_mean_runs(p.incumbent, extra),
                candidate=_with_mean_runs(p.candidate, extra),
            )
            for p in samples.tasks
        ),
    )
    config = AnalysisConfig(resamples=200, seed=1234)
    before, after = analyze_pair(samples, config), analyze_pair(grown, config)

    # Means move by at most an ulp or two; the interval may not grow beyond that rounding.
    assert _width(after.metric) <= _width(before.metric) * (1 + 1e-9) + 1e-12
    assert after.metric.estimate is not None
    assert before.metric.estimate is not None
    assert math.isclose(after.metric.estimate, before.metric.estimate, rel_tol=1e-9, abs_tol=1e-12)
    unanimous = all(len(set(arm.resolved)) == 1 for p in samples.tasks for arm in (p.incumbent, p.candidate))
    if unanimous:  # resolution means are then unchanged to the bit
        assert after.resolution.interval == before.resolution.interval


@TOLERANT
@given(paired_sample_sets(min_tasks=2, max_tasks=6))
def test_intervals_contain_the_estimate_and_p_values_are_probabilities(samples: PairedSamples) -> None:
    stats = analyze_pair(samples, FAST)

    for summary in (stats.resolution, stats.metric):
        if summary.interval is None:
            continue
        assert summary.estimate is not None
        assert summary.p_value is not None
        low, high = summary.interval
        assert low - 1e-12 <= high + 1e-12
        assert 0.0 <= summary.p_value <= 1.0
        assert 0.0 <= summary.sign_test_p <= 1.0
        assert summary.mde is None or summary.mde > 0  # None: nothing varied
