"""The real packed scheduler (threads, window, in-order fold) driven by fake cells that sleep in ms."""

from __future__ import annotations

import _thread
import contextvars
import threading
import time
from collections.abc import Callable

import pytest

from wfbench.app.sweep.scheduler import SweepOutcome, run_packed
from wfbench.domain.ports import CancelToken
from wfbench.domain.results.rows import ErrorKind, Row
from wfbench.domain.sweep.scheduling import Cell, canonical_order

RunCell = Callable[[Cell, CancelToken], Row]


def _healthy(cell: Cell) -> Row:
    return Row(task=cell.task, arm=cell.arm, run=cell.run, ok=True, resolved=True)


def _outage(cell: Cell) -> Row:
    return Row(
        task=cell.task,
        arm=cell.arm,
        run=cell.run,
        error_kind=ErrorKind.SESSION_ERROR,
        review_evidence_valid=False,
    )


class Recorder:
    """Records which cells started, in which order cells finished, and what on_row received."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.started: list[tuple[str, str, int]] = []
        self.finished: list[tuple[str, str, int]] = []
        self.persisted: list[Row] = []
        self.persist_threads: set[int] = set()

    def on_start(self, cell: Cell) -> None:
        with self.lock:
            self.started.append(cell.key)

    def on_row(self, row: Row) -> None:
        self.persist_threads.add(threading.get_ident())
        self.persisted.append(row)

    def finish(self, cell: Cell) -> None:
        with self.lock:
            self.finished.append(cell.key)


def _sweep(cells: tuple[Cell, ...], run_cell: RunCell, recorder: Recorder, **options: object) -> SweepOutcome:
    return run_packed(
        cells,
        run_cell=run_cell,
        on_row=recorder.on_row,
        on_start=recorder.on_start,
        **options,  # type: ignore[arg-type]
    )


def test_rows_come_back_in_canonical_order_whatever_order_cells_finish_in() -> None:
    """Later cells finish first, yet on_row sees the canonical order, on the calling thread."""
    cells = canonical_order(["t1", "t2"], ["workflow", "baseline", "candidate"], 2)
    recorder = Recorder()

    def run_cell(cell: Cell, token: CancelToken) -> Row:
        index = cells.index(cell)
        time.sleep(0.005 * (len(cells) - index) + (0.05 if index % 3 == 0 else 0))
        recorder.finish(cell)
        return _healthy(cell)

    outcome = _sweep(cells, run_cell, recorder, workers=3)

    assert recorder.finished != [cell.key for cell in cells]
    assert [row.cell for row in recorder.persisted] == [cell.key for cell in cells]
    assert outcome.rows == tuple(recorder.persisted)
    assert recorder.persist_threads == {threading.get_ident()}
    assert (outcome.tripped, outcome.cancelled, outcome.overrun, outcome.not_run) == (False, False, 0, 0)


def test_cells_of_a_window_run_at_the_same_time() -> None:
    """Three workers really run three cells at once (a three-party barrier would break otherwise)."""
    cells = canonical_order(["t"], ["a", "b", "c"], 1)
    barrier = threading.Barrier(3, timeout=10)

    def run_cell(cell: Cell, token: CancelToken) -> Row:
        barrier.wait()
        return _healthy(cell)

    outcome = _sweep(cells, run_cell, Recorder(), workers=3)

    assert [row.error_kind for row in outcome.rows] == [None, None, None]


def test_five_systemic_failures_in_a_row_trip_the_breaker_and_every_started_cell_has_its_row() -> None:
    """The trip stops submission; every cell that started is persisted; overrun stays in the window."""
    cells = canonical_order([f"t{i}" for i in range(6)], ["a", "b", "c"], 2)
    recorder = Recorder()
    saw_token: list[bool] = []

    def run_cell(cell: Cell, token: CancelToken) -> Row:
        index = cells.index(cell)
        if index >= 4:
            saw_token.append(token.wait(0.5))
        else:
            time.sleep(0.01 * (index + 1))
        return _outage(cell)

    outcome = _sweep(cells, run_cell, recorder, workers=3)

    persisted = [row.cell for row in recorder.persisted]
    assert outcome.tripped
    assert not outcome.cancelled
    assert outcome.tripped_at == 4
    assert outcome.breaker.streak == 5
    assert sorted(persisted) == sorted(recorder.started)
    assert persisted == [cell.key for cell in cells[: len(persisted)]]
    assert 5 <= len(persisted) <= 5 + 6 - 1
    assert outcome.overrun == len(persisted) - 5
    assert outcome.not_run == len(cells) - len(persisted)
    assert any(saw_token), "cells running at the trip must see their cancel token set"


def test_a_raising_cell_becomes_an_infra_error_row_and_its_siblings_are_kept() -> None:
    """A KeyError in one cell is its row; the other rows are all persisted, in order."""
    cells = canonical_order(["t1", "t2"], ["a", "b"], 1)

    def run_cell(cell: Cell, token: CancelToken) -> Row:
        time.sleep(0.01)
        if cell.key == ("t1", "b", 0):
            raise KeyError("boom")
        return _healthy(cell)

    outcome = _sweep(cells, run_cell, Recorder(), workers=2)

    assert [row.cell for row in outcome.rows] == [cell.key for cell in cells]
    assert [row.error_kind for row in outcome.rows] == [None, ErrorKind.INFRA_ERROR, None, None]
    assert outcome.rows[1].extra["error_detail"] == "KeyError: 'boom'"
    assert outcome.breaker.streak == 0


def test_a_cell_that_raises_after_being_cancelled_is_a_cancelled_row() -> None:
    """A cell killed by the cancellation is not an infrastructure failure."""
    cancel = threading.Event()
    cells = canonical_order(["t"], ["a"], 1)

    def run_cell(cell: Cell, token: CancelToken) -> Row:
        cancel.set()
        token.wait(30)
        raise RuntimeError("setup was cancelled")

    outcome = _sweep(cells, run_cell, Recorder(), workers=1, cancel=cancel)

    assert [row.error_kind for row in outcome.rows] == [ErrorKind.CANCELLED]
    assert outcome.rows[0].extra["error_detail"] == "RuntimeError: setup was cancelled"


def test_a_cell_that_returns_another_cells_row_is_an_infra_error() -> None:
    """Rows are checked against their cell, so one task is never scored as another."""
    cells = canonical_order(["t1", "t2"], ["a"], 1)

    outcome = _sweep(cells, lambda cell, token: _healthy(cells[0]), Recorder(), workers=1)

    assert [row.error_kind for row in outcome.rows] == [None, ErrorKind.INFRA_ERROR]
    assert "run_cell returned ('t1', 'a', 0) for cell ('t2', 'a', 0)" in outcome.rows[1].extra["error_detail"]


def test_a_cancellation_mid_run_returns_promptly_with_the_running_rows_and_no_other() -> None:
    """Running cells see the token and return; queued cells never start; cancelled is True."""
    cells = canonical_order([f"t{i}" for i in range(10)], ["a", "b"], 1)
    cancel = threading.Event()
    recorder = Recorder()

    def run_cell(cell: Cell, token: CancelToken) -> Row:
        if cells.index(cell) == 2:
            cancel.set()
        if token.wait(30):
            return Row(task=cell.task, arm=cell.arm, run=cell.run, error_kind=ErrorKind.CANCELLED)
        return _healthy(cell)

    began = time.monotonic()
    outcome = _sweep(cells, run_cell, recorder, workers=3, cancel=cancel)
    elapsed = time.monotonic() - began

    assert elapsed < 20, "a cancelled sweep must not wait for its cells' 30 s timeouts"
    assert outcome.cancelled
    assert not outcome.tripped
    assert len(recorder.started) == 3
    assert [row.cell for row in outcome.rows] == [cell.key for cell in cells[:3]]
    assert {row.error_kind for row in outcome.rows} == {ErrorKind.CANCELLED}
    assert outcome.not_run == len(cells) - 3


def test_a_cancellation_before_the_sweep_runs_no_cell() -> None:
    """An already-set event means nothing starts and no row exists."""
    cancel = threading.Event()
    cancel.set()
    recorder = Recorder()
    cells = canonical_order(["t"], ["a", "b"], 3)

    outcome = _sweep(cells, lambda cell, token: _healthy(cell), recorder, workers=2, cancel=cancel)

    assert (outcome.rows, outcome.cancelled, outcome.not_run) == ((), True, 6)
    assert recorder.started == []


def test_a_keyboard_interrupt_stops_the_running_cells_and_propagates(sigint_handled: None) -> None:
    """Without a signal handler, Ctrl-C halts every running cell and is handed back to the caller."""
    cells = canonical_order(["t"], ["a"], 8)
    recorder = Recorder()
    stopped: list[bool] = []

    def run_cell(cell: Cell, token: CancelToken) -> Row:
        if cell.run == 0:
            time.sleep(0.5)  # let the calling thread finish submitting and reach its wait
            _thread.interrupt_main()
        stopped.append(token.wait(30))
        return _healthy(cell)

    began = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        _sweep(cells, run_cell, recorder, workers=2)

    assert time.monotonic() - began < 20, "the running cells must be stopped, not waited out"
    assert stopped == [True, True]
    assert len(recorder.started) == 2


@pytest.mark.parametrize("window", [3, 6, 12])
@pytest.mark.parametrize("fail_from", [0, 4, 12])
def test_the_overrun_stays_below_the_window(window: int, fail_from: int) -> None:
    """Five systemic rows from any position trip the breaker with fewer than `window` overrun rows."""
    cells = canonical_order([f"t{i}" for i in range(8)], ["a", "b", "c"], 1)

    def run_cell(cell: Cell, token: CancelToken) -> Row:
        index = cells.index(cell)
        time.sleep(0.002 * (index % 4))
        return _outage(cell) if fail_from <= index < fail_from + 5 else _healthy(cell)

    outcome = _sweep(cells, run_cell, Recorder(), workers=3, window=window)

    assert outcome.tripped_at == fail_from + 4
    assert outcome.overrun <= window - 1
    assert len(outcome.rows) == fail_from + 5 + outcome.overrun


def test_a_disabled_breaker_runs_every_cell_of_an_outage() -> None:
    """outage_streak=0: systemic rows never stop the sweep."""
    cells = canonical_order(["t"], ["a"], 9)

    outcome = _sweep(cells, lambda cell, token: _outage(cell), Recorder(), workers=3, outage_streak=0)

    assert (len(outcome.rows), outcome.tripped, outcome.breaker.streak) == (9, False, 9)


def test_cells_run_in_a_copy_of_the_callers_context() -> None:
    """Context variables bound by the caller (cancellation scopes, log context) reach every cell."""
    scope: contextvars.ContextVar[str] = contextvars.ContextVar("scope")
    scope.set("sweep-1")
    cells = canonical_order(["t"], ["a"], 4)
    seen: list[str] = []

    def run_cell(cell: Cell, token: CancelToken) -> Row:
        seen.append(scope.get("unset"))
        return _healthy(cell)

    _sweep(cells, run_cell, Recorder(), workers=2)

    assert seen == ["sweep-1"] * 4


def test_a_failing_persist_stops_the_sweep_and_propagates() -> None:
    """A store that cannot write is a harness failure: it is raised, and nothing more is persisted."""
    cells = canonical_order(["t"], ["a"], 6)
    calls: list[Row] = []

    def on_row(row: Row) -> None:
        calls.append(row)
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        run_packed(cells, run_cell=lambda cell, token: _healthy(cell), on_row=on_row, workers=2)

    assert len(calls) == 1


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"workers": 0}, "workers must be at least 1"),
        ({"workers": 3, "window": 2}, "window must be at least workers"),
        ({"workers": 1, "outage_streak": -1}, "limit must be at least 0"),
    ],
)
def test_bad_options_are_refused_before_any_cell_runs(options: dict[str, int], message: str) -> None:
    """Validation happens up front."""
    recorder = Recorder()

    with pytest.raises(ValueError, match=message):
        _sweep(canonical_order(["t"], ["a"], 2), lambda cell, token: _healthy(cell), recorder, **options)

    assert recorder.started == []


# --- pacing: lazy starts and throttle retries on real threads ------------------------------------


def test_no_more_cells_run_at_once_than_the_workers_and_none_waits_in_a_pool_queue() -> None:
    """Lazy starts: a cell's on_start and its run happen when a worker is free, never queued."""
    cells = canonical_order(["t"], ["a"], 12)
    running, peak, lock = [0], [0], threading.Lock()

    def run_cell(cell: Cell, token: CancelToken) -> Row:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.01)
        with lock:
            running[0] -= 1
        return _healthy(cell)

    outcome = _sweep(cells, run_cell, Recorder(), workers=3, window=12)

    assert len(outcome.rows) == 12
    assert peak[0] <= 3


