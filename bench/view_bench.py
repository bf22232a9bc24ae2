#!/usr/bin/env python3
"""``wfbench view`` of a very large sweep: how soon does its index answer over real HTTP? (issue 33)

Usage: python3 bench/view_bench.py [--rows 1000000] [--wait-overview 0] [--keep DIR] [--src OTHER/src]

Writes a synthetic sweep directory of ``--rows`` rows in ``bench/gate_bench.py``'s shape (5 arms ×
5 runs per task, the realistic mix of error kinds; a block of 1,000 tasks is generated once and
repeated with renumbered task ids, so a million rows take seconds to write, not minutes), starts
``python -m wfbench view DIR --port 0`` on loopback, and times, from the process's start:
the URL it prints, the first ``GET /`` answered in full, and a ``cells.html`` page from the middle
of the file (its cursor is a byte offset). With ``--wait-overview S`` it also polls ``live.txt``
for up to S seconds and reports when the overview replaced the listing, with the viewer's peak
RSS. Prints one JSON object. ``--keep DIR`` writes (or reuses) the sweep there.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gate_bench  # the row generator

ROOT = Path(__file__).resolve().parents[1]
BLOCK_TASKS = 1000
_TASK = re.compile(rb'"task": "task-(\d+)"')


def write_sweep(directory: Path, rows: int) -> int:
    """``results.jsonl`` of about ``rows`` rows in ``directory``; the rows written."""
    per_task = len(gate_bench.ARMS) * gate_bench.RUNS
    block = b"".join(
        json.dumps(row, ensure_ascii=False).encode() + b"\n"
        for row in gate_bench.synthetic_rows(BLOCK_TASKS, seed=7)
    )
    directory.mkdir(parents=True, exist_ok=True)
    target, written = directory / "results.jsonl", 0
    with target.open("wb") as handle:
        for index in range(-(-rows // (BLOCK_TASKS * per_task))):
            handle.write(_TASK.sub(_renumber(index * BLOCK_TASKS), block))
            written += BLOCK_TASKS * per_task
    return written


def _renumber(shift: int):  # type: ignore[no-untyped-def]
    """The substitution that moves a block's task ids up by ``shift``."""
    return lambda match: b'"task": "task-%06d"' % (int(match[1]) + shift)


def _get(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=120) as response:  # loopback: our own server
        return response.status, response.read()


def _peak_rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def time_view(directory: Path, wait_overview: float, src: Path) -> dict[str, object]:
    """Start the viewer on ``directory`` and time its first pages (see the module docstring)."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    argv = [sys.executable, "-m", "wfbench", "view", str(directory), "--port", "0"]
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        url = line.split(" at ", 1)[1].split()[0]
        listening = time.perf_counter() - started
        status, body = _get(url)
        first = time.perf_counter() - started
        report: dict[str, object] = {
            "url_printed_s": round(listening, 3),
            "index_answered_s": round(first, 3),
            "index_status": status,
            "index_bytes": len(body),
            "index_is_listing": b"Reading the sweep" in body,
        }
        middle = (directory / "results.jsonl").stat().st_size // 2
        before = time.perf_counter()
        status, body = _get(f"{url}cells.html?after={middle}")
        report["middle_page_s"] = round(time.perf_counter() - before, 3)
        report["middle_page_rows"] = body.count(b"<tr><td>")
        if wait_overview > 0:
            deadline = time.perf_counter() + wait_overview
            while time.perf_counter() < deadline:
                if _get(f"{url}live.txt")[1] != b"loading":
                    report["overview_ready_s"] = round(time.perf_counter() - started, 1)
                    break
                time.sleep(1.0)
            report["viewer_peak_rss_mib"] = _peak_rss_mib(proc.pid)
        return report
    finally:
        proc.terminate()
        proc.wait(30)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--wait-overview", type=float, default=0.0, help="seconds to wait for the overview")
    parser.add_argument("--keep", type=Path, help="write (or reuse) the sweep in this directory")
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="the wfbench sources to time")
    args = parser.parse_args()
    directory = args.keep or Path(tempfile.mkdtemp(prefix="wfbench-view-bench-"))
    try:
        results = directory / "results.jsonl"
        began = time.perf_counter()
        kept = results.exists()
        rows = sum(1 for _ in results.open("rb")) if kept else write_sweep(directory, args.rows)
        summary: dict[str, object] = {
            "rows": rows,
            "results_mib": round(results.stat().st_size / 2**20, 1),
            "written_s": round(time.perf_counter() - began, 1),
            "load_start": round(os.getloadavg()[0], 1),
        }
        summary.update(time_view(directory, args.wait_overview, args.src))
        summary["load_end"] = round(os.getloadavg()[0], 1)
        print(json.dumps(summary, indent=2))
        return 0
    finally:
        if args.keep is None:
            shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
