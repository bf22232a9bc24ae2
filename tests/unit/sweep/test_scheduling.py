"""Scheduler folding: canonical order, the outage breaker, window accounting and the in-order fold."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.strategies import breaker_rows
from wfbench.domain.results.rows import SYSTEMIC_KINDS, ErrorKind, Row
from wfbench.domain.sweep.scheduling import (
    DEFAULT_OUTAGE_STREAK,
    DETAIL_LIMIT,
    WINDOW_MULTIPLIER,
    Action,
    Breaker,
    CancelRequested,
    CancelRunning,
    Cell,
    CellFinished,
    FoldState,
    PersistRow,
    StopReason,
    StopSubmitting,
    SubmitCell,
    SweepDone,
    breaker_kind,
    canonical_order,
    failed_cell_row,
    fold,
    longest_first,
    packed_window,
    start_fold,
    step,
    step_all,
)

NON_SYSTEMIC = [None, *sorted(set(ErrorKind) - SYSTEMIC_KINDS)]


def _row(
    kind: ErrorKind | None = None, *, valid: bool | None = None, reused: bool = False, run: int = 0
) -> Row:
    return Row(task="t", arm="a", run=run, error_kind=kind, review_evidence_valid=valid, reused=reused)


SYSTEMIC = _row(ErrorKind.SESSION_ERROR)
HEALTHY = _row()


# --- canonical order ------------------------------------------------------------------------


def test_canonical_order_is_task_major_run_major_arm_minor() -> None:
    """Tasks keep their order, then runs 0..n-1, then arms in the order given."""
    cells = canonical_order(["t2", "t1"], ["workflow", "baseline"], 2)

    assert [cell.key for cell in cells] == [
        ("t2", "workflow", 0),
        ("t2", "baseline", 0),
        ("t2", "workflow", 1),
        ("t2", "baseline", 1),
        ("t1", "workflow", 0),
        ("t1", "baseline", 0),
        ("t1", "workflow", 1),
        ("t1", "baseline", 1),
    ]
    assert all(cell.expected_s is None for cell in cells)


def test_zero_runs_plan_no_cell() -> None:
    """A sweep of zero runs has no cells."""
    assert canonical_order(["t"], ["a"], 0) == ()


def test_negative_runs_are_refused() -> None:
    """Negative run counts are a caller error."""
    with pytest.raises(ValueError, match="runs must be at least 0, got -1"):
        canonical_order(["t"], ["a"], -1)


@pytest.mark.parametrize(
    ("tasks", "arms", "label"), [(["t", "t"], ["a"], "task"), (["t"], ["a", "a"], "arm")]
)
def test_a_task_or_arm_listed_twice_is_refused(tasks: list[str], arms: list[str], label: str) -> None:
    """Duplicates would give two cells the same identity."""
    with pytest.raises(ValueError, match=f"duplicate {label}"):
        canonical_order(tasks, arms, 1)


def test_a_cell_key_is_its_row_identity() -> None:
    """Cell.key spells the identity like Row.cell does."""
    assert Cell("t", "a", 3, expected_s=1.0).key == _row(run=3).cell == ("t", "a", 3)


def test_longest_first_starts_the_longest_expected_cell_first() -> None:
    """Known durations sort descending; unknown cells go first; ties keep the given order."""
    cells = canonical_order(["t1", "t2"], ["a", "b"], 1)
    durations = {("t1", "a"): 1.0, ("t1", "b"): 5.0, ("t2", "a"): 5.0}

    ordered = longest_first(cells, durations)

    assert [cell.key for cell in ordered] == [("t2", "b", 0), ("t1", "b", 0), ("t2", "a", 0), ("t1", "a", 0)]
    assert [cell.expected_s for cell in ordered] == [None, 5.0, 5.0, 1.0]


def test_longest_first_reads_each_cells_own_expectation_without_a_mapping() -> None:
    """With no mapping, Cell.expected_s decides."""
    cells = (Cell("t", "a", 0, 1.0), Cell("t", "a", 1, 3.0), Cell("t", "a", 2, 2.0))

    assert [cell.run for cell in longest_first(cells)] == [1, 2, 0]


def test_a_mapping_overrides_the_cells_own_expectation_only_where_it_knows() -> None:
    """A (task, arm) missing from the mapping keeps the cell's expected_s."""
    cells = (Cell("t", "a", 0, 1.0), Cell("t", "b", 0, 3.0))

    ordered = longest_first(cells, {("t", "a"): 9.0})

    assert [(cell.arm, cell.expected_s) for cell in ordered] == [("a", 9.0), ("b", 3.0)]