def test_a_throttled_cell_runs_again_after_its_back_off_and_the_limit_history_is_reported() -> None:
    """529 on each cell's first attempt: one cut, every cell retried once, rows folded once, in order."""
    from wfbench.domain.sweep.pacing import RetryPolicy

    cells = canonical_order(["t1", "t2"], ["a", "b"], 1)
    attempts: dict[tuple[str, str, int], int] = {}
    lock = threading.Lock()
    events = []

    def run_cell(cell: Cell, token: CancelToken) -> Row:
        with lock:
            attempts[cell.key] = attempts.get(cell.key, 0) + 1
            first = attempts[cell.key] == 1
        time.sleep(0.01)
        if first:
            return Row(
                task=cell.task,
                arm=cell.arm,
                run=cell.run,
                error_kind=ErrorKind.SESSION_ERROR,
                extra={"error_detail": "result is_error (api_error_status 529)", "session_ids": ["s"]},
            )
        return _healthy(cell)

    recorder = Recorder()
    began = time.monotonic()
    retry = RetryPolicy(retries=2, base_delay_s=0.05)
    outcome = _sweep(cells, run_cell, recorder, workers=4, retry=retry, on_limit=events.append)

    assert [row.cell for row in recorder.persisted] == [cell.key for cell in cells]
    assert all(row.resolved for row in recorder.persisted)
    assert all(len(row.extra["throttled_attempts"]) == 1 for row in recorder.persisted)
    assert attempts == dict.fromkeys((cell.key for cell in cells), 2)
    assert outcome.retries == 4
    assert outcome.limit_history == tuple(events)
    first = events[0]
    assert (first.change.old, first.change.new, first.change.reason) == (4, 2, "throttled")
    assert first.cell in cells
    assert all(0 <= event.at <= time.monotonic() - began for event in events)
    assert not outcome.tripped


