"""What a sweep tells its observers while it runs: a small, explicit set of event values.

The observers are :class:`wfbench.domain.ports.SweepObserver` s; ``app/cell/events.py`` says who
emits these and when (moved here with the port, so ``domain/ports.py`` can name them).
"""

from __future__ import annotations

import attrs

from wfbench.domain.results.rows import Row

__all__ = [
    "CellFinished",
    "CellStarted",
    "Note",
    "PhaseFinished",
    "PhaseStarted",
    "SweepEvent",
    "SweepFinished",
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


SweepEvent = SweepStarted | CellStarted | PhaseStarted | PhaseFinished | CellFinished | Note | SweepFinished