def test_a_cell_expected_to_take_no_time_goes_last() -> None:
    """A zero expectation is known and shortest, not unknown."""
    cells = (Cell("t", "a", 0, 0.0), Cell("t", "a", 1, 0.5), Cell("t", "a", 2, None))

    assert [cell.run for cell in longest_first(cells)] == [2, 1, 0]


def test_longest_first_without_any_duration_keeps_the_canonical_order() -> None:
    """No knowledge means no reordering."""
    cells = canonical_order(["t1", "t2"], ["a", "b"], 2)

    assert longest_first(cells, {}) == cells


# --- the breaker ----------------------------------------------------------------------------


def test_the_breaker_defaults_to_a_limit_of_five() -> None:
    """DEFAULT_OUTAGE_STREAK is the reference's 5 and a fresh breaker has no streak."""
    assert DEFAULT_OUTAGE_STREAK == 5
    assert Breaker() == Breaker(limit=5, streak=0, tripped=False)


@pytest.mark.parametrize("kind", sorted(SYSTEMIC_KINDS))
def test_every_systemic_kind_extends_the_streak(kind: ErrorKind) -> None:
    """session-error, infra-error, cleanup-failure and review-evidence-invalid count."""
    assert step(Breaker(streak=2), _row(kind)) == Breaker(streak=3)


def test_the_systemic_kinds_are_the_references_four() -> None:
    """The breaker's vocabulary is pinned."""
    assert {kind.value for kind in SYSTEMIC_KINDS} == {
        "session-error",
        "infra-error",
        "cleanup-failure",
        "review-evidence-invalid",
    }


@pytest.mark.parametrize("kind", NON_SYSTEMIC)
def test_every_other_kind_resets_the_streak(kind: ErrorKind | None) -> None:
    """A task's own failure (or a cancellation) is signal, not an outage: the streak goes to 0."""
    assert step(Breaker(streak=4), _row(kind, valid=True)) == Breaker(streak=0)


def test_cancelled_and_valid_skill_not_invoked_rows_reset_the_streak() -> None:
    """The two resets the reference calls out explicitly."""
    assert step(Breaker(streak=3), _row(ErrorKind.CANCELLED)).streak == 0
    assert step(Breaker(streak=3), _row(ErrorKind.SKILL_NOT_INVOKED, valid=True)).streak == 0


def test_an_unresolved_row_without_an_error_kind_resets_the_streak() -> None:
    """resolved=False alone is the task failing, not the system."""
    assert step(Breaker(streak=4), attrs.evolve(HEALTHY, resolved=False)).streak == 0


@pytest.mark.parametrize("kind", [None, ErrorKind.SKILL_NOT_INVOKED, ErrorKind.ORACLE_FAILED])
def test_an_invalid_review_artifact_counts_whatever_the_primary_kind(kind: ErrorKind | None) -> None:
    """review_evidence_valid=false overrides the row's error_kind for the breaker."""
    row = _row(kind, valid=False)

    assert breaker_kind(row) is ErrorKind.REVIEW_EVIDENCE_INVALID
    assert step(Breaker(streak=1), row).streak == 2


def test_a_reused_row_feeds_only_its_raw_kind() -> None:
    """Reused rows skip the review_evidence_valid override."""
    reused_invalid = _row(None, valid=False, reused=True)
    reused_outage = _row(ErrorKind.SESSION_ERROR, valid=True, reused=True)

    assert breaker_kind(reused_invalid) is None
    assert step(Breaker(streak=3), reused_invalid).streak == 0
    assert step(Breaker(streak=3), reused_outage).streak == 4


def test_the_breaker_trips_exactly_at_the_limit() -> None:
    """Four systemic rows leave it armed; the fifth trips it with streak 5."""
    four = step_all(Breaker(), [SYSTEMIC] * 4)
    five = step(four, SYSTEMIC)

    assert four == Breaker(streak=4, tripped=False)
    assert five == Breaker(streak=5, tripped=True)


