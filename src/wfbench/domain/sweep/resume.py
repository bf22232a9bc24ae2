"""Which rows a resumed sweep keeps: every row is evidence of its cell unless a cancellation made it.

A sweep stopped by SIGINT/SIGTERM (or by the outage breaker, which sets the same token) persists
a row for every cell that had started, so no paid session goes unrecorded. The row of a cell
that was *stopped* says nothing about the cell, only that the sweep ended while it ran: an
uninterrupted sweep would have measured that cell instead. So ``--resume`` sets such rows aside
(they are moved, never deleted) and runs their cells again; every other row is kept and its
cell is not run again, whatever its kind (an ``infra-error`` is evidence: its cell would fail
the same way in an uninterrupted sweep).

How a cancellation shows up in rows (``app/cell/cell.py``, ``app/sweep/scheduler.py``,
``domain/scheduling.failed_cell_row``, ``domain/event_stream``): every failure row is built
after looking at the cell's cancel token, so a failure the cancellation caused (the session,
setup, verify, oracle or copy process killed, or a run that raised) is ``cancelled``, never
``infra-error``. The one other form is a cancelled cell whose workspace then could not be
removed: its kind becomes ``cleanup-failure`` and its ``error_detail`` starts with
``primary=cancelled:`` (:data:`CANCELLED_CLEANUP_PREFIX`). Its measurement was cancelled too, so
it is set aside like a ``cancelled`` row.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from wfbench.domain.results.rows import ErrorKind, Row

__all__ = ["CANCELLED_CLEANUP_PREFIX", "ResumeSplit", "is_cancellation_residue", "split_for_resume"]

#: ``error_detail`` of a ``cleanup-failure`` row whose cell had been cancelled starts with this.
CANCELLED_CLEANUP_PREFIX = f"primary={ErrorKind.CANCELLED.value}:"


def is_cancellation_residue(row: Row) -> bool:
    """True when ``row`` only records that its cell was stopped.

    That is a ``cancelled`` row, or a ``cleanup-failure`` row whose cell had been cancelled.
    """
    if row.error_kind is ErrorKind.CANCELLED:
        return True
    if row.error_kind is ErrorKind.CLEANUP_FAILURE:
        detail = row.extra.get("error_detail")
        return isinstance(detail, str) and detail.startswith(CANCELLED_CLEANUP_PREFIX)
    return False


@attrs.frozen
class ResumeSplit:
    """Positions (in the given order) of the rows a resume keeps and of those it sets aside."""

    keep: tuple[int, ...]
    set_aside: tuple[int, ...]


def split_for_resume(rows: Sequence[Row]) -> ResumeSplit:
    """Split ``rows`` into those that stay evidence of their cell and the cancellation residue.

    Every position appears in exactly one of the two tuples, each in ascending order, so the
    kept rows keep their relative order.
    """
    residue = tuple(i for i, row in enumerate(rows) if is_cancellation_residue(row))
    marked = set(residue)
    return ResumeSplit(keep=tuple(i for i in range(len(rows)) if i not in marked), set_aside=residue)
