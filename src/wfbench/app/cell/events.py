"""What a sweep tells its observers while it runs: a small, explicit set of event values.

The sweep (``app/sweep/sweep.py``), the scheduler's start hook and each cell's phases emit these; the
terminal views, the ``--json`` event stream and ``wfbench.log`` consume them
(``app/sweep/progress.py``). Observers are called from the sweep's driver thread (sweep events, notes,
finished cells, in fold order) and from worker threads (a cell or phase starting), so they must be
thread-safe and quick; they never change what the sweep does.
"""

from __future__ import annotations

from collections.abc import Sequence

from wfbench.domain.ports import SweepObserver
from wfbench.domain.sweep.events import (
    CellFinished,
    CellKey,
    CellStarted,
    Note,
    PhaseFinished,
    PhaseStarted,
    SweepEvent,
    SweepFinished,
    SweepStarted,
)

__all__ = [
    "CellFinished",
    "CellKey",
    "CellStarted",
    "Fanout",
    "Note",
    "PhaseFinished",
    "PhaseStarted",
    "SweepEvent",
    "SweepFinished",
    "SweepObserver",
    "SweepStarted",
]


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
