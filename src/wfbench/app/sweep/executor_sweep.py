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
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from wfbench.app.sweep.scheduler import FoldShell, SweepOutcome
from wfbench.domain.ports import CancelToken, CellExecutor
from wfbench.domain.results.rows import Row
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
#: The default window is this many times the executor's slots. The fold here is unpaced (every
#: cell of the window is handed out at once and the executor queues it), so the local
#: scheduler's wide paced window (``WINDOW_MULTIPLIER``, with contraction) would let up to
#: ``6 × slots − 1`` rows run past a breaker trip; 2 × slots keeps that overrun bound.
EXECUTOR_WINDOW_MULTIPLIER = 2


def run_on_executor(
    cells: Iterable[Cell],
    *,
    executor: CellExecutor,
    on_row: Callable[[Row], None],
    cancel: CancelToken,
    window: int | None = None,
    outage_streak: int = DEFAULT_OUTAGE_STREAK,
    grace_s: float = DEFAULT_GRACE_S,
    keep_rows: bool = True,
) -> SweepOutcome:
    """Fold ``cells`` run by ``executor``; at most ``window`` (default 2 × its slots) in flight.

    ``keep_rows=False``: rows are persisted through ``on_row`` and not held (the outcome's
    ``rows`` stays empty).

    Raises:
        ValueError: ``window`` below the executor's slots or ``outage_streak < 0``, before any cell.
        BaseException: whatever ``on_row`` raised: the executor is cancelled and closed first.
    """
    cell_list = tuple(cells)
    slots = executor.slots
    size = packed_window(slots, EXECUTOR_WINDOW_MULTIPLIER * slots if window is None else window)
    state, actions = start_fold(len(cell_list), window=size, breaker=Breaker(limit=outage_streak))
    shell = FoldShell(cells=cell_list, on_row=on_row, executor=executor, grace_s=grace_s, keep_rows=keep_rows)
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
