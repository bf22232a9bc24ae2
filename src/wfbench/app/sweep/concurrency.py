"""The concurrency limit's history: as log events, as ``concurrency.json``, as report lines.

The packed scheduler halves its limit on concurrent cells when the provider throttles (HTTP
429/529) and raises it again as cells finish (:mod:`wfbench.domain.sweep.pacing`). Every change
is logged as it happens (``concurrency_limit``, one structured event each), the whole history is
written beside ``results.jsonl`` as ``concurrency.json`` when the limit ever moved or a cell ran
again, and report.md lists it (``wfbench report`` reads that file back, so a regenerated report
shows it too).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from wfbench.app.sweep.scheduler import LimitEvent
from wfbench.domain.ports import SweepDirectory

__all__ = ["CONCURRENCY_NAME", "limit_record", "read_history", "report_lines", "write_history"]

CONCURRENCY_NAME = "concurrency.json"


def limit_record(event: LimitEvent) -> dict[str, Any]:
    """One limit change as plain data (what the log event and the file carry)."""
    change = event.change
    return {
        "at_s": round(event.at, 3),
        "old": change.old,
        "new": change.new,
        "reason": change.reason,
        "status": change.status,
        "task": event.cell.task,
        "arm": event.cell.arm,
        "run": event.cell.run,
    }


def write_history(
    directory: SweepDirectory, records: Sequence[Mapping[str, Any]], *, workers: int, retries: int
) -> None:
    """``concurrency.json`` in the sweep's directory when anything happened (else nothing is written)."""
    if not records and not retries:
        return
    document = {"workers": workers, "retries": retries, "limit_history": [dict(r) for r in records]}
    directory.write(CONCURRENCY_NAME, (json.dumps(document, indent=2) + "\n").encode("utf-8"))


def read_history(out_dir: str) -> dict[str, Any] | None:
    """What :func:`write_history` wrote, or ``None`` (no file, or not the shape it writes)."""
    try:
        with open(os.path.join(out_dir, CONCURRENCY_NAME), encoding="utf-8") as handle:
            document = json.load(handle)
    except (OSError, ValueError):
        return None
    if not isinstance(document, dict) or not isinstance(document.get("limit_history"), list):
        return None
    return document


def report_lines(document: Mapping[str, Any] | None) -> tuple[str, ...]:
    """report.md's lines for the history: one summary line, then one line per change."""
    if not document:
        return ()
    history: Iterable[Any] = document.get("limit_history") or []
    changes = [entry for entry in history if isinstance(entry, Mapping)]
    lines = [
        f"{document.get('retries', 0)} throttled attempt(s) ran again; the limit on concurrent cells "
        f"(at most {document.get('workers')}) changed {len(changes)} time(s)."
    ]
    for entry in changes:
        status = f" {entry.get('status')}" if entry.get("status") is not None else ""
        lines.append(
            f"{entry.get('at_s')} s: {entry.get('old')} → {entry.get('new')} ({entry.get('reason')}{status},"
            f" {entry.get('task')}/{entry.get('arm')}/run {entry.get('run')})"
        )
    return tuple(lines)
