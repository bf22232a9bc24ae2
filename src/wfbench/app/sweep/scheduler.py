"""The packed scheduler: a bounded thread pool fed through a window, folded strictly in order.

:func:`run_packed` is the effect shell around :mod:`wfbench.domain.sweep.scheduling`: the domain fold
decides which cell to submit, which row to persist, when to stop and when to cancel; this module
performs those decisions on a :class:`~wfbench.domain.ports.CellExecutor` (here the thread pool,
:class:`~wfbench.app.sweep.thread_executor.ThreadCellExecutor`), which only runs cells and reports them
finished. The calling thread submits, waits and folds; ``on_row`` is therefore always called on
the calling thread, once per row, in submission order.

Pacing (:mod:`wfbench.domain.sweep.pacing`): a cell is handed to a worker only when one is free
(the pool never queues), the window contracts while systemic rows are in sight, and a cell
whose session was throttled (HTTP 429/529) runs again after a back-off under an AIMD limit on
concurrent cells. Every change of that limit is an explicit event: ``on_limit(change)`` is
called on the calling thread, and :attr:`SweepOutcome.limit_history` keeps them with their time.

Seams (what callers hook into; each is optional except ``run_cell`` and ``on_row``):

* ``run_cell(cell, token) -> Row`` runs on a worker thread; it must pass ``token`` on.
* ``on_row(row)``: the calling thread, once per row, in fold (submission) order; persist here.
* ``on_start(cell)``: the worker thread, when a cell really starts (again for each retry);
  live progress hooks here.
* ``may_start() -> bool``: the worker thread, just before ``on_start``; ``False`` and the cell
  never starts (no row; ``--max-cost`` stops a sweep this way).
* ``on_limit(LimitEvent)``: the calling thread, for each change of the concurrency limit.
* ``cancel``: an event the caller sets (SIGINT/SIGTERM); never set here.
* The result, :class:`SweepOutcome`: rows, trip, cancellation, overrun, cells not run, the
  limit's history and the retries.

The decisions themselves are the pure fold's (``start_fold``/``fold`` over ``CellFinished`` and
``CancelRequested`` events, returning ``SubmitCell``/``PersistRow``/``LimitChanged``/
``CancelRunning``/``SweepDone`` actions), performed here on any ``CellExecutor``;
:mod:`wfbench.app.sweep.executor_sweep` performs the same paced fold for a cluster executor.

Rules (``DESIGN.md`` item 4, ``docs/performance.md``):

* A cell that raises becomes an ``infra-error`` row (``cancelled`` if its cancel token was set
  by then): its siblings' rows are kept and the breaker sees the failure.
* A cell whose ``may_start()`` is false when a worker picks it up never starts (e.g. once the
  sweep's ``--max-cost`` budget is spent): like a cancelled one, it has no row.
* A cell that never started has **no row**. Rows exist only for sessions that ran, so a
  cancelled sweep does not charge its health with cells it never tried, and ``--resume`` runs
  exactly the missing cells (and those whose row a cancellation made: :mod:`wfbench.domain.sweep.resume`).
* On a breaker trip, submission stops and the cells' cancel token is set; rows of cells that
  were already running are still persisted (the *overrun*, at most ``window - 1`` rows:
  :data:`~wfbench.domain.sweep.scheduling.OVERRUN_BOUND`).
* On cancellation (the ``cancel`` event set, e.g. by the caller's SIGINT/SIGTERM handler),
  submission stops, queued cells never start, running cells see the token, and their rows are
  persisted before :func:`run_packed` returns. The caller's ``cancel`` event is never set by this
  module, so ``SweepOutcome.cancelled`` means "cancelled from outside", never "tripped".
* Any exception on the calling thread (``on_row`` failing, a KeyboardInterrupt when the caller
  installed no signal handler) sets the cells' token, drops queued cells, waits for the running
  ones and propagates; rows persisted until then stay persisted, later ones are not.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Iterable

import attrs

from wfbench.app.sweep.thread_executor import RunCell, ThreadCellExecutor
from wfbench.domain.ports import CancelToken, CellExecutor
from wfbench.domain.results.rows import Row
from wfbench.domain.sweep.pacing import LimitChanged, Pacing, RetryPolicy
from wfbench.domain.sweep.scheduling import (
    DEFAULT_OUTAGE_STREAK,
    Action,
    Breaker,
    CancelRequested,
    CancelRunning,
    Cell,
    CellFinished,
    Event,
    FoldState,
    PersistRow,
    SubmitCell,
    SweepDone,
    fold,
    packed_window,
    start_fold,
)

#: How often the waiting thread looks at the cancel event when no cell finishes.
_POLL_S = 0.05

__all__ = ["FoldShell", "LimitEvent", "RunCell", "SweepOutcome", "run_packed"]


@attrs.frozen
class LimitEvent:
    """One change of the concurrency limit, ``at`` seconds after the sweep started."""

    at: float
    change: LimitChanged
    cell: Cell


@attrs.frozen
class SweepOutcome:
    """What a packed sweep did: its rows in fold order, and why it ended.

    ``overrun`` counts rows folded after the tripping row; ``not_run`` counts cells that never
    started (no row); ``tripped_at`` is the submission index of the row that tripped the breaker;
    ``limit_history`` every change of the concurrency limit; ``retries`` the throttled attempts
    that ran again. ``rows`` is empty when the sweep was run with ``keep_rows=False`` (a long
    sweep persists its rows and holds none of them: memory stays flat in the number of cells).
    """

    rows: tuple[Row, ...]
    tripped: bool
    cancelled: bool
    overrun: int
    not_run: int
    tripped_at: int | None
    breaker: Breaker
    limit_history: tuple[LimitEvent, ...] = ()
    retries: int = 0


def run_packed(
    cells: Iterable[Cell],
    *,
    run_cell: RunCell,
    on_row: Callable[[Row], None],
    workers: int,
    window: int | None = None,
    outage_streak: int = DEFAULT_OUTAGE_STREAK,
    cancel: CancelToken | None = None,
    on_start: Callable[[Cell], None] | None = None,
    may_start: Callable[[], bool] | None = None,
    on_limit: Callable[[LimitEvent], None] | None = None,
    retry: RetryPolicy | None = None,
    keep_rows: bool = True,
) -> SweepOutcome:
    """Run ``cells`` on ``workers`` threads, at most ``window`` started-but-unfolded at a time.

    ``run_cell(cell, token)`` runs one cell and returns its row; it must pass ``token`` to every
    process it starts and return soon after the token is set. ``on_row(row)`` persists a row; it
    is called on the calling thread, exactly once per row, in the order of ``cells``. ``on_start``
    (optional) is called on the worker thread when a cell really starts (again for a retry);
    ``may_start`` (optional) is asked first, and a cell it refuses never starts (no row; a
    refused retry is folded with its last throttled row). ``on_limit`` (optional) is called on the
    calling thread when the concurrency limit changes. ``retry`` is how throttled cells run
    again (default :class:`RetryPolicy`: 3 retries, 30 s back-off doubling to 600 s).
    ``keep_rows=False`` leaves the outcome's ``rows`` empty (they are persisted; nothing keeps
    them). Each cell
    runs in a copy of the calling thread's context (``contextvars``), so ambient cancellation
    scopes and bound log context reach it.

    Raises:
        ValueError: ``workers < 1``, ``window < workers`` or ``outage_streak < 0``, before any cell
            runs.
        BaseException: whatever ``on_row`` raised, or a KeyboardInterrupt: running cells are
            told to stop and are waited for, and no further row is persisted.
    """
    cell_list = tuple(cells)
    size = packed_window(workers, window)
    breaker = Breaker(limit=outage_streak)
    pacing = Pacing.start(workers, outage_limit=outage_streak, retry=retry)
    state, actions = start_fold(len(cell_list), window=size, breaker=breaker, pacing=pacing)
    outer: CancelToken = cancel if cancel is not None else threading.Event()
    executor = ThreadCellExecutor(
        workers, run_cell=run_cell, cancel=outer, on_start=on_start, may_start=may_start
    )
    shell = FoldShell(
        cells=cell_list, on_row=on_row, executor=executor, on_limit=on_limit, keep_rows=keep_rows
    )
    try:
        while shell.perform(actions):
            state, actions = fold(state, shell.next_event(state, outer))
    except BaseException:
        executor.cancel(0.0)
        executor.close()
        raise
    executor.close()
    return shell.outcome(state, cancelled=outer.is_set())


@attrs.define
class FoldShell:
    """Performs the fold's actions on a :class:`~wfbench.domain.ports.CellExecutor` and turns what it
    reports into fold events, one at a time."""

    cells: tuple[Cell, ...]
    on_row: Callable[[Row], None]
    executor: CellExecutor
    on_limit: Callable[[LimitEvent], None] | None = None
    #: Seconds running cells get to stop cooperatively when the fold cancels them.
    grace_s: float = 0.0
    #: False: rows are persisted and counted, never held (the outcome's ``rows`` stays empty).
    keep_rows: bool = True
    persisted: int = 0
    pending: collections.deque[CellFinished] = attrs.field(factory=collections.deque)
    rows: list[Row] = attrs.field(factory=list)
    limits: list[LimitEvent] = attrs.field(factory=list)
    retries: int = 0
    began: float = attrs.field(factory=time.monotonic)

    def perform(self, actions: tuple[Action, ...]) -> bool:
        """Perform ``actions`` in order; False once the sweep is done."""
        for action in actions:
            if isinstance(action, SubmitCell):
                self.retries += action.attempt > 0
                cell = self.cells[action.index]
                if action.delay_s > 0:  # paced: only an executor that can delay gets a delay
                    self.executor.submit(action.index, cell, action.delay_s)
                else:
                    self.executor.submit(action.index, cell)
            elif isinstance(action, LimitChanged):
                event = LimitEvent(time.monotonic() - self.began, action, self.cells[action.index])
                self.limits.append(event)
                if self.on_limit is not None:
                    self.on_limit(event)
            elif isinstance(action, PersistRow):
                self.on_row(action.row)
                self.persisted += 1
                if self.keep_rows:
                    self.rows.append(action.row)
            elif isinstance(action, CancelRunning):
                self.executor.cancel(self.grace_s)
            elif isinstance(action, SweepDone):
                return False
        return True

    def next_event(self, state: FoldState, outer: CancelToken) -> Event:
        """The next finished cell; a cancellation seen first becomes a CancelRequested event."""
        while not (outer.is_set() and state.stopped is None):
            if self.pending:
                return self.pending.popleft()
            self.pending.extend(self.executor.wait(_POLL_S))
        return CancelRequested()

    def outcome(self, state: FoldState, *, cancelled: bool) -> SweepOutcome:
        """What the sweep did, once the fold has stopped."""
        return SweepOutcome(
            rows=tuple(self.rows),
            tripped=state.tripped_at is not None,
            cancelled=cancelled,
            overrun=state.overrun,
            not_run=state.total - self.persisted,
            tripped_at=state.tripped_at,
            breaker=state.breaker,
            limit_history=tuple(self.limits),
            retries=self.retries,
        )