def test_a_cleanup_failure_at_four_trips_the_breaker() -> None:
    """cleanup-failure overwrites the primary kind and still counts."""
    assert step(Breaker(streak=4), _row(ErrorKind.CLEANUP_FAILURE)) == Breaker(streak=5, tripped=True)


def test_a_limit_of_one_trips_on_the_first_systemic_row() -> None:
    """The smallest enabled limit."""
    assert step(Breaker(limit=1), SYSTEMIC).tripped
    assert not step(Breaker(limit=1), HEALTHY).tripped


def test_a_limit_of_zero_disables_the_breaker() -> None:
    """--outage-streak 0 never trips, however long the outage."""
    breaker = step_all(Breaker(limit=0), [SYSTEMIC] * 50)

    assert breaker == Breaker(limit=0, streak=50, tripped=False)


@pytest.mark.parametrize("field", ["limit", "streak"])
def test_a_negative_limit_or_streak_is_refused(field: str) -> None:
    """The reference tripped on the first row for a negative limit; we refuse it."""
    with pytest.raises(ValueError, match=f"{field} must be at least 0.*got -1"):
        Breaker(**{field: -1})


def test_a_tripped_breaker_no_longer_moves() -> None:
    """After the trip the streak stays at the limit, whatever follows."""
    tripped = Breaker(limit=2, streak=2, tripped=True)

    assert step(tripped, SYSTEMIC) == tripped
    assert step(tripped, HEALTHY) == tripped


def test_the_breaker_carries_its_streak_across_tasks() -> None:
    """Rows of different tasks share one streak."""
    rows = [Row(task=f"t{i}", arm="a", run=0, error_kind=ErrorKind.INFRA_ERROR) for i in range(5)]

    assert step_all(Breaker(), rows).tripped


@given(st.lists(breaker_rows(), max_size=30), st.data(), st.integers(min_value=0, max_value=6))
def test_folding_a_whole_sequence_equals_folding_any_split_of_it(
    rows: list[Row], data: st.DataObject, limit: int
) -> None:
    """The breaker carried across a split ends where the one-pass fold ends."""
    cut = data.draw(st.integers(min_value=0, max_value=len(rows)))
    start = Breaker(limit=limit)

    assert step_all(step_all(start, rows[:cut]), rows[cut:]) == step_all(start, rows)


@given(st.lists(breaker_rows(), max_size=30))
def test_the_one_pass_fold_counts_the_trailing_systemic_run(rows: list[Row]) -> None:
    """With the breaker disabled, the streak is the number of trailing systemic rows."""
    trailing = 0
    for row in rows:
        trailing = trailing + 1 if breaker_kind(row) in SYSTEMIC_KINDS else 0

    assert step_all(Breaker(limit=0), rows).streak == trailing


# --- failed cells and the window --------------------------------------------------------------


def test_a_raising_cell_becomes_an_infra_error_row_with_unknown_usage() -> None:
    """The row is systemic, names the failure, and measures nothing."""
    row = failed_cell_row(Cell("t", "a", 2), "KeyError: 'x'", cancelled=False)

    assert row.cell == ("t", "a", 2)
    assert row.error_kind is ErrorKind.INFRA_ERROR
    assert (row.ok, row.resolved) == (False, False)
    assert row.input_tokens is None
    assert row.cost_usd is None
    assert row.extra == {"error_detail": "KeyError: 'x'"}
    assert step(Breaker(), row).streak == 1


def test_a_cell_that_raised_after_cancellation_is_a_cancelled_row() -> None:
    """A stopped cell is not an outage."""
    row = failed_cell_row(Cell("t", "a", 0), "stopped", cancelled=True)

    assert row.error_kind is ErrorKind.CANCELLED
    assert step(Breaker(streak=3), row).streak == 0


def test_the_failure_detail_is_capped() -> None:
    """error_detail keeps at most 2000 characters."""
    assert DETAIL_LIMIT == 2000
    exact = failed_cell_row(Cell("t", "a", 0), "x" * 2000, cancelled=False)
    longer = failed_cell_row(Cell("t", "a", 0), "y" * 2001, cancelled=False)

    assert exact.extra["error_detail"] == "x" * 2000
    assert longer.extra["error_detail"] == "y" * 2000


