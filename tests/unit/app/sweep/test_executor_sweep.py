"""The fold over a CellExecutor, against a fake executor: order, breaker, cancellation, node-loss rows."""

from __future__ import annotations

import random
import threading

import pytest

from wfbench.app.sweep.executor_sweep import ExecutorPacing, run_on_executor
from wfbench.app.sweep.scheduler import LimitEvent
from wfbench.domain.results.rows import ErrorKind, Row
from wfbench.domain.sweep.nodes import node_loss_row
from wfbench.domain.sweep.pacing import RetryPolicy
from wfbench.domain.sweep.scheduling import Cell, CellFinished, canonical_order


class FakeExecutor:
    """Runs nothing: submitted cells finish in a seeded random order, with the row ``outcome`` gives."""

    def __init__(
        self, slots: int, outcome, *, seed: int = 0, cancel_on_wait: threading.Event | None = None
    ) -> None:
        self.slots = slots
        self._outcome = outcome
        self._random = random.Random(seed)
        self.running: dict[int, Cell] = {}
        self.submitted: list[int] = []
        self.delays: list[tuple[int, float]] = []
        self.most_running = 0
        self.cancels: list[float] = []
        self.closed = False
        self.cancelled = False
        self._done: list[CellFinished] = []
        self._cancel_on_wait = cancel_on_wait

    def submit(self, index: int, cell: Cell, delay_s: float = 0.0) -> None:
        assert not self.closed
        self.submitted.append(index)
        self.delays.append((index, delay_s))
        if self.cancelled:
            self._done.append(CellFinished(index, None))
            return
        self.running[index] = cell
        self.most_running = max(self.most_running, len(self.running))

    def wait(self, timeout: float) -> tuple[CellFinished, ...]:
        if self._cancel_on_wait is not None and len(self.submitted) >= 3:
            self._cancel_on_wait.set()
        if self._done:
            done, self._done = tuple(self._done), []
            return done
        if not self.running:
            return ()
        index = self._random.choice(sorted(self.running))  # finish in a random order
        cell = self.running.pop(index)
        return (CellFinished(index, self._outcome(cell, self.cancelled)),)

    def cancel(self, grace_s: float) -> None:
        self.cancels.append(grace_s)
        self.cancelled = True

    def close(self) -> None:
        self.closed = True


def _ok(cell: Cell, cancelled: bool) -> Row:
    kind = ErrorKind.CANCELLED if cancelled else None
    return Row(
        task=cell.task, arm=cell.arm, run=cell.run, ok=not cancelled, resolved=not cancelled, error_kind=kind
    )


CELLS = canonical_order(["t1", "t2", "t3"], ["a", "b"], 3)


@pytest.mark.parametrize("seed", range(5))
def test_rows_are_persisted_once_each_in_submission_order_whatever_order_cells_finish(seed: int) -> None:
    persisted: list[Row] = []
    executor = FakeExecutor(2, _ok, seed=seed)
    outcome = run_on_executor(CELLS, executor=executor, on_row=persisted.append, cancel=threading.Event())
    assert [row.cell for row in persisted] == [cell.key for cell in CELLS]
    assert outcome.rows == tuple(persisted)
    assert not outcome.tripped
    assert not outcome.cancelled
    assert outcome.not_run == 0
    assert executor.closed
    assert executor.cancels == []


def test_the_executor_never_runs_more_cells_at_once_than_it_has_slots() -> None:
    """Lazy start, as on one machine: a cell is handed out only when a slot is free."""
    executor = FakeExecutor(2, _ok, seed=4)
    run_on_executor(CELLS, executor=executor, on_row=lambda row: None, cancel=threading.Event())
    assert executor.most_running == 2
    assert sorted(executor.submitted) == list(range(len(CELLS)))


def _throttled_once(seen: set[tuple[str, str, int]]):
    def outcome(cell: Cell, cancelled: bool) -> Row:
        if cell.key in seen or cell.run != 0:
            return _ok(cell, cancelled)
        seen.add(cell.key)
        extra = {"api_error_status": 529, "error_detail": "overloaded"}
        return Row(
            task=cell.task, arm=cell.arm, run=cell.run, error_kind=ErrorKind.SESSION_ERROR, extra=extra
        )

    return outcome


