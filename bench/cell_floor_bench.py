#!/usr/bin/env python3
"""A demo cell against a hand-written floor loop doing the same essential work (issue 33).

The **harness** side is ``wfbench run`` on the built-in demo, task ``fix-median``, arm ``baseline``
(one stand-in session, verify, the hidden oracle, churn and patch), ``--runs K --workers 1``; a
cell's time is its row's ``cell_wall_s`` (``run_cell`` from start to row, removal included).

The **floor** does the essential work of such a cell with plain subprocesses and nothing else:

1. ``cp -a --reflink=auto`` the task's snapshot (the one the harness built, from its sweep);
2. the stand-in session (``python3 -I -S standin.py -p …``, prompt on stdin) in plain bwrap,
   sharing the host network and talking TCP to a scripted provider on loopback;
3. verify (``python -m unittest discover -s tests``) in plain bwrap, workspace read-only,
   network unshared (every bwrap here hides the runtime's ``site-packages``, as the harness does);
4. the oracle (``run_oracle.py`` over the staged hidden files) in plain bwrap, likewise;
5. ``git add -A`` and ``git diff --cached --binary --shortstat`` (two git processes);
6. ``rm -rf`` of the copy (``shutil.rmtree``).

Both run the same number of cells, one command after the other, ``--pairs`` times; each pair's
ratio is median(harness cell) ÷ median(floor cell), and the figure is the median of the pairs'
ratios (the shared machine's load hits both sides of a pair alike). Target ≤ 1.3.

Usage: python3 bench/cell_floor_bench.py [--pairs 5] [--cells 5] [--src SRC] [--before OLD/src]
``--src`` runs the harness side from another checkout; ``--before OLD/src`` adds a third command
to every pair (the harness from OLD), so the before and after ratios are measured side by side.
Prints one line per pair and a JSON summary. Needs bubblewrap.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON = os.path.realpath(sys.executable)
RUNTIME = os.path.realpath(sys.base_prefix)
if not PYTHON.startswith(RUNTIME + os.sep):
    PYTHON = os.path.join(RUNTIME, "bin", f"python{sys.version_info.major}.{sys.version_info.minor}")
PROMPT = (
    "median() in calc/stats.py returns the wrong value when the list has an even number of values: it "
    "must return the mean of the two middle values. Fix it and add a test.\n\nImplement the change and "
    "verify it by running the relevant tests yourself."
)
GIT_ENV = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C"}


def harness_cells(src: Path, out: Path, cells: int) -> list[float]:
    """``wfbench run`` of ``cells`` baseline cells of fix-median; their ``cell_wall_s``."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    argv = [sys.executable, "-m", "wfbench", "run", "--out", str(out), "--tasks", "fix-median"]
    argv += ["--arms", "baseline", "--runs", str(cells), "--workers", "1"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, timeout=600)
    if done.returncode not in (0, 1):
        raise SystemExit(f"wfbench run failed ({done.returncode}): {done.stderr[-2000:]}")
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    return [float(row["cell_wall_s"]) for row in rows]


def _system() -> list[str]:
    args: list[str] = []
    for tree in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64"):
        if os.path.islink(tree):
            args += ["--symlink", os.readlink(tree), tree]
        elif os.path.isdir(tree):
            args += ["--ro-bind", tree, tree]
    return args


