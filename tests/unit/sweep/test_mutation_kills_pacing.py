"""Pacing and the paced fold at their edges: the burst boundary, start sequences, exact actions.

Written for the survivors of ``scripts/mutation --modules sweep/pacing,sweep/scheduling``
(docs/mutation.md): each test states a rule of pacing that a mutant broke without any test noticing.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from wfbench.domain.results.rows import ErrorKind, Row
from wfbench.domain.sweep.pacing import LimitChanged, Pacing, RetryPolicy
from wfbench.domain.sweep.scheduling import (
    Action,
    Breaker,
    CancelRequested,
    CellFinished,
    FoldState,
    PersistRow,
    SubmitCell,
    fold,
    start_fold,
)

HEALTHY = Row(task="t", arm="a", run=0)
THROTTLED = Row(
    task="t",
    arm="a",
    run=0,
    error_kind=ErrorKind.SESSION_ERROR,
    extra={"error_detail": "result is_error (api_error_status 529)"},
)
RATE_LIMITED = attrs.evolve(THROTTLED, extra={"api_error_status": 429})


def _paced(workers: int, *, retries: int = 3) -> Pacing:
    return Pacing.start(workers, outage_limit=5, retry=RetryPolicy(retries=retries, base_delay_s=30))


def _start(total: int, workers: int, *, retries: int = 3) -> tuple[FoldState, tuple[Action, ...]]:
    pacing = _paced(workers, retries=retries)
    return start_fold(total, window=6 * workers, breaker=Breaker(limit=5), pacing=pacing)


def _with_attempts(row: Row, *statuses: int) -> Row:
    empty = {"cost_usd": None, "duration_s": None, "session_ids": None}
    records = [{"api_error_status": s, **empty} for s in statuses]
    return attrs.evolve(row, extra={**row.extra, "throttled_attempts": records})


# --- Pacing on its own --------------------------------------------------------------------------


def test_a_throttle_of_the_last_cell_started_before_a_cut_belongs_to_that_burst() -> None:
    """Cells 0..7 start; 0's throttle halves 8 → 4; 7 (started just before the cut) does not cut again."""
    pacing = _paced(8)
    for index in range(8):
        pacing = pacing.started_cell(index)
    pacing, first = pacing.throttled(0, THROTTLED, 529)
    assert first == LimitChanged(8, 4, "throttled", 0, 529)
    pacing, same_burst = pacing.throttled(7, THROTTLED, 529)
    assert same_burst is None
    assert pacing.cap == 4

    pacing = pacing.started_cell(8)  # the first start after the cut: a new burst
    pacing, new_burst = pacing.throttled(8, RATE_LIMITED, 429)
    assert new_burst == LimitChanged(4, 2, "throttled", 8, 429)


def test_starts_are_numbered_0_1_2_in_the_order_attempts_start() -> None:
    pacing = _paced(4).started_cell(3).started_cell(5)
    assert (pacing.starts, dict(pacing.started)) == (2, {3: 0, 5: 1})
    pacing, _ = pacing.throttled(3, THROTTLED, 529)
    pacing = pacing.started_cell(3)  # its retry: a new attempt, the next number
    assert (pacing.starts, dict(pacing.started)) == (3, {5: 1, 3: 2})


def test_a_fold_counts_every_attempt_it_starts() -> None:
    """``starts`` is the number of SubmitCell actions, retries included."""
    state, actions = _start(4, workers=2)
    log = list(actions)
    for event in (CellFinished(0, THROTTLED), CellFinished(1, HEALTHY), CellFinished(0, HEALTHY)):
        state, actions = fold(state, event)
        log += actions
    assert state.pacing is not None
    assert [a for a in log if isinstance(a, SubmitCell)] == [
        SubmitCell(0),
        SubmitCell(1),
        SubmitCell(0, attempt=1, delay_s=30.0),
        SubmitCell(2),
        SubmitCell(3),
    ]
    assert state.pacing.starts == 5


def test_a_throttle_of_a_cell_never_recorded_as_started_counts_as_a_new_burst() -> None:
    """Its attempt counts as starting now, after every cut so far: each such throttle halves the limit."""
    pacing = _paced(4)
    assert pacing.start_of(9) == 0
    pacing, change = pacing.throttled(9, THROTTLED, 529)
    assert change == LimitChanged(4, 2, "throttled", 9, 529)
    assert pacing.start_of(10) == pacing.starts
    pacing, again = pacing.throttled(10, THROTTLED, 529)
    assert again == LimitChanged(2, 1, "throttled", 10, 529)


def test_a_waiting_or_finished_cell_is_no_longer_running() -> None:
    """``started`` holds running cells only: a throttle or a finished row forgets the cell's start."""
    pacing = _paced(4).started_cell(0).started_cell(1).started_cell(2)
    pacing, _ = pacing.throttled(0, THROTTLED, 529)
    assert dict(pacing.started) == {1: 1, 2: 2}
    assert pacing.waiting == (0,)
    pacing, _ = pacing.finished(1)
    assert dict(pacing.started) == {2: 2}


# --- the paced fold's actions, exactly ----------------------------------------------------------


def test_a_second_throttle_of_the_same_burst_gives_only_the_retry_start() -> None:
    """No limit change, no placeholder action: the freed worker starts cell 0's retry."""
    state, actions = _start(4, workers=2)
    assert actions == (SubmitCell(0), SubmitCell(1))
    state, actions = fold(state, CellFinished(0, THROTTLED))
    assert actions == (LimitChanged(2, 1, "throttled", 0, 529),)
    state, actions = fold(state, CellFinished(1, THROTTLED))
    assert actions == (SubmitCell(0, attempt=1, delay_s=30.0),)


