"""Money: what a sweep has spent, and what the cells it plans are expected to cost.

Spend comes from a :class:`SpendSource`. Today that is :class:`RowSpend`, the rows' own
``cost_usd`` (each session's reported cost, summed per cell) over every row the sweep wrote,
including the rows of cancelled cells a resume set aside (their sessions were paid for). Wire
metering (usage recorded by the key proxy per cell) is a drop-in replacement: anything with
``spent()`` returning a :class:`Spend`.

Unknown is never zero: a row without ``cost_usd`` is counted as unmeasured, and a total over
nothing measured is ``None``.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence

from wfbench.domain.results.rows import Row
from wfbench.domain.results.spend import Spend


def spend_of(rows: Iterable[Row]) -> Spend:
    """What ``rows`` cost this sweep: each row's ``cost_usd``, else the known costs of its sessions.

    Reused rows are left out (this sweep did not pay for them).
    """
    total = 0.0
    measured = unmeasured = partial = 0
    for row in rows:
        if row.reused:
            continue
        if row.cost_usd is not None:
            measured += 1
            total += row.cost_usd
            continue
        known = _known_session_costs(row)
        if known:
            partial += 1
            total += sum(known)
        else:
            unmeasured += 1
    usd = round(total, 6) if measured or partial else None
    return Spend(usd=usd, measured=measured, unmeasured=unmeasured, partial=partial)


def _known_session_costs(row: Row) -> list[float]:
    sessions = row.extra.get("session_measurements")
    if not isinstance(sessions, list):
        return []
    costs = [s.get("cost_usd") for s in sessions if isinstance(s, dict)]
    return [float(c) for c in costs if isinstance(c, int | float) and not isinstance(c, bool)]


class RowSpend:
    """A :class:`SpendSource` over rows as they are folded, plus rows written before (a resume)."""

    def __init__(self, earlier: Sequence[Row] = ()) -> None:
        self._rows: list[Row] = list(earlier)

    def add(self, row: Row) -> None:
        """Count a newly persisted row."""
        self._rows.append(row)

    def spent(self) -> Spend:
        """Every counted row's cost."""
        return spend_of(self._rows)


def estimate(cells: Sequence[tuple[str, str]], prior: Iterable[Row]) -> list[float | None]:
    """Expected cost per planned ``(task, arm)`` cell: the median prior cost of that (task, arm),
    else of that arm on any task; ``None`` when no prior row of the arm has a cost."""
    by_cell: dict[tuple[str, str], list[float]] = {}
    by_arm: dict[str, list[float]] = {}
    for row in prior:
        if row.cost_usd is None:
            continue
        by_cell.setdefault((row.task, row.arm), []).append(row.cost_usd)
        by_arm.setdefault(row.arm, []).append(row.cost_usd)
    medians: Mapping[tuple[str, str], float] = {key: statistics.median(v) for key, v in by_cell.items()}
    arm_medians = {arm: statistics.median(values) for arm, values in by_arm.items()}
    return [medians.get(cell, arm_medians.get(cell[1])) for cell in cells]
