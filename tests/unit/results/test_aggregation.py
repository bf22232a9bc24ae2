"""Aggregation per task × arm and savings (promotion.md §3.0, §8.3; scheduler_tasks.md §5.2).

Where wfbench deliberately differs from the reference, the test docstring says so:
skill-not-invoked rows stay out of quality medians (DESIGN.md item 2), and a median over zero
rows, or over any unknown value, is None where the reference reports 0.
"""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.strategies import aggregation_rows
from wfbench.domain.results.aggregation import (
    MEDIAN_FIELDS,
    REVIEW_FLAG_METRICS,
    REVIEW_NUMERIC_METRICS,
    SAVINGS_FIELDS,
    Aggregate,
    AggregateTable,
    aggregate,
    is_scored,
    saving_pct,
    savings,
)
from wfbench.domain.results.rows import ErrorKind, Row

SNI = ErrorKind.SKILL_NOT_INVOKED


def record(run: int = 1, **fields: object) -> Row:
    """The reference's default fixture row: resolved, cost 0.5, 400 output tokens, 10 turns, 60 s."""
    base: dict[str, object] = {
        "task": "task-a",
        "arm": "workflow",
        "run": run,
        "ok": True,
        "resolved": True,
        "cost_usd": 0.5,
        "output_tokens": 400,
        "num_turns": 10,
        "duration_s": 60.0,
    }
    base.update(fields)
    return Row(**base)  # type: ignore[arg-type]


def failed(kind: ErrorKind, run: int = 1, **fields: object) -> Row:
    """A row that did not resolve, carrying ``kind``."""
    return record(run, ok=False, resolved=False, error_kind=kind, **fields)


def one(rows: list[Row]) -> Aggregate:
    """The single aggregate of rows that share one task and arm."""
    table = aggregate(rows)
    assert len(table) == 1
    return next(iter(table.by_cell.values()))


def review_row(run: int = 1, kind: ErrorKind | None = None, **metrics: object) -> Row:
    """A review-arm row carrying ``review_*`` metrics (keyword names without the prefix)."""
    review = {f"review_{name}": value for name, value in metrics.items()}
    return record(run, arm="review", error_kind=kind, review=review, resolved=kind is None)


# --- §8.3 aggregation pins ---------------------------------------------------------------


def test_excluded_rows_are_counted_but_kept_out_of_medians() -> None:
    """§8.3: [session-error 100, 1.0, 3.0 + transcript_missing] → cost 2.0, 3/2/1 runs, 2 resolved."""
    agg = one(
        [
            failed(ErrorKind.SESSION_ERROR, 1, cost_usd=100.0),
            record(2, cost_usd=1.0),
            record(3, cost_usd=3.0, transcript_missing=True),
        ]
    )

    assert agg.cost_usd == 2.0
    assert (agg.runs, agg.valid_runs, agg.excluded_runs) == (3, 2, 1)
    assert agg.transcripts_missing == 1
    assert agg.resolved == 2


@pytest.mark.parametrize("kind", [ErrorKind.EVIDENCE_UNVERIFIED, ErrorKind.REVIEW_EVIDENCE_INVALID])
def test_an_evidence_failure_row_is_excluded_from_the_medians(kind: ErrorKind) -> None:
    """§8.3: evidence-unverified and review-evidence-invalid rows are each excluded."""
    agg = one([record(1, cost_usd=1.0, output_tokens=100), failed(kind, 2, cost_usd=9.0, output_tokens=900)])

    assert agg.cost_usd == 1.0
    assert agg.output_tokens == 100.0
    assert agg.excluded_runs == 1


def test_invalid_review_evidence_excludes_a_row_without_an_error_kind() -> None:
    """A row with review_evidence_valid false is excluded even when its error_kind is empty."""
    agg = one([record(1, cost_usd=1.0), record(2, cost_usd=9.0, review_evidence_valid=False, resolved=False)])

    assert agg.cost_usd == 1.0
    assert (agg.valid_runs, agg.excluded_runs) == (1, 1)


