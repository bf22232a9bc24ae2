"""What a sweep tells its observers while it runs: a small, explicit set of event values.

The sweep (``app/sweep/sweep.py``), the scheduler's start hook and each cell's phases emit these; the
terminal views, the ``--json`` event stream and ``wfbench.log`` consume them
(``app/sweep/progress.py``). Observers are called from the sweep's driver thread (sweep events, notes,
finished cells, in fold order) and from worker threads (a cell or phase starting), so they must be
thread-safe and quick; they never change what the sweep does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import attrs

from wfbench.domain.results.rows import Row

__all__ = [
    "CellFinished",
    "CellStarted",
    "CellTimings",
    "Fanout",
    "Note",
    "PhaseFinished",
    "PhaseStarted",
    "SweepEvent",
    "SweepFinished",
    "SweepObserver",
    "SweepStarted",
]

CellKey = tuple[str, str, int]


@attrs.frozen
class SweepStarted:
    """The cells are planned: ``to_run`` run now; ``already`` have a row, ``reused`` were carried over."""

    planned: int
    to_run: int
    already: int
    reused: int
    workers: int
    arms: tuple[str, ...]
    out_dir: str
    #: What the directory's rows already cost (a resume), None when nothing was measured.
    spent_before_usd: float | None = None
    #: Expected wall seconds of one cell from prior rows (resumed or reused), for the ETA.
    expected_cell_s: float | None = None


@attrs.frozen
class CellStarted:
    """A cell really started (on a worker thread)."""

    cell: CellKey


@attrs.frozen
class PhaseStarted:
    """One of a cell's agent sessions is about to start (on the cell's worker thread)."""

    cell: CellKey
    phase: str


@attrs.frozen
class PhaseFinished:
    """A cell's session ended: how long it took on the wall clock, and how it ended."""

    cell: CellKey
    phase: str
    wall_s: float
    ok: bool
    error_kind: str | None
    cost_usd: float | None


@attrs.frozen
class CellTimings:
    """Where a cell's wall time went (on the cell's worker thread, once its workspace is removed).

    ``steps`` are ``(step, seconds)`` in the order they ran: ``copy``, ``prepare``, ``sessions``,
    ``verify``, ``oracle`` or ``review``, ``capture``, ``remove``; ``other`` is the rest of ``wall_s``
    (building the row, writing artifacts). A step that did not run is absent.
    """

    cell: CellKey
    wall_s: float
    steps: tuple[tuple[str, float], ...]


@attrs.frozen
class CellFinished:
    """A cell's row was persisted (in fold order)."""

    row: Row


@attrs.frozen
class Note:
    """A sweep-level message; ``level`` is ``info``, ``warning`` or ``error``."""

    text: str
    level: str = "info"


@attrs.frozen
class SweepFinished:
    """The sweep ended (reports written): how, and what it decided."""

    exit_code: int
    cancelled: bool
    tripped: bool
    decisions: tuple[tuple[str, str], ...]
    planned: int
    completed: int


SweepEvent = (
    SweepStarted
    | CellStarted
    | PhaseStarted
    | PhaseFinished
    | CellTimings
    | CellFinished
    | Note
    | SweepFinished
)


class SweepObserver(Protocol):
    """Anything that wants to know how a sweep is going."""

    def notify(self, event: SweepEvent) -> None:
        """Take one event (quickly; from any thread)."""

    def close(self) -> None:
        """The sweep is over: stop timers, restore the terminal."""


class Fanout:
    """One observer that passes every event to several (in order)."""

    def __init__(self, observers: Sequence[SweepObserver]) -> None:
        self._observers = tuple(observers)

    def notify(self, event: SweepEvent) -> None:
        """Pass ``event`` on."""
        for observer in self._observers:
            observer.notify(event)

    def close(self) -> None:
        """Close every observer."""
        for observer in self._observers:
            observer.close()
