"""The fold over any :class:`~wfbench.domain.ports.CellExecutor`: cells run elsewhere, rows stay here.

:func:`run_on_executor` is the effect shell of :mod:`wfbench.domain.sweep.scheduling` for an
executor that runs cells outside this process (``--executor ray``, ``docs/distributed.md``): the
same pure fold decides what to submit, which row to persist, when the breaker trips and when to
cancel; this module hands cells to the executor and performs those decisions on the calling
thread. So the rules of the local packed scheduler hold unchanged:

* rows are persisted only here, by ``on_row``, exactly once each, **in submission order**, and
  the breaker steps over them in that order, whatever order the cells finish in;
* a cell the executor reports with no row never started (no row, resumed later);
* a breaker trip stops submission and cancels the running cells (their rows are the overrun);
  the caller's ``cancel`` does the same, and the sweep ends ``cancelled``;
* the executor is always closed (what still runs is cancelled) however the sweep ends.

Pacing is the local scheduler's (:mod:`wfbench.domain.sweep.pacing`), decided here on the driver,
not by a shared actor on the cluster: a cell is handed to the executor only when one of its slots
is free (lazy start), the window contracts while systemic rows are in sight, and a throttled cell
(HTTP 429/529) runs again after the same back-off under the same AIMD limit. The driver already
sees every row first and is the only place that submits, so this is the same code deciding on
the same evidence: no second copy of the pacing state, no extra round trip per cell, nothing to
lose when a node dies. A cell is admitted when the executor dispatches it (``may_start``:
``--max-cost``), so a budget reached meanwhile holds back every later cell.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import attrs

from wfbench.app.sweep.scheduler import FoldShell, LimitEvent, SweepOutcome
from wfbench.domain.ports import CancelToken, CellExecutor
from wfbench.domain.results.rows import Row
from wfbench.domain.sweep.pacing import Pacing, RetryPolicy
from wfbench.domain.sweep.scheduling import (
    DEFAULT_OUTAGE_STREAK,
    Action,
    Breaker,
    CancelRequested,
    Cell,
    FoldState,
    fold,
    packed_window,
    start_fold,
)

#: How long one wait for finished cells blocks before the cancel event is looked at again.
POLL_S = 0.1
#: Seconds a cancelled cell gets to stop cooperatively before the executor forces it.
DEFAULT_GRACE_S = 30.0
#: The default window is this many times the executor's slots. Pacing starts at most ``slots``
#: cells at once; the window bounds how far past the fold pointer they may be (a long cell holding
#: the fold). 2 × slots keeps the overrun of a trip at most ``2 × slots − 1`` rows, as before.
EXECUTOR_WINDOW_MULTIPLIER = 2


@attrs.frozen
class ExecutorPacing:
    """How the fold paces an executor: throttle retries and who hears of a change of the limit."""

    retry: RetryPolicy | None = None
    on_limit: Callable[[LimitEvent], None] | None = None


def run_on_executor(
    cells: Iterable[Cell],
    *,
    executor: CellExecutor,
    on_row: Callable[[Row], None],
    cancel: CancelToken,
    window: int | None = None,
    outage_streak: int = DEFAULT_OUTAGE_STREAK,
    grace_s: float = DEFAULT_GRACE_S,
    pacing: ExecutorPacing | None = None,
    keep_rows: bool = True,
) -> SweepOutcome:
    """Fold ``cells`` run by ``executor``; at most ``window`` (default 2 × its slots) in flight.

    Paced as a local sweep (see the module docstring): at most ``executor.slots`` cells run at
    once, fewer under the throttle limit; ``pacing`` gives the retry policy (default
    :class:`RetryPolicy`) and the ``on_limit`` callback. ``keep_rows=False``: rows are persisted
    through ``on_row`` and not held (the outcome's ``rows`` stays empty).

    Raises:
        ValueError: ``window`` below the executor's slots or ``outage_streak < 0``, before any cell.
        BaseException: whatever ``on_row`` raised: the executor is cancelled and closed first.
    """
    cell_list = tuple(cells)
    slots = executor.slots
    size = packed_window(slots, EXECUTOR_WINDOW_MULTIPLIER * slots if window is None else window)
    paced = pacing or ExecutorPacing()
    plan = Pacing.start(slots, outage_limit=outage_streak, retry=paced.retry)
    state, actions = start_fold(
        len(cell_list), window=size, breaker=Breaker(limit=outage_streak), pacing=plan
    )
    shell = FoldShell(
        cells=cell_list,
        on_row=on_row,
        executor=executor,
        grace_s=grace_s,
        on_limit=paced.on_limit,
        keep_rows=keep_rows,
    )
    try:
        while shell.perform(actions):
            state, actions = _next(state, executor, cancel, grace_s)
    except BaseException:
        executor.cancel(0.0)
        raise
    finally:
        executor.close()
    return shell.outcome(state, cancelled=cancel.is_set())


def _next(
    state: FoldState, executor: CellExecutor, cancel: CancelToken, grace_s: float
) -> tuple[FoldState, tuple[Action, ...]]:
    """Wait for finished cells (or a cancellation) and fold them; the actions they caused, in order."""
    while True:
        if cancel.is_set() and state.stopped is None:
            executor.cancel(grace_s)
            return fold(state, CancelRequested())
        finished = executor.wait(POLL_S)
        if not finished:
            continue
        actions: list[Action] = []
        for event in sorted(finished, key=lambda item: item.index):
            state, more = fold(state, event)
            actions.extend(more)
        return state, tuple(actions)
