#!/usr/bin/env python3
"""Demo sweep benchmark: wall time of `wfbench run` (the built-in offline demo) and the median
harness overhead per cell (cell wall time minus the agent's own session time).

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
    overheads = [
        r["cell_wall_s"] - (r["duration_s"] or 0.0) for r in rows if r.get("cell_wall_s") is not None
    ]
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
                "median_harness_overhead_s": round(statistics.median(overheads), 3),
                "median_agent_session_s": round(statistics.median((r["duration_s"] or 0.0) for r in rows), 3),
            },
            indent=2,
        )
    )
    return 0 if done.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
