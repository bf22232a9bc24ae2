"""docs/distributed.md, followed literally: a token-auth cluster started and used the way the page says.

The commands are read from the page's shell blocks ("Starting a cluster", "Running a sweep") and
run as written, inside a loopback-only network + PID namespace (``tests/support/ray_kit.py``):
``HEAD`` is ``127.0.0.1``, ``[the usual options]`` picks the demo's review tasks. The head, the
worker node and the driver each get a home of their own, like three machines, and the token file
is copied from the head's to the others' as the page's text says. Ray's temp dir is the test's.

Then, on that cluster: a driver without the token is refused before any cell, the summary's
"metered at the wire this run" is the rows' spend (every row was metered on its node), and
``--max-cost`` holds across the nodes (later cells held back, exit 1).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require_or_skip
from tests.support.demo_run import bwrap_or_skip
from tests.support.ray_kit import LoopbackCluster, ray_missing

pytestmark = [pytest.mark.ray, pytest.mark.bwrap, pytest.mark.slow, pytest.mark.nightly]

DOC = Path(__file__).resolve().parents[3] / "docs" / "distributed.md"
USUAL = "--tasks review-pr-41,review-pr-42 --runs {runs}"
_METERED = re.compile(r"metered at the wire this run: \$([0-9.]+)")


def _blocks(section: str) -> list[list[str]]:
    """The command lines of every ``sh`` block under the page's ``## section`` heading."""
    text = DOC.read_text()
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", body, flags=re.S)
    return [[ln for ln in block.splitlines() if ln.strip() and not ln.startswith("#")] for block in blocks]


class Machines:
    """Three homes in one namespace: the head's, a worker node's and the driver's."""

    def __init__(self, kit: LoopbackCluster, root: Path) -> None:
        self.kit = kit
        self.root = root
        bin_dir = os.path.dirname(sys.executable)
        tmp = root / "tmp"
        tmp.mkdir()
        self.base = {**kit.env, "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}", "TMPDIR": str(tmp)}
        for name in ("head", "worker", "driver", "stranger"):
            (root / name).mkdir()

    def wait_slots(self, slots: int, timeout: float = 180.0) -> None:
        """Until the documented cluster offers ``slots`` wfbench slots (asked as the driver)."""
        probe = (
            "RAY_AUTH_MODE=token python -c \"import ray; ray.init(address='127.0.0.1:6379',"
            " log_to_driver=False); print(int(ray.cluster_resources().get('wfbench_slot', 0)))\""
        )
        deadline = time.monotonic() + timeout
        while True:
            done = self.sh(probe, "driver", check=False)
            if done.stdout.strip().splitlines()[-1:] == [str(slots)]:
                return
            assert time.monotonic() < deadline, f"never {slots} slots: {done.stdout} {done.stderr[-500:]}"
            time.sleep(1.0)

    def sh(self, line: str, home: str, *, check: bool = True, timeout: float = 600) -> Any:
        """``line`` as written (``HEAD`` is this namespace's loopback) in ``home``'s shell."""
        command = line.replace("HEAD:", "127.0.0.1:")
        env = {**self.base, "HOME": str(self.root / home)}
        done = self.kit.run(
            ["/bin/sh", "-c", command],
            capture=True,
            check=False,
            env=env,
            cwd=str(self.root / home),
            timeout=timeout,
        )
        if check:
            assert done.returncode == 0, (
                f"{command!r} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            )
        return done


@pytest.fixture(scope="module")
def machines(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Machines]:
    """The namespace and the three homes; no cluster yet (the test starts it from the page)."""
    missing = ray_missing()
    if missing is not None:
        require_or_skip("WFBENCH_REQUIRE_RAY", missing)
    bwrap_or_skip()
    root = tmp_path_factory.mktemp("ray-docs")
    kit = LoopbackCluster(root / "ns", workers=0)
    try:
        kit.open_namespace()
        yield Machines(kit, root)
    finally:
        kit.stop()


def _run_line(runs: int) -> str:
    (run,) = _blocks("Running a sweep")[0]
    assert "[the usual options]" in run
    return run.replace("[the usual options]", USUAL.format(runs=runs))


def _rows(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def test_the_documented_token_cluster_starts_runs_a_sweep_meters_it_and_holds_a_budget(
    machines: Machines,
) -> None:
    token_block, start_block = _blocks("Starting a cluster")
    head_line, worker_line = start_block
    assert "--head" in head_line
    assert "wfbench_slot" in worker_line

    # As the page warns: the documented start fails while no token exists.
    refused = machines.sh(head_line, "stranger", check=False)
    assert refused.returncode != 0
    assert "no authentication token was found" in refused.stdout + refused.stderr

    for line in token_block:  # create the token on the head
        machines.sh(line, "head")
    token = machines.root / "head" / ".ray" / "auth_token"
    assert oct(token.stat().st_mode & 0o777) == "0o600"
    for home in ("worker", "driver"):  # "copy that file ... to the same path (mode 0600)"
        target = machines.root / home / ".ray" / "auth_token"
        target.parent.mkdir(mode=0o700)
        shutil.copy2(token, target)

    machines.sh(head_line, "head")
    machines.sh(worker_line, "worker")
    machines.wait_slots(2)

    stranger = machines.sh(_run_line(1), "stranger", check=False)
    assert stranger.returncode == 2, stranger.stdout + stranger.stderr
    assert "cannot reach the Ray cluster at 127.0.0.1:6379" in stranger.stdout + stranger.stderr
    assert not (machines.root / "stranger" / "results" / "results.jsonl").exists()

    done = machines.sh(_run_line(1), "driver")
    rows = _rows(machines.root / "driver" / "results")
    assert len(rows) == 2
    assert all(row["node"] and row["error_kind"] is None for row in rows), rows
    metered = float(_METERED.search(done.stdout).group(1))  # type: ignore[union-attr]
    spent = sum(row["cost_usd"] for row in rows)
    assert spent > 0
    assert metered == pytest.approx(spent, abs=1e-4), done.stdout

    budget = round(spent / 4, 6)  # about half a cell: the first cells reach it
    budgeted = _run_line(3).replace("--out results/", "--out budgeted/") + f" --max-cost {budget}"
    stopped = machines.sh(budgeted, "driver", check=False)
    assert stopped.returncode == 1, stopped.stdout[-3000:] + stopped.stderr[-3000:]
    assert "reached the --max-cost budget" in stopped.stdout
    held = _rows(machines.root / "driver" / "budgeted")
    assert len(held) < 6, "cells were held back once the cluster's spend reached the budget"
    reported = float(_METERED.search(stopped.stdout).group(1))  # type: ignore[union-attr]
    assert reported >= budget
    assert reported < spent, "less than the two cells that ran at once would have cost unbudgeted"
