"""The paired analysis of one pair: effects on the task as the unit, the statistics object."""

from __future__ import annotations

import json
import math

import attrs
import pytest

from wfbench.domain.errors import InputError
from wfbench.domain.statistics.analysis import AnalysisConfig, PairStatistics, analyze_pair, derive_seed
from wfbench.domain.statistics.distributions import t_ppf
from wfbench.domain.statistics.effects import Scale
from wfbench.domain.statistics.samples import ArmRuns, PairedSamples, TaskPair


def arm(resolved: str, costs: list[float | None] | None = None) -> ArmRuns:
    """``"110"`` → three runs, the first two resolved; costs default to 1.0 each."""
    flags = tuple(ch == "1" for ch in resolved)
    return ArmRuns(flags, tuple(costs if costs is not None else [1.0] * len(flags)))


def pair_samples(*tasks: TaskPair, metric: str = "cost_usd") -> PairedSamples:
    return PairedSamples("cand", "inc", metric, tasks)


FOUR = pair_samples(
    TaskPair("a", arm("100", [1.0, 1.0, 1.0]), arm("110", [0.5, 0.5, 0.5])),
    TaskPair("b", arm("000", [2.0, 2.0, 2.0]), arm("100", [1.0, 1.0, 1.0])),
    TaskPair("c", arm("111", [1.0, 2.0, 3.0]), arm("111", [2.0, 2.0, 2.0])),
    TaskPair("d", arm("110", [4.0, 4.0, 4.0]), arm("100", [2.0, 2.0, 2.0])),
)


def test_the_resolution_effect_is_the_mean_of_per_task_differences() -> None:
    stats = analyze_pair(FOUR)
    res = stats.resolution

    assert [e.value for e in res.effects] == pytest.approx([1 / 3, 1 / 3, 0.0, -1 / 3])
    assert res.estimate == pytest.approx(1 / 12)
    assert (res.wins, res.losses, res.ties) == (2, 1, 1)
    assert res.sign_test_p == 1.0
    assert res.n_tasks == 4
    assert res.runs_per_arm == 3


def test_the_standard_error_and_t_interval_are_over_tasks() -> None:
    res = analyze_pair(FOUR).resolution
    values = [1 / 3, 1 / 3, 0.0, -1 / 3]
    mean = sum(values) / 4
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / 3)
    half = t_ppf(0.95, 3) * sd / 2

    assert res.se == pytest.approx(sd / 2)
    assert res.t_interval == pytest.approx((mean - half, mean + half))
    assert res.interval is not None
    assert res.interval[0] <= res.estimate <= res.interval[1]


def test_spend_is_compared_as_a_log_ratio_and_reported_as_savings() -> None:
    stats = analyze_pair(FOUR)
    metric = stats.metric

    assert metric.scale is Scale.LOG_RATIO
    assert [e.value for e in metric.effects] == pytest.approx([math.log(2), math.log(2), 0.0, math.log(2)])
    assert metric.scale.present(metric.effects[0].value) == pytest.approx(50.0)
    assert (metric.wins, metric.losses, metric.ties) == (3, 0, 1)
    mapping = stats.to_mapping()
    assert mapping["unit"] == "savings_pct"
    assert mapping["effect"] == pytest.approx(100 * (1 - math.exp(-0.75 * math.log(2))))


def test_savings_and_points_convert_both_ways() -> None:
    assert Scale.LOG_RATIO.from_presented(50.0) == pytest.approx(math.log(2))
    assert Scale.LOG_RATIO.present(Scale.LOG_RATIO.from_presented(5.0)) == pytest.approx(5.0)
    assert Scale.DIFFERENCE.from_presented(20.0) == 0.2
    assert Scale.DIFFERENCE.present(0.2) == 20.0
    with pytest.raises(ValueError, match="below 100"):
        Scale.LOG_RATIO.from_presented(100.0)


def test_a_task_without_a_measured_metric_is_listed_not_zeroed() -> None:
    samples = pair_samples(
        TaskPair("a", arm("1", [1.0]), arm("1", [None])),
        TaskPair("b", arm("1", [0.0]), arm("1", [0.0])),
        TaskPair("c", arm("1", [2.0]), arm("1", [1.0])),
    )

    metric = analyze_pair(samples).metric

    assert metric.unmeasured == ("a", "b")
    assert [e.task for e in metric.effects] == ["c"]
    assert metric.interval is None
    assert metric.se is None


def test_the_review_metric_is_a_difference_in_points() -> None:
    samples = pair_samples(
        TaskPair("a", arm("1", [0.5]), arm("1", [0.75])),
        TaskPair("b", arm("1", [0.5]), arm("1", [0.5])),
        metric="review_weighted_f1",
    )

    stats = analyze_pair(samples)

    assert stats.metric.scale is Scale.DIFFERENCE
    assert stats.to_mapping()["effect"] == pytest.approx(12.5)


def test_no_tasks_gives_no_numbers() -> None:
    stats = analyze_pair(pair_samples())

    assert stats.resolution.estimate is None
    assert stats.resolution.mde is None
    assert stats.to_mapping()["n_tasks"] == 0


def test_each_arms_rate_comes_with_its_wilson_interval() -> None:
    rates = analyze_pair(FOUR).resolution.rates

    assert rates is not None
    assert (rates[0].resolved, rates[0].runs, rates[1].resolved, rates[1].runs) == (6, 12, 7, 12)
    assert rates[0].interval is not None
    assert rates[0].interval[0] < 0.5 < rates[0].interval[1]