def test_a_throttled_cell_runs_again_after_its_back_off_and_the_limit_is_cut() -> None:
    persisted: list[Row] = []
    limits: list[LimitEvent] = []
    executor = FakeExecutor(4, _throttled_once(set()), seed=2)
    pacing = ExecutorPacing(retry=RetryPolicy(retries=2, base_delay_s=5.0), on_limit=limits.append)
    outcome = run_on_executor(
        CELLS, executor=executor, on_row=persisted.append, cancel=threading.Event(), pacing=pacing
    )
    throttled = {cell.key for cell in CELLS if cell.run == 0}
    assert outcome.retries == len(throttled)
    assert {index for index, delay in executor.delays if delay == 5.0} == {
        i for i, cell in enumerate(CELLS) if cell.key in throttled
    }
    assert all(row.ok for row in persisted), "every retried cell is folded with its successful row"
    assert {row.cell for row in persisted if "throttled_attempts" in row.extra} == throttled
    assert limits[0].change.reason == "throttled"
    assert limits[0].change.new < limits[0].change.old
    assert [row.cell for row in persisted] == [cell.key for cell in CELLS]


def test_a_cell_still_throttled_after_its_retries_is_folded_as_the_session_error_it_is() -> None:
    def always(cell: Cell, cancelled: bool) -> Row:
        extra = {"api_error_status": 429}
        return Row(
            task=cell.task, arm=cell.arm, run=cell.run, error_kind=ErrorKind.SESSION_ERROR, extra=extra
        )

    persisted: list[Row] = []
    executor = FakeExecutor(2, always)
    pacing = ExecutorPacing(retry=RetryPolicy(retries=1, base_delay_s=0.0))
    outcome = run_on_executor(
        CELLS[:1], executor=executor, on_row=persisted.append, cancel=threading.Event(), pacing=pacing
    )
    assert executor.submitted == [0, 0]
    assert [row.error_kind for row in persisted] == [ErrorKind.SESSION_ERROR]
    assert len(persisted[0].extra["throttled_attempts"]) == 1
    assert outcome.retries == 1


def test_lost_node_rows_step_the_breaker_which_cancels_the_running_cells() -> None:
    def lost(cell: Cell, cancelled: bool) -> Row:
        if cancelled:
            return _ok(cell, True)
        return node_loss_row(cell, node="n1", detail="NodeDiedError", attempts=("n1",))

    persisted: list[Row] = []
    executor = FakeExecutor(2, lost, seed=3)
    outcome = run_on_executor(
        CELLS,
        executor=executor,
        on_row=persisted.append,
        cancel=threading.Event(),
        outage_streak=3,
        grace_s=7.0,
    )
    assert outcome.tripped
    assert outcome.tripped_at == 2
    assert executor.cancels == [7.0]
    assert [row.error_kind for row in persisted[:3]] == [ErrorKind.INFRA_ERROR] * 3
    assert len(persisted) < len(CELLS)
    assert outcome.overrun == len(persisted) - 3
    assert [row.cell for row in persisted] == [cell.key for cell in CELLS[: len(persisted)]]
    assert executor.closed


def test_a_cancelled_sweep_cancels_the_executor_and_keeps_every_row_it_reported() -> None:
    cancel = threading.Event()
    persisted: list[Row] = []
    executor = FakeExecutor(2, _ok, seed=1, cancel_on_wait=cancel)
    outcome = run_on_executor(CELLS, executor=executor, on_row=persisted.append, cancel=cancel, grace_s=5.0)
    assert outcome.cancelled
    assert not outcome.tripped
    assert executor.cancels == [5.0]
    assert outcome.not_run == len(CELLS) - len(persisted) > 0
    assert [row.cell for row in persisted] == [cell.key for cell in CELLS[: len(persisted)]]
    assert ErrorKind.CANCELLED in {row.error_kind for row in persisted}


def test_an_on_row_failure_cancels_and_closes_the_executor_and_propagates() -> None:
    executor = FakeExecutor(2, _ok)

    def broken(row: Row) -> None:
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        run_on_executor(CELLS, executor=executor, on_row=broken, cancel=threading.Event())
    assert executor.cancels == [0.0]
    assert executor.closed


def test_a_window_below_the_executors_slots_is_refused_before_any_cell() -> None:
    executor = FakeExecutor(4, _ok)
    with pytest.raises(ValueError, match="window"):
        run_on_executor(CELLS, executor=executor, on_row=lambda row: None, cancel=threading.Event(), window=2)
    assert executor.submitted == []


def test_the_thread_pool_is_one_implementation_of_the_port() -> None:
    """run_on_executor over ThreadCellExecutor: threads finish out of order, rows land in submission order."""
    import time

    from wfbench.app.sweep.thread_executor import ThreadCellExecutor

    def run(cell: Cell, _token) -> Row:
        time.sleep(0.01 * ((cell.run * 7 + len(cell.task)) % 4))  # uneven: finish out of order
        return _ok(cell, False)

    persisted: list[Row] = []
    executor = ThreadCellExecutor(3, run_cell=run, cancel=threading.Event())
    outcome = run_on_executor(CELLS, executor=executor, on_row=persisted.append, cancel=threading.Event())
    assert [row.cell for row in persisted] == [cell.key for cell in CELLS]
    assert outcome.not_run == 0
    assert not outcome.tripped