def test_any_valid_row_with_an_unknown_cost_makes_the_cost_unknown() -> None:
    """§8.3: a valid row with a null cost → cost_usd null (unknown is not zero)."""
    agg = one([record(1, cost_usd=0.1), record(2, cost_usd=None), record(3, cost_usd=0.1)])

    assert agg.cost_usd is None


def test_an_excluded_row_with_an_unknown_cost_does_not_hide_the_cost() -> None:
    """Unknown values of excluded rows do not reach the medians."""
    agg = one([record(1, cost_usd=0.1), failed(ErrorKind.INFRA_ERROR, 2, cost_usd=None)])

    assert agg.cost_usd == 0.1


def test_skill_not_invoked_rows_stay_out_of_quality_medians_but_in_valid_runs() -> None:
    """§8.3 known gap, deliberately fixed (DESIGN.md item 2): reference F1 0.5; ours 1.0 with scored_runs 1.

    [F1 1.0 cost 2.0] + [F1 0.0 cost 4.0, skill-not-invoked]: cost stays 3.0 (the session was
    paid for), valid_runs stays 2, and scored_runs 1 lets the gate see the dropped row.
    """
    agg = one(
        [
            attrs.evolve(review_row(1, weighted_f1=1.0), cost_usd=2.0),
            attrs.evolve(review_row(2, SNI, weighted_f1=0.0), cost_usd=4.0),
        ]
    )

    assert agg.review["review_weighted_f1"] == 1.0
    assert agg.cost_usd == 3.0
    assert agg.valid_runs == 2
    assert agg.scored_runs == 1


def test_the_measured_counter_example_exposes_the_dropped_rows() -> None:
    """review_scoring.md §4.3: one real 0.9 plus two uninvoked 0.0 rows → F1 0.9 but scored 1 of 3 valid."""
    agg = one(
        [
            review_row(1, weighted_f1=0.9),
            review_row(2, SNI, weighted_f1=0.0),
            review_row(3, SNI, weighted_f1=0.0),
        ]
    )

    assert agg.review["review_weighted_f1"] == 0.9
    assert (agg.valid_runs, agg.scored_runs) == (3, 1)
    assert agg.error_kinds == {SNI: 2}


def test_skill_not_invoked_rows_still_count_in_efficiency_medians() -> None:
    """An uninvoked session spent real tokens: it stays in the cost and token medians."""
    agg = one([record(1, output_tokens=100), failed(SNI, 2, output_tokens=300)])

    assert agg.output_tokens == 200.0


# --- medians ------------------------------------------------------------------------------


def test_with_no_valid_rows_every_median_is_unknown() -> None:
    """Deliberate difference: the reference reports 0 for a median over zero valid rows; ours is None."""
    agg = one(
        [failed(ErrorKind.SESSION_ERROR, 1, diff_files=1), failed(ErrorKind.INFRA_ERROR, 2, diff_files=1)]
    )

    for name in (*MEDIAN_FIELDS, "cost_usd"):
        assert getattr(agg, name) is None, name
    assert agg.valid_runs == 0


def test_an_unknown_value_in_a_valid_row_makes_that_median_unknown() -> None:
    """Deliberate difference: usage is not assumed present; one unknown valid value → None."""
    agg = one([record(1, input_tokens=5, num_turns=3), record(2, input_tokens=None, num_turns=5)])

    assert agg.input_tokens is None
    assert agg.num_turns == 4.0


def test_medians_take_the_middle_of_an_odd_count_regardless_of_order() -> None:
    """The median of 9, 1, 5 is 5."""
    agg = one([record(1, duration_s=9.0), record(2, duration_s=1.0), record(3, duration_s=5.0)])

    assert agg.duration_s == 5.0


def test_medians_average_the_two_middles_of_an_even_count() -> None:
    """The median of 1, 10, 2, 4 is 3.0."""
    agg = one([record(i, diff_insertions=v) for i, v in enumerate((1, 10, 2, 4))])

    assert agg.diff_insertions == 3.0
    assert isinstance(agg.diff_insertions, float)