def test_the_default_window_is_six_times_the_workers() -> None:
    """window = 6 × workers unless given (docs/performance.md, "Scheduler", measures why)."""
    assert WINDOW_MULTIPLIER == 6
    assert packed_window(1) == 6
    assert packed_window(3) == 18
    assert packed_window(3, 3) == 3
    assert packed_window(3, 12) == 12


def test_fewer_than_one_worker_is_refused() -> None:
    """The pool needs a worker."""
    with pytest.raises(ValueError, match="workers must be at least 1, got 0"):
        packed_window(0)


def test_a_window_below_the_workers_is_refused() -> None:
    """The pool would starve waiting for a fold pointer it can never pass."""
    with pytest.raises(ValueError, match=r"window must be at least workers \(3\).*got 2"):
        packed_window(3, 2)


# --- the fold ---------------------------------------------------------------------------------


def _submits(actions: Sequence[Action]) -> list[int]:
    return [action.index for action in actions if isinstance(action, SubmitCell)]


def _persists(actions: Sequence[Action]) -> list[int]:
    return [action.index for action in actions if isinstance(action, PersistRow)]


def test_the_fold_fills_the_window_at_the_start() -> None:
    """The first actions submit as many cells as the window holds."""
    state, actions = start_fold(10, window=3)

    assert actions == (SubmitCell(0), SubmitCell(1), SubmitCell(2))
    assert (state.submitted, state.folded, state.in_flight) == (3, 0, 3)
    assert state.breaker == Breaker()
    assert not state.done


def test_a_short_sweep_submits_every_cell_at_once() -> None:
    """A window larger than the sweep submits everything."""
    state, actions = start_fold(2, window=6)

    assert _submits(actions) == [0, 1]
    assert state.submitted == 2


def test_an_empty_sweep_is_done_at_once() -> None:
    """Zero cells: nothing to submit, done immediately."""
    state, actions = start_fold(0, window=6)

    assert actions == (SweepDone(),)
    assert state.done


def test_the_fold_starts_from_the_breaker_it_is_given() -> None:
    """A carried-in streak and limit are kept."""
    state, _ = start_fold(1, window=1, breaker=Breaker(limit=2, streak=1))
    state, actions = fold(state, CellFinished(0, SYSTEMIC))

    assert state.tripped_at == 0
    assert StopSubmitting(StopReason.OUTAGE) in actions


@pytest.mark.parametrize(("total", "window", "message"), [(-1, 2, "total must be"), (1, 0, "window must be")])
def test_a_negative_sweep_or_an_empty_window_is_refused(total: int, window: int, message: str) -> None:
    """Nonsense sizes are caller errors."""
    with pytest.raises(ValueError, match=message):
        start_fold(total, window=window)


def test_a_window_of_one_runs_cells_one_at_a_time() -> None:
    """The smallest window submits the next cell only after the previous one folded."""
    state, actions = start_fold(3, window=1)
    assert _submits(actions) == [0]

    state, actions = fold(state, CellFinished(0, HEALTHY))

    assert actions == (PersistRow(0, HEALTHY, overrun=False), SubmitCell(1))


def test_an_early_finisher_waits_for_the_cells_before_it() -> None:
    """Out-of-order completions are buffered and folded in submission order."""
    state, _ = start_fold(6, window=3)
    late = _row(run=1)
    state, actions = fold(state, CellFinished(1, late))

    assert actions == ()
    assert state.buffered == (CellFinished(1, late),)
    assert state.in_flight == 3

    state, actions = fold(state, CellFinished(0, HEALTHY))

    assert actions == (
        PersistRow(0, HEALTHY, overrun=False),
        PersistRow(1, late, overrun=False),
        SubmitCell(3),
        SubmitCell(4),
    )
    assert (state.folded, state.submitted, state.buffered, state.persisted) == (2, 5, (), 2)


def test_buffered_cells_are_kept_sorted_by_index() -> None:
    """Whatever order they finish in, the buffer reads in submission order."""
    state, _ = start_fold(4, window=4)
    state, _ = fold(state, CellFinished(3, HEALTHY))
    state, _ = fold(state, CellFinished(1, HEALTHY))
    state, _ = fold(state, CellFinished(2, HEALTHY))

    assert [finished.index for finished in state.buffered] == [1, 2, 3]

    state, actions = fold(state, CellFinished(0, HEALTHY))

    assert _persists(actions) == [0, 1, 2, 3]
    assert actions[-1] == SweepDone()


