#!/usr/bin/env python3
"""Per-cell cost outside the agent, and bwrap start-up overhead.

Builds a generated repository of ~2,000 files (with some history), a sanitized snapshot of it,
then measures, ``--repeats`` times each, in the same run:

* per cell: ``private_copy`` + one trivial sandboxed command (``/usr/bin/true`` in bwrap over
  the copy, read-only, network off) + ``remove_tree``;
* the comparator: ``git clone --no-local --no-hardlinks`` of the same repository (what a cell
  would cost if it cloned instead of copying a snapshot), plus its removal;
* bwrap start-up: ``/usr/bin/true`` through ``BwrapSandbox.run`` vs through ``run_managed``
  directly on the host.

Prints medians in milliseconds and the ratio per-cell ÷ clone (target ≤ 0.25).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from wfbench.adapters.git_snapshot import build_snapshot
from wfbench.adapters.process import run_managed
from wfbench.adapters.sandbox_bwrap import BwrapSandbox
from wfbench.adapters.workspace import private_copy, remove_tree
from wfbench.domain.workspace.sandbox import SandboxPolicy

GIT_ENV = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/nonexistent",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@localhost",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@localhost",
}


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, check=True, capture_output=True)


def make_repo(root: Path, files: int, commits: int) -> None:
    """``files`` small source files in 40 directories, committed over ``commits`` commits."""
    git(root, "init", "-q", "-b", "main")
    per_commit = max(1, files // commits)
    for i in range(files):
        path = root / f"pkg{i % 40:02d}" / f"mod_{i:05d}.py"
        path.parent.mkdir(exist_ok=True)
        body = "".join(f"def f_{i}_{j}(x):\n    return x * {j} + {i}\n\n" for j in range(12))
        path.write_text(body)
        if (i + 1) % per_commit == 0:
            git(root, "add", "-A")
            git(root, "commit", "-qm", f"batch {i}")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "last", "--allow-empty")


def median_ms(action: Callable[[int], None], repeats: int) -> float:
    samples = []
    for i in range(repeats):
        started = time.perf_counter()
        action(i)
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--commits", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--dir", default=None, help="where the repository, cells and clones live")
    args = parser.parse_args()

    sandbox = BwrapSandbox()
    sandbox.preflight()
    work = Path(tempfile.mkdtemp(prefix="wfbench-bench-", dir=args.dir))
    try:
        repo = work / "repo"
        repo.mkdir()
        make_repo(repo, args.files, args.commits)
        started = time.perf_counter()
        snapshot = build_snapshot(str(repo), "main", str(work / "snapshot"))
        snapshot_ms = (time.perf_counter() - started) * 1000
        tracked = sum(1 for p in Path(snapshot.path).rglob("*") if p.is_file() and ".git" not in p.parts)

        def cell(i: int) -> None:
            ws = private_copy(snapshot, str(work / f"cell{i}"))
            policy = SandboxPolicy(workspace=ws, workspace_writable=False, network=False, timeout_s=30)
            result = sandbox.run(["/usr/bin/true"], policy=policy)
            assert result.ok, result
            assert remove_tree(ws) is None

        def clone(i: int) -> None:
            dest = work / f"clone{i}"
            git(work, "clone", "-q", "--no-local", "--no-hardlinks", str(repo), str(dest))
            assert remove_tree(str(dest)) is None

        def copy_only(i: int) -> None:
            ws = private_copy(snapshot, str(work / f"copy{i}"))
            assert remove_tree(ws) is None

        policy = SandboxPolicy(workspace=str(work), workspace_writable=False, network=False, timeout_s=30)

        def bwrap_true(_: int) -> None:
            assert sandbox.run(["/usr/bin/true"], policy=policy).ok

        def host_true(_: int) -> None:
            assert run_managed(["/usr/bin/true"], env={}, timeout_s=30).ok

        # Interleave the measured phases once for warm caches, then measure each.
        cell(-1), clone(-1)
        cell_ms = median_ms(cell, args.repeats)
        clone_ms = median_ms(clone, args.repeats)
        copy_ms = median_ms(copy_only, args.repeats)
        bwrap_ms = median_ms(bwrap_true, args.repeats * 2)
        host_ms = median_ms(host_true, args.repeats * 2)
    finally:
        remove_tree(str(work))

    load = os.getloadavg()[0]
    print(f"machine: {platform.platform()}, {os.cpu_count()} cpus, load {load:.1f}")
    print(f"python: {platform.python_version()}")
    print(f"filesystem of the cells: {work.parent}")
    print(f"repository: {tracked} files, {args.commits} commits; snapshot built once in {snapshot_ms:.0f} ms")
    print(f"median of {args.repeats} runs (ms):")
    print(f"  per cell (private copy + bwrap true + remove): {cell_ms:8.1f}")
    print(f"    of which copy + remove:                      {copy_ms:8.1f}")
    print(f"  git clone --no-local --no-hardlinks + rm:      {clone_ms:8.1f}")
    print(f"  ratio per cell / clone:                        {cell_ms / clone_ms:8.3f}  (target <= 0.25)")
    print(f"median of {args.repeats * 2} runs (ms):")
    print(f"  /usr/bin/true via BwrapSandbox.run:            {bwrap_ms:8.1f}")
    print(f"  /usr/bin/true via run_managed (host):          {host_ms:8.1f}")
    print(f"  bwrap start-up overhead:                       {bwrap_ms - host_ms:8.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
