#!/usr/bin/env python3
"""Scale check (issue 33): a sweep of thousands of stand-in cells at ``--workers 16``, once.

Usage: python3 bench/scale_check.py [--tasks 1000] [--runs 1] [--workers 16] [--every 100]

The corpus is ``bench/load_sweep.py``'s (``--tasks`` copies of one tiny implementation task, two
arms, the stand-in agent under bwrap), so ``--tasks 1000 --runs 1`` is 2,000 cells. While
``python -m wfbench run`` runs, the wfbench process's ``VmRSS`` (and the summed RSS of its whole
process tree: agents, sandboxes, the provider), its threads and open file descriptors are
sampled every 0.25 s with the number of rows written; the timeline is reported every ``--every``
rows, so a harness whose memory, threads or descriptors grow with the cells shows it.
Afterwards, from the rows themselves: the makespan of the cells (first cell's start,
``recorded_at − cell_wall_s``, to the last row) against the lower bound
``max(longest cell, Σ cell_wall_s ÷ workers)``, and the same checks as the load sweep (rows lost or
duplicated, processes or mounts leaked). Prints one JSON object. Heavy: run it alone.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import load_sweep  # the corpus, the leak checks

SAMPLE_S = 0.25


def _status_field(pid: int, name: str) -> int:
    """A number of ``/proc/<pid>/status`` (``VmRSS`` in KiB, ``Threads``); 0 when it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{name}:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        return 0
    return 0


def _rss_kib(pid: int) -> int:
    """VmRSS of ``pid`` in KiB (0 when it is gone)."""
    return _status_field(pid, "VmRSS")


def _open_fds(pid: int) -> int:
    """How many file descriptors ``pid`` has open (0 when it is gone)."""
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def _tree_rss_kib(root_pid: int) -> int:
    """Summed VmRSS of ``root_pid`` and every live descendant (one pass over /proc)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path("/proc", entry, "stat").read_text()
        except OSError:
            continue
        parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    tree, frontier = {root_pid}, [root_pid]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in tree:
                tree.add(pid)
                frontier.append(pid)
    return sum(_rss_kib(pid) for pid in tree)


def _sample(proc: subprocess.Popen[bytes], results: Path, timeout: float) -> list[dict[str, float]]:
    """(elapsed s, rows written, wfbench VmRSS MiB, process tree RSS MiB) until the run exits."""
    started, timeline = time.monotonic(), []
    while proc.poll() is None:
        elapsed = time.monotonic() - started
        if elapsed > timeout:
            proc.terminate()  # wfbench stops cleanly on SIGTERM: the rows so far are whole
            proc.wait(60)
            break
        own = _rss_kib(proc.pid)
        if own:
            timeline.append(
                {
                    "t": round(elapsed, 1),
                    "rows": load_sweep._count_lines(results),
                    "rss_mib": round(own / 1024, 1),
                    "tree_rss_mib": round(_tree_rss_kib(proc.pid) / 1024, 1),
                    "threads": _status_field(proc.pid, "Threads"),
                    "fds": _open_fds(proc.pid),
                }
            )
        time.sleep(SAMPLE_S)
    proc.wait()
    return timeline


def _at_marks(timeline: list[dict[str, float]], every: int) -> list[dict[str, float]]:
    """The first sample at or past each multiple of ``every`` rows (the highest RSS seen up to it)."""
    marks, next_mark, peak = [], every, 0.0
    for sample in timeline:
        peak = max(peak, sample["rss_mib"])
        if sample["rows"] >= next_mark:
            marks.append({**sample, "peak_rss_mib_so_far": peak})
            while sample["rows"] >= next_mark:
                next_mark += every
    return marks


def _makespan(rows: list[dict[str, Any]], workers: int) -> dict[str, Any]:
    """The cells' makespan against max(longest cell, Σ cell wall ÷ workers), from the rows."""
    walls = [float(r["cell_wall_s"]) for r in rows if isinstance(r.get("cell_wall_s"), int | float)]
    ends = [dt.datetime.fromisoformat(r["recorded_at"]).timestamp() for r in rows if r.get("recorded_at")]
    if not walls or len(ends) != len(rows):
        return {"makespan_s": None}
    starts = [end - float(r.get("cell_wall_s") or 0.0) for end, r in zip(ends, rows, strict=True)]
    makespan = max(ends) - min(starts)
    longest = max(walls)
    bound = max(longest, sum(walls) / workers)
    return {
        "makespan_s": round(makespan, 1),
        "lower_bound_s": round(bound, 1),
        "makespan_ratio": round(makespan / bound, 3),
        "cell_wall_s_median": round(statistics.median(walls), 3),
        "cell_wall_s_max": round(max(walls), 3),
        "cell_wall_s_sum": round(sum(walls), 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--every", type=int, default=100, help="report the RSS every this many rows")
    parser.add_argument("--timeout", type=float, default=1800.0, help="stop the sweep (SIGTERM) after this")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="wfbench-scale-"))
    try:
        corpus = load_sweep.build_corpus(root / "corpus", args.tasks)
        out, tmp = root / "out", root / "tmp"
        tmp.mkdir()
        argv = [sys.executable, "-m", "wfbench", "run", str(corpus), "--out", str(out)]
        argv += [
            "--workers",
            str(args.workers),
            "--runs",
            str(args.runs),
            "--arms",
            ",".join(load_sweep.ARMS),
        ]
        load_start = os.getloadavg()[0]
        started = time.monotonic()
        with tempfile.TemporaryFile() as err:
            proc = subprocess.Popen(
                argv, stdout=subprocess.DEVNULL, stderr=err, env={**os.environ, "TMPDIR": str(tmp)}
            )
            timeline = _sample(proc, out / "results.jsonl", args.timeout)
            wall = time.monotonic() - started
            err.seek(0)
            stderr = err.read().decode(errors="replace")
        time.sleep(0.5)
        rows = load_sweep._rows(out / "results.jsonl")
        cells = Counter((r["task"], r["arm"], r["run"]) for r in rows)
        planned = args.tasks * len(load_sweep.ARMS) * args.runs
        report = {
            "cells_planned": planned,
            "rows_written": len(rows),
            "duplicate_cells": sum(n - 1 for n in cells.values()),
            "rows_by_error_kind": dict(Counter(str(r.get("error_kind") or "ok") for r in rows)),
            "exit_code": proc.returncode,
            "workers": args.workers,
            "process_wall_s": round(wall, 1),
            **_makespan(rows, args.workers),
            "rss_timeline": _at_marks(timeline, args.every),
            "peak_rss_mib": max((s["rss_mib"] for s in timeline), default=None),
            "peak_tree_rss_mib": max((s["tree_rss_mib"] for s in timeline), default=None),
            "leaked_processes": load_sweep.processes_mentioning(str(root)),
            "leaked_mounts": load_sweep.mounts_mentioning(str(root)),
            "loadavg_start_end": [round(load_start, 1), round(os.getloadavg()[0], 1)],
        }
        print(json.dumps(report, indent=2))
        if proc.returncode != 0:
            print(stderr[-3000:], file=sys.stderr)
        return 0 if len(rows) == planned and not report["duplicate_cells"] else 1
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
