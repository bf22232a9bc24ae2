"""``GroupTally.admissible``: what the paired statistics read of each valid row, exactly.

Per valid row in the order added: its run number, whether it resolved, whether it was scored
(not skill-not-invoked), and the field's value (unknown stays ``None``; a weighted F1 that is not
a finite number, or is a boolean, is unknown too). Excluded rows are not there.
"""

from __future__ import annotations

import math

import pytest

from tests.unit.results.test_aggregation import failed, record, review_row
from wfbench.domain.results.aggregation import GroupTally
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

    assert tally.admissible("review_weighted_f1") == [(1, True, True, None), (2, True, True, None),
                                                      (3, False, True, None)]  # fmt: skip


@pytest.mark.parametrize("value", [math.nan, -math.inf, "0.5", [0.5]])
def test_a_weighted_f1_that_is_not_a_finite_number_reads_back_unknown(value: object) -> None:
    tally = _tally(review_row(1, weighted_f1=0.5), review_row(2, weighted_f1=value))

    assert [entry[3] for entry in tally.admissible("review_weighted_f1")] == [0.5, None]
