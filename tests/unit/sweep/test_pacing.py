"""Pacing: lazy starts, contraction while systemic rows are in sight, throttle retries, the AIMD limit."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.strategies import breaker_rows
from wfbench.domain.results.rows import ErrorKind, Row
from wfbench.domain.sweep.pacing import (
    THROTTLE_STATUSES,
    LimitChanged,
    Pacing,
    RetryPolicy,
    contraction_threshold,
    throttle_status,
)
from wfbench.domain.sweep.scheduling import (
    Action,
    Breaker,
    CancelRequested,
    CellFinished,
    FoldState,
    PersistRow,
    SubmitCell,
    SweepDone,
    fold,
    start_fold,
    step,
)


def _row(kind: ErrorKind | None = None, run: int = 0, **extra: object) -> Row:
    return Row(task="t", arm="a", run=run, error_kind=kind, extra=extra)


HEALTHY = _row()
SYSTEMIC = _row(ErrorKind.SESSION_ERROR, error_detail="agent process exited (returncode 1)")
THROTTLED = _row(
    ErrorKind.SESSION_ERROR, error_detail="result is_error (api_error_status 529)", cost_usd=None
)


def _paced(workers: int, *, limit: int = 5, retries: int = 3) -> Pacing:
    return Pacing.start(workers, outage_limit=limit, retry=RetryPolicy(retries=retries, base_delay_s=30))


def _start(total: int, workers: int, window: int, **options: int) -> tuple[FoldState, tuple[Action, ...]]:
    limit = options.get("limit", 5)
    pacing = _paced(workers, limit=limit, retries=options.get("retries", 3))
    return start_fold(total, window=window, breaker=Breaker(limit=limit), pacing=pacing)


def _submits(actions: Sequence[Action]) -> list[int]:
    return [action.index for action in actions if isinstance(action, SubmitCell)]


def _persists(actions: Sequence[Action]) -> list[Row]:
    return [action.row for action in actions if isinstance(action, PersistRow)]


def _limits(actions: Sequence[Action]) -> list[LimitChanged]:
    return [action for action in actions if isinstance(action, LimitChanged)]


# --- throttle detection and policies ----------------------------------------------------------


def test_a_session_error_on_429_or_529_is_a_throttle_read_from_the_field_or_the_detail() -> None:
    """The session parser's wording and an explicit api_error_status both count; 500 does not."""
    assert throttle_status(THROTTLED) == 529
    assert throttle_status(_row(ErrorKind.SESSION_ERROR, api_error_status=429)) == 429
    assert throttle_status(_row(ErrorKind.SESSION_ERROR, error_detail="x (api_error_status 500); y")) is None
    assert throttle_status(_row(ErrorKind.SESSION_ERROR, api_error_status=500)) is None
    both = "result is_error (api_error_status 500); retry (api_error_status 429)"
    assert throttle_status(_row(ErrorKind.SESSION_ERROR, error_detail=both)) == 429
    assert throttle_status(_row(ErrorKind.SESSION_ERROR, api_error_status=True)) is None
    assert throttle_status(SYSTEMIC) is None
    codex = "turn.failed: unexpected status 429 Too Many Requests"
    assert throttle_status(_row(ErrorKind.SESSION_ERROR, error_detail=codex)) == 429
    assert throttle_status(_row(ErrorKind.SESSION_ERROR, error_detail="status 529 somewhere")) is None
    assert THROTTLE_STATUSES == {429, 529}


@pytest.mark.parametrize(("status", "throttled"), [(429, 429), (529, 529), (503, None), (500, None)])
def test_a_session_the_wire_saw_the_provider_throttle_is_a_throttle_whatever_the_agent_said(
    status: int, throttled: int | None
) -> None:
    """OpenCode retries a 429 on its own and dies at the timeout: the wire's count names the status."""
    detail = f"agent process timeout; the model provider answered {status} to 5 request(s) of the session"
    assert throttle_status(_row(ErrorKind.SESSION_ERROR, error_detail=detail)) == throttled
    assert throttle_status(_row(ErrorKind.SESSION_ERROR, error_detail=f"provider answered {status}")) is None


