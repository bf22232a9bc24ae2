"""Tests that kill survivors of ``scripts/mutation --modules statistics/effects``.

The within-task sums of squares on each scale (a log-ratio metric's runs are measured relative to
their arm's mean, resolution's and a difference metric's on their own units) and the exact refusal
of a saving of 100 %.
"""

from __future__ import annotations

import math

import pytest

from wfbench.domain.statistics.config import AnalysisConfig
from wfbench.domain.statistics.effects import Scale, TaskEffect, metric_effect, resolution_effect, summarize
from wfbench.domain.statistics.samples import ArmRuns, TaskPair


def _pair(incumbent: tuple[float, ...], candidate: tuple[float, ...]) -> TaskPair:
    return TaskPair(
        "t",
        incumbent=ArmRuns(resolved=(True,) * len(incumbent), metric=incumbent),
        candidate=ArmRuns(resolved=(False,) * len(candidate), metric=candidate),
    )


def test_a_log_ratio_metric_s_squares_are_relative_to_each_arm_s_mean() -> None:
    """Costs 2, 4, 6 (mean 4) and 10, 30 (mean 20): squares 0.25 + 0 + 0.25 and 0.25 + 0.25."""
    effect = metric_effect(_pair((2.0, 4.0, 6.0), (10.0, 30.0)), Scale.LOG_RATIO)
    assert effect is not None
    assert effect.incumbent_squares == pytest.approx(0.5)
    assert effect.candidate_squares == pytest.approx(0.5)


def test_a_difference_metric_s_squares_are_on_its_own_units() -> None:
    """Scores 0.2, 0.4, 0.6 (mean 0.4): squares 0.04 + 0 + 0.04; 0.5, 0.9: 0.04 + 0.04."""
    effect = metric_effect(_pair((0.2, 0.4, 0.6), (0.5, 0.9)), Scale.DIFFERENCE)
    assert effect is not None
    assert effect.incumbent_squares == pytest.approx(0.08)
    assert effect.candidate_squares == pytest.approx(0.08)
    assert effect.value == pytest.approx(0.3)


def test_resolution_squares_count_each_run_against_the_share_resolved() -> None:
    pair = TaskPair(
        "t",
        incumbent=ArmRuns(resolved=(True, False, False, False), metric=()),
        candidate=ArmRuns(resolved=(True, True), metric=()),
    )
    effect = resolution_effect(pair)
    assert effect.incumbent_squares == pytest.approx(0.75**2 + 3 * 0.25**2)
    assert effect.candidate_squares == 0.0
    assert effect.value == pytest.approx(0.75)


def test_a_saving_of_100_percent_or_more_is_refused_in_these_words() -> None:
    for value in (100.0, 250.0):
        with pytest.raises(ValueError, match=r"^a saving must be below 100%$"):
            Scale.LOG_RATIO.from_presented(value)
    assert Scale.LOG_RATIO.from_presented(0.0) == 0.0


def _effect(task: str, value: float, runs: int = 3) -> TaskEffect:
    return TaskEffect(task, value, runs, runs, 0.0, 0.0)


def test_a_metric_effect_needs_every_run_of_both_arms_measured() -> None:
    assert metric_effect(_pair((2.0, 4.0), (1.0, 3.0)), Scale.DIFFERENCE) is not None
    for incumbent, candidate in (((2.0, None), (1.0, 3.0)), ((2.0, 4.0), (None, 3.0)), ((), (1.0,))):
        assert metric_effect(_pair(incumbent, candidate), Scale.DIFFERENCE) is None  # type: ignore[arg-type]


def test_a_log_ratio_effect_needs_both_means_positive() -> None:
    assert metric_effect(_pair((2.0, 4.0), (0.0, 0.0)), Scale.LOG_RATIO) is None
    assert metric_effect(_pair((0.0, 0.0), (1.0, 3.0)), Scale.LOG_RATIO) is None
    effect = metric_effect(_pair((2.0, 4.0), (1.0, 2.0)), Scale.LOG_RATIO)
    assert effect is not None
    assert effect.value == pytest.approx(math.log(2.0))


def test_the_runs_per_arm_is_the_most_common_count_and_the_smaller_on_a_tie() -> None:
    config = AnalysisConfig(resamples=200)
    most = [_effect("a", 0.1, 2), _effect("b", 0.2, 5), _effect("c", 0.3, 5), _effect("d", 0.0, 5)]
    assert summarize("cost", Scale.LOG_RATIO, most, config=config, seed=1).runs_per_arm == 5
    tie = [_effect("a", 0.1, 4), _effect("b", 0.2, 4), _effect("c", 0.3, 3), _effect("d", 0.0, 3)]
    assert summarize("cost", Scale.LOG_RATIO, tie, config=config, seed=1).runs_per_arm == 3
    assert summarize("cost", Scale.LOG_RATIO, [], config=config, seed=1).runs_per_arm is None


def test_two_tasks_have_no_t_interval_and_three_have_one() -> None:
    """One degree of freedom makes a t interval absurd (a "saving" of −10,000 %): none below 3 tasks."""
    config = AnalysisConfig(resamples=200)
    two = summarize("review", Scale.DIFFERENCE, [_effect("a", 0.1), _effect("b", 0.3)], config=config, seed=1)
    three = summarize(
        "review",
        Scale.DIFFERENCE,
        [_effect("a", 0.1), _effect("b", 0.3), _effect("c", 0.2)],
        config=config,
        seed=1,
    )

    assert two.t_interval is None
    assert two.interval is not None
    assert three.t_interval is not None


def test_an_estimate_of_negative_zeros_is_reported_as_zero() -> None:
    """A review metric of −0.0 on both arms gives −0.0 effects; their mean reads 0.0, not −0.0."""
    effects = [_effect("a", -0.0), _effect("b", -0.0), _effect("c", -0.0)]
    summary = summarize("review", Scale.DIFFERENCE, effects, config=AnalysisConfig(resamples=200), seed=1)

    assert summary.estimate == 0.0
    assert math.copysign(1.0, summary.estimate) == 1.0  # type: ignore[arg-type]
    assert summary.t_interval == (0.0, 0.0)
    assert [math.copysign(1.0, bound) for bound in summary.t_interval] == [1.0, 1.0]  # type: ignore[union-attr]
