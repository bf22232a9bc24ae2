#!/usr/bin/env python3
"""Demo sweep benchmark: wall time of `wfbench run` (the built-in offline demo) and the median
harness overhead per cell (cell wall time minus the agent's own session time).

The session time is the agent's own ``duration_ms`` read from each session's ``result`` event
in the cell's transcripts (``transcript_artifacts``), summed per cell: the row's ``duration_s``
is rounded (a 40 ms stand-in session is ``0.0`` there), which made the "overhead" the whole cell.
A cell with no readable session time is left out of the overhead and counted as unmeasured.

Usage: python3 bench/demo_bench.py [--workers N] [--agent standin|claude]
Prints one JSON object. Needs bubblewrap (the demo's default sandbox).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def session_seconds(out: Path, row: dict[str, Any]) -> float | None:
    """The summed ``duration_ms`` of the ``result`` events in the row's transcripts, in seconds."""
    total, found = 0.0, False
    for artifact in row.get("transcript_artifacts") or []:
        path = out / str(artifact.get("path", ""))
        if not path.is_file():
            continue
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and event.get("type") == "result":
                ms = event.get("duration_ms")
                if isinstance(ms, int | float) and not isinstance(ms, bool):
                    total += ms / 1000
                    found = True
    return total if found else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--agent", default="standin")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="wfbench-demo-bench-") as tmp:
        out = Path(tmp) / "out"
        started = time.monotonic()
        argv = [sys.executable, "-m", "wfbench", "run", "--out", str(out), "--workers", str(args.workers)]
        done = subprocess.run(
            [*argv, "--agent", args.agent],
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.monotonic() - started
        rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
        sessions = {id(r): session_seconds(out, r) for r in rows}
    measured = [r for r in rows if r.get("cell_wall_s") is not None and sessions[id(r)] is not None]
    overheads = [r["cell_wall_s"] - sessions[id(r)] for r in measured]
    cells = [r["cell_wall_s"] for r in rows if r.get("cell_wall_s") is not None]
    print(
        json.dumps(
            {
                "exit_code": done.returncode,
                "workers": args.workers,
                "agent": args.agent,
                "cells": len(rows),
                "demo_wall_s": round(wall, 2),
                "median_cell_wall_s": round(statistics.median(cells), 3),
                "median_harness_overhead_s": round(statistics.median(overheads), 3) if overheads else None,
                "median_agent_session_s": round(statistics.median(sessions[id(r)] for r in measured), 3)
                if measured
                else None,
                "cells_without_session_time": len(rows) - len(measured),
            },
            indent=2,
        )
    )
    return 0 if done.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
