"""Run-level samples from rows: admissible runs only, tasks both arms ran, unknown stays unknown."""

from __future__ import annotations

import pytest

from tests.unit.promotion.promotion_fixtures import record
from wfbench.domain.errors import InputError
from wfbench.domain.statistics.samples import ArmRuns, PairedSamples, TaskPair, paired_samples


def test_samples_keep_each_arms_valid_runs_in_run_order() -> None:
    rows = [
        record("t1", "inc", 1, resolved=False, error_kind="oracle-failed", cost_usd=2.0),
        record("t1", "inc", 0, cost_usd=1.0),
        record("t1", "cand", 0, cost_usd=0.5),
        record("t1", "cand", 1, cost_usd=0.7, error_kind="session-error", resolved=False),
        record("t1", "other", 0),
    ]

    samples = paired_samples(rows, candidate="cand", incumbent="inc", metric="cost_usd")

    assert samples.tasks == (
        TaskPair("t1", incumbent=ArmRuns((True, False), (1.0, 2.0)), candidate=ArmRuns((True,), (0.5,))),
    )


def test_a_task_missing_one_arm_is_left_out() -> None:
    rows = [record("t1", "inc", 0), record("t1", "cand", 0), record("t2", "inc", 0)]

    samples = paired_samples(rows, candidate="cand", incumbent="inc", metric="cost_usd")

    assert [t.task for t in samples.tasks] == ["t1"]


def test_a_task_whose_only_candidate_runs_are_excluded_is_left_out() -> None:
    rows = [record("t1", "inc", 0), record("t1", "cand", 0, error_kind="infra-error", resolved=False)]

    assert paired_samples(rows, candidate="cand", incumbent="inc", metric="cost_usd").tasks == ()


def test_tasks_restrict_the_analysis() -> None:
    rows = [record(t, arm, 0) for t in ("a", "b") for arm in ("inc", "cand")]

    samples = paired_samples(rows, candidate="cand", incumbent="inc", metric="cost_usd", tasks=["b"])

    assert [t.task for t in samples.tasks] == ["b"]


def test_an_unmeasured_value_stays_unknown() -> None:
    rows = [record("t", "inc", 0, cost_usd=None), record("t", "cand", 0)]

    samples = paired_samples(rows, candidate="cand", incumbent="inc", metric="cost_usd")

    assert samples.tasks[0].incumbent.metric == (None,)


def test_the_review_metric_is_read_from_scored_runs_only() -> None:
    rows = [
        record("r", "inc", 0, review={"review_weighted_f1": 0.5}),
        record("r", "cand", 0, review={"review_weighted_f1": 0.75}),
        record(
            "r", "cand", 1, review={"review_weighted_f1": 0.0}, error_kind="skill-not-invoked", resolved=False
        ),
    ]

    samples = paired_samples(rows, candidate="cand", incumbent="inc", metric="review_weighted_f1")

    assert samples.tasks[0].candidate == ArmRuns((True, False), (0.75,))


def test_an_unknown_metric_is_refused() -> None:
    with pytest.raises(InputError, match="unsupported promotion metric"):
        paired_samples([], candidate="c", incumbent="i", metric="wall_clock")


def test_swapping_exchanges_the_arms() -> None:
    samples = PairedSamples(
        "c", "i", "cost_usd", (TaskPair("t", ArmRuns((True,), (1.0,)), ArmRuns((False,), (2.0,))),)
    )

    swapped = samples.swapped()

    assert (swapped.candidate, swapped.incumbent) == ("i", "c")
    assert swapped.tasks[0].candidate == ArmRuns((True,), (1.0,))
    assert swapped.swapped() == samples


def test_samples_round_trip_through_their_mapping() -> None:
    samples = PairedSamples(
        "c",
        "i",
        "cost_usd",
        (
            TaskPair("a", ArmRuns((True, False), (1.0, None)), ArmRuns((True,), (0.5,))),
            TaskPair("b", ArmRuns((False,), (3.0,)), ArmRuns((False,), (2.0,))),
        ),
    )

    back = PairedSamples.from_mapping(samples.to_mapping(), candidate="c", incumbent="i", metric="cost_usd")

    assert back == samples


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({}, "tasks"),
        ([{"task": ""}], "tasks[0]"),
        ([{"task": "a", "incumbent": [], "candidate": {}}], "tasks[0].incumbent"),
        (
            [{"task": "a", "incumbent": {"resolved": [], "metric": []}, "candidate": {}}],
            "tasks[0].incumbent.resolved",
        ),
        (
            [{"task": "a", "incumbent": {"resolved": [1], "metric": []}, "candidate": {}}],
            "tasks[0].incumbent.resolved",
        ),
        (
            [{"task": "a", "incumbent": {"resolved": [True], "metric": ["x"]}, "candidate": {}}],
            "tasks[0].incumbent.metric",
        ),
        (
            [{"task": "a", "incumbent": {"resolved": [True], "metric": [True]}, "candidate": {}}],
            "tasks[0].incumbent.metric",
        ),
    ],
)
def test_a_malformed_mapping_names_the_field(raw: object, field: str) -> None:
    with pytest.raises(InputError) as caught:
        PairedSamples.from_mapping(raw, candidate="c", incumbent="i", metric="cost_usd")

    assert caught.value.field == field


def test_a_repeated_or_unsorted_task_list_is_refused() -> None:
    entry = {"resolved": [True], "metric": [1.0]}
    rows = [{"task": t, "incumbent": entry, "candidate": entry} for t in ("b", "a")]

    with pytest.raises(InputError, match="sorted"):
        PairedSamples.from_mapping(rows, candidate="c", incumbent="i", metric="cost_usd")
    with pytest.raises(InputError, match="once"):
        PairedSamples.from_mapping(rows[:1] * 2, candidate="c", incumbent="i", metric="cost_usd")