def test_every_median_field_is_aggregated() -> None:
    """Each usage, duration, turn and churn field gets its own median."""
    values = dict.fromkeys(MEDIAN_FIELDS, 7) | {"duration_s": 7.0}
    agg = one([record(1, **values)])

    for name in MEDIAN_FIELDS:
        assert getattr(agg, name) == 7.0, name


# --- counters -------------------------------------------------------------------------------


def test_error_kinds_count_every_row_including_excluded_ones() -> None:
    """error_kinds maps each kind to its count over all rows; rows without a kind add nothing."""
    agg = one(
        [
            record(1),
            failed(ErrorKind.ORACLE_FAILED, 2),
            failed(ErrorKind.ORACLE_FAILED, 3),
            failed(ErrorKind.SESSION_ERROR, 4),
        ]
    )

    assert agg.error_kinds == {ErrorKind.ORACLE_FAILED: 2, ErrorKind.SESSION_ERROR: 1}
    assert list(agg.error_kinds) == sorted(agg.error_kinds)


def test_resolved_fresh_leaves_out_reused_rows() -> None:
    """resolved counts every resolved row; resolved_fresh only those measured in this sweep."""
    agg = one([record(1), record(2, reused=True), failed(ErrorKind.ORACLE_FAILED, 3), record(4)])

    assert (agg.resolved, agg.resolved_fresh) == (3, 2)


def test_the_aggregate_carries_the_health_counters_of_its_rows() -> None:
    """fresh_attempts, admissible and both failure counters come from the rows (reused rows are not fresh)."""
    agg = one(
        [
            record(1),
            record(2, reused=True),
            failed(ErrorKind.SESSION_ERROR, 3),
            failed(SNI, 4),
        ]
    )

    assert agg.fresh_attempts == 3
    assert agg.admissible == 1
    assert (agg.execution_failures, agg.evidence_failures) == (1, 1)
    assert len(agg.health_reasons) == 2


def test_the_task_class_is_taken_from_the_rows() -> None:
    """class comes from the rows; conflicting classes resolve deterministically to the smallest."""
    assert one([record(1, task_class=None), record(2, task_class="bugfix")]).task_class == "bugfix"
    assert one([record(1, task_class="z"), record(2, task_class="a")]).task_class == "a"
    assert one([record(1)]).task_class is None


def test_is_scored_leaves_out_excluded_and_uninvoked_rows() -> None:
    """Scored = valid and not skill-not-invoked; a measured failure is still scored."""
    assert is_scored(record(1))
    assert is_scored(failed(ErrorKind.ORACLE_FAILED))
    assert not is_scored(failed(SNI))
    assert not is_scored(failed(ErrorKind.SESSION_ERROR))
    assert not is_scored(record(1, review_evidence_valid=False))


# --- review metrics -----------------------------------------------------------------------


def test_blocker_recall_is_the_minimum_and_other_review_metrics_the_median() -> None:
    """review_blocker_recall aggregates with min; precision (and the rest) with the median."""
    agg = one(
        [
            review_row(1, weighted_f1=0.2, precision=0.2, blocker_recall=1.0),
            review_row(2, weighted_f1=0.5, precision=0.5, blocker_recall=0.5),
            review_row(3, weighted_f1=0.9, precision=0.9, blocker_recall=1.0),
        ]
    )

    assert agg.review["review_blocker_recall"] == 0.5
    assert agg.review["review_precision"] == 0.5
    assert agg.review["review_weighted_f1"] == 0.5


def test_a_review_metric_is_unknown_unless_every_scored_row_has_it() -> None:
    """One scored row with a null or absent metric makes the aggregate metric null."""
    agg = one(
        [
            review_row(1, weighted_f1=0.5, recall=0.5, blocker_recall=None),
            review_row(2, weighted_f1=0.7, blocker_recall=1.0),
        ]
    )

    assert agg.review["review_weighted_f1"] == 0.6
    assert agg.review["review_recall"] is None
    assert agg.review["review_blocker_recall"] is None