def test_the_sweep_is_done_once_the_last_cell_is_folded() -> None:
    """SweepDone comes exactly once, after the last persist."""
    state, _ = start_fold(2, window=2)
    state, actions = fold(state, CellFinished(0, HEALTHY))
    assert SweepDone() not in actions
    assert not state.done

    state, actions = fold(state, CellFinished(1, HEALTHY))

    assert actions == (PersistRow(1, HEALTHY, overrun=False), SweepDone())
    assert state.done


@pytest.mark.parametrize("index", [-1, 2, 5])
def test_a_cell_that_was_not_submitted_cannot_finish(index: int) -> None:
    """Reports outside the in-flight range are a shell bug."""
    state, _ = start_fold(5, window=2)

    with pytest.raises(ValueError, match=f"cell {index} is not in flight \\(in flight: 0..1\\)"):
        fold(state, CellFinished(index, HEALTHY))


def test_a_folded_cell_cannot_finish_again() -> None:
    """The lower end of the in-flight range is the fold pointer."""
    state, _ = start_fold(5, window=2)
    state, _ = fold(state, CellFinished(0, HEALTHY))

    with pytest.raises(ValueError, match="cell 0 is not in flight"):
        fold(state, CellFinished(0, HEALTHY))


def test_a_buffered_cell_cannot_finish_twice() -> None:
    """A duplicate report is refused, not folded twice."""
    state, _ = start_fold(5, window=3)
    state, _ = fold(state, CellFinished(2, HEALTHY))

    with pytest.raises(ValueError, match="cell 2 was already reported"):
        fold(state, CellFinished(2, HEALTHY))


def test_no_event_is_accepted_after_the_sweep_is_done() -> None:
    """A finished fold refuses further events."""
    state, _ = start_fold(0, window=1)

    with pytest.raises(ValueError, match="^the sweep is done; no further event is expected$"):
        fold(state, CancelRequested())


def test_a_cell_that_never_started_neither_persists_nor_moves_the_breaker() -> None:
    """A missing row neither extends nor resets the streak, but frees its window slot."""
    state, _ = start_fold(4, window=1, breaker=Breaker(streak=2))
    state, actions = fold(state, CellFinished(0, None))

    assert actions == (SubmitCell(1),)
    assert state.breaker.streak == 2
    assert state.persisted == 0

    state, _ = fold(state, CellFinished(1, SYSTEMIC))

    assert state.breaker.streak == 3


def _trip_after_five(window: int) -> tuple[FoldState, list[Action]]:
    state, actions = start_fold(20, window=window)
    log = list(actions)
    for index in range(5):
        state, actions = fold(state, CellFinished(index, SYSTEMIC))
        log.extend(actions)
    return state, log


def test_five_systemic_rows_in_order_trip_the_breaker_and_stop_submission() -> None:
    """The tripping row is persisted first, then submission stops and running cells are cancelled."""
    state, log = _trip_after_five(window=3)

    assert log[-3:] == [
        PersistRow(4, SYSTEMIC, overrun=False),
        StopSubmitting(StopReason.OUTAGE),
        CancelRunning(StopReason.OUTAGE),
    ]
    assert (state.tripped_at, state.stopped, state.submitted) == (4, StopReason.OUTAGE, 7)
    assert state.breaker == Breaker(streak=5, tripped=True)


def test_rows_finished_after_a_trip_are_persisted_as_overrun_and_do_not_move_the_breaker() -> None:
    """Money spent, evidence kept: overrun rows are persisted, flagged, and counted."""
    state, _ = _trip_after_five(window=3)
    state, first = fold(state, CellFinished(5, HEALTHY))
    state, last = fold(state, CellFinished(6, SYSTEMIC))

    assert first == (PersistRow(5, HEALTHY, overrun=True),)
    assert last == (PersistRow(6, SYSTEMIC, overrun=True), SweepDone())
    assert state.breaker == Breaker(streak=5, tripped=True)
    assert (state.overrun, state.persisted, state.folded) == (2, 7, 7)


def test_an_overrun_cell_that_never_started_is_not_counted() -> None:
    """Overrun counts rows, not submissions."""
    state, _ = _trip_after_five(window=3)
    state, _ = fold(state, CellFinished(5, None))
    state, actions = fold(state, CellFinished(6, None))

    assert actions == (SweepDone(),)
    assert (state.overrun, state.persisted) == (0, 5)


