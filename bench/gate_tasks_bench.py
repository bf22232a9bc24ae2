#!/usr/bin/env python3
"""Is ``wfbench gate`` linear in rows? The same number of rows over 10× the tasks (issue 33).

Two synthetic ``results.jsonl`` files in ``bench/gate_bench.py``'s shape (5 arms, the realistic mix
of error kinds, review fields on the review arms) with the same number of rows: ``--tasks`` tasks ×
``--runs`` runs, and 10 × ``--tasks`` tasks × ``--runs`` ÷ 10 runs. ``wfbench gate FILE`` (and
``gate FILE --json``) runs on each, alternately, ``--pairs`` times; each child's CPU time (user +
system, ``wait4``) is the figure, since on a shared machine CPU time moves far less with the load
than wall time. Printed: the median over pairs of CPU(many tasks) ÷ CPU(few tasks). Target ≤ 1.5.

Usage: python3 bench/gate_tasks_bench.py [--tasks 300] [--runs 20] [--pairs 5] [--src OTHER/src]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gate_bench  # the sibling script: its row generator and its timer

ROOT = Path(__file__).resolve().parents[1]


def write(path: Path, tasks: int, runs: int) -> int:
    """The synthetic rows of ``tasks`` × ``runs`` × 5 arms at ``path``; the row count."""
    gate_bench.RUNS = runs
    gate_bench.write_rows(path, tasks, seed=7)
    return sum(1 for _ in path.open(encoding="utf-8"))


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=300)
    parser.add_argument("--runs", type=int, default=20, help="a multiple of 10")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--src", type=Path, default=ROOT / "src")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(args.src)}
    summary: dict[str, object] = {"src": str(args.src), "load_start": round(os.getloadavg()[0], 1)}
    with tempfile.TemporaryDirectory(prefix="wfbench-gate-tasks-") as tmp:
        few, many = Path(tmp) / "few.jsonl", Path(tmp) / "many.jsonl"
        rows = (write(few, args.tasks, args.runs), write(many, args.tasks * 10, args.runs // 10))
        summary["rows"] = rows
        summary["tasks"] = [args.tasks, args.tasks * 10]
        for label, extra in (("text", []), ("json", ["--json"])):
            ratios, cpus = [], []
            for _ in range(args.pairs):
                pair = []
                for path in (few, many):
                    argv = [sys.executable, "-m", "wfbench", "gate", str(path), *extra]
                    _wall, _rss, code, cpu = gate_bench.timed(argv, env)
                    if code not in (0, 1, 3):
                        raise SystemExit(f"gate exited {code}")
                    pair.append(cpu)
                ratios.append(pair[1] / pair[0])
                cpus.append(pair)
                print(
                    f"{label}: few {pair[0]:.2f} CPU-s, many {pair[1]:.2f} CPU-s, ratio {ratios[-1]:.2f}",
                    flush=True,
                )
            summary[label] = {
                "cpu_few_median": round(statistics.median(c[0] for c in cpus), 2),
                "cpu_many_median": round(statistics.median(c[1] for c in cpus), 2),
                "ratio_median": round(statistics.median(ratios), 3),
                "ratio_range": [round(min(ratios), 3), round(max(ratios), 3)],
            }
    summary["load_end"] = round(os.getloadavg()[0], 1)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
