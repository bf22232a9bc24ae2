#!/usr/bin/env python3
"""What the issue-25 oracle costs: the restore rule and the canaries, per oracle run (one per cell).

Builds the real-shaped library of ``tests/support/realrepo_kit.py``, imports its fix as a
SWE-bench instance, and runs the imported runner (``app/corpus/swebench_oracle.py``) on a workspace with
the upstream fix (its test file untouched, so the test patch applies even without the restore),
with the harness's oracle environment (``oracle_run.python_guard_env``), three ways, interleaved
(each repeat runs each once, in an order rotated from one repeat to the next):

* ``bare`` — no restore (an empty ``restore.json``), no canary: the runner as before issue 25,
  but reporting JUnit;
* ``restore`` — the restore rule (``restore.json`` as imported), no canary;
* ``full`` — restore and canaries (what a cell runs now).

Prints the median wall time of each and the extra time per oracle run as a ratio over ``bare``;
with ``--cell-wall S`` (a cell's median wall time, e.g. ``cell_wall_s`` from a sweep's rows) also
the extra time as a share of the cell. Outside bwrap (the sandbox's own start-up is the same for
all three and is measured by ``bench/sandbox_bench.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.realrepo_kit import F2P, FIXED, P2P, make_library
from tests.support.sweep_kit import git

from wfbench.app.cell.oracle_run import pytest_addopts, python_guard_env, write_site
from wfbench.app.corpus.swebench import Instance, import_instances
from wfbench.domain.workspace.canary import canaries_for, canary_file_name, canary_source

TOKEN = "0123abcd4567ef89"


def _setup(root: Path) -> tuple[Path, Path]:
    lib = make_library(root)
    repos = root / "mirrors"
    repos.mkdir()
    shutil.copytree(lib["repo"], repos / "acme__intervals")
    instance = Instance(
        line=1,
        instance_id="i",
        repo="acme/intervals",
        base_commit=lib["base"],
        patch=lib["gold"],
        test_patch=lib["test_patch"],
        problem_statement="p",
        fail_to_pass=(F2P,),
        pass_to_pass=P2P,
    )
    corpus = Path(
        import_instances([instance], source="i", repos_dir=str(repos), out_dir=str(root / "c"))
    ).parent
    ws = root / "ws"
    subprocess.run(["git", "clone", "-q", lib["repo"], str(ws)], check=True, capture_output=True)
    git(ws, "checkout", "-q", lib["base"])
    (ws / "src/intervals/__init__.py").write_text(FIXED)
    return corpus, ws


def _run(corpus: Path, ws: Path, variant: str, scratch: Path) -> float:
    stage = scratch / "stage"
    shutil.copytree(corpus / "instances/i", stage)
    shutil.copy(corpus / "oracle/swebench_oracle.py", stage)
    if variant == "bare":
        (stage / "restore.json").write_text(json.dumps({"files": {}}))
    site = write_site(str(scratch / "site"))
    (scratch / "report").mkdir()
    env = python_guard_env(
        {"PATH": os.environ["PATH"], "HOME": str(scratch)},
        site=site,
        append=[str(ws), str(ws / "src"), str(stage)],
    )
    canary = None
    if variant == "full":
        canary = str(stage / canary_file_name(TOKEN))
        Path(canary).write_text(canary_source(canaries_for(TOKEN), TOKEN))
        env["WFBENCH_ORACLE_CANARY"] = canary
    env["PYTEST_ADDOPTS"] = pytest_addopts(site=site, root=str(stage), canary=canary)
    env["WFBENCH_ORACLE_REPORT"] = str(scratch / "report/junit.xml")
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, str(stage / "swebench_oracle.py"), str(stage)],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    if done.returncode != (1 if variant == "full" else 0):
        raise SystemExit(f"{variant}: the runner exited {done.returncode}\n{done.stdout[-2000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--cell-wall", type=float, default=None, help="a cell's median wall time (s)")
    args = parser.parse_args()
    variants = ["bare", "restore", "full"]
    times: dict[str, list[float]] = {v: [] for v in variants}
    with tempfile.TemporaryDirectory(prefix="oracle-bench-") as tmp:
        corpus, ws = _setup(Path(tmp))
        for repeat in range(args.repeats):
            order = variants[repeat % 3 :] + variants[: repeat % 3]
            for variant in order:
                times[variant].append(_run(corpus, ws, variant, Path(tmp) / f"s{repeat}-{variant}"))
    median = {v: statistics.median(t) for v, t in times.items()}
    for variant in variants:
        print(f"{variant:8} median {median[variant] * 1000:8.1f} ms over {args.repeats} runs")
    for variant in ("restore", "full"):
        extra = median[variant] - median["bare"]
        print(
            f"extra per oracle run, {variant} vs bare: {extra * 1000:+.1f} ms ({extra / median['bare']:+.1%})"
        )
        if args.cell_wall:
            print(f"  as a share of a {args.cell_wall:g} s cell: {extra / args.cell_wall:+.2%}")


if __name__ == "__main__":
    main()
