"""The one-pass summary equals the row-at-a-time computations it replaced, and keeps no row."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import attrs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.strategies import aggregation_rows, wide_rows
from tests.unit.results.naive_oracle import naive_aggregate, naive_arm_series, naive_count_health
from wfbench.domain.results.aggregation import Aggregate, TableBuilder, aggregate
from wfbench.domain.results.health import classify_sweep_health
from wfbench.domain.results.rows import ErrorKind, Row
from wfbench.domain.results.summary import RowSummary, SummaryBuilder, as_summary, summarize

#: Rows of every value shape are costly to draw; a loaded machine must not fail the health check.
relaxed = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

ARMS = ("review", "workflow", "candidate_workflow", "candidate_review", "absent")


def _same(left: object, right: object) -> bool:
    """Equality that also tells 0.0 from -0.0 and 1 from 1.0 (the streaming path must not drift)."""
    return repr(left) == repr(right) and left == right


@relaxed
@given(st.lists(wide_rows(), max_size=16))
def test_the_streaming_table_equals_the_row_at_a_time_table(rows: list[Row]) -> None:
    """Every aggregate field, review metrics included, for any value shape."""
    streamed, naive = aggregate(iter(rows)), naive_aggregate(rows)

    assert list(streamed) == list(naive)
    for key in naive:
        assert _same(attrs.asdict(streamed[key]), attrs.asdict(naive[key])), key


def test_an_even_median_of_integers_beyond_2_53_is_the_exact_one() -> None:
    """(2**53+1 + 2**53+2) / 2 rounds to 2**53+2; summed as doubles it would be 2**53."""
    rows = [Row(task="t", arm="a", run=run, input_tokens=2**53 + 1 + run) for run in range(2)]

    assert (
        aggregate(rows)[("t", "a")].input_tokens
        == float(2**53 + 2)
        == naive_aggregate(rows)[("t", "a")].input_tokens
    )


@given(st.lists(aggregation_rows(), max_size=30))
def test_the_streaming_table_equals_the_row_at_a_time_table_on_ordinary_rows(rows: list[Row]) -> None:
    """The same on the rows the other aggregation properties use."""
    assert aggregate(rows) == naive_aggregate(rows)


@relaxed
@given(st.lists(wide_rows(), max_size=16))
def test_per_arm_health_equals_classify_sweep_health(rows: list[Row]) -> None:
    """Merged per-group tallies give the per-arm counters, reasons included; absent arms are UNKNOWN."""
    summary = summarize(rows)

    assert summary.health(ARMS) == classify_sweep_health(rows, ARMS)
    for arm in summary.arms:
        assert summary.by_arm[arm].health == naive_count_health(r for r in rows if r.arm == arm)


@relaxed
@given(st.lists(wide_rows(), max_size=16))
def test_per_arm_resolve_rate_and_median_cost_equal_the_reports_old_series(rows: list[Row]) -> None:
    """What report.html plots per arm, in first-seen arm order."""
    summary = summarize(rows)
    rates, costs = naive_arm_series(rows)

    assert [(a, summary.by_arm[a].resolve_rate) for a in summary.arms] == rates
    assert [(a, summary.by_arm[a].cost_usd) for a in summary.arms] == costs


@relaxed
@given(st.lists(wide_rows(), max_size=16))
def test_orders_and_counts_are_those_of_the_rows(rows: list[Row]) -> None:
    """Tasks and arms in first-seen order; row, excluded and per-kind counts."""
    summary = summarize(rows)

    assert summary.tasks == tuple(dict.fromkeys(row.task for row in rows))
    assert summary.arms == tuple(dict.fromkeys(row.arm for row in rows))
    assert summary.rows == len(rows)
    assert summary.excluded_rows == sum(row.excluded for row in rows)
    for kind in ErrorKind:
        assert summary.count_kind(kind) == sum(row.error_kind is kind for row in rows)


@relaxed
@given(st.lists(wide_rows(), max_size=12))
def test_from_rows_is_the_builder_over_one_group(rows: list[Row]) -> None:
    """Aggregate.from_rows and a TableBuilder agree on a single group."""
    one = [attrs.evolve(row, task="t", arm="a") for row in rows]
    builder = TableBuilder()
    for row in one:
        builder.add(row)

    if one:
        assert builder.build()[("t", "a")] == Aggregate.from_rows("t", "a", one)
    assert len(builder.groups) == (1 if one else 0)


def test_as_summary_passes_a_summary_through_and_summarizes_rows() -> None:
    """A summary is not summarized twice; rows (any iterable) are."""
    rows = [Row(task="t", arm="a", run=1, resolved=True)]
    summary = summarize(rows)

    assert as_summary(summary) is summary
    assert as_summary(iter(rows)) == summary
    assert isinstance(as_summary([]), RowSummary)
    assert summarize([]).rows == 0


def test_the_summary_keeps_no_row_alive() -> None:
    """Memory is bounded by the aggregates: once summarized, every streamed row can be freed."""
    refs: list[weakref.ref[Row]] = []

    def stream() -> Iterator[Row]:
        for run in range(200):
            row = Row(
                task=f"t{run % 7}",
                arm="review" if run % 2 else "workflow",
                run=run,
                resolved=run % 3 == 0,
                cost_usd=0.5 + run,
                input_tokens=2**60 + run,
                review={"review_weighted_f1": run / 200},
                extra={"benchmark_model": "m", "session_ids": [f"s{run}"]},
            )
            refs.append(weakref.ref(row))
            yield row

    builder = SummaryBuilder()
    for row in stream():
        builder.add(row)
    del row
    summary = builder.build()
    gc.collect()

    assert summary.rows == 200
    assert [ref for ref in refs if ref() is not None] == []
