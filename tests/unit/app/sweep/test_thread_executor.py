"""The thread pool as a CellExecutor (app/sweep/thread_executor.py): the port's contract on real threads."""

from __future__ import annotations

import threading
import time

import pytest

from wfbench.app.sweep.thread_executor import ThreadCellExecutor
from wfbench.domain.ports import CancelToken
from wfbench.domain.results.rows import ErrorKind, Row
from wfbench.domain.sweep.scheduling import Cell, CellFinished


def _row(cell: Cell) -> Row:
    return Row(task=cell.task, arm=cell.arm, run=cell.run, ok=True, resolved=True)


def _cells(n: int) -> list[Cell]:
    return [Cell("t", "a", run) for run in range(n)]


def _drain(executor: ThreadCellExecutor, count: int, timeout: float = 10.0) -> list[CellFinished]:
    finished: list[CellFinished] = []
    deadline = time.monotonic() + timeout
    while len(finished) < count:
        assert time.monotonic() < deadline, f"only {len(finished)} of {count} cells were reported"
        finished.extend(executor.wait(0.05))
    return finished


def test_every_submitted_cell_is_reported_once_with_its_row() -> None:
    executor = ThreadCellExecutor(3, run_cell=lambda cell, _token: _row(cell), cancel=threading.Event())
    assert executor.slots == 3
    for index, cell in enumerate(_cells(7)):
        executor.submit(index, cell)
    finished = _drain(executor, 7)
    executor.close()
    assert sorted(item.index for item in finished) == list(range(7))
    assert all(item.row is not None and item.row.cell == _cells(7)[item.index].key for item in finished)
    assert executor.wait(0.0) == ()


def test_no_more_cells_run_at_once_than_the_pool_has_threads() -> None:
    lock = threading.Lock()
    running = [0, 0]  # now, most

    def run(cell: Cell, _token: CancelToken) -> Row:
        with lock:
            running[0] += 1
            running[1] = max(running[1], running[0])
        time.sleep(0.05)
        with lock:
            running[0] -= 1
        return _row(cell)

    executor = ThreadCellExecutor(2, run_cell=run, cancel=threading.Event())
    for index, cell in enumerate(_cells(6)):
        executor.submit(index, cell)
    _drain(executor, 6)
    executor.close()
    assert running[1] == 2


def test_a_delayed_cell_starts_no_sooner_than_its_delay() -> None:
    started: list[float] = []
    executor = ThreadCellExecutor(
        1,
        run_cell=lambda cell, _token: _row(cell),
        cancel=threading.Event(),
        on_start=lambda _cell: started.append(time.monotonic()),
    )
    began = time.monotonic()
    executor.submit(0, _cells(1)[0], 0.3)
    _drain(executor, 1)
    executor.close()
    assert started[0] - began >= 0.3


def test_cancel_sets_every_running_cells_token_and_queued_cells_report_no_row() -> None:
    entered = threading.Event()

    def run(cell: Cell, token: CancelToken) -> Row:
        entered.set()
        assert token.wait(10.0), "the token was never set"
        return Row(task=cell.task, arm=cell.arm, run=cell.run, ok=False, error_kind=ErrorKind.CANCELLED)

    executor = ThreadCellExecutor(1, run_cell=run, cancel=threading.Event())
    for index, cell in enumerate(_cells(3)):
        executor.submit(index, cell)
    assert entered.wait(5.0)
    executor.cancel(30.0)
    finished = {item.index: item.row for item in _drain(executor, 3)}
    executor.close()
    running = finished.pop(0)
    assert running is not None
    assert running.error_kind is ErrorKind.CANCELLED
    assert finished == {1: None, 2: None}  # never started: no row


def test_the_callers_cancel_event_reaches_the_cells_too() -> None:
    outer = threading.Event()
    outer.set()
    ran: list[Cell] = []
    executor = ThreadCellExecutor(2, run_cell=lambda cell, _t: ran.append(cell) or _row(cell), cancel=outer)
    executor.submit(0, _cells(1)[0])
    assert [item.row for item in _drain(executor, 1)] == [None]
    executor.close()
    assert ran == []


def test_a_cell_that_raises_is_an_infra_error_row_and_a_refused_start_has_none() -> None:
    def run(cell: Cell, _token: CancelToken) -> Row:
        raise RuntimeError("boom")

    executor = ThreadCellExecutor(1, run_cell=run, cancel=threading.Event())
    executor.submit(0, _cells(1)[0])
    (finished,) = _drain(executor, 1)
    executor.close()
    assert finished.row is not None
    assert finished.row.error_kind is ErrorKind.INFRA_ERROR
    assert "RuntimeError: boom" in str(finished.row.extra.get("error_detail"))
    refusing = ThreadCellExecutor(
        1, run_cell=lambda cell, _t: _row(cell), cancel=threading.Event(), may_start=lambda: False
    )
    refusing.submit(0, _cells(1)[0])
    assert [item.row for item in _drain(refusing, 1)] == [None]
    refusing.close()


def test_zero_workers_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        ThreadCellExecutor(0, run_cell=lambda cell, _t: _row(cell), cancel=threading.Event())


def test_a_sweep_directory_that_refuses_writes_stops_the_sweep_instead_of_making_a_row() -> None:
    from wfbench.domain.errors import SweepStorageError

    told_to_stop, other_started = threading.Event(), threading.Event()

    def run(cell: Cell, token: CancelToken) -> Row:
        if cell.run == 0:
            other_started.wait(5.0)
            raise SweepStorageError("No space left on device", path="out/cells/t/a/0/transcript.jsonl")
        other_started.set()
        token.wait(5.0)  # the other cell runs until it is told to stop
        if token.is_set():
            told_to_stop.set()
        return _row(cell)

    executor = ThreadCellExecutor(2, run_cell=run, cancel=threading.Event())
    for index, cell in enumerate(_cells(2)):
        executor.submit(index, cell)
    with pytest.raises(SweepStorageError, match="No space left on device"):
        _drain(executor, 2)
    executor.close()
    assert told_to_stop.is_set()
