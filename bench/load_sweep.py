#!/usr/bin/env python3
"""Load benchmark: a sweep of many small cells at workers 8 with the stand-in agent under bwrap.

Usage: python3 bench/load_sweep.py [--tasks 25] [--runs 4] [--workers 8] [--marks 50,200]

Builds a corpus of ``--tasks`` tiny implementation tasks (verify ``true``, a one-file hidden
oracle), two arms (``baseline`` and ``workflow_direct``, one session of two scripted turns
each) and runs ``python -m wfbench run CORPUS --workers N --runs R`` as a subprocess, with
``TMPDIR`` pointing into a private root so everything the run starts is recognisable as ours.
While it runs, the wfbench process's ``VmRSS``/``VmHWM`` are sampled (every 50 ms) together
with the number of rows written; the high-water mark is reported when row 50 (and each mark)
is first seen, and at the end. Afterwards: rows written vs cells, duplicate cells, and leaked
processes (any live process whose command line, working directory or environment mentions the
private root). Prints one JSON object; exits 1 when a row was lost, a cell was duplicated or
a process leaked.

Needs bubblewrap (the default sandbox). The corpus helpers are shared with
tests/integration/sweep/test_load.py (the small CI version).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import yaml

ARMS = ("baseline", "workflow_direct")
MODEL = "claude-sonnet-4-5"
SAMPLE_S = 0.05
_USAGE = {
    "input_tokens": 100,
    "output_tokens": 20,
    "cache_read_input_tokens": 0,
    "cache_creation_input_tokens": 0,
}
_SKILL_MD = "---\nname: work\ndescription: work skill\n---\n# work\n\nDo the task.\n"
_GIT_ENV = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/nonexistent",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "load",
    "GIT_AUTHOR_EMAIL": "load@localhost",
    "GIT_COMMITTER_NAME": "load",
    "GIT_COMMITTER_EMAIL": "load@localhost",
}


def _write_tree(root: Path, files: Mapping[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def provider_script() -> dict[str, Any]:
    """Two rules: the skill arm invokes ``work`` then writes a file; the baseline writes it directly."""
    write = {"name": "Write", "input": {"file_path": "{workspace}/done.txt", "content": "done\n"}}
    return {
        "default": {"say": "unscripted", "usage": _USAGE},
        "conversations": [
            {
                "when": ["Use the work skill for:"],
                "turns": [
                    {"tools": [{"name": "Skill", "input": {"skill": "work"}}], "usage": _USAGE},
                    {"tools": [write], "say": "done", "usage": _USAGE},
                ],
            },
            {
                "when": ["Implement the change and verify"],
                "turns": [{"tools": [write], "usage": _USAGE}, {"say": "done", "usage": _USAGE}],
            },
        ],
    }


def build_corpus(root: Path, tasks: int) -> Path:
    """Write a corpus of ``tasks`` cheap implementation tasks under ``root``; the corpus file's path."""
    repo = root / "repo"
    repo.mkdir(parents=True)
    _write_tree(repo, {"app.py": "def answer():\n    return 42\n", ".claude/skills/work/SKILL.md": _SKILL_MD})
    for args in (("init", "-q", "-b", "main"), ("add", "-A"), ("commit", "-qm", "load")):
        subprocess.run(["git", *args], cwd=repo, env=_GIT_ENV, check=True, capture_output=True)
    (root / "oracle.txt").write_text("oracle\n")
    oracle = {
        "command": "test -f $WFBENCH_ORACLE_ROOT/oracle.txt",
        "files": [{"source": "oracle.txt", "target": "oracle.txt"}],
    }
    corpus = {
        "name": "load",
        "provider_script": "script.yaml",
        "defaults": {"model": MODEL, "arms": list(ARMS)},
        "tasks": [
            {
                "id": f"load-{i:03d}",
                "class": "load",
                "kind": "implementation",
                "repo": "repo",
                "ref": "main",
                "prompt": f"Task load-{i:03d}: write done.txt.",
                "verify": "true",
                "oracle": oracle,
            }
            for i in range(tasks)
        ],
    }
    (root / "script.yaml").write_text(yaml.safe_dump(provider_script(), sort_keys=False, width=10_000))
    path = root / "corpus.yaml"
    path.write_text(yaml.safe_dump(corpus, sort_keys=False, width=10_000))
    return path


@attrs.frozen
class LoadResult:
    """What one load sweep did: exit code, rows, duplicates, leaks and memory figures."""

    exit_code: int
    cells: int
    rows: int
    duplicate_cells: int
    leaked_pids: tuple[int, ...]
    leftover_tmp: tuple[str, ...]
    leaked_mounts: int
    kinds: Mapping[str, int]
    wall_s: float
    peak_rss_kib_at: Mapping[int, int]
    final_hwm_kib: int | None
    rss_samples: int
    stderr_tail: str

    def as_json(self) -> dict[str, Any]:
        """The figures as a JSON-ready mapping."""
        return {
            "exit_code": self.exit_code,
            "cells": self.cells,
            "rows_written": self.rows,
            "lost_rows": self.cells - self.rows,
            "duplicate_cells": self.duplicate_cells,
            "leaked_processes": list(self.leaked_pids),
            "leftover_tmp_entries": list(self.leftover_tmp),
            "leaked_mounts": self.leaked_mounts,
            "rows_by_error_kind": dict(self.kinds),
            "wall_s": round(self.wall_s, 1),
            "peak_rss_mib_at_rows": {str(k): round(v / 1024, 1) for k, v in self.peak_rss_kib_at.items()},
            "final_peak_rss_mib": None if self.final_hwm_kib is None else round(self.final_hwm_kib / 1024, 1),
            "rss_samples": self.rss_samples,
        }


