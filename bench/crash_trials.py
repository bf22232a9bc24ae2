#!/usr/bin/env python3
"""Crash safety and resume, the full set: SIGKILL `wfbench run` at seeded random moments, then resume.

Runs the harness of ``tests/integration/sweep/test_crash_resume.py`` over the demo corpus (stand-in
agent, bwrap, scripted provider on loopback), alternating workers 1 and 3, and prints one line
per trial: seed, kill time, rows before the kill (and rows reported complete), rows after the
resume, whether the resumed sweep's aggregates equal an uninterrupted run's, and leftovers
(processes, mounts, scratch trees, partial files). Exit 1 when any trial found a problem.

    bench/crash_trials.py                    # 20 trials, --runs 3 (24 cells per sweep)
    bench/crash_trials.py --trials 4 --runs 1
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "src"))

from tests.integration.sweep.test_crash_resume import Shape, Trial, bwrap_works, run_trials  # noqa: E402

COLUMNS = (
    "trial",
    "seed",
    "workers",
    "kill_plan",
    "kill_at_s",
    "rows_before",
    "reported",
    "rows_after",
    "equal_aggr",
    "leftovers",
)


def _cells(t: Trial) -> tuple[str, ...]:
    return (
        str(t.index),
        str(t.seed),
        str(t.workers),
        t.plan,
        f"{t.kill_at_s:.2f}",
        str(t.rows_before),
        str(t.reported_before),
        str(t.rows_after),
        "yes" if t.equal_aggregates else "NO",
        str(len(t.leftovers)),
    )


def _table(trials: list[Trial]) -> str:
    widths = [max(len(c), 7) for c in COLUMNS]
    widths[COLUMNS.index("kill_plan")] = 17
    lines = [" ".join(c.rjust(w) for c, w in zip(COLUMNS, widths, strict=True)) + "  notes"]
    lines.append("-" * len(lines[0]))
    for t in trials:
        notes = "; ".join((*t.leftovers, *t.problems))
        if not notes and t.finished_before_kill:
            notes = "finished before the kill"
        lines.append(" ".join(c.rjust(w) for c, w in zip(_cells(t), widths, strict=True)) + f"  {notes}")
    return "\n".join(lines)


def main() -> int:
    """Run the trials and print the table; exit 1 if any trial failed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3, help="--runs of each demo sweep (default 3: 24 cells)")
    parser.add_argument("--arms", default="", help="comma-separated arms (default: the demo's four)")
    parser.add_argument("--seed", type=int, default=20240601, help="seed of trial 0 (trial i uses seed + i)")
    parser.add_argument("--keep", action="store_true", help="keep the trial directories")
    args = parser.parse_args()
    if not bwrap_works():
        print("bubblewrap cannot run here; the crash trials need it", file=sys.stderr)
        return 2
    root = Path(tempfile.mkdtemp(prefix="wfbench-crash-trials-"))
    started = time.monotonic()
    shape = Shape(workers=3, runs=args.runs, arms=tuple(a for a in args.arms.split(",") if a))
    trials = run_trials(root, count=args.trials, shape=shape, base_seed=args.seed)
    print(_table(trials))
    failed = [t for t in trials if not t.ok]
    mid = [t for t in trials if 0 < t.rows_before < t.rows_after]
    before = sum(t.rows_before == 0 for t in trials)
    after = sum(t.finished_before_kill for t in trials)
    reporting = sum(t.rows_before == t.rows_after and not t.finished_before_kill for t in trials)
    print(
        f"\n{len(trials)} trials (workers 1 and 3, --runs {args.runs}, {trials[0].rows_after} cells per"
        f" sweep): {len(mid)} killed mid-sweep with rows on disk, {before} before the first row,"
        f" {reporting} after the last row (report phase), {after} after the sweep had exited;"
        f" {len(trials) - len(failed)}/{len(trials)} clean;"
        f" wall {time.monotonic() - started:.0f} s"
    )
    if args.keep:
        print(f"trial directories kept in {root}")
    else:
        import shutil

        shutil.rmtree(root, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