def test_a_boolean_is_not_a_numeric_review_value() -> None:
    """A boolean where a number belongs makes the metric unknown, not 1."""
    agg = one([review_row(1, weighted_f1=0.5, precision=True)])

    assert agg.review["review_precision"] is None


def test_review_metrics_apply_only_when_a_valid_row_carries_a_weighted_f1() -> None:
    """Implementation arms have no review metrics; an excluded row's F1 does not switch them on."""
    assert one([record(1)]).review == {}
    excluded = attrs.evolve(review_row(2, weighted_f1=0.9), review_evidence_valid=False)
    assert one([record(1, arm="review"), excluded]).review == {}


def test_an_uninvoked_row_switches_review_metrics_on_but_contributes_no_value() -> None:
    """Only uninvoked rows carry F1: the metrics exist and are unknown (no scored row), not 0."""
    agg = one([review_row(1, SNI, weighted_f1=0.0, verdict_correct=True)])

    assert set(agg.review) == {*REVIEW_NUMERIC_METRICS, *REVIEW_FLAG_METRICS}
    assert agg.review["review_weighted_f1"] is None
    assert agg.review["review_verdict_correct"] is None
    assert agg.scored_runs == 0


@pytest.mark.parametrize("flag", REVIEW_FLAG_METRICS)
def test_review_flags_are_true_only_when_true_on_every_scored_row(flag: str) -> None:
    """verdict_correct, clean_control and clean_pass: all true → true; one false → false."""
    name = flag.removeprefix("review_")
    rows_true = [review_row(i, weighted_f1=1.0, **{name: True}) for i in (1, 2)]
    assert one(rows_true).review[flag] is True
    rows_false = [*rows_true, review_row(3, weighted_f1=1.0, **{name: False})]
    assert one(rows_false).review[flag] is False


@pytest.mark.parametrize("flag", REVIEW_FLAG_METRICS)
def test_review_flags_are_unknown_when_a_scored_row_lacks_a_boolean(flag: str) -> None:
    """A missing or non-boolean flag on any scored row makes the flag null."""
    name = flag.removeprefix("review_")
    rows = [review_row(1, weighted_f1=1.0, **{name: True}), review_row(2, weighted_f1=1.0)]
    assert one(rows).review[flag] is None
    rows = [review_row(1, weighted_f1=1.0, **{name: True}), review_row(2, weighted_f1=1.0, **{name: 1})]
    assert one(rows).review[flag] is None


def test_an_uninvoked_wrong_verdict_does_not_fail_the_verdict_flag() -> None:
    """Deliberate difference: quality flags, like medians, are read over scored rows only."""
    agg = one(
        [
            review_row(1, weighted_f1=1.0, verdict_correct=True),
            review_row(2, SNI, weighted_f1=0.0, verdict_correct=False),
        ]
    )

    assert agg.review["review_verdict_correct"] is True


# --- table ----------------------------------------------------------------------------------


def test_the_table_groups_rows_by_task_and_arm() -> None:
    """aggregate() keys one aggregate per (task, arm), with sorted tasks() and arms()."""
    table = aggregate(
        [
            record(1, task="t2", arm="b"),
            record(1, task="t1", arm="b"),
            record(2, task="t1", arm="b"),
            record(1, task="t1", arm="a"),
        ]
    )

    assert list(table) == [("t1", "a"), ("t1", "b"), ("t2", "b")]
    assert table.tasks() == ("t1", "t2")
    assert table.arms() == ("a", "b")
    assert table.get("t1", "b") is table[("t1", "b")]
    assert table[("t1", "b")].runs == 2
    assert (table[("t1", "b")].task, table[("t1", "b")].arm) == ("t1", "b")
    assert table.get("t2", "a") is None
    assert ("t2", "b") in table
    assert ("t2", "a") not in table
    assert set(table.for_task("t1")) == {"a", "b"}
    assert table.for_task("t1")["a"].runs == 1
    assert [key for key, _ in table.items()] == list(table)
    assert len(aggregate([])) == 0


