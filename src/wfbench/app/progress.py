"""Progress of a sweep: one line per finished cell (plain), or a rich progress bar on a TTY.

The per-cell line (reference scheduler_tasks.md §6): task, arm, run, resolved, quality (review
weighted F1), tokens, cost, duration and error kind, ``n/a`` where unmeasured, plus the
redacted failure detail on its own line.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any, Protocol, TextIO

from wfbench.domain.redaction import escape_controls, redact_text
from wfbench.domain.results.rows import ErrorKind, Row

DETAIL_LIMIT = 1200


class Progress(Protocol):
    """Where a sweep reports what happens (plain lines, a progress bar, or nothing in tests)."""

    def start(self, total: int) -> None:
        """The sweep is about to run ``total`` cells."""

    def cell_started(self, label: str) -> None:
        """A cell started."""

    def cell_done(self, row: Row) -> None:
        """A cell's row was persisted."""

    def note(self, text: str) -> None:
        """A sweep-level message."""

    def close(self) -> None:
        """The sweep ended."""


def _number(value: float | int | None, fmt: str) -> str:
    return "n/a" if value is None else format(value, fmt)


def cell_line(row: Row) -> str:
    """The one-line summary of a finished cell."""
    infra = row.error_kind in (ErrorKind.INFRA_ERROR, ErrorKind.CLEANUP_FAILURE)
    quality = row.review.get("review_weighted_f1")
    quality_text = "n/a" if quality is None or isinstance(quality, bool) else f"{quality:.3f}"
    cost = None if infra else row.cost_usd
    took = None if infra else row.duration_s
    kind = row.error_kind.value if row.error_kind else "none"
    return (
        f"[{row.task}][{row.arm}][run {row.run}] resolved={row.resolved} quality={quality_text}"
        f" in={_number(row.input_tokens, 'd')} out={_number(row.output_tokens, 'd')}"
        f" cost=${_number(cost, '.4f')} took={_number(took, '.1f')}s error_kind={kind}"
    )


def detail_line(row: Row, secrets: Sequence[str] = ()) -> str | None:
    """The redacted failure detail of a row with an error kind, or None."""
    detail: Any = row.extra.get("error_detail")
    if row.error_kind is None or not detail:
        return None
    text = detail if isinstance(detail, str) else json.dumps(detail, sort_keys=True)
    text = escape_controls(redact_text(text, tuple(secrets)).replace("\n", " ⏎ "))
    if len(text) > DETAIL_LIMIT:
        text = f"{text[:DETAIL_LIMIT]}…[truncated {len(text) - DETAIL_LIMIT} chars]"
    return f"[{row.task}][{row.arm}][run {row.run}] detail: {text}"


class LineProgress:
    """One line per finished cell on a stream (stdout when not a TTY)."""

    def __init__(self, stream: TextIO | None = None, secrets: Sequence[str] = ()) -> None:
        self._stream = stream or sys.stdout
        self._secrets = tuple(secrets)

    def start(self, total: int) -> None:
        self.note(f"running {total} cell(s)")

    def cell_started(self, label: str) -> None:
        del label

    def cell_done(self, row: Row) -> None:
        self.note(cell_line(row))
        extra = detail_line(row, self._secrets)
        if extra:
            self.note(extra)

    def note(self, text: str) -> None:
        print(escape_controls(text), file=self._stream, flush=True)

    def close(self) -> None:
        return None


class BarProgress(LineProgress):
    """A rich progress bar (cells done/running/left, elapsed time) above the per-cell lines.

    ``force_terminal`` is for tests: rich then draws the bar even on a non-TTY stream.
    """

    def __init__(
        self, stream: TextIO | None = None, secrets: Sequence[str] = (), *, force_terminal: bool | None = None
    ) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        super().__init__(stream, secrets)
        self._console = Console(file=self._stream, force_terminal=force_terminal)
        self._bar = Progress(
            TextColumn("cells"),
            BarColumn(),
            TextColumn("{task.completed:.0f}/{task.total:.0f} done"),
            TextColumn("running {task.fields[running]}"),
            TextColumn("left {task.fields[left]}"),
            TextColumn("elapsed"),
            TimeElapsedColumn(),
            console=self._console,
        )
        self._task = self._bar.add_task("sweep", total=0, running=0, left=0)
        self._total = 0
        self._done = 0
        self._running = 0

    def _refresh(self, advance: int = 0) -> None:
        left = max(0, self._total - self._done - self._running)
        self._bar.update(self._task, advance=advance, running=self._running, left=left)

    def start(self, total: int) -> None:
        self._total = total
        self._bar.update(self._task, total=total)
        self._refresh()
        self._bar.start()

    def cell_started(self, label: str) -> None:
        del label
        self._running += 1
        self._refresh()

    def cell_done(self, row: Row) -> None:
        self._running = max(0, self._running - 1)
        self._done += 1
        self._refresh(advance=1)
        super().cell_done(row)

    def note(self, text: str) -> None:
        self._console.print(escape_controls(text), markup=False, highlight=False)

    def close(self) -> None:
        self._bar.stop()
