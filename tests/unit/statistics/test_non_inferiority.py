"""Non-inferiority on resolution: its p-value, and what counts as quality signal (issue #27)."""

from __future__ import annotations

import attrs
import pytest

from tests.unit.statistics.test_analysis import FOUR, arm, pair_samples
from wfbench.domain.statistics.analysis import analyze_pair, has_quality_signal, non_inferiority_p
from wfbench.domain.statistics.effects import ArmRate
from wfbench.domain.statistics.resampling import bootstrap_means, bootstrap_p_value
from wfbench.domain.statistics.samples import TaskPair


def alike(resolved: str, tasks: int = 6) -> object:
    return analyze_pair(
        pair_samples(*(TaskPair(f"t{i}", arm(resolved), arm(resolved)) for i in range(tasks)))
    )


@pytest.mark.parametrize(
    "resolved", ["000", "111", "110"], ids=["nothing-resolved", "all-resolved", "all-alike"]
)
def test_tasks_whose_effects_are_all_alike_carry_no_quality_signal(resolved: str) -> None:
    stats = alike(resolved)

    assert not has_quality_signal(stats)
    assert non_inferiority_p(stats, 10.0) is None


def test_one_task_carries_no_quality_signal() -> None:
    one = analyze_pair(pair_samples(TaskPair("a", arm("100"), arm("110"))))

    assert not has_quality_signal(one)


def test_effects_that_differ_with_resolved_runs_are_quality_signal() -> None:
    assert has_quality_signal(analyze_pair(FOUR))


def test_quality_signal_needs_a_resolved_run_somewhere() -> None:
    """Both parts of the rule: effects that differ, and a resolved run in either arm."""
    stats = analyze_pair(FOUR)
    none = (ArmRate(0, 12, None), ArmRate(0, 12, None))
    assert not has_quality_signal(attrs.evolve(stats, resolution=attrs.evolve(stats.resolution, rates=none)))
    one = (ArmRate(0, 12, None), ArmRate(1, 12, None))
    assert has_quality_signal(attrs.evolve(stats, resolution=attrs.evolve(stats.resolution, rates=one)))


def test_the_p_value_is_the_resolution_bootstrap_counted_at_minus_the_margin() -> None:
    stats = analyze_pair(FOUR)
    values = [e.value for e in stats.resolution.effects]
    means = bootstrap_means(values, seed=stats.seed, resamples=stats.config.resamples)

    assert non_inferiority_p(stats, 10.0) == bootstrap_p_value(means, 4, null=-0.10)
    assert non_inferiority_p(stats, 0.0) == stats.resolution.p_value
    wide, narrow = non_inferiority_p(stats, 60.0), non_inferiority_p(stats, 5.0)
    assert wide is not None
    assert narrow is not None
    assert wide < narrow


def test_a_mean_exactly_at_the_null_counts_as_not_above_it() -> None:
    assert bootstrap_p_value([-0.1, 0.2], 2, null=-0.1) == bootstrap_p_value([-0.2, 0.2], 2, null=-0.1)
    assert bootstrap_p_value([-0.1, 0.2], 2, null=-0.1) > bootstrap_p_value([-0.0999, 0.2], 2, null=-0.1)