def test_a_finished_row_that_moves_no_limit_gives_its_persist_and_the_next_start_only() -> None:
    state, _ = _start(4, workers=2)
    state, actions = fold(state, CellFinished(0, HEALTHY))
    assert actions == (PersistRow(0, HEALTHY, False), SubmitCell(2))


def test_a_retry_that_never_ran_gives_its_last_throttled_row_and_the_next_start_only() -> None:
    state, _ = _start(2, workers=1)
    state, _ = fold(state, CellFinished(0, THROTTLED))
    state, actions = fold(state, CellFinished(0, None))
    assert actions == (PersistRow(0, _with_attempts(THROTTLED, 529), False), SubmitCell(1))


def test_a_cell_past_its_retries_cuts_the_limit_naming_itself_and_its_status() -> None:
    """retries=0: cell 2's 429 is folded, and the cut names cell 2 and 429."""
    state, _ = _start(6, workers=4, retries=0)
    state, actions = fold(state, CellFinished(2, RATE_LIMITED))
    assert actions == (LimitChanged(4, 2, "throttled", 2, 429),)


def test_throttles_past_the_retries_of_one_burst_cut_once() -> None:
    """retries=0, cells 0..7 running: 0's 529 halves 8 → 4, 1's (same burst) does not cut again."""
    state, actions = _start(20, workers=8, retries=0)
    assert len(actions) == 8
    state, actions = fold(state, CellFinished(0, THROTTLED))
    assert [a for a in actions if isinstance(a, LimitChanged)] == [LimitChanged(8, 4, "throttled", 0, 529)]
    state, actions = fold(state, CellFinished(1, THROTTLED))
    assert [a for a in actions if isinstance(a, LimitChanged)] == []
    assert state.pacing is not None
    assert state.pacing.cap == 4


def _persisted(actions: Sequence[Action]) -> list[tuple[int, Row]]:
    return [(a.index, a.row) for a in actions if isinstance(a, PersistRow)]


def test_a_cancellation_folds_every_waiting_cell_in_order_with_its_last_throttled_row() -> None:
    """Cells 1 and 2 wait to run again when the sweep is cancelled: both are folded, after 0, in order."""
    state, _ = _start(6, workers=4)
    state, _ = fold(state, CellFinished(1, THROTTLED))
    state, _ = fold(state, CellFinished(2, RATE_LIMITED))
    assert state.pacing is not None
    assert state.pacing.waiting == (1, 2)
    state, actions = fold(state, CancelRequested())
    assert _persisted(actions) == []  # cell 0 still runs: nothing is next in order yet
    state, actions = fold(state, CellFinished(0, HEALTHY))
    assert _persisted(actions) == [
        (0, HEALTHY),
        (1, _with_attempts(THROTTLED, 529)),
        (2, _with_attempts(RATE_LIMITED, 429)),
    ]
    assert not [a for a in actions if isinstance(a, SubmitCell)]


# --- fast failures for mutants that otherwise only hang a driver loop (mutmut: timeouts) --------


def test_a_settled_cell_leaves_nothing_in_the_pacing_state() -> None:
    pacing = _paced(4).started_cell(0).started_cell(1)
    pacing, _ = pacing.throttled(0, THROTTLED, 529)
    pacing, row = pacing.settle(0, None)
    assert row == _with_attempts(THROTTLED, 529)
    left = (pacing.waiting, dict(pacing.attempts), dict(pacing.last), dict(pacing.throttles))
    assert left == ((), {}, {}, {})
    assert dict(pacing.started) == {1: 1}


def test_each_throttle_of_a_cell_counts_one_more_attempt() -> None:
    pacing = _paced(4, retries=2).started_cell(0).started_cell(1)
    pacing, _ = pacing.throttled(1, THROTTLED, 529)
    pacing, _ = pacing.throttled(0, THROTTLED, 529)
    assert dict(pacing.attempts) == {1: 1, 0: 1}
    pacing, _ = pacing.take_waiting()
    pacing = pacing.started_cell(0)
    pacing, _ = pacing.throttled(0, THROTTLED, 529)
    assert dict(pacing.attempts) == {1: 1, 0: 2}
    assert not pacing.retries_left(0)
    assert pacing.retries_left(1)


def test_a_sweep_smaller_than_the_workers_starts_each_cell_once() -> None:
    _, actions = _start(2, workers=4)
    assert actions == (SubmitCell(0), SubmitCell(1))


def test_a_window_of_exactly_the_workers_is_accepted() -> None:
    state, actions = start_fold(3, window=3, breaker=Breaker(limit=5), pacing=_paced(3))
    assert actions == (SubmitCell(0), SubmitCell(1), SubmitCell(2))
    assert state.window == 3


def test_after_a_cancellation_no_cell_waits_to_run_again() -> None:
    state, _ = _start(6, workers=4)
    state, _ = fold(state, CellFinished(1, THROTTLED))
    state, _ = fold(state, CancelRequested())
    assert state.pacing is not None
    assert state.pacing.waiting == ()
    state, actions = fold(state, CellFinished(0, HEALTHY))
    assert [index for index, _ in _persisted(actions)] == [0, 1]