def test_a_cancellation_during_a_back_off_folds_the_throttled_attempt_and_returns_promptly() -> None:
    """The retry's wait sees the token: no second attempt runs, the throttled row is persisted."""
    from wfbench.domain.sweep.pacing import RetryPolicy

    cells = canonical_order(["t"], ["a"], 1)
    cancel = threading.Event()
    calls = []

    def run_cell(cell: Cell, token: CancelToken) -> Row:
        calls.append(cell.key)
        threading.Timer(0.2, cancel.set).start()
        return Row(
            task=cell.task,
            arm=cell.arm,
            run=cell.run,
            error_kind=ErrorKind.SESSION_ERROR,
            extra={"error_detail": "result is_error (api_error_status 429)"},
        )

    began = time.monotonic()
    retry = RetryPolicy(base_delay_s=60)
    outcome = _sweep(cells, run_cell, Recorder(), workers=1, cancel=cancel, retry=retry)

    assert time.monotonic() - began < 10
    assert calls == [cells[0].key]
    (row,) = outcome.rows
    assert row.error_kind is ErrorKind.SESSION_ERROR
    assert row.extra["throttled_attempts"][0]["api_error_status"] == 429
    assert outcome.cancelled


def test_a_sweep_that_keeps_no_rows_persists_every_row_and_holds_none() -> None:
    """``keep_rows=False`` (how ``wfbench run`` folds): every row reaches on_row in order, the outcome
    holds none, and what never ran is still counted from what was persisted."""
    cells = canonical_order(["t1", "t2"], ["workflow", "baseline"], 2)
    recorder = Recorder()
    cancel = threading.Event()

    def run_cell(cell: Cell, token: CancelToken) -> Row:
        if len(recorder.persisted) >= 3:
            cancel.set()
        return _healthy(cell)

    outcome = _sweep(cells, run_cell, recorder, workers=1, window=1, cancel=cancel, keep_rows=False)

    assert outcome.rows == ()
    assert [row.cell for row in recorder.persisted] == [cell.key for cell in cells][: len(recorder.persisted)]
    assert 3 <= len(recorder.persisted) < len(cells)
    assert outcome.not_run == len(cells) - len(recorder.persisted)
