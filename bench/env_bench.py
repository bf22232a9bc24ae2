#!/usr/bin/env python3
"""Task environments and a cell's harness overhead on a real-shaped repository (docs/performance.md).

Usage: python3 bench/env_bench.py [--files 2000] [--cells 4]

1. **Build once vs cached**: the environment of a small ``src/``-layout library (``pip install -e .``
   and ``pip install pytest`` from PyPI) built into an empty cache, then asked for again, as the second
   sweep of the task would: the cached answer is a marker check (build time ≈ 0).
2. **Harness overhead of a cell** on a repository of ``--files`` files (a ``src/`` package, its tests,
   the rest data files): ``wfbench run`` with the stand-in agent and a one-turn scripted session,
   verify = the project's pytest suite, oracle = one regression test; overhead = ``cell_wall_s``
   minus the session's own ``duration_s``. The start-up share of verify and the oracle is measured
   beside it: the same two commands run alone in the cell's sandbox (workspace, /env, masks).

Absolute times are noisy on a shared 2-core machine; ratios measured in one run are the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.realrepo_kit import ENVIRONMENT, ORACLE, PYTEST, make_library
from tests.support.sweep_kit import MODEL, git

from wfbench.adapters.repo.envbuild import CachedEnvironments
from wfbench.adapters.repo.workspace import GitWorkspaces
from wfbench.adapters.sandbox.bwrap import BwrapSandbox
from wfbench.app.corpus.environment_spec import parse_environment
from wfbench.cli.bootstrap import harness_command_env
from wfbench.domain.workspace.sandbox import Mount, SandboxPolicy


def build_once_vs_cached(root: Path) -> dict[str, float]:
    lib = make_library(root / "lib")
    snapshot = GitWorkspaces().build_snapshot(lib["repo"], lib["base"], str(root / "snap"))
    spec = parse_environment(ENVIRONMENT, locator="bench")
    assert spec is not None
    sandbox = BwrapSandbox()
    envs = CachedEnvironments(sandbox, cache_dir=str(root / "cache"), command_env=harness_command_env())
    started = time.monotonic()
    first = envs.ensure(spec, snapshot=snapshot, task_env={})
    cold = time.monotonic() - started
    started = time.monotonic()
    again = CachedEnvironments(sandbox, cache_dir=str(root / "cache")).ensure(
        spec, snapshot=snapshot, task_env={}
    )
    cached = time.monotonic() - started
    assert again.cached
    assert again.digest == first.digest
    return {"build_s": round(cold, 2), "cached_s": round(cached, 4), "ratio": round(cold / max(cached, 1e-6))}


def big_repo(root: Path, files: int) -> dict[str, str]:
    lib = make_library(root)
    repo = Path(lib["repo"])
    git(repo, "checkout", "-q", lib["base"])
    data = repo / "data"
    for index in range(files - 6):
        sub = data / f"d{index % 40:02d}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"f{index:05d}.txt").write_text(f"record {index}\n" * 8)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "data")
    lib["base"] = git(repo, "rev-parse", "HEAD").strip()
    count = len(git(repo, "ls-files").splitlines())
    lib["files"] = str(count)
    return lib


def overhead(root: Path, files: int, cells: int) -> dict[str, float]:
    import yaml

    lib = big_repo(root / "big", files)
    corpus = root / "corpus"
    (corpus / "oracles").mkdir(parents=True)
    (corpus / "oracles" / "test_touching.py").write_text(ORACLE)
    tasks = [
        {
            "id": f"t{i}",
            "class": "c",
            "repo": lib["repo"],
            "ref": lib["base"],
            "prompt": f"CASE t{i}: fix",
            "verify": f"{PYTEST} tests",
            "oracle": {
                "command": f'{PYTEST} "$WFBENCH_ORACLE_ROOT/test_touching.py"',
                "files": [{"source": "oracles/test_touching.py", "target": "test_touching.py"}],
            },
        }
        for i in range(cells)
    ]
    script = {
        "default": {"say": "done", "usage": {"input_tokens": 1, "output_tokens": 1}},
        "conversations": [],
    }
    (corpus / "script.yaml").write_text(yaml.safe_dump(script))
    spec = {
        "name": "bench",
        "provider_script": "script.yaml",
        "defaults": {"model": MODEL},
        "environment": ENVIRONMENT,
        "tasks": tasks,
    }
    (corpus / "corpus.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    env = {**os.environ, "WFBENCH_CACHE": str(root / "cache")}
    # A first sweep builds the environment; the measured sweep runs with it cached.
    for name in ("warm", "out"):
        argv = [sys.executable, "-m", "wfbench", "run", str(corpus / "corpus.yaml"), "--arms", "baseline"]
        argv += ["--workers", "1", "--out", str(root / name)]
        subprocess.run(argv, env=env, check=True, capture_output=True)
    rows = [json.loads(line) for line in (root / "out" / "results.jsonl").read_text().splitlines()]
    over = [r["cell_wall_s"] - (r["duration_s"] or 0.0) for r in rows]
    # verify and oracle start-up alone, in the same sandbox shape (workspace read-only, /env, no network)
    envs = CachedEnvironments(
        BwrapSandbox(), cache_dir=str(root / "cache"), command_env=harness_command_env()
    )
    snapshot = GitWorkspaces().build_snapshot(lib["repo"], lib["base"], str(root / "snap"))
    parsed = parse_environment(ENVIRONMENT, locator="bench")
    assert parsed is not None
    built = envs.ensure(parsed, snapshot=snapshot, task_env={})
    policy = SandboxPolicy(
        workspace=snapshot.path,
        workspace_writable=False,
        network=False,
        timeout_s=120,
        env={**harness_command_env(), "PATH": f"/env/bin:{harness_command_env()['PATH']}"},
        mounts=(Mount(built.host_path, "/env"), *(Mount(p, p) for p in built.runtime_paths)),
    )
    sandbox = BwrapSandbox()
    start_ups = []
    for _ in range(5):
        started = time.monotonic()
        sandbox.run(["/bin/sh", "-c", f"{PYTEST} --co -q tests/test_merge.py"], policy=policy)
        start_ups.append(time.monotonic() - started)
    per_command = statistics.median(start_ups)
    return {
        "repo_files": float(lib["files"]),
        "cells": float(len(rows)),
        "overhead_median_s": round(statistics.median(over), 3),
        "session_median_s": round(statistics.median(r["duration_s"] or 0.0 for r in rows), 3),
        "pytest_startup_s": round(per_command, 3),
        "verify_plus_oracle_share": round(2 * per_command / statistics.median(over), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--cells", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="wfbench-env-bench-") as tmp:
        root = Path(tmp)
        print("build once vs cached:", json.dumps(build_once_vs_cached(root / "a")))
        print("cell harness overhead:", json.dumps(overhead(root / "b", args.files, args.cells)))


if __name__ == "__main__":
    main()
