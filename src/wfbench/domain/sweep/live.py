"""What a viewer can tell about a sweep directory while it may still be written to.

A sweep is *running* while a process holds its ``.wfbench.lock`` (the kernel drops the lock
however that process ends), *finished* once it has a ``promotion.json`` or no running process,
and its ``planned`` cell count is what the sweep said it would run (``wfbench.log``'s
``sweep_plan`` event; ``None`` before it says so). :attr:`SweepState.token` changes whenever a
page of the sweep could change, so a viewer re-reads a sweep only when its token moved.
"""

from __future__ import annotations

import attrs

__all__ = ["SweepState", "progress_text"]


@attrs.frozen
class SweepState:
    """The sweep directory as a viewer sees it now."""

    #: Bytes of ``results.jsonl`` (complete and torn lines alike).
    size: int
    #: A process holds the sweep's lock.
    running: bool
    #: The sweep has a ``promotion.json`` (its verdicts are written).
    judged: bool = False
    #: Cells the sweep planned (None: not said yet, or an older sweep).
    planned: int | None = None
    #: Modification time of ``promotion.json`` in nanoseconds (0: none).
    judged_ns: int = 0

    @property
    def token(self) -> str:
        """Changes whenever anything a page shows may have changed."""
        return f"{self.size}-{int(self.running)}-{self.judged_ns}-{self.planned or 0}"


def progress_text(cells: int, planned: int | None) -> str:
    """``running, 3 of 24 cells`` (``running, 3 cells`` while the plan is unknown)."""
    if planned:
        return f"running, {cells} of {planned} cells"
    return f"running, {cells} cell(s) so far"