def test_value_reads_medians_cost_and_review_metrics_by_name() -> None:
    """Aggregate.value() is the one accessor gates use; an unknown name is a KeyError."""
    agg = one([review_row(1, weighted_f1=0.25)])

    assert agg.value("cost_usd") == 0.5
    assert agg.value("output_tokens") == 400.0
    assert agg.value("review_weighted_f1") == 0.25
    assert agg.value("review_not_a_metric") is None
    with pytest.raises(KeyError, match="resolved"):
        agg.value("resolved")


def test_to_mapping_uses_the_reference_field_names() -> None:
    """The mapping names ``class``, lists error kinds as strings and flattens review metrics."""
    wrong = attrs.evolve(review_row(2, ErrorKind.ORACLE_FAILED, weighted_f1=0.75), task_class="c")
    agg = one([review_row(1, weighted_f1=0.25), wrong])
    out = agg.to_mapping()

    assert out["class"] == "c"
    assert out["error_kinds"] == {"oracle-failed": 1}
    assert out["review_weighted_f1"] == 0.5
    assert out["health_reasons"] == []
    for name in (
        "task",
        "arm",
        "runs",
        "valid_runs",
        "excluded_runs",
        "scored_runs",
        "resolved",
        "resolved_fresh",
        "transcripts_missing",
        *MEDIAN_FIELDS,
        "cost_usd",
        "fresh_attempts",
        "admissible",
        "execution_failures",
        "evidence_failures",
    ):
        assert out[name] == (getattr(agg, name) if name != "class" else agg.task_class), name


@given(st.lists(aggregation_rows(), max_size=12), st.randoms(use_true_random=False))
def test_aggregation_is_invariant_to_row_order(rows: list[Row], rnd: object) -> None:
    """Shuffling the rows never changes any aggregate."""
    shuffled = list(rows)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]

    assert aggregate(shuffled) == aggregate(rows)


# --- savings --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("base", "arm", "expected"),
    [
        (1.0, 0.8, 20.0),
        (3.0, 2.0, 33.3),
        (1000, 1250, -25.0),
        (2.0, 2.0, 0.0),
        (None, 1.0, None),
        (1.0, None, None),
        (0.0, 0.0, 0.0),
        (0.0, 0.5, None),
    ],
)
def test_saving_pct_is_the_rounded_relative_difference(
    base: float | None, arm: float | None, expected: float | None
) -> None:
    """round(100·(base−arm)/base, 1); unknown on either side → None; base 0 → 0.0 only if arm is 0.

    Deliberate difference: the reference report prints 0.0 for any zero baseline; an arm that
    costs something against a free baseline has no defined percentage, so ours is None.
    """
    assert saving_pct(base, arm) == expected


def test_savings_compare_every_savings_field_of_two_aggregates() -> None:
    """savings() fills each metric of SAVINGS_FIELDS and names the arm and its baseline."""
    base = one([record(1, arm="baseline", input_tokens=100, output_tokens=400, cost_usd=1.0)])
    arm = one([record(1, arm="workflow", input_tokens=50, output_tokens=300, cost_usd=None, num_turns=5)])

    saved = savings(base, arm)

    assert (saved.task, saved.arm, saved.baseline) == ("task-a", "workflow", "baseline")
    assert saved.input_tokens == 50.0
    assert saved.output_tokens == 25.0
    assert saved.cost_usd is None
    assert saved.num_turns == 50.0
    assert saved.duration_s == 0.0
    assert saved.cache_read_input_tokens is None
    assert saved.get("input_tokens") == 50.0
    assert {name: saved.get(name) for name in SAVINGS_FIELDS}["num_turns"] == 50.0
    with pytest.raises(KeyError, match="resolved"):
        saved.get("resolved")


def test_an_empty_table_is_the_default() -> None:
    """AggregateTable() is empty and has no tasks or arms."""
    assert AggregateTable().tasks() == ()
    assert AggregateTable().arms() == ()