@pytest.mark.parametrize("kind", [None, ErrorKind.INFRA_ERROR, ErrorKind.ORACLE_FAILED, ErrorKind.CANCELLED])
def test_only_a_session_error_can_be_a_throttle(kind: ErrorKind | None) -> None:
    """A session that produced its evidence despite a 429 is a measurement, not a retry."""
    assert throttle_status(_row(kind, api_error_status=529, error_detail="api_error_status 529")) is None


def test_the_session_parser_words_a_provider_status_the_way_throttle_status_reads_it() -> None:
    """Both ends of the one string contract: the parser's reason and the pacing regex."""
    from wfbench.domain.session.event_stream import ProcessOutcome, _error_reasons
    from wfbench.domain.workspace.sandbox import ProcessState

    process = ProcessOutcome(state=ProcessState.EXITED, returncode=1, wall_s=1.0)
    reasons = _error_reasons(process, None, {"type": "result", "is_error": True, "api_error_status": 529})

    assert throttle_status(_row(ErrorKind.SESSION_ERROR, error_detail="; ".join(reasons))) == 529


def test_the_retry_delay_doubles_from_the_base_up_to_the_maximum() -> None:
    policy = RetryPolicy(retries=9, base_delay_s=30, max_delay_s=200)

    assert [policy.delay(attempt) for attempt in range(6)] == [0.0, 30.0, 60.0, 120.0, 200.0, 200.0]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"retries": -1}, "retries must be at least 0"),
        ({"base_delay_s": -1.0}, "base_delay_s must be at least 0"),
        ({"base_delay_s": 10.0, "max_delay_s": 5.0}, "max_delay_s 5.0 is below base_delay_s 10.0"),
    ],
)
def test_a_bad_retry_policy_is_refused(options: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RetryPolicy(**options)  # type: ignore[arg-type]


def test_a_retry_policy_whose_maximum_equals_its_base_is_a_constant_back_off() -> None:
    """The boundary of the refusal: max_delay_s == base_delay_s is allowed (every retry waits the same)."""
    policy = RetryPolicy(retries=3, base_delay_s=10.0, max_delay_s=10.0)

    assert [policy.delay(attempt) for attempt in range(4)] == [0.0, 10.0, 10.0, 10.0]


def test_the_contraction_threshold_is_half_the_breaker_limit_rounded_up() -> None:
    assert [contraction_threshold(limit) for limit in (0, 1, 2, 3, 5, 8)] == [0, 1, 1, 2, 3, 4]


def test_pacing_needs_a_worker_and_a_window_of_at_least_the_workers() -> None:
    with pytest.raises(ValueError, match="workers must be positive"):
        Pacing.start(0, outage_limit=5)
    with pytest.raises(ValueError, match=r"window must be at least workers \(4\), got 3"):
        start_fold(10, window=3, pacing=_paced(4))


# --- lazy starts --------------------------------------------------------------------------------


def test_cells_start_only_when_a_worker_is_free_however_wide_the_window() -> None:
    """Two workers, a window of 12: two cells start; each finish starts exactly one more."""
    state, actions = _start(20, workers=2, window=12)
    assert _submits(actions) == [0, 1]

    state, actions = fold(state, CellFinished(1, HEALTHY))
    assert _submits(actions) == [2]
    state, actions = fold(state, CellFinished(2, HEALTHY))
    assert _submits(actions) == [3]
    assert _persists(actions) == []  # cell 0 still holds the fold


def test_the_window_still_bounds_cells_started_past_the_fold_pointer() -> None:
    """Window 3, workers 2: with cell 0 running, cells 1 and 2 finish and cell 3 may not start."""
    state, _ = _start(10, workers=2, window=3)
    state, actions = fold(state, CellFinished(1, HEALTHY))
    assert _submits(actions) == [2]
    state, actions = fold(state, CellFinished(2, HEALTHY))
    assert _submits(actions) == []
    state, actions = fold(state, CellFinished(0, HEALTHY))
    assert _submits(actions) == [3, 4]
    assert len(_persists(actions)) == 3


# --- contraction --------------------------------------------------------------------------------


def test_three_systemic_rows_in_sight_contract_the_window_to_the_workers() -> None:
    """Breaker limit 5: the third finished systemic row stops starts beyond fold + workers."""
    state, _ = _start(20, workers=2, window=12)
    state, actions = fold(state, CellFinished(1, SYSTEMIC))
    assert _submits(actions) == [2]
    state, actions = fold(state, CellFinished(2, SYSTEMIC))
    assert _submits(actions) == [3]
    state, actions = fold(state, CellFinished(3, SYSTEMIC))
    assert _submits(actions) == []  # cell 4 is 4 places past the fold pointer (0); workers = 2

    state, actions = fold(state, CellFinished(0, HEALTHY))
    assert len(_persists(actions)) == 4
    assert state.breaker.streak == 3
    assert _submits(actions) == [4, 5]  # streak 3 keeps it contracted, but fold + 2 is free now


def test_two_systemic_rows_in_sight_do_not_contract() -> None:
    """Stray session errors among healthy rows keep the wide window."""
    state, _ = _start(20, workers=2, window=12)
    state, _ = fold(state, CellFinished(1, SYSTEMIC))
    state, _ = fold(state, CellFinished(2, SYSTEMIC))
    state, actions = fold(state, CellFinished(3, HEALTHY))
    assert _submits(actions) == [4]


def test_a_disabled_breaker_never_contracts() -> None:
    state, _ = _start(20, workers=2, window=12, limit=0)
    for index in (1, 2, 3, 4):
        state, actions = fold(state, CellFinished(index, SYSTEMIC))
        assert _submits(actions) == [index + 1]


# --- throttles, retries and the AIMD limit ----------------------------------------------------------


def test_a_throttled_cell_runs_again_after_a_back_off_and_is_folded_once_with_its_attempts() -> None:
    """529 on cell 0: not folded, the limit halves, cell 0 runs again (attempt 1, 30 s) before new cells."""
    state, _ = _start(6, workers=2, window=12)
    throttled = attrs.evolve(THROTTLED, extra={**THROTTLED.extra, "session_ids": ["s1"]})

    state, actions = fold(state, CellFinished(0, throttled))

    assert _limits(actions) == [LimitChanged(2, 1, "throttled", 0, 529)]
    assert _persists(actions) == []
    assert _submits(actions) == []  # cell 1 still runs: a limit of 1 is full
    state, actions = fold(state, CellFinished(1, HEALTHY))  # 1 + 1/1: back to 2
    assert _limits(actions) == [LimitChanged(1, 2, "recovered", 1, None)]
    retry, new = (a for a in actions if isinstance(a, SubmitCell))
    assert (retry, new) == (SubmitCell(0, attempt=1, delay_s=30.0), SubmitCell(2))

    state, actions = fold(state, CellFinished(0, HEALTHY))
    (first, second) = _persists(actions)
    assert first.error_kind is None
    assert first.extra["throttled_attempts"] == [
        {"api_error_status": 529, "cost_usd": None, "duration_s": None, "session_ids": ["s1"]}
    ]
    assert "throttled_attempts" not in second.extra


def test_each_throttled_attempt_is_recorded_with_its_own_status_cost_duration_and_sessions() -> None:
    """Two throttles of one cell (429, then 529): two records, in order, with what each attempt reported."""
    state, _ = _start(2, workers=1, window=6)
    first = _row(ErrorKind.SESSION_ERROR, api_error_status=429, session_ids=["s1"])
    first = attrs.evolve(first, cost_usd=0.25, duration_s=3.5)
    second = attrs.evolve(THROTTLED, duration_s=1.0, extra={**THROTTLED.extra, "session_ids": ["s2"]})

    state, _ = fold(state, CellFinished(0, first))
    state, _ = fold(state, CellFinished(0, second))
    state, actions = fold(state, CellFinished(0, HEALTHY))

    (row,) = _persists(actions)
    assert row.extra["throttled_attempts"] == [
        {"api_error_status": 429, "cost_usd": 0.25, "duration_s": 3.5, "session_ids": ["s1"]},
        {"api_error_status": 529, "cost_usd": None, "duration_s": 1.0, "session_ids": ["s2"]},
    ]
    assert row.error_kind is None


def test_a_burst_of_throttles_halves_the_limit_once() -> None:
    """Four cells started together, all throttled: one cut (8 → 4), not four."""
    state, _ = _start(20, workers=8, window=48)
    changes = []
    for index in range(4):
        state, actions = fold(state, CellFinished(index, THROTTLED))
        changes += _limits(actions)

    assert changes == [LimitChanged(8, 4, "throttled", 0, 529)]
    assert state.pacing is not None
    assert state.pacing.waiting == (0, 1, 2, 3)


def test_a_throttle_of_a_cell_started_after_the_cut_cuts_again() -> None:
    """A new burst (a cell started after the last cut) halves again: 4 → 2 → 1, never below 1."""
    state, _ = _start(10, workers=4, window=24)
    state, actions = fold(state, CellFinished(0, THROTTLED))
    assert _limits(actions) == [LimitChanged(4, 2, "throttled", 0, 529)]
    state, _ = fold(state, CellFinished(1, HEALTHY))
    state, _ = fold(state, CellFinished(2, HEALTHY))
    started_after = _retried_or_new(state)
    state, actions = fold(state, CellFinished(started_after, THROTTLED))
    assert _limits(actions) == [LimitChanged(2, 1, "throttled", started_after, 529)]
    assert state.pacing is not None
    assert state.pacing.cap == 1


def _retried_or_new(state: FoldState) -> int:
    assert state.pacing is not None
    running = [i for i in state.pacing.started if i not in {f.index for f in state.buffered}]
    return max(running, key=lambda i: state.pacing.started[i] if state.pacing else 0)


def test_finished_rows_raise_the_limit_by_one_over_the_limit() -> None:
    """Additive increase: from 2 of 4, three more finished rows reach 3 (2 + 1/2 + 1/2.5 + 1/2.9)."""
    pacing = attrs.evolve(_paced(4), limit=2.0)
    changes = []
    for index in range(3):
        pacing, change = pacing.finished(index)
        changes.append(change)

    assert changes[:2] == [None, None]
    assert changes[2] == LimitChanged(2, 3, "recovered", 2, None)
    assert pacing.limit == pytest.approx(2 + 1 / 2 + 1 / 2.5 + 1 / (2 + 1 / 2 + 1 / 2.5))
    top = attrs.evolve(_paced(4), limit=4.0).finished(0)[0]
    assert top.limit == 4.0


def test_a_cell_throttled_past_its_retries_is_folded_as_the_session_error_the_breaker_counts() -> None:
    """retries=1: the second 529 is folded (systemic, streak 1) with the first attempt recorded."""
    state, _ = _start(3, workers=1, window=6, retries=1)
    state, _ = fold(state, CellFinished(0, THROTTLED))
    state, actions = fold(state, CellFinished(0, THROTTLED))

    (row,) = _persists(actions)
    assert row.error_kind is ErrorKind.SESSION_ERROR
    assert len(row.extra["throttled_attempts"]) == 1
    assert state.breaker.streak == 1


def test_a_real_outage_of_529s_still_trips_the_breaker_after_the_retries() -> None:
    """Every attempt throttled, retries=2, limit 5: the fifth folded cell trips it."""
    state, actions = _start(12, workers=2, window=12, retries=2)
    log = list(actions)
    while not state.done:
        running = _running(state)
        state, actions = fold(state, CellFinished(running[0], THROTTLED))
        log += actions

    assert state.tripped_at == 4
    assert [row.error_kind for row in _persists(log)][:5] == [ErrorKind.SESSION_ERROR] * 5
    assert all(len(row.extra["throttled_attempts"]) == 2 for row in _persists(log)[:5])
    assert state.pacing is not None
    assert state.pacing.cap == 1


def _running(state: FoldState) -> list[int]:
    assert state.pacing is not None
    done = {finished.index for finished in state.buffered} | set(state.pacing.waiting)
    return [i for i in range(state.folded, state.submitted) if i not in done]


def test_a_reported_cell_that_waits_to_run_again_cannot_be_reported() -> None:
    state, _ = _start(4, workers=2, window=12)
    state, _ = fold(state, CellFinished(0, THROTTLED))

    with pytest.raises(ValueError, match="cell 0 is waiting to run again"):
        fold(state, CellFinished(0, HEALTHY))


def test_a_cancellation_folds_a_waiting_cell_with_its_last_throttled_row() -> None:
    """Its retry will never run: the throttled session it did run is persisted."""
    state, _ = _start(4, workers=2, window=12)
    state, _ = fold(state, CellFinished(0, THROTTLED))
    state, actions = fold(state, CancelRequested())
    (row,) = _persists(actions)  # cell 0 is next in order: folded at once
    assert row.error_kind is ErrorKind.SESSION_ERROR
    assert row.extra["throttled_attempts"][0]["api_error_status"] == 529
    assert _submits(actions) == []

    state, actions = fold(state, CellFinished(1, HEALTHY))
    assert [row.error_kind for row in _persists(actions)] == [None]
    assert actions[-1] == SweepDone()


def test_a_retry_that_never_started_is_folded_with_its_last_throttled_row() -> None:
    """The shell reports None when the token stopped the back-off wait."""
    state, _ = _start(2, workers=1, window=6)
    state, _ = fold(state, CellFinished(0, THROTTLED))
    state, actions = fold(state, CellFinished(0, None))

    (row,) = _persists(actions)
    assert row.error_kind is ErrorKind.SESSION_ERROR
    assert len(row.extra["throttled_attempts"]) == 1


# --- properties ---------------------------------------------------------------------------------


def _drive(
    rows: Sequence[Row | None], *, workers: int, window: int, limit: int, pick: Callable[[list[int]], int]
) -> tuple[FoldState, list[Action]]:
    state, actions = _start(len(rows), workers=workers, window=window, limit=limit)
    log = list(actions)
    while not state.done:
        running = _running(state)
        assert state.pacing is not None
        assert len(running) <= workers
        if _submits(actions):  # starts stop at the cap (a cut lets running cells finish)
            assert len(running) <= state.pacing.cap
        assert state.submitted - state.folded <= window
        index = pick(running)
        state, actions = fold(state, CellFinished(index, rows[index]))
        log += actions
    return state, log


@given(
    st.lists(st.none() | breaker_rows() | st.just(THROTTLED), max_size=30),
    st.integers(min_value=1, max_value=4),
    st.integers(min_value=0, max_value=8),
    st.integers(min_value=0, max_value=6),
    st.data(),
)
def test_paced_folding_trips_where_the_serial_breaker_trips_and_never_exceeds_the_bounds(
    rows: list[Row | None], workers: int, extra: int, limit: int, data: st.DataObject
) -> None:
    """Any completion order, throttles retried to exhaustion: no start beyond the cap, the serial
    trip point, overrun < window."""
    window = workers + extra
    serial, trip = Breaker(limit=limit), None
    for index, row in enumerate(rows):
        if row is not None and not serial.tripped:
            serial = step(serial, row)
            trip = index if serial.tripped else None

    state, log = _drive(
        rows, workers=workers, window=window, limit=limit, pick=lambda run: data.draw(st.sampled_from(run))
    )

    assert state.tripped_at == trip
    assert state.breaker == serial
    persisted = [action.index for action in log if isinstance(action, PersistRow)]
    assert persisted == sorted(persisted)
    assert persisted == [index for index in range(state.submitted) if rows[index] is not None]
    assert state.overrun <= window - 1
    if trip is None:
        assert state.submitted == len(rows)
    # Nothing of a folded cell stays in the pacing state (it would grow with the sweep).
    assert state.pacing is not None
    pacing = state.pacing
    left = (pacing.attempts, pacing.started, pacing.waiting, pacing.last, pacing.throttles)
    assert left == ({}, {}, (), {}, {})
