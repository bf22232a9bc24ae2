"""This machine's threads as a :class:`~wfbench.domain.ports.CellExecutor`: the local implementation.

:class:`ThreadCellExecutor` is what ``wfbench run`` uses by default (``--workers N``): a bounded
thread pool that runs :func:`wfbench.app.cell.cell.run_cell` for each submitted cell, honouring the
fold's pacing delay, and reports every cell exactly once (``CellFinished``; ``row=None`` when it
never started). The cells' cancel token is set by the caller's ``cancel`` event or by
:meth:`ThreadCellExecutor.cancel`: threads stop cooperatively only (every process a cell starts
watches the token), so the grace period of the port does not apply here.

A cell that raises :class:`~wfbench.domain.errors.SweepStorageError` (the sweep directory refuses
writes) makes no row: the error is raised again on the caller's thread by the next :meth:`wait`,
so the sweep stops loudly instead of recording the harness's failure as the cell's.

The fold, the breaker and every row stay with the caller (:mod:`wfbench.app.sweep.scheduler`); the
Ray executor (:mod:`wfbench.adapters.executors.ray_executor`) is the other implementation of the port.
"""

from __future__ import annotations

import contextvars
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import attrs

from wfbench.domain.errors import SweepStorageError
from wfbench.domain.ports import CancelToken
from wfbench.domain.results.rows import Row
from wfbench.domain.sweep.scheduling import Cell, CellFinished, failed_cell_row

#: How often a delayed cell looks at its cancel token.
_POLL_S = 0.05

RunCell = Callable[[Cell, CancelToken], Row]


class _EitherToken:
    """A cancel token set when the caller's event or the scheduler's own halt event is set."""

    def __init__(self, outer: CancelToken, halt: threading.Event) -> None:
        self._outer = outer
        self._halt = halt

    def is_set(self) -> bool:
        return self._outer.is_set() or self._halt.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.is_set():
            remaining = _POLL_S if deadline is None else min(_POLL_S, deadline - time.monotonic())
            if remaining <= 0:
                return False
            self._halt.wait(remaining)
        return True


@attrs.frozen
class _CellJob:
    """Everything a worker thread needs to run one cell and report it."""

    index: int
    cell: Cell
    run_cell: RunCell
    token: _EitherToken
    report: queue.SimpleQueue[CellFinished]
    on_start: Callable[[Cell], None] | None
    may_start: Callable[[], bool] | None = None
    delay_s: float = 0.0
    #: Told a harness failure of the cell (it makes no row; :meth:`ThreadCellExecutor.wait` raises it).
    on_fatal: Callable[[SweepStorageError], None] | None = None


def _execute(job: _CellJob) -> None:
    """Run one cell on a worker thread; always report exactly one CellFinished."""
    row: Row | None = None
    try:
        if job.token.is_set() or (job.delay_s > 0 and job.token.wait(job.delay_s)):
            return
        if job.may_start is not None and not job.may_start():
            return
        if job.on_start is not None:
            job.on_start(job.cell)
        row = job.run_cell(job.cell, job.token)
        if not isinstance(row, Row) or row.cell != job.cell.key:
            got = row.cell if isinstance(row, Row) else type(row).__name__
            row = failed_cell_row(
                job.cell, f"run_cell returned {got!r} for cell {job.cell.key!r}", cancelled=False
            )
    except SweepStorageError as exc:  # the harness's failure, not the cell's: no row, the sweep stops
        if job.on_fatal is None:
            raise
        job.on_fatal(exc)
    except BaseException as exc:  # a worker must always report; the row carries the failure
        row = failed_cell_row(job.cell, f"{type(exc).__name__}: {exc}", cancelled=job.token.is_set())
    finally:
        job.report.put(CellFinished(job.index, row))


class ThreadCellExecutor:
    """Runs cells on ``workers`` threads of this process (see the module docstring).

    ``run_cell(cell, token)`` runs one cell; ``on_start`` is called on the worker thread when a
    cell really starts; ``may_start`` is asked first, and a cell it refuses never starts (no row).
    Each cell runs in a copy of the submitting thread's context (``contextvars``).
    """

    def __init__(
        self,
        workers: int,
        *,
        run_cell: RunCell,
        cancel: CancelToken,
        on_start: Callable[[Cell], None] | None = None,
        may_start: Callable[[], bool] | None = None,
    ) -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self._workers = workers
        self._run_cell = run_cell
        self._on_start = on_start
        self._may_start = may_start
        self._halt = threading.Event()
        self._fatal: list[SweepStorageError] = []
        self._token = _EitherToken(cancel, self._halt)
        self._reports: queue.SimpleQueue[CellFinished] = queue.SimpleQueue()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="wfbench-cell")

    @property
    def slots(self) -> int:
        """The pool's threads."""
        return self._workers

    def submit(self, index: int, cell: Cell, delay_s: float = 0.0) -> None:
        """Hand ``cell`` to a thread; it starts after ``delay_s`` s unless cancelled first."""
        job = _CellJob(
            index,
            cell,
            self._run_cell,
            self._token,
            self._reports,
            self._on_start,
            self._may_start,
            delay_s,
            on_fatal=self._stop,
        )
        self._pool.submit(contextvars.copy_context().run, _execute, job)

    def wait(self, timeout: float) -> tuple[CellFinished, ...]:
        """The cells finished since the last call, in the order they finished; waits up to ``timeout`` s.

        Raises:
            SweepStorageError: a cell found the sweep directory refusing writes (every cell was told
                to stop).
        """
        try:
            finished = [self._reports.get(timeout=timeout)]
        except queue.Empty:
            return ()
        while True:
            if self._fatal:
                raise self._fatal[0]
            try:
                finished.append(self._reports.get_nowait())
            except queue.Empty:
                return tuple(finished)

    def _stop(self, exc: SweepStorageError) -> None:
        """A cell's harness failure: stop every cell; the next :meth:`wait` raises ``exc``."""
        self._fatal.append(exc)
        self._halt.set()

    def cancel(self, grace_s: float) -> None:
        """Set every cell's token (threads stop cooperatively; ``grace_s`` does not apply)."""
        del grace_s
        self._halt.set()

    def close(self) -> None:
        """Drop cells not started yet, wait for the running ones (:meth:`cancel` first stops them)."""
        self._pool.shutdown(wait=True, cancel_futures=True)
