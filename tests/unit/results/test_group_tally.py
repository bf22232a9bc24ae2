"""``GroupTally.admissible``: what the paired statistics read of each valid row, exactly.

Per valid row in the order added: its run number, whether it resolved, whether it was scored
(not skill-not-invoked), and the field's value (unknown stays ``None``; a weighted F1 that is not
a finite number, or is a boolean, is unknown too). Excluded rows are not there.
"""

from __future__ import annotations

import math

import pytest

from tests.unit.results.test_aggregation import failed, record, review_row
from wfbench.domain.results.aggregation import REVIEW_FLAG_METRICS, REVIEW_NUMERIC_METRICS, GroupTally
from wfbench.domain.results.rows import ErrorKind


def _tally(*rows: object) -> GroupTally:
    tally = GroupTally()
    for row in rows:
        tally.add(row)  # type: ignore[arg-type]
    return tally


def test_each_valid_row_gives_its_run_resolution_scoring_and_value_in_order() -> None:
    tally = _tally(
        record(4, cost_usd=0.25),
        failed(ErrorKind.ORACLE_FAILED, 2, cost_usd=0.5),
        failed(ErrorKind.INFRA_ERROR, 3, cost_usd=9.0),  # excluded: not admissible
        failed(ErrorKind.SKILL_NOT_INVOKED, 7, cost_usd=None),
        record(0, cost_usd=1.0, resolved=False),
    )

    assert tally.admissible("cost_usd") == [
        (4, True, True, 0.25),
        (2, False, True, 0.5),
        (7, False, False, None),
        (0, False, True, 1.0),
    ]
    assert [entry[3] for entry in tally.admissible("output_tokens")] == [400, 400, 400, 400]


def test_the_weighted_f1_is_unknown_until_a_row_has_one_and_for_non_finite_or_boolean_values() -> None:
    tally = _tally(
        review_row(1),  # no F1 yet: backfilled as unknown once one arrives
        review_row(2),
        review_row(3, weighted_f1=0.75),
        review_row(4, weighted_f1=math.inf),
        review_row(5, weighted_f1=True),
        review_row(6, weighted_f1=1),
        review_row(7, weighted_f1=None),
        review_row(8, kind=ErrorKind.SKILL_NOT_INVOKED, weighted_f1=0.5),
    )

    assert tally.admissible("review_weighted_f1") == [
        (1, True, True, None),
        (2, True, True, None),
        (3, True, True, 0.75),
        (4, True, True, None),
        (5, True, True, None),
        (6, True, True, 1.0),
        (7, True, True, None),
        (8, False, False, 0.5),
    ]


def test_without_any_weighted_f1_every_entry_is_unknown() -> None:
    tally = _tally(review_row(1), record(2), failed(ErrorKind.ORACLE_FAILED, 3))

    assert tally.admissible("review_weighted_f1") == [
        (1, True, True, None),
        (2, True, True, None),
        (3, False, True, None),
    ]


@pytest.mark.parametrize("value", [math.nan, -math.inf, "0.5", [0.5]])
def test_a_weighted_f1_that_is_not_a_finite_number_reads_back_unknown(value: object) -> None:
    tally = _tally(review_row(1, weighted_f1=0.5), review_row(2, weighted_f1=value))

    assert [entry[3] for entry in tally.admissible("review_weighted_f1")] == [0.5, None]


def test_a_resolved_uninvoked_row_is_admissible_as_resolved_but_not_scored() -> None:
    """The agent solved the task without the skill: resolved, and still not scored."""
    tally = _tally(record(3, error_kind=ErrorKind.SKILL_NOT_INVOKED, cost_usd=0.5), record(4, cost_usd=1.0))

    assert tally.admissible("cost_usd") == [(3, True, False, 0.5), (4, True, True, 1.0)]


def test_has_review_is_a_boolean_that_one_valid_weighted_f1_key_switches_on() -> None:
    tally = _tally(record(1), failed(ErrorKind.ORACLE_FAILED, 2))
    assert tally.has_review is False
    assert GroupTally().has_review is False

    tally.add(review_row(3, weighted_f1=None))
    assert tally.has_review is True


# --- the review metrics of one group, read over its scored rows -----------------------------


def _review(*rows: object) -> dict[str, object]:
    return dict(_tally(*rows).build("task-a", "review").review)


def test_a_scored_row_without_any_review_metric_makes_every_review_metric_unknown() -> None:
    """A review-arm row that carried no review metric at all is not a row of perfect scores."""
    full = review_row(1, weighted_f1=0.8, f1=0.8, verdict_correct=True, clean_control=False, clean_pass=True)
    bare = record(2, arm="review")

    for rows in ((full, bare), (bare, full)):
        assert _review(*rows) == dict.fromkeys((*REVIEW_NUMERIC_METRICS, *REVIEW_FLAG_METRICS))


def test_an_uninvoked_row_without_review_metrics_leaves_the_scored_rows_metrics_known() -> None:
    metrics = _review(
        review_row(1, weighted_f1=0.8, verdict_correct=True, clean_control=False),
        failed(ErrorKind.SKILL_NOT_INVOKED, 2, arm="review"),
    )

    assert (metrics["review_weighted_f1"], metrics["review_verdict_correct"]) == (0.8, True)
    assert metrics["review_clean_control"] is False
    assert metrics["review_clean_pass"] is None  # the scored row did not give it


def test_each_review_flag_is_read_on_its_own_over_every_scored_row() -> None:
    """Per flag: true when true on every scored row, false once false, unknown once not a boolean
    (whatever the order, and even beside a false); one flag's rows never move another flag."""
    rows = (
        review_row(1, weighted_f1=0.5, verdict_correct=True, clean_control=False, clean_pass=None),
        review_row(2, weighted_f1=0.5, verdict_correct=True, clean_control=True, clean_pass=False),
        review_row(3, weighted_f1=0.5, verdict_correct=True, clean_control=False, clean_pass=True),
    )

    for ordered in (rows, rows[::-1]):
        metrics = _review(*ordered)
        flags = {name: metrics[name] for name in REVIEW_FLAG_METRICS}
        assert flags == {
            "review_verdict_correct": True,
            "review_clean_control": False,
            "review_clean_pass": None,
        }


def test_a_single_false_or_unknown_flag_decides_among_many_true_ones() -> None:
    trues = [review_row(run, weighted_f1=0.5, verdict_correct=True) for run in range(1, 5)]

    assert _review(*trues)["review_verdict_correct"] is True
    assert (
        _review(*trues, review_row(5, weighted_f1=0.5, verdict_correct=False))["review_verdict_correct"]
        is False
    )
    assert (
        _review(review_row(5, weighted_f1=0.5, verdict_correct=0), *trues)["review_verdict_correct"] is None
    )
