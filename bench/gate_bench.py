#!/usr/bin/env python3
"""Time ``wfbench gate`` and ``wfbench report`` as whole commands on large synthetic results.

Builds ``results.jsonl`` files of ``--sizes`` rows (default 100,000 and 1,000,000) in the shape
a real sweep writes (every provenance field of the reference's rows, ~2.5 KB a line): 5 arms
(``baseline``, ``workflow``, ``candidate_workflow``, ``review``, ``candidate_review``) × 5 runs
per task, so 100,000 rows are 4,000 tasks and 1,000,000 rows 40,000 tasks, with a realistic
mix of error kinds, unmeasured usage on failed sessions, and review scores on the review arms.
Then it runs ``python -m wfbench gate FILE`` and ``python -m wfbench report FILE`` as separate
processes, ``--repeats`` times each, and prints the wall time and the peak RSS of each command
(``wait4``'s ``ru_maxrss`` of that child alone, so the generator's memory is not counted).

Files are cached under ``--cache`` (default: the system temp dir) by size and seed, so a second
run does not rebuild them. ``--python`` picks the interpreter (e.g. another checkout's venv) and
``--src`` another checkout's ``src`` to compare against, side by side.

Targets (issue 18): 1,000,000 rows over 40,000 tasks gated in ≤ 60 s with ≤ 1.5 GB peak RSS;
``report`` within 2× of ``gate``. On a shared machine absolute times move with the load
average, which is printed, and so does the wall time; each command's CPU time (user + system,
from ``wait4``) moves far less.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ARMS = ("baseline", "workflow", "candidate_workflow", "review", "candidate_review")
RUNS = 5
MODEL = "claude-pinned-1"
_KINDS: tuple[tuple[str | None, float], ...] = (
    (None, 0.86),
    ("oracle-failed", 0.06),
    ("verify-failed", 0.03),
    ("session-error", 0.015),
    ("infra-error", 0.01),
    ("skill-not-invoked", 0.01),
    ("evidence-unverified", 0.01),
    ("cleanup-failure", 0.005),
)
_NO_USAGE = frozenset({"session-error", "infra-error"})


def _digest(rng: random.Random) -> str:
    return f"{rng.getrandbits(256):064x}"


def _review_fields(rng: random.Random, arm: str, labels: int, kind: str | None) -> dict[str, Any]:
    tp = min(labels, rng.randint(labels // 2 + arm.startswith("candidate"), labels)) if labels else 0
    fp = rng.choice((0, 0, 0, 1, 2))
    fn = labels - tp
    precision = round(tp / (tp + fp), 6) if tp + fp else None
    recall = round(tp / labels, 6) if labels else None
    f1 = round(2 * tp / (2 * tp + fp + fn), 6) if labels else None
    score = {"true_positives": tp, "false_positives": fp, "false_negatives": fn, "weighted_f1": f1}
    return {
        "review_score": score,
        "review_evidence_valid": kind != "evidence-unverified",
        "review_artifact": "review.json",
        "review_true_positives": tp,
        "review_false_positives": fp,
        "review_false_negatives": fn,
        "review_precision": precision,
        "review_recall": recall,
        "review_f1": f1,
        "review_weighted_precision": precision,
        "review_weighted_recall": recall,
        "review_weighted_f1": f1,
        "review_blocker_recall": (1.0 if tp == labels else 0.5) if labels else None,
        "review_severity_accuracy": 1.0 if tp else None,
        "review_category_accuracy": 1.0 if tp else None,
        "review_grounded_evidence": 1.0 if tp + fp else None,
        "review_verdict_correct": rng.random() < 0.95,
        "review_clean_control": labels == 0,
        "review_clean_pass": labels + fp == 0,
    }


def synthetic_rows(tasks: int, seed: int = 7) -> Iterator[dict[str, Any]]:
    """``tasks`` × 5 arms × 5 runs row mappings, task-major, run-major, arm-minor, as a sweep writes them."""
    rng = random.Random(seed)
    kinds = [kind for kind, _ in _KINDS]
    weights = [weight for _, weight in _KINDS]
    for t in range(tasks):
        task = f"task-{t:05d}"
        binding = {name: _digest(rng) for name in ("oracle", "prompt", "asset", "deps")}
        base_sha = _digest(rng)[:40]
        cost_level, labels = rng.uniform(0.3, 3.0), 0 if rng.random() < 0.1 else rng.randint(1, 5)
        for run in range(RUNS):
            for arm in ARMS:
                kind = rng.choices(kinds, weights=weights)[0]
                measured = kind not in _NO_USAGE
                factor = {"baseline": 1.2, "candidate_workflow": 0.9, "candidate_review": 0.95}.get(arm, 1.0)
                out = rng.randint(1000, 9000)
                row: dict[str, Any] = {
                    "input_tokens": out * 20 if measured else None,
                    "cache_creation_input_tokens": out * 3 if measured else None,
                    "cache_read_input_tokens": out * 50 if measured else None,
                    "output_tokens": int(out * factor) if measured else None,
                    "cost_usd": round(cost_level * factor * rng.uniform(0.95, 1.05), 4) if measured else None,
                    "duration_s": round(rng.uniform(30, 600) * factor, 1) if measured else None,
                    "num_turns": rng.randint(3, 40) if measured else None,
                    "ok": measured,
                    "session_ids": [f"s-{t}-{arm}-{run}-{rng.getrandbits(32):08x}"],
                    "error_kind": kind,
                    "error_detail": None if kind is None else f"{kind}: synthetic",
                    "skill_invoked": kind != "skill-not-invoked",
                    "transcript_missing": False,
                    "transcript_artifacts": [
                        {
                            "path": f"transcripts/{task}-{arm}-run{run}.jsonl",
                            "sha256": _digest(rng),
                            "bytes": rng.randint(1000, 90000),
                            "source": "parent-captured-stream-json",
                        }
                    ],
                    "evidence_diagnostics": [],
                    "tool_use_counts": {"Read": rng.randint(0, 9), "Edit": 2},
                    "plan_produced": measured,
                    "authored_tests_passed": kind not in ("verify-failed", *_NO_USAGE),
                    "authored_test_output": "3 passed",
                    "verify_output": "3 passed",
                    "oracle_passed": None if kind in _NO_USAGE else kind != "oracle-failed",
                    "oracle_output": "",
                    "resolved": kind is None,
                    "diff_files": rng.randint(1, 6),
                    "diff_insertions": rng.randint(1, 200),
                    "diff_deletions": rng.randint(0, 80),
                    "arm": arm,
                    "model": MODEL,
                    "benchmark_model": MODEL,
                    "proposer_model": None,
                    "effort": "xhigh",
                    "task_ref": "main",
                    "task_base_sha": base_sha,
                    "sanitized_task_sha": _digest(rng)[:40],
                    "variant_head_sha": _digest(rng)[:40],
                    "task_prompt_digest": binding["prompt"],
                    "skill_digest": "e" * 64,
                    "runtime_digest": "f" * 64,
                    "recorded_at": "2026-01-01T00:00:00+00:00",
                    "task": task,
                    "class": "bugfix",
                    "run": run,
                    "sandbox_backend": "bwrap",
                    "task_asset_snapshot_digest": binding["asset"],
                    "task_asset_manifest_digest": binding["asset"],
                    "sandbox_dependency_content_digest": binding["deps"],
                    "sandbox_dependency_manifest_digest": binding["deps"],
                    "oracle_digest": binding["oracle"],
                    "oracle_command_digest": binding["oracle"],
                    "oracle_manifest_digest": binding["oracle"],
                    "ce_plugin_version": None,
                    "ce_plugin_manifest_digest": None,
                    "reused": False,
                }
                if arm.startswith("candidate_"):
                    row["candidate_overlay_digest"] = "d" * 64
                if arm.endswith("review"):
                    row |= _review_fields(rng, arm, labels, kind)
                yield row


def write_rows(path: Path, tasks: int, seed: int) -> None:
    """Write the synthetic rows to ``path`` (via a temp file, renamed when whole)."""
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        for row in synthetic_rows(tasks, seed):
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    tmp.replace(path)


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, int, float]:
    """Wall seconds, peak RSS (MiB), exit status and CPU seconds (user + system) of one child process.

    On a shared machine the CPU time moves far less with the load than the wall time does (the
    child waits for a core, it does not do more work), so it is the figure to compare runs by.
    """
    started = time.perf_counter()
    child = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        assert child.stderr is not None
        sys.stderr.write(child.stderr.read().decode(errors="replace"))
    return wall, usage.ru_maxrss / 1024, child.returncode, usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000], help="row counts")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each command per size (median shown)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "wfbench-gate-bench")
    parser.add_argument("--python", default=sys.executable, help="interpreter that runs wfbench")
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="the wfbench sources to time")
    parser.add_argument("--commands", nargs="+", default=["gate", "report"], choices=["gate", "report"])
    args = parser.parse_args()

    env = dict(os.environ, PYTHONPATH=str(args.src.resolve()))
    print(
        f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.2f}; wfbench from {args.src}"
    )
    for size in args.sizes:
        tasks = max(1, size // (len(ARMS) * RUNS))
        directory = args.cache / f"rows-{tasks * len(ARMS) * RUNS}-seed{args.seed}"
        directory.mkdir(parents=True, exist_ok=True)
        results = directory / "results.jsonl"
        if not results.exists():
            started = time.perf_counter()
            write_rows(results, tasks, args.seed)
            print(f"built {results} in {time.perf_counter() - started:.1f} s")
        mib = results.stat().st_size / 2**20
        print(f"\n{tasks * len(ARMS) * RUNS:,} rows over {tasks:,} tasks ({mib:,.0f} MiB)")
        for command in args.commands:
            samples = [
                timed([args.python, "-m", "wfbench", command, str(results)], env) for _ in range(args.repeats)
            ]
            failed = [rc for _, _, rc, _ in samples if rc != 0]
            wall = statistics.median(s[0] for s in samples)
            rss = max(s[1] for s in samples)
            cpu = statistics.median(s[3] for s in samples)
            status = f"  FAILED (exit {failed[0]})" if failed else ""
            print(
                f"  wfbench {command:<6} {wall:8.1f} s   CPU {cpu:8.1f} s   peak RSS {rss:8.0f} MiB{status}"
            )
        print(f"  load average now {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
