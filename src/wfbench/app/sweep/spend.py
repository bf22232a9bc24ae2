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
    folded = RowSpend()
    for row in rows:
        folded.add(row)
    return folded.spent()


def _known_session_costs(row: Row) -> list[float]:
    sessions = row.extra.get("session_measurements")
    if not isinstance(sessions, list):
        return []
    costs = [s.get("cost_usd") for s in sessions if isinstance(s, dict)]
    return [float(c) for c in costs if isinstance(c, int | float) and not isinstance(c, bool)]


class RowSpend:
    """A :class:`SpendSource` over rows as they are folded, plus rows written before (a resume).

    It keeps running sums, never the rows: its memory does not grow with the sweep.
    """

    def __init__(self, earlier: Iterable[Row] = ()) -> None:
        self._total = 0.0
        self._measured = self._unmeasured = self._partial = 0
        for row in earlier:
            self.add(row)

    def add(self, row: Row) -> None:
        """Count a newly persisted row (a reused one cost this sweep nothing)."""
        if row.reused:
            return
        if row.cost_usd is not None:
            self._measured += 1
            self._total += row.cost_usd
            return
        known = _known_session_costs(row)
        if known:
            self._partial += 1
            self._total += sum(known)
        else:
            self._unmeasured += 1

    def spent(self) -> Spend:
        """Every counted row's cost (``usd`` None when no row's cost is known)."""
        usd = round(self._total, 6) if self._measured or self._partial else None
        return Spend(usd=usd, measured=self._measured, unmeasured=self._unmeasured, partial=self._partial)


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
