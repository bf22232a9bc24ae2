"""How a sweep shows its progress: a live view on a terminal, plain lines and a heartbeat off one,
JSON events for other tools, and the events of ``wfbench.log``. All are :class:`SweepObserver` s.

* :class:`LiveProgress` (a TTY): one live view, redrawn twice a second while sessions run — done,
  running and left, the ETA (mean wall time of the cells finished so far, else of prior rows), the
  spend so far, resolved/failed per arm, and each running cell with its phase and elapsed time —
  above compact, coloured per-cell lines.
* :class:`PlainProgress` (not a TTY): the per-cell line (reference scheduler_tasks.md §6: task,
  arm, run, resolved, quality, tokens, cost, duration, error kind, ``n/a`` where unmeasured) and
  the redacted failure detail; every ``heartbeat_s`` (60 s) a heartbeat line, so a log never looks
  hung during a long session.
* :class:`JsonProgress` (``--json``): one JSON object per line — ``sweep_started``, ``cell_started``,
  ``phase_started``, ``phase_finished``, ``cell_finished``, ``note``, ``heartbeat``, ``sweep_finished``.
* :class:`LogObserver`: ``wfbench.log`` events with a level (phase timings, cancellation, the
  breaker, notes).

:class:`Tally` folds the events into the numbers every view shows.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from wfbench.app.cell.events import (
    CellFinished,
    CellKey,
    CellStarted,
    CellTimings,
    Note,
    PhaseFinished,
    PhaseStarted,
    SweepEvent,
    SweepFinished,
    SweepObserver,
    SweepStarted,
)
from wfbench.app.sweep.spend import RowSpend
from wfbench.domain.metering.evidence import Spend as MeteredSpend
from wfbench.domain.redaction import escape_controls, redact_text
from wfbench.domain.results.rows import ErrorKind, Row

DETAIL_LIMIT = 1200
HEARTBEAT_S = 60.0

__all__ = [
    "HEARTBEAT_S",
    "JsonProgress",
    "LiveProgress",
    "LogObserver",
    "PlainProgress",
    "SweepObserver",
    "Tally",
    "cell_line",
    "detail_line",
]


def _number(value: float | int | None, fmt: str) -> str:
    return "n/a" if value is None else format(value, fmt)


def _unit(value: float | None, fmt: str, prefix: str, suffix: str) -> str:
    """``$0.1234`` / ``12.5s``, or a bare ``n/a`` (never ``$n/a`` or ``n/as``)."""
    return "n/a" if value is None else f"{prefix}{format(value, fmt)}{suffix}"


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
        f" cost={_unit(cost, '.4f', '$', '')} took={_unit(took, '.1f', '', 's')} error_kind={kind}"
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


def _label(cell: CellKey) -> str:
    return f"{cell[0]}/{cell[1]}/{cell[2]}"


def _clock(seconds: float) -> str:
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    return f"{hours}h{rest // 60:02d}m{rest % 60:02d}s" if hours else f"{rest // 60}m{rest % 60:02d}s"


#: The wire meter's spend so far (the key proxy's, in-flight cells included); None: not metered.
MeteredSource = Callable[[], MeteredSpend | None]


class Tally:
    """The running numbers of a sweep, folded from its events (not thread-safe: callers lock).

    Spend so far is the wire meter's (``metered``: every request the key proxy priced, sessions
    still running included) when the sweep has one, else the folded rows' ``cost_usd``; either
    way plus what the directory's earlier rows cost (a resume).
    """

    def __init__(
        self, now: Callable[[], float] = time.monotonic, metered: MeteredSource | None = None
    ) -> None:
        self._now = now
        self._metered = metered
        self.started_at = now()
        self.planned = self.to_run = self.done = 0
        self.workers = 1
        self.expected_cell_s: float | None = None
        self.running: dict[CellKey, tuple[str, float]] = {}
        self.per_arm: dict[str, list[int]] = {}
        self._wall_sum, self._wall_count = 0.0, 0  # a running mean: nothing grows with the sweep
        self.spend = RowSpend()
        self.spent_before: float | None = None

    def fold(self, event: SweepEvent) -> None:
        """Take one event into the numbers."""
        if isinstance(event, SweepStarted):
            self.planned, self.to_run, self.workers = event.planned, event.to_run, max(1, event.workers)
            self.expected_cell_s, self.spent_before = event.expected_cell_s, event.spent_before_usd
            self.per_arm = {arm: [0, 0] for arm in event.arms}
        elif isinstance(event, CellStarted):
            self.running[event.cell] = ("starting", self._now())
        elif isinstance(event, PhaseStarted):
            self.running[event.cell] = (event.phase, self._now())
        elif isinstance(event, PhaseFinished) and event.cell in self.running:
            self.running[event.cell] = ("checking", self._now())  # evidence checks, verify, the oracle
        elif isinstance(event, CellFinished):
            row = event.row
            self.running.pop(row.cell, None)
            self.done += 1
            tally = self.per_arm.setdefault(row.arm, [0, 0])
            tally[0 if row.resolved else 1] += 1
            wall = row.extra.get("cell_wall_s")
            if isinstance(wall, int | float) and not isinstance(wall, bool):
                self._wall_sum += float(wall)
                self._wall_count += 1
            self.spend.add(row)

    @property
    def left(self) -> int:
        """Cells not started yet."""
        return max(0, self.to_run - self.done - len(self.running))

    def eta_s(self) -> float | None:
        """Seconds until the last cell ends: cells still to finish × mean cell wall time ÷ workers."""
        mean = self._wall_sum / self._wall_count if self._wall_count else self.expected_cell_s
        if mean is None:
            return None
        return (self.left + len(self.running)) * mean / self.workers

    def metered(self) -> MeteredSpend | None:
        """The wire meter's reading now (None: this sweep has no meter, or it failed to answer)."""
        if self._metered is None:
            return None
        try:
            return self._metered()
        except Exception:  # a view never stops a sweep; the rows' figure stands in
            return None

    def spend_source(self) -> str:
        """``wire`` when the figure is the wire meter's, ``rows`` when it is the rows' ``cost_usd``."""
        reading = self.metered()
        return "wire" if reading is not None and reading.spent_usd is not None else "rows"

    def spent_usd(self) -> float | None:
        """This sweep's spend so far (metered at the wire if it can be) plus the earlier rows' cost."""
        reading = self.metered()
        now = reading.spent_usd if reading is not None and reading.spent_usd is not None else None
        if now is None:
            now = self.spend.spent().usd
        if now is None and self.spent_before is None:
            return None
        return round((now or 0.0) + (self.spent_before or 0.0), 6)

    def budget_usd(self) -> float | None:
        """``--max-cost`` (None: no budget, or no meter)."""
        reading = self.metered()
        return None if reading is None else reading.budget_usd

    def elapsed_s(self) -> float:
        """Seconds since the sweep started."""
        return self._now() - self.started_at

    def running_cells(self) -> list[tuple[str, str, float]]:
        """``(cell label, phase, seconds in that phase)`` for every running cell, oldest first."""
        now = self._now()
        rows = sorted(self.running.items(), key=lambda item: item[1][1])
        return [(_label(cell), phase, now - since) for cell, (phase, since) in rows]

    def status(self) -> str:
        """``done 3/8, running 2, left 3, ETA 1m10s, spent $0.1234, elapsed 0m42s``."""
        eta = self.eta_s()
        spent = self.spent_usd()
        eta_text = "n/a" if eta is None else _clock(eta)
        spent_text = "n/a" if spent is None else f"${spent:.4f}"
        budget = self.budget_usd()
        if budget is not None:
            spent_text += f" of ${budget:.4f}"
        return (
            f"done {self.done}/{self.to_run}, running {len(self.running)}, left {self.left},"
            f" ETA {eta_text}, spent {spent_text}, elapsed {_clock(self.elapsed_s())}"
        )

    def arms_text(self) -> str:
        """``workflow 3✓ 1✗ · baseline 2✓ 0✗``."""
        return " · ".join(f"{arm} {ok}✓ {bad}✗" for arm, (ok, bad) in self.per_arm.items())