def test_a_cancellation_stops_submission_and_keeps_the_running_rows() -> None:
    """Cells in flight still fold; nothing new is submitted; the breaker is not stepped."""
    state, _ = start_fold(10, window=3)
    state, actions = fold(state, CancelRequested())

    assert actions == (StopSubmitting(StopReason.CANCELLED),)
    assert state.stopped is StopReason.CANCELLED

    for index in range(3):
        state, actions = fold(state, CellFinished(index, SYSTEMIC))
        assert _submits(actions) == []
        assert actions[0] == PersistRow(index, SYSTEMIC, overrun=False)

    assert actions[-1] == SweepDone()
    assert state.breaker == Breaker()
    assert (state.tripped_at, state.overrun, state.persisted) == (None, 0, 3)


def test_a_second_cancellation_changes_nothing() -> None:
    """Cancelling twice emits nothing the second time."""
    state, _ = start_fold(10, window=3)
    state, _ = fold(state, CancelRequested())
    again, actions = fold(state, CancelRequested())

    assert (again, actions) == (state, ())


def test_a_cancellation_after_a_trip_keeps_the_outage() -> None:
    """The trip is the reason the sweep stopped; a later Ctrl-C does not relabel it."""
    state, _ = _trip_after_five(window=3)
    again, actions = fold(state, CancelRequested())

    assert (again, actions) == (state, ())
    assert again.stopped is StopReason.OUTAGE


def test_a_cancellation_before_any_completion_waits_for_the_cells_in_flight() -> None:
    """Submitted cells must report before the sweep is done."""
    state, _ = start_fold(3, window=2)
    state, actions = fold(state, CancelRequested())

    assert SweepDone() not in actions
    assert not state.done


# --- properties of the fold ---------------------------------------------------------------


def _simulate(
    rows: Sequence[Row | None], *, window: int, limit: int, pick: Callable[[list[int]], int]
) -> tuple[FoldState, list[Action]]:
    """Drive the fold like a shell would, finishing an in-flight cell chosen by ``pick``."""
    state, actions = start_fold(len(rows), window=window, breaker=Breaker(limit=limit))
    log = list(actions)
    reported: set[int] = set()
    while not state.done:
        in_flight = [index for index in range(state.folded, state.submitted) if index not in reported]
        assert len(range(state.folded, state.submitted)) <= window
        index = pick(in_flight)
        reported.add(index)
        state, actions = fold(state, CellFinished(index, rows[index]))
        log.extend(actions)
    return state, log


@given(st.integers(min_value=0, max_value=25), st.integers(min_value=1, max_value=8), st.data())
def test_fold_order_is_submission_order_for_any_completion_order(
    total: int, window: int, data: st.DataObject
) -> None:
    """Every cell is submitted once and persisted once, in submission order, whatever finishes first."""
    rows = [HEALTHY] * total

    state, log = _simulate(
        rows, window=window, limit=5, pick=lambda flight: data.draw(st.sampled_from(flight))
    )

    assert _submits(log) == list(range(total))
    assert _persists(log) == list(range(total))
    assert log[-1] == SweepDone()
    assert state.done


@given(
    st.lists(st.none() | breaker_rows(), max_size=30),
    st.integers(min_value=1, max_value=8),
    st.integers(min_value=0, max_value=6),
    st.data(),
)
def test_the_fold_trips_where_the_serial_breaker_trips_and_overruns_less_than_the_window(
    rows: list[Row | None], window: int, limit: int, data: st.DataObject
) -> None:
    """Any completion order gives the serial trip point; overrun rows stay below the window."""
    serial, trip = Breaker(limit=limit), None
    for index, row in enumerate(rows):
        if row is not None and not serial.tripped:
            serial = step(serial, row)
            trip = index if serial.tripped else None

    state, log = _simulate(
        rows, window=window, limit=limit, pick=lambda flight: data.draw(st.sampled_from(flight))
    )

    assert state.tripped_at == trip
    assert state.breaker == serial
    assert _persists(log) == [index for index in range(state.submitted) if rows[index] is not None]
    assert state.overrun <= window - 1
    if trip is not None:
        assert state.submitted <= trip + window
        assert state.overrun == sum(row is not None for row in rows[trip + 1 : state.submitted])