def bwrap(workspace: str, *, writable: bool, network: bool, extra: list[str]) -> list[str]:
    """A plain bwrap command line: system trees and the runtime read-only, private /tmp and home."""
    args = ["bwrap", "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    args += [] if network else ["--unshare-net"]
    args += ["--die-with-parent", "--new-session", *_system(), "--ro-bind", RUNTIME, RUNTIME]
    for site in glob.glob(os.path.join(RUNTIME, "lib", "python3*", "site-packages")):
        args += ["--tmpfs", site]  # no host package importable (as the harness: its .pth files cost)
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/home/agent"]
    args += ["--bind" if writable else "--ro-bind", workspace, "/workspace", *extra, "--chdir", "/workspace"]
    return args


class Floor:
    """The floor loop's fixed parts: the snapshot, the provider, the stand-in and the oracle files."""

    def __init__(self, snapshot: str, base_url: str, corpus: Path, scratch: Path) -> None:
        self.snapshot = snapshot
        self.base_url = base_url
        self.standin = str(ROOT / "src" / "wfbench" / "adapters" / "agents" / "standin.py")
        self.oracle = scratch / "oracle"
        self.oracle.mkdir()
        for name, target in (("fix_median_oracle.py", "test_fix_median_oracle.py"), ("run_oracle.py", None)):
            shutil.copy(corpus / "oracles" / name, self.oracle / (target or name))
        self.scratch = scratch

    def cell(self, number: int) -> float:
        started = time.monotonic()
        ws = str(self.scratch / f"ws-{number}")
        subprocess.run(["cp", "-a", "--reflink=auto", "--", self.snapshot, ws], check=True)
        env = {"PATH": "/usr/bin:/bin", "HOME": "/home/agent", "ANTHROPIC_BASE_URL": self.base_url}
        env["ANTHROPIC_API_KEY"] = "floor"
        session = bwrap(ws, writable=True, network=True, extra=["--ro-bind", self.standin, "/opt/standin.py"])
        session += ["--", PYTHON, "-I", "-S", "/opt/standin.py", "-p", "--output-format", "stream-json"]
        session += ["--verbose", "--model", "claude-sonnet-4-5", "--permission-mode", "dontAsk"]
        subprocess.run(session, input=PROMPT.encode(), env=env, capture_output=True, check=True)
        verify = bwrap(ws, writable=False, network=False, extra=[])
        verify += ["--", PYTHON, "-m", "unittest", "discover", "-s", "tests"]
        subprocess.run(verify, env={"PATH": "/usr/bin:/bin"}, capture_output=True, check=False)
        oracle = bwrap(ws, writable=False, network=False, extra=["--ro-bind", str(self.oracle), "/oracle"])
        oracle += ["--", PYTHON, "/oracle/run_oracle.py"]
        report = {
            "PATH": "/usr/bin:/bin",
            "WFBENCH_ORACLE_REPORT": "/tmp/report.xml",
            "PYTHONPATH": "/workspace",
        }
        subprocess.run(oracle, env=report, capture_output=True, check=False)
        subprocess.run(["git", "-C", ws, "add", "-A"], env=GIT_ENV, capture_output=True, check=True)
        diff = ["git", "-C", ws, "diff", "--cached", "--binary", "--shortstat", "-p", "HEAD"]
        subprocess.run(diff, env=GIT_ENV, capture_output=True, check=True)
        shutil.rmtree(ws)
        return time.monotonic() - started


def find_snapshot(corpus: Path, scratch: Path) -> str:
    sys.path.insert(0, str(ROOT / "src"))
    from wfbench.adapters.repo.snapshot import build_snapshot

    snap = build_snapshot(str(corpus / "repo"), "main", str(scratch / "snapshot"))
    return snap.path


def start_provider(script: Path) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "wfbench", "provider", "serve", str(script), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().strip().split()[-1]
    return proc, url


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--cells", type=int, default=5)
    parser.add_argument("--src", type=Path, default=ROOT / "src")
    parser.add_argument(
        "--before", type=Path, help="also run this checkout's src/ in every pair (before/after)"
    )
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    from wfbench.demo import materialize

    with tempfile.TemporaryDirectory(prefix="wfbench-floor-") as tmp:
        scratch = Path(tmp)
        corpus = Path(materialize(str(scratch / "demo"))).parent
        snapshot = find_snapshot(corpus, scratch)
        provider, url = start_provider(corpus / "provider.yaml")
        floor = Floor(snapshot, url, corpus, scratch)
        ratios, harness_all, floor_all, before_ratios = [], [], [], []
        load = os.getloadavg()[0]
        try:
            floor.cell(-1)  # warm the caches once
            for pair in range(args.pairs):
                first = harness_cells(args.src, scratch / f"out-{pair}", args.cells)
                second = [floor.cell(pair * 1000 + i) for i in range(args.cells)]
                ratio = statistics.median(first) / statistics.median(second)
                ratios.append(ratio)
                harness_all += first
                floor_all += second
                line = (
                    f"pair {pair}: harness {statistics.median(first) * 1000:.0f} ms, "
                    f"floor {statistics.median(second) * 1000:.0f} ms, ratio {ratio:.2f}"
                )
                if args.before is not None:
                    third = harness_cells(args.before, scratch / f"before-{pair}", args.cells)
                    before_ratios.append(statistics.median(third) / statistics.median(second))
                    line += (
                        f"; before {statistics.median(third) * 1000:.0f} ms, ratio {before_ratios[-1]:.2f}"
                    )
                print(line, flush=True)
        finally:
            provider.send_signal(signal.SIGTERM)
            provider.wait(10)
    summary = {
        "pairs": args.pairs,
        "cells_per_side": args.cells,
        "harness_cell_ms_median": round(statistics.median(harness_all) * 1000, 1),
        "floor_cell_ms_median": round(statistics.median(floor_all) * 1000, 1),
        "ratio_median": round(statistics.median(ratios), 3),
        "ratio_range": [round(min(ratios), 3), round(max(ratios), 3)],
        "load_start_end": [round(load, 1), round(os.getloadavg()[0], 1)],
        "src": str(args.src),
    }
    if before_ratios:
        summary["before"] = str(args.before)
        summary["before_ratio_median"] = round(statistics.median(before_ratios), 3)
        summary["before_ratio_range"] = [round(min(before_ratios), 3), round(max(before_ratios), 3)]
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