def _status_kib(pid: int, field: str) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def _count_lines(path: Path) -> int:
    try:
        with path.open("rb") as handle:
            return sum(1 for line in handle if line.endswith(b"\n"))
    except OSError:
        return 0


def processes_mentioning(token: str) -> list[int]:
    """Live pids (not this process) whose cmdline, cwd or environment mentions ``token``."""
    found, needle = [], token.encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            where = Path("/proc", entry)
            blobs = (where / "cmdline").read_bytes(), (where / "environ").read_bytes()
            cwd = os.readlink(where / "cwd").encode()
        except OSError:
            continue
        if any(needle in blob for blob in (*blobs, cwd)):
            found.append(int(entry))
    return found


def mounts_mentioning(token: str) -> int:
    """How many mounts of this mount namespace have ``token`` in their mount point or source."""
    return sum(token in line for line in Path("/proc/self/mountinfo").read_text().splitlines())


def _rows(results: Path) -> list[dict[str, Any]]:
    if not results.exists():
        return []
    return [json.loads(line) for line in results.read_text().splitlines() if line.strip()]


def run_load(
    root: Path, *, tasks: int, runs: int, workers: int, marks: Sequence[int] = (), timeout: float = 1800
) -> LoadResult:
    """Build the corpus under ``root`` and run one sweep; sample memory; check rows and leaks."""
    corpus = build_corpus(root / "corpus", tasks)
    out, tmp = root / "out", root / "tmp"
    tmp.mkdir()
    argv = [
        sys.executable,
        "-m",
        "wfbench",
        "run",
        str(corpus),
        "--out",
        str(out),
        "--workers",
        str(workers),
        "--runs",
        str(runs),
        "--arms",
        ",".join(ARMS),
    ]
    env = {**os.environ, "TMPDIR": str(tmp)}
    started = time.monotonic()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, env=env)
        peaks, samples, hwm = _sample(proc, out / "results.jsonl", marks, timeout)
        wall = time.monotonic() - started
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    time.sleep(0.5)  # let any straggler that would be a leak show up as one
    rows = _rows(out / "results.jsonl")
    cells = Counter((r["task"], r["arm"], r["run"]) for r in rows)
    return LoadResult(
        exit_code=proc.returncode,
        cells=tasks * len(ARMS) * runs,
        rows=len(rows),
        duplicate_cells=sum(n - 1 for n in cells.values()),
        leaked_pids=tuple(processes_mentioning(str(root))),
        leftover_tmp=tuple(sorted(os.listdir(tmp))),
        leaked_mounts=mounts_mentioning(str(root)),
        kinds=Counter(str(r.get("error_kind") or "ok") for r in rows),
        wall_s=wall,
        peak_rss_kib_at=peaks,
        final_hwm_kib=hwm,
        rss_samples=samples,
        stderr_tail=stderr[-3000:],
    )


def _sample(
    proc: subprocess.Popen[bytes], results: Path, marks: Sequence[int], timeout: float
) -> tuple[dict[int, int], int, int | None]:
    """Poll the process's VmHWM and the row count until it exits; the peak when each mark is reached."""
    peaks: dict[int, int] = {}
    samples, hwm, deadline = 0, None, time.monotonic() + timeout
    while proc.poll() is None:
        if time.monotonic() > deadline:
            proc.kill()
            break
        now = max(_status_kib(proc.pid, "VmHWM") or 0, _status_kib(proc.pid, "VmRSS") or 0, hwm or 0)
        if now:
            hwm, samples = now, samples + 1
            written = _count_lines(results)
            for mark in marks:
                if mark not in peaks and written >= mark:
                    peaks[mark] = now
        time.sleep(SAMPLE_S)
    proc.wait()
    return peaks, samples, hwm


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=25)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument(
        "--marks", default="50,100,150,200", help="row counts at which to report the peak RSS"
    )
    parser.add_argument("--keep", action="store_true", help="keep the working directory and print it")
    args = parser.parse_args()
    marks = [int(m) for m in args.marks.split(",") if m]
    root = Path(tempfile.mkdtemp(prefix="wfbench-load-"))
    try:
        result = run_load(root, tasks=args.tasks, runs=args.runs, workers=args.workers, marks=marks)
        load1, load5, _ = os.getloadavg()
        report = {
            **result.as_json(),
            "workers": args.workers,
            "loadavg_1m_5m": [round(load1, 1), round(load5, 1)],
        }
        if args.keep:
            report["root"] = str(root)
        print(json.dumps(report, indent=2))
        if result.exit_code != 0:
            print(result.stderr_tail, file=sys.stderr)
        bad = (
            result.rows != result.cells
            or result.duplicate_cells
            or result.leaked_pids
            or result.leaked_mounts
        )
        return 1 if bad else 0
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
