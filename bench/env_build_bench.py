#!/usr/bin/env python3
"""A cold build of a task environment, before against after (issue 33).

Each build runs in a child process (``PYTHONPATH`` = the sources to time) over the demo's
snapshot with a fresh cache directory, through the bwrap sandbox, exactly as ``wfbench run``
builds one: ``CachedEnvironments(...).ensure(spec)``; the child prints the seconds ``ensure``
took. Each pair builds once with ``--before`` (e.g. main's sources, venv + pip) and once with
``--src`` (this checkout, with the installer ``wfbench run`` would pick: uv when installed and
there is something to install), one right after the other. The figure is the median over pairs
of after ÷ before. Target for the demo's environment (``python: harness``, nothing to install):
≤ 0.2.

``--install CMD`` adds install commands (they reach the package registry: not offline).

Usage: python3 bench/env_build_bench.py --before OLD/src [--src SRC] [--pairs 7] [--install CMD]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHILD = """
import json, sys, tempfile, time
from wfbench.adapters.repo import envbuild
from wfbench.adapters.repo.envbuild import CachedEnvironments
from wfbench.adapters.repo.snapshot import build_snapshot
from wfbench.adapters.sandbox.bwrap import BwrapSandbox
from wfbench.cli.bootstrap import harness_command_env
from wfbench.domain.environment.spec import EnvironmentSpec
import os
repo, snap_dir, cache, install = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
snapshot = build_snapshot(repo, "main", snap_dir)
kwargs = {}
if hasattr(envbuild, "default_uv"):  # sources that know uv: the installer wfbench run picks
    kwargs["uv"] = envbuild.default_uv(os.environ)
environments = CachedEnvironments(
    BwrapSandbox(), cache_dir=cache, command_env=harness_command_env(), **kwargs
)
spec = EnvironmentSpec(python="harness", install=tuple(install))
started = time.monotonic()
built = environments.ensure(spec, snapshot=snapshot, task_env={})
print(json.dumps({"seconds": time.monotonic() - started, "cached": built.cached}))
"""


def build_s(src: Path, repo: str, scratch: str, install: list[str]) -> float:
    """Seconds of one cold ``ensure`` with the sources at ``src``."""
    work = tempfile.mkdtemp(dir=scratch)
    env = {**os.environ, "PYTHONPATH": str(src)}
    argv = [sys.executable, "-c", CHILD, repo, os.path.join(work, "snap"), os.path.join(work, "cache")]
    done = subprocess.run([*argv, json.dumps(install)], env=env, capture_output=True, text=True, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert not result["cached"]
    return float(result["seconds"])


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--src", type=Path, default=ROOT / "src")
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--install", action="append", default=[])
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    from wfbench.demo import materialize

    with tempfile.TemporaryDirectory(prefix="wfbench-env-bench-") as scratch:
        repo = str(Path(materialize(os.path.join(scratch, "demo"))).parent / "repo")
        build_s(args.src, repo, scratch, args.install)  # warm the page cache once
        before, after, ratios = [], [], []
        load = os.getloadavg()[0]
        for pair in range(args.pairs):
            order = (args.before, args.src) if pair % 2 == 0 else (args.src, args.before)
            times = {src: build_s(src, repo, scratch, args.install) for src in order}
            before.append(times[args.before])
            after.append(times[args.src])
            ratios.append(after[-1] / before[-1])
            print(
                f"pair {pair}: before {before[-1]:.3f} s, after {after[-1]:.3f} s, ratio {ratios[-1]:.3f}",
                flush=True,
            )
    summary = {
        "install": args.install,
        "before_median_s": round(statistics.median(before), 3),
        "after_median_s": round(statistics.median(after), 3),
        "ratio_median": round(statistics.median(ratios), 3),
        "ratio_range": [round(min(ratios), 3), round(max(ratios), 3)],
        "load_start_end": [round(load, 1), round(os.getloadavg()[0], 1)],
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
