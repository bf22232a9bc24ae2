"""What a sweep has spent: dollars over the cells whose cost is known (``app/sweep/spend.py`` sums it).

A value of its own, so the port that reads it (:class:`wfbench.domain.ports.SpendSource`) can name it.
"""

from __future__ import annotations

import attrs

__all__ = ["Spend"]


@attrs.frozen
class Spend:
    """Dollars over the cells whose cost is known, and how many cells were measured how.

    ``partial`` cells have no cell total (a session of theirs was cut short, so the sum is
    unknown) but some finished sessions with a known cost; those costs are included in ``usd``.
    """

    usd: float | None
    measured: int
    unmeasured: int
    partial: int = 0

    def text(self) -> str:
        """``$1.2345`` (``n/a`` when nothing was measured), with the partial and unmeasured counts."""
        amount = "n/a" if self.usd is None else f"${self.usd:.4f}"
        notes = []
        if self.partial:
            notes.append(f"{self.partial} cell(s) measured in part")
        if self.unmeasured:
            notes.append(f"{self.unmeasured} cell(s) without a cost")
        return amount + (f" ({'; '.join(notes)})" if notes else "")