class _Heartbeat:
    """Calls ``beat`` every ``interval_s`` seconds on a daemon thread until stopped."""

    def __init__(self, interval_s: float, beat: Callable[[], None]) -> None:
        self._interval = interval_s
        self._beat = beat
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="wfbench-heartbeat", daemon=True)

    def start(self) -> None:
        if self._interval > 0 and not self._thread.is_alive():
            self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self._beat()

    def stop(self) -> None:
        self._stop.set()


class _LineObserver:
    """A sweep observer writing lines on a stream, with a tally and a heartbeat thread (``_beat``)."""

    def __init__(
        self,
        stream: TextIO | None = None,
        secrets: Sequence[str] = (),
        *,
        heartbeat_s: float = HEARTBEAT_S,
        metered: MeteredSource | None = None,
    ) -> None:
        self._stream = stream or sys.stdout
        self._secrets = tuple(secrets)
        self._lock = threading.Lock()
        self.tally = Tally(metered=metered)
        self._heartbeat = _Heartbeat(heartbeat_s, self._beat)

    def _beat(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Stop the heartbeat."""
        self._heartbeat.stop()


class PlainProgress(_LineObserver):
    """Plain lines on a stream (stdout off a TTY): per-cell lines, notes, and a heartbeat."""

    def notify(self, event: SweepEvent) -> None:
        """Print what a person reading a log needs."""
        with self._lock:
            self.tally.fold(event)
        if isinstance(event, SweepStarted):
            self._print(f"running {event.to_run} cell(s)")
            self._heartbeat.start()
        elif isinstance(event, CellFinished):
            self._print(cell_line(event.row))
            extra = detail_line(event.row, self._secrets)
            if extra:
                self._print(extra)
        elif isinstance(event, Note):
            self._print(event.text)
        elif isinstance(event, SweepFinished):
            self._heartbeat.stop()

    def _beat(self) -> None:
        with self._lock:
            status = self.tally.status()
            running = ", ".join(
                f"{label} {phase} {_clock(s)}" for label, phase, s in self.tally.running_cells()
            )
        self._print(f"heartbeat: {status}" + (f"; running: {running}" if running else ""))

    def _print(self, text: str) -> None:
        with self._lock:
            print(escape_controls(text), file=self._stream, flush=True)


class JsonProgress(_LineObserver):
    """``--json``: one JSON event per line on a stream, for tools that drive wfbench."""

    def notify(self, event: SweepEvent) -> None:
        """Write the event as one line (a cell's step timings go to ``wfbench.log`` only)."""
        if isinstance(event, CellTimings):
            return
        with self._lock:
            self.tally.fold(event)
        payload = self._payload(event)
        if isinstance(event, SweepStarted):
            self._heartbeat.start()
        elif isinstance(event, SweepFinished):
            self._heartbeat.stop()
        self.emit(payload)

    def _payload(self, event: SweepEvent) -> dict[str, Any]:
        assert not isinstance(event, CellTimings)
        if isinstance(event, SweepStarted):
            return {
                "event": "sweep_started",
                "planned": event.planned,
                "to_run": event.to_run,
                "already": event.already,
                "reused": event.reused,
                "workers": event.workers,
                "arms": list(event.arms),
                "out_dir": event.out_dir,
            }
        if isinstance(event, CellStarted):
            return {"event": "cell_started", **_cell(event.cell)}
        if isinstance(event, PhaseStarted):
            return {"event": "phase_started", **_cell(event.cell), "phase": event.phase}
        if isinstance(event, PhaseFinished):
            return {
                "event": "phase_finished",
                **_cell(event.cell),
                "phase": event.phase,
                "wall_s": event.wall_s,
                "ok": event.ok,
                "error_kind": event.error_kind,
                "cost_usd": event.cost_usd,
            }
        if isinstance(event, CellFinished):
            row = event.row
            return {
                "event": "cell_finished",
                **_cell(row.cell),
                "resolved": row.resolved,
                "error_kind": None if row.error_kind is None else row.error_kind.value,
                "cost_usd": row.cost_usd,
                "input_tokens": row.input_tokens,
                "output_tokens": row.output_tokens,
                "duration_s": row.duration_s,
                "cell_wall_s": row.extra.get("cell_wall_s"),
            }
        if isinstance(event, Note):
            return {"event": "note", "level": event.level, "text": redact_text(event.text, self._secrets)}
        with self._lock:
            spend = self._spend()
        return {
            "event": "sweep_finished",
            "exit_code": event.exit_code,
            "cancelled": event.cancelled,
            "tripped": event.tripped,
            "planned": event.planned,
            "completed": event.completed,
            "decisions": [{"candidate_arm": c, "decision": d} for c, d in event.decisions],
            **spend,
        }

    def _spend(self) -> dict[str, Any]:
        """``spent_usd`` (wire-metered when the sweep has a meter), its ``spend_source`` and the budget."""
        tally = self.tally
        return {
            "spent_usd": tally.spent_usd(),
            "spend_source": tally.spend_source(),
            "max_cost_usd": tally.budget_usd(),
        }

    def _beat(self) -> None:
        with self._lock:
            tally = self.tally
            payload = {
                "event": "heartbeat",
                "done": tally.done,
                "to_run": tally.to_run,
                "running": [
                    {"cell": label, "phase": phase, "elapsed_s": round(s, 1)}
                    for label, phase, s in tally.running_cells()
                ],
                "left": tally.left,
                "eta_s": _rounded(tally.eta_s()),
                **self._spend(),
                "elapsed_s": round(tally.elapsed_s(), 1),
            }
        self.emit(payload)

    def emit(self, payload: dict[str, Any]) -> None:
        """Write one JSON line (any caller: the CLI adds its own events, e.g. the summary)."""
        line = json.dumps(payload, ensure_ascii=False, allow_nan=False)
        with self._lock:
            print(line, file=self._stream, flush=True)


def _cell(cell: CellKey) -> dict[str, Any]:
    return {"task": cell[0], "arm": cell[1], "run": cell[2]}


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


class LiveProgress:
    """The live view on a terminal (rich), redrawn twice a second, above compact coloured cell lines.

    ``force_terminal`` is for tests: rich then draws on a non-TTY stream.
    """

    def __init__(
        self,
        stream: TextIO | None = None,
        secrets: Sequence[str] = (),
        *,
        force_terminal: bool | None = None,
        metered: MeteredSource | None = None,
    ) -> None:
        from rich.console import Console
        from rich.live import Live

        self._secrets = tuple(secrets)
        self._lock = threading.Lock()
        self.tally = Tally(metered=metered)
        self._console = Console(file=stream or sys.stdout, force_terminal=force_terminal, highlight=False)
        self._live = Live(
            console=self._console, refresh_per_second=2, transient=True, get_renderable=self._view
        )
        self._started = False

    def _view(self) -> Any:
        from rich.table import Table
        from rich.text import Text

        with self._lock:
            status = self.tally.status()
            arms = self.tally.arms_text()
            running = self.tally.running_cells()
        table = Table.grid(padding=(0, 2))
        table.add_row(Text(f"cells: {status}", style="bold"))
        if arms:
            table.add_row(Text(f"arms: {arms}"))
        for label, phase, seconds in running:
            table.add_row(Text(f"  ▶ {label}  {phase}  {_clock(seconds)}", style="cyan"))
        return table

    def notify(self, event: SweepEvent) -> None:
        """Fold the event; print cell lines and notes above the live view."""
        with self._lock:
            self.tally.fold(event)
        if isinstance(event, SweepStarted) and not self._started:
            self._started = True
            self._console.print(f"running {event.to_run} cell(s)", markup=False)
            self._live.start()
        elif isinstance(event, CellFinished):
            row = event.row
            style = "green" if row.resolved else "yellow" if row.error_kind is None else "red"
            mark = "✓" if row.resolved else "✗"
            self._console.print(f"{mark} {escape_controls(cell_line(row))}", style=style, markup=False)
            extra = detail_line(row, self._secrets)
            if extra:
                self._console.print(f"  {extra}", style="dim", markup=False)
        elif isinstance(event, Note):
            style = {"warning": "yellow", "error": "bold red"}.get(event.level, "")
            self._console.print(escape_controls(event.text), style=style, markup=False)
        elif isinstance(event, SweepFinished):
            self.close()
        if self._started:
            self._live.refresh()

    def close(self) -> None:
        """Stop redrawing (the live view is removed; the cell lines stay)."""
        if self._started:
            self._live.stop()
            self._started = False


class LogObserver:
    """``wfbench.log``: phase and cell-step timings, cancellation, breaker trips, notes; each with a level."""

    def __init__(self, log: Callable[..., None]) -> None:
        self._log = log

    def notify(self, event: SweepEvent) -> None:
        """Log the events a post-mortem needs (finished cells are logged by the sweep itself)."""
        if isinstance(event, PhaseFinished):
            self._log(
                "phase_finished",
                level="info" if event.ok else "warning",
                **_cell(event.cell),
                phase=event.phase,
                wall_s=event.wall_s,
                ok=event.ok,
                error_kind=event.error_kind,
                cost_usd=event.cost_usd,
            )
        elif isinstance(event, CellTimings):
            steps = dict(event.steps)
            self._log("cell_timings", level="info", **_cell(event.cell), wall_s=event.wall_s, steps=steps)
        elif isinstance(event, Note):
            self._log("note", level=event.level, text=event.text)
        elif isinstance(event, SweepStarted):
            self._log(
                "sweep_plan",
                level="info",
                planned=event.planned,
                to_run=event.to_run,
                already=event.already,
                reused=event.reused,
                workers=event.workers,
            )
        elif isinstance(event, SweepFinished) and event.cancelled:
            self._log("sweep_cancelled", level="warning", planned=event.planned, completed=event.completed)

    def close(self) -> None:
        """Nothing to release."""
