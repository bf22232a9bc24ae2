#!/usr/bin/env python3
"""`wfbench report` and `wfbench view --static` over a large synthetic sweep, as whole commands.

Builds a results.jsonl of N rows (default 100,000) over T tasks (default 1,000) and 4 arms
(baseline, workflow, candidate_workflow and a review arm on a tenth of the tasks, 25 runs each
cell group), seeded, with a realistic mix of outcomes (oracle failures, session errors, review
scores, costs, cell wall times). Then runs, as subprocesses (`python3 -m wfbench ...`):

- `wfbench report DIR` — re-gates and writes report.md and report.html;
- `wfbench view DIR --static OUT` — writes the overview and every task, arm and cell page;

and prints each command's wall time and peak RSS (the child's ru_maxrss), plus the size of the
overview page and how many table rows its DOM holds at once (a page of the paged table, never
every row).

    python3 bench/report_bench.py                 # 100,000 rows, 1,000 tasks
    python3 bench/report_bench.py --rows 20000 --tasks 200
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ARMS = ("baseline", "workflow", "candidate_workflow")


def _row(rng: random.Random, task: str, arm: str, run: int, kind: str) -> dict[str, object]:
    base = {"baseline": 0.06, "workflow": 0.16, "candidate_workflow": 0.12, "review": 0.08}[arm]
    cost = round(base * rng.uniform(0.7, 1.4), 4)
    row: dict[str, object] = {
        "task": task,
        "arm": arm,
        "run": run,
        "class": "bug-fix",
        "kind": kind,
        "ok": True,
        "resolved": True,
        "error_kind": None,
        "input_tokens": int(cost * 80000),
        "cache_creation_input_tokens": 1000,
        "cache_read_input_tokens": 20000,
        "output_tokens": int(cost * 25000),
        "cost_usd": cost,
        "duration_s": round(rng.uniform(20, 400), 1),
        "num_turns": rng.randint(2, 12),
        "authored_tests_passed": True,
        "oracle_passed": True,
        "skill_invoked": arm != "baseline" or None,
        "transcript_missing": False,
        "review_evidence_valid": None,
        "reused": False,
        "model": "claude-sonnet-4-5",
        "benchmark_model": "claude-sonnet-4-5",
        "sandbox_backend": "bwrap",
        "recorded_at": "2026-12-01T00:00:00+00:00",
        "cell_wall_s": round(rng.uniform(30, 600), 2),
        "session_ids": [f"s-{task}-{arm}-{run}"],
        "evidence_diagnostics": [],
        "transcript_artifacts": [
            {
                "path": f"cells/{task}/{arm}/run-{run}/transcripts/work-s.jsonl",
                "sha256": "0" * 64,
                "bytes": 100,
                "source": "parent-captured-stream-json",
            }
        ],
        "patch_artifact": f"cells/{task}/{arm}/run-{run}/patch.diff",
        "diff_files": 2,
        "diff_insertions": 10,
        "diff_deletions": 1,
        "verify_output": "3 passed",
        "oracle_output": "hidden oracle passed",
    }
    draw = rng.random()
    if kind == "review":
        f1 = round(rng.uniform(0.5, 1.0), 3)
        row.update(
            review_evidence_valid=True,
            review_weighted_f1=f1,
            review_precision=f1,
            review_recall=f1,
            review_blocker_recall=1.0,
            review_clean_control=False,
            review_clean_pass=False,
            review_true_positives=1,
            review_false_positives=0,
            review_false_negatives=0,
        )
        row.pop("patch_artifact")
    elif draw < {"baseline": 0.4, "workflow": 0.15, "candidate_workflow": 0.12}[arm]:
        row.update(resolved=False, error_kind="oracle-failed", oracle_passed=False)
    elif draw > 0.99:
        row.update(ok=False, resolved=False, error_kind="session-error", error_detail="API error 529")
    return row


def build(path: Path, rows: int, tasks: int, seed: int) -> int:
    """Write the synthetic results.jsonl; the number of rows written."""
    rng = random.Random(seed)
    review_tasks = max(1, tasks // 10)
    impl_tasks = tasks - review_tasks
    per_group = max(1, -(-rows // (impl_tasks * len(ARMS) + review_tasks)))
    written = 0
    with path.open("w") as handle:
        for index in range(tasks):
            task = f"task-{index:05d}"
            groups = ARMS if index < impl_tasks else ("review",)
            kind = "implementation" if index < impl_tasks else "review"
            for run in range(per_group):
                for arm in groups:
                    if written < rows:
                        handle.write(json.dumps(_row(rng, task, arm, run, kind)) + "\n")
                        written += 1
    return written


def timed(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of one child process (its own rusage, from wait4)."""
    with tempfile.TemporaryFile() as errors:
        start = time.monotonic()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=errors)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            errors.seek(0)
            raise SystemExit(f"{' '.join(argv)} failed: {errors.read()[-2000:].decode(errors='replace')}")
    return wall, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--tasks", type=int, default=1_000)
    parser.add_argument("--seed", type=int, default=13)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="wfbench-report-bench-") as tmp:
        sweep = Path(tmp) / "sweep"
        sweep.mkdir()
        count = build(sweep / "results.jsonl", args.rows, args.tasks, args.seed)
        size = (sweep / "results.jsonl").stat().st_size
        print(f"rows {count:,} over {args.tasks:,} tasks, results.jsonl {size / 2**20:.1f} MiB")
        env_python = [sys.executable, "-m", "wfbench"]
        wall, rss = timed([*env_python, "report", str(sweep)])
        html = (sweep / "report.html").stat().st_size
        print(
            f"wfbench report: {wall:.1f} s, peak RSS {rss:.0f} MiB; report.html {html / 2**20:.2f} MiB,"
            f" report.md {(sweep / 'report.md').stat().st_size / 2**20:.2f} MiB"
        )
        out = Path(tmp) / "site"
        wall, rss = timed([*env_python, "view", str(sweep), "--static", str(out)])
        pages = sum(1 for _ in out.rglob("*.html"))
        index = (out / "index.html").read_text()
        print(
            f"wfbench view --static: {wall:.1f} s, peak RSS {rss:.0f} MiB;"
            f" {pages:,} pages, index.html {len(index) / 2**20:.2f} MiB"
        )
        print(f"overview DOM: tables render 50 rows a page; <tr> in the static markup: {index.count('<tr')}")


if __name__ == "__main__":
    main()
