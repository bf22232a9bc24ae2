"""Scheduler folding: canonical cell order, the outage breaker and the in-order fold.

This module is the functional core of ``wfbench run``'s packed scheduler. It decides; the
effect shell (:func:`wfbench.app.sweep.scheduler.run_packed`) performs. Cells are submitted in one
order and *folded strictly in that order*: a cell that finishes early waits in a buffer until
every cell submitted before it has been folded. Folding a row means persisting it and stepping
the outage breaker, so the breaker always sees the same sequence of rows, whatever order the
workers happen to finish in (``docs/concepts.md``, "The fold and the outage breaker").

Window accounting: a cell counts against the window from its submission until it is folded.
At most ``window`` cells are ever submitted-but-unfolded, so after the cell that trips the
breaker at most ``window - 1`` later cells can already be running. Those *overrun* rows are
persisted (the sessions ran and were paid for); they no longer move the breaker.

Where we deliberately differ from the reference's packed scheduler :
overrun rows are persisted, a cancellation is reported as a cancellation (never as an outage),
and a cell whose ``run`` raised is a row, not a lost sibling (see :func:`failed_cell_row`).

With :class:`~wfbench.domain.sweep.pacing.Pacing` (what ``run_packed`` uses), cells start only
when a worker is free, the window contracts while systemic rows are in sight, and throttled
cells (HTTP 429/529) run again under an AIMD concurrency limit before they are folded; the fold
order, the breaker and the overrun bound are the same. Without it (``pacing=None``) every cell
of the window is handed out at once, as a thread pool with a queue would take them.

**The overrun bound** (:data:`OVERRUN_BOUND`): at most ``window - 1`` rows are folded after the
row that trips the breaker, whatever the pacing; the default window is
``WINDOW_MULTIPLIER × workers``.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence

import attrs

from wfbench.domain.results.rows import SYSTEMIC_KINDS, ErrorKind, Row
from wfbench.domain.sweep.pacing import LimitChanged, Pacing, throttle_status

#: The breaker trips after this many consecutive systemic rows.
DEFAULT_OUTAGE_STREAK = 5
#: The default window is this many times the worker count: wide enough that one cell of the
#: session ceiling (~6× a median session) holding the fold does not starve the other workers
#: (``docs/performance.md``, "Scheduler": 1.025× the lower bound at 8 workers on 600 cells, where
#: 2 × workers gave 1.43×); contraction keeps the overrun of an outage near ``workers``.
WINDOW_MULTIPLIER = 6
#: The named bound on the overrun: rows folded after the tripping row ≤ ``window - OVERRUN_BOUND``.
OVERRUN_BOUND = 1
#: ``error_detail`` of a synthetic failed-cell row is capped at this many characters.
DETAIL_LIMIT = 2000


# --- cells and their order ----------------------------------------------------------------


@attrs.frozen
class Cell:
    """One (task, arm, run) unit of work; ``expected_s`` is a prior duration when one is known."""

    task: str
    arm: str
    run: int
    expected_s: float | None = None

    @property
    def key(self) -> tuple[str, str, int]:
        """The (task, arm, run) identity, as :attr:`Row.cell` spells it."""
        return (self.task, self.arm, self.run)


def canonical_order(tasks: Sequence[str], arms: Sequence[str], runs: int) -> tuple[Cell, ...]:
    """Every cell, task-major, run-major, arm-minor; runs are numbered ``0 .. runs - 1``.

    Tasks and arms keep the order given (file order, command-line order).

    Raises:
        ValueError: ``runs`` is negative, or a task or an arm is listed twice.
    """
    if runs < 0:
        raise ValueError(f"runs must be at least 0, got {runs}")
    for label, names in (("task", tasks), ("arm", arms)):
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate {label} in {list(names)!r}")
    return tuple(Cell(task, arm, run) for task in tasks for run in range(runs) for arm in arms)


def longest_first(
    cells: Iterable[Cell], durations: Mapping[tuple[str, str], float] | None = None
) -> tuple[Cell, ...]:
    """A submission order that starts the longest expected cells first.

    A cell's expected duration is ``durations[(task, arm)]`` when ``durations`` is given (for
    instance the prior durations of ``--reuse-results`` rows), else its own ``expected_s``.
    Cells with no expectation go first (an unknown cell may be the longest), and ties keep
    their given order, so with no durations at all the order is unchanged. The scheduler folds
    in whatever order it is given, so the order returned here is also the order of the rows.
    """
    known = durations or {}
    timed = tuple(
        attrs.evolve(cell, expected_s=known.get((cell.task, cell.arm), cell.expected_s)) for cell in cells
    )
    unknown = tuple(cell for cell in timed if cell.expected_s is None)
    longest = sorted((cell for cell in timed if cell.expected_s is not None), key=_negated_expectation)
    return (*unknown, *longest)


def _negated_expectation(cell: Cell) -> float:
    return -(cell.expected_s or 0.0)


# --- the outage breaker -------------------------------------------------------------------


def _non_negative(_instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if value < 0:
        raise ValueError(f"{attribute.name} must be at least 0 (0 disables the breaker), got {value}")


@attrs.frozen
class Breaker:
    """The outage breaker: ``limit`` consecutive systemic rows trip it; ``limit=0`` disables it.

    Raises:
        ValueError: ``limit`` or ``streak`` is negative (the reference silently tripped on the
            first row for a negative limit; we refuse it).
    """

    limit: int = attrs.field(default=DEFAULT_OUTAGE_STREAK, validator=_non_negative)
    streak: int = attrs.field(default=0, validator=_non_negative)
    tripped: bool = False


def breaker_kind(row: Row) -> ErrorKind | None:
    """The kind the breaker reads: the effective kind of a fresh row, the raw kind of a reused one."""
    return row.error_kind if row.reused else row.effective_kind


def step(breaker: Breaker, row: Row) -> Breaker:
    """Fold one row: a systemic kind extends the streak, any other value resets it to 0.

    A tripped breaker no longer changes, so its streak stays where it tripped.
    """
    if breaker.tripped:
        return breaker
    streak = breaker.streak + 1 if breaker_kind(row) in SYSTEMIC_KINDS else 0
    tripped = breaker.limit != 0 and streak >= breaker.limit
    return attrs.evolve(breaker, streak=streak, tripped=tripped)


def step_all(breaker: Breaker, rows: Iterable[Row]) -> Breaker:
    """Fold every row, in order (equal to folding any split of them one part after the other)."""
    for row in rows:
        breaker = step(breaker, row)
    return breaker


def failed_cell_row(cell: Cell, detail: str, *, cancelled: bool) -> Row:
    """The row of a cell whose run raised: ``infra-error`` (systemic), or ``cancelled`` if it was stopped.

    Usage, cost and duration stay unknown (``None``); ``error_detail`` is capped at
    :data:`DETAIL_LIMIT` characters.
    """
    kind = ErrorKind.CANCELLED if cancelled else ErrorKind.INFRA_ERROR
    return Row(
        task=cell.task,
        arm=cell.arm,
        run=cell.run,
        error_kind=kind,
        extra={"error_detail": detail[:DETAIL_LIMIT]},
    )


# --- window accounting --------------------------------------------------------------------


def packed_window(workers: int, window: int | None = None) -> int:
    """The window for ``workers``: ``WINDOW_MULTIPLIER × workers`` by default.

    Raises:
        ValueError: ``workers < 1``, or ``window < workers`` (the pool would starve: the next
            cell could never be submitted while the fold waits for it).
    """
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    if window is None:
        return WINDOW_MULTIPLIER * workers
    if window < workers:
        raise ValueError(f"window must be at least workers ({workers}), or the pool starves; got {window}")
    return window


# --- events and actions -------------------------------------------------------------------


class StopReason(enum.StrEnum):
    """Why submission stopped."""

    OUTAGE = "outage"
    CANCELLED = "cancelled"


@attrs.frozen
class CellFinished:
    """Event: the cell at ``index`` (submission order) finished; ``row`` is None if it never started."""

    index: int
    row: Row | None


@attrs.frozen
class CancelRequested:
    """Event: cancellation was requested from outside (SIGINT, SIGTERM)."""


Event = CellFinished | CancelRequested


@attrs.frozen
class SubmitCell:
    """Action: hand the cell at ``index`` to a worker; ``attempt`` > 0 runs a throttled cell again
    after ``delay_s`` seconds (waited on the worker, cancellably)."""

    index: int
    attempt: int = 0
    delay_s: float = 0.0


@attrs.frozen
class PersistRow:
    """Action: persist ``row`` of cell ``index``; ``overrun`` when it was folded after a trip."""

    index: int
    row: Row
    overrun: bool


@attrs.frozen
class StopSubmitting:
    """Action: submit no further cell."""

    reason: StopReason


@attrs.frozen
class CancelRunning:
    """Action: set the cancel token of the cells still running (the breaker tripped)."""

    reason: StopReason


@attrs.frozen
class SweepDone:
    """Action: every submitted cell is folded and nothing more will be submitted."""


Action = SubmitCell | PersistRow | StopSubmitting | CancelRunning | SweepDone | LimitChanged


# --- the fold -----------------------------------------------------------------------------


@attrs.frozen
class FoldState:
    """Where a sweep stands. Indexes are positions in the submission order.

    ``submitted`` cells (``0 .. submitted - 1``) were handed out; ``folded`` of them were folded;
    ``buffered`` holds finished cells waiting for an earlier one, sorted by index.
    """

    total: int
    window: int
    breaker: Breaker = attrs.field(factory=Breaker)
    submitted: int = 0
    folded: int = 0
    buffered: tuple[CellFinished, ...] = ()
    stopped: StopReason | None = None
    tripped_at: int | None = None
    persisted: int = 0
    overrun: int = 0
    done: bool = False
    #: Lazy starts, contraction and throttle retries (``None``: hand out the whole window at once).
    pacing: Pacing | None = None

    @property
    def in_flight(self) -> int:
        """Cells submitted but not yet folded (running, queued, or finished and buffered)."""
        return self.submitted - self.folded


def start_fold(
    total: int, *, window: int, breaker: Breaker | None = None, pacing: Pacing | None = None
) -> tuple[FoldState, tuple[Action, ...]]:
    """The initial state of a sweep of ``total`` cells and its first submissions.

    Raises:
        ValueError: ``total`` is negative, ``window`` is below 1, or below ``pacing.workers``.
    """
    if total < 0:
        raise ValueError(f"total must be at least 0, got {total}")
    if window < 1:
        raise ValueError(f"window must be at least 1, got {window}")
    if pacing is not None and window < pacing.workers:
        raise ValueError(f"window must be at least workers ({pacing.workers}), got {window}")
    state = FoldState(total=total, window=window, breaker=breaker or Breaker(), pacing=pacing)
    return _advance(state, ())


def fold(state: FoldState, event: Event) -> tuple[FoldState, tuple[Action, ...]]:
    """Apply one event; return the new state and the actions to perform, in order.

    Raises:
        ValueError: the event names a cell that was not submitted or was already reported,
            or arrives after :class:`SweepDone`.
    """
    if state.done:
        raise ValueError("the sweep is done; no further event is expected")
    if isinstance(event, CancelRequested):
        if state.stopped is not None:
            return state, ()
        stopped = attrs.evolve(state, stopped=StopReason.CANCELLED)
        return _advance(stopped, (StopSubmitting(StopReason.CANCELLED),))
    _check_reportable(state, event.index)
    paced: tuple[Action, ...] = ()
    finished: CellFinished | None = event
    if state.pacing is not None:
        state, finished, paced = _pace_report(state, state.pacing, event)
    if finished is None:
        return _advance(state, paced)
    buffered = tuple(sorted((*state.buffered, finished), key=_index))
    state, actions = _fold_ready(attrs.evolve(state, buffered=buffered))
    return _advance(state, (*paced, *actions))


def _check_reportable(state: FoldState, index: int) -> None:
    if not state.folded <= index < state.submitted:
        raise ValueError(f"cell {index} is not in flight (in flight: {state.folded}..{state.submitted - 1})")
    if any(finished.index == index for finished in state.buffered):
        raise ValueError(f"cell {index} was already reported")
    if state.pacing is not None and index in state.pacing.waiting:
        raise ValueError(f"cell {index} is waiting to run again; it is not running")


def _pace_report(
    state: FoldState, pacing: Pacing, event: CellFinished
) -> tuple[FoldState, CellFinished | None, tuple[Action, ...]]:
    """A paced report: a throttle waits to run again (no event to fold); anything else is settled."""
    index, row = event.index, event.row
    status = None if row is None else throttle_status(row)
    change: LimitChanged | None = None
    if row is not None and status is not None:
        if state.stopped is None and pacing.retries_left(index):
            pacing, change = pacing.throttled(index, row, status)
            return attrs.evolve(state, pacing=pacing), None, () if change is None else (change,)
        pacing, change = pacing.cut(index, status, started_at=pacing.start_of(index))
    elif row is not None:
        pacing, change = pacing.finished(index)
    pacing, settled = pacing.settle(index, row)
    state = attrs.evolve(state, pacing=pacing)
    return state, CellFinished(index, settled), () if change is None else (change,)


def _fold_ready(state: FoldState) -> tuple[FoldState, tuple[Action, ...]]:
    """Fold the buffered cells that are next in order."""
    actions: list[Action] = []
    while state.buffered and state.buffered[0].index == state.folded:
        head, rest = state.buffered[0], state.buffered[1:]
        state = attrs.evolve(state, buffered=rest, folded=state.folded + 1)
        if head.row is not None:
            state, folded_actions = _fold_row(state, head.index, head.row)
            actions.extend(folded_actions)
    return state, tuple(actions)


def _fold_row(state: FoldState, index: int, row: Row) -> tuple[FoldState, tuple[Action, ...]]:
    """Persist first, then judge: a row is persisted even if it is the one that trips the breaker."""
    overrun = state.tripped_at is not None
    persist = PersistRow(index, row, overrun)
    state = attrs.evolve(state, persisted=state.persisted + 1, overrun=state.overrun + int(overrun))
    if state.stopped is not None:
        return state, (persist,)
    breaker = step(state.breaker, row)
    state = attrs.evolve(state, breaker=breaker)
    if not breaker.tripped:
        return state, (persist,)
    state = attrs.evolve(state, stopped=StopReason.OUTAGE, tripped_at=index)
    return state, (persist, StopSubmitting(StopReason.OUTAGE), CancelRunning(StopReason.OUTAGE))


def _advance(state: FoldState, actions: tuple[Action, ...]) -> tuple[FoldState, tuple[Action, ...]]:
    """Fill the window with submissions, then say whether the sweep is done."""
    if state.pacing is not None:
        state, actions = _advance_paced(state, state.pacing, actions)
    else:
        submitted = state.submitted
        if state.stopped is None:
            submitted = min(state.total, state.folded + state.window)
        submissions = tuple(SubmitCell(index) for index in range(state.submitted, submitted))
        state = attrs.evolve(state, submitted=submitted)
        actions = (*actions, *submissions)
    exhausted = state.stopped is not None or state.submitted == state.total
    if exhausted and state.folded == state.submitted:
        return attrs.evolve(state, done=True), (*actions, SweepDone())
    return state, actions


def _advance_paced(
    state: FoldState, pacing: Pacing, actions: tuple[Action, ...]
) -> tuple[FoldState, tuple[Action, ...]]:
    """Start cells while a worker is free: throttled cells first (in order), then new ones.

    Once stopped, cells waiting to run again are folded with their last throttled row instead.
    """
    out = list(actions)
    if state.stopped is not None and pacing.waiting:
        for index in pacing.waiting:
            pacing, row = pacing.settle(index, None)
            buffered = tuple(sorted((*state.buffered, CellFinished(index, row)), key=_index))
            state = attrs.evolve(state, buffered=buffered)
        state, folded = _fold_ready(state)  # folding reads no pacing: the settled one is set below
        out.extend(folded)
    window = state.window
    if pacing.contracted(_systemic_in_sight(state)):
        window = min(window, pacing.workers)
    running = state.submitted - state.folded - len(state.buffered) - len(pacing.waiting)
    while running < pacing.cap and state.stopped is None:
        if pacing.waiting:
            pacing, index = pacing.take_waiting()
            attempt = pacing.attempts[index]  # a waiting cell was throttled: throttled() counted it
            out.append(SubmitCell(index, attempt=attempt, delay_s=pacing.retry.delay(attempt)))
        elif state.submitted < state.total and state.submitted - state.folded < window:
            index = state.submitted
            state = attrs.evolve(state, submitted=index + 1)
            out.append(SubmitCell(index))
        else:
            break
        pacing = pacing.started_cell(index)
        running += 1
    return attrs.evolve(state, pacing=pacing), tuple(out)


def _systemic_in_sight(state: FoldState) -> int:
    """The breaker's streak plus the finished-but-unfolded rows the breaker would count."""
    buffered = sum(1 for f in state.buffered if f.row is not None and breaker_kind(f.row) in SYSTEMIC_KINDS)
    return state.breaker.streak + buffered


def _index(finished: CellFinished) -> int:
    return finished.index