def test_the_seed_is_derived_from_the_effects_not_from_names_or_roles() -> None:
    renamed = attrs.evolve(FOUR, tasks=tuple(attrs.evolve(t, task="x" + t.task) for t in FOUR.tasks))

    seed = analyze_pair(FOUR).seed

    assert analyze_pair(renamed).seed == seed
    assert analyze_pair(FOUR.swapped()).seed == seed
    assert derive_seed([0.1, 0.2]) != derive_seed([0.1, 0.3])
    assert 0 <= seed < 2**64


def test_a_configured_seed_is_used_and_recorded() -> None:
    stats = analyze_pair(FOUR, AnalysisConfig(seed=42))

    assert stats.seed == 42
    assert stats.to_mapping()["seed_source"] == "policy"
    assert analyze_pair(FOUR, AnalysisConfig(seed=43)).to_mapping() != stats.to_mapping()


def test_same_samples_give_bit_identical_numbers() -> None:
    assert json.dumps(analyze_pair(FOUR).to_mapping()) == json.dumps(analyze_pair(FOUR).to_mapping())


def test_the_statistics_object_has_the_issue_s_field_names() -> None:
    mapping = analyze_pair(FOUR).to_mapping()
    names = {
        "n_tasks",
        "runs_per_arm",
        "metric",
        "effect",
        "ci_low",
        "ci_high",
        "confidence",
        "method",
        "seed",
        "resamples",
        "mde",
        "sign_test_p",
        "wins",
        "losses",
        "ties",
    }

    assert names <= set(mapping)
    assert names <= set(mapping["resolution"])
    assert mapping["confidence"] == 0.9
    assert mapping["resamples"] == 2000
    assert mapping["alpha"] == 0.05
    assert mapping["resolution"]["metric"] == "resolved"


def test_per_task_effects_come_with_within_task_intervals() -> None:
    views = analyze_pair(FOUR).task_effects()

    assert [v.task for v in views] == ["a", "b", "c", "d"]
    assert views[0].resolution == pytest.approx(100 / 3)
    assert views[0].effect == pytest.approx(50.0)
    low, high = views[0].resolution_interval  # type: ignore[misc]
    assert low < views[0].resolution < high
    assert high - views[0].resolution == pytest.approx(views[0].resolution - low)


def test_resolution_intervals_never_leave_plus_or_minus_100_points() -> None:
    """A difference of two resolve rates lies in [−100, +100] points: neither the per-task nor the
    t interval claims more (wide at 3 runs, they would without the bound)."""
    tasks = [TaskPair(f"t{i}", arm("100"), arm("111")) for i in range(3)]
    tasks.append(TaskPair("t3", arm("111"), arm("011")))
    stats = analyze_pair(pair_samples(*tasks))

    views = stats.task_effects()
    low, high = views[0].resolution_interval  # type: ignore[misc]
    assert views[0].resolution == pytest.approx(200 / 3)
    assert high == 100.0
    assert low < views[0].resolution
    low, high = views[3].resolution_interval  # type: ignore[misc]
    assert high < 100.0
    assert -100.0 < low
    assert stats.resolution.t_interval is not None
    assert stats.resolution.t_interval[1] == 1.0
    # Spend is a log ratio: unbounded, never clamped.
    assert Scale.LOG_RATIO.clamp(-7.5) == -7.5
    assert Scale.DIFFERENCE.clamp(-1.5) == -1.0


def test_the_statistics_object_round_trips_through_json() -> None:
    stats = analyze_pair(FOUR)
    raw = json.loads(json.dumps(stats.to_mapping()))

    back = PairStatistics.from_mapping(raw, candidate="cand", incumbent="inc")

    assert back.to_mapping() == stats.to_mapping()
    assert (
        PairStatistics.from_mapping(
            analyze_pair(FOUR, AnalysisConfig(seed=9)).to_mapping(), candidate="cand", incumbent="inc"
        ).seed
        == 9
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [("effect", 99.0), ("seed", 1), ("wins", 0), ("resamples", 500), ("method", "magic")],
)
def test_a_statistics_object_that_disagrees_with_its_samples_is_refused(key: str, value: object) -> None:
    raw = analyze_pair(FOUR).to_mapping() | {key: value}

    with pytest.raises(InputError, match="disagrees|must be") as caught:
        PairStatistics.from_mapping(raw, candidate="cand", incumbent="inc")

    assert caught.value.field.startswith("statistics")


def test_a_forged_sample_is_refused() -> None:
    raw = analyze_pair(FOUR).to_mapping()
    raw["tasks"][0]["candidate"]["resolved"] = [True, True, True]

    with pytest.raises(InputError, match="disagrees"):
        PairStatistics.from_mapping(raw, candidate="cand", incumbent="inc")


@pytest.mark.parametrize(
    "raw",
    [
        [],
        {"metric": 3},
        {"metric": "cost_usd", "tasks": {}},
        {"metric": "cost_usd", "tasks": [], "confidence": 2},
    ],
)
def test_a_malformed_statistics_object_names_the_field(raw: object) -> None:
    with pytest.raises(InputError) as caught:
        PairStatistics.from_mapping(raw, candidate="cand", incumbent="inc")

    assert caught.value.field.startswith("statistics")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("confidence", 1.0),
        ("confidence", 0),
        ("power", True),
        ("resamples", 99),
        ("resamples", 2.5),
        ("seed", -1),
    ],
)
def test_the_analysis_settings_are_validated(field: str, value: object) -> None:
    with pytest.raises(InputError) as caught:
        AnalysisConfig(**{field: value})  # type: ignore[arg-type]

    assert caught.value.field == field
