"""docs/distributed.md, followed literally: a token-auth cluster started and used the way the page says.

The commands are read from the page's shell blocks ("Starting a cluster", "Running a sweep") and
run as written, inside a loopback-only network + PID namespace (``tests/support/ray_kit.py``):
``HEAD`` is ``127.0.0.1``, ``[the usual options]`` picks the demo's review tasks. The head, the
worker node and the driver each get a home of their own, like three machines, and the token file
is copied from the head's to the others' as the page's text says. Ray's temp dir is the test's.

Then, on that cluster: a driver without the token is refused before any cell, the summary's
"metered at the wire this run" is the rows' spend (every row was metered on its node),
and ``--max-cost`` holds across the nodes (later cells held back, exit 1). (Throttle retries on a
cluster are the fold's, tested on fakes: tests/unit/app/sweep/test_executor_sweep.py; a node's
scripted provider is per cell, so a scripted burst would throttle every retry too.)
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
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
        # Ray's sockets live under TMPDIR and a UNIX socket path has at most 107 bytes: a short one.
        tmp = Path(tempfile.mkdtemp(prefix="wfray-", dir="/tmp"))
        self.tmp = tmp
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
        # nsenter's entry into the mount namespace moves the shell to "/": start it at home.
        command = 'cd "$HOME" && ' + line.replace("HEAD:", "127.0.0.1:")
        env = {**self.base, "HOME": str(self.root / home)}
        done = self.kit.run(
            ["/bin/sh", "-c", command],
            capture=True,
            check=False,
            env=env,
            timeout=timeout,
        )
        if check:
            assert done.returncode == 0, (
                f"{command!r} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            )
        return done


@attrs.frozen
class Documented:
    """The cluster the page's commands started, and what its first command said without a token."""

    machines: Machines
    refused: Any


@pytest.fixture(scope="module")
def documented(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Documented]:
    """A head and one worker node (2 slots) started with the page's commands, token auth on."""
    missing = ray_missing()
    if missing is not None:
        require_or_skip("WFBENCH_REQUIRE_RAY", missing)
    bwrap_or_skip()
    root = tmp_path_factory.mktemp("ray-docs")
    kit = LoopbackCluster(root / "ns", workers=0)
    machines: Machines | None = None
    try:
        kit.open_namespace()
        machines = Machines(kit, root)
        token_block, start_block = _blocks("Starting a cluster")
        head_line, worker_line = start_block
        refused = machines.sh(head_line, "stranger", check=False)  # before any token exists
        for line in token_block:  # create the token on the head
            machines.sh(line, "head")
        token = root / "head" / ".ray" / "auth_token"
        for home in ("worker", "driver"):  # "copy that file ... to the same path (mode 0600)"
            target = root / home / ".ray" / "auth_token"
            target.parent.mkdir(mode=0o700)
            shutil.copy2(token, target)
        machines.sh(head_line, "head")
        machines.sh(worker_line, "worker")
        machines.wait_slots(2)
        yield Documented(machines, refused)
    finally:
        kit.stop()
        if machines is not None:
            shutil.rmtree(machines.tmp, ignore_errors=True)


def _run_line(runs: int) -> str:
    (run,) = _blocks("Running a sweep")[0]
    assert "[the usual options]" in run
    return run.replace("[the usual options]", USUAL.format(runs=runs))


def _rows(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def _metered(stdout: str) -> float:
    found = _METERED.search(stdout)
    assert found is not None, stdout[-2000:]
    return float(found.group(1))


def test_the_documented_start_needs_the_token_the_page_creates(documented: Documented) -> None:
    refused = documented.refused
    assert refused.returncode != 0
    assert "no authentication token was found" in refused.stdout + refused.stderr
    token = documented.machines.root / "head" / ".ray" / "auth_token"
    assert oct(token.stat().st_mode & 0o777) == "0o600"


def test_a_driver_without_the_token_is_refused_before_any_cell(documented: Documented) -> None:
    stranger = documented.machines.sh(_run_line(1), "stranger", check=False)
    assert stranger.returncode == 2, stranger.stdout + stranger.stderr
    assert "cannot reach the Ray cluster at 127.0.0.1:6379" in stranger.stdout + stranger.stderr
    assert not (documented.machines.root / "stranger" / "results" / "results.jsonl").exists()


@pytest.fixture(scope="module")
def sweep(documented: Documented) -> tuple[Any, list[dict[str, Any]]]:
    """The page's ``wfbench run`` line, the demo's two review tasks once each: its output and rows."""
    done = documented.machines.sh(_run_line(1), "driver")
    return done, _rows(documented.machines.root / "driver" / "results")


def test_the_documented_sweep_runs_and_its_wire_spend_is_every_nodes(
    sweep: tuple[Any, list[dict[str, Any]]],
) -> None:
    done, rows = sweep
    assert len(rows) == 2
    assert all(row["node"] and row["error_kind"] is None for row in rows), rows
    spent = sum(row["cost_usd"] for row in rows)
    assert spent > 0
    assert _metered(done.stdout) == pytest.approx(spent, abs=1e-4), done.stdout


def test_max_cost_holds_across_the_nodes(
    documented: Documented, sweep: tuple[Any, list[dict[str, Any]]]
) -> None:
    per_cell = sum(row["cost_usd"] for row in sweep[1]) / len(sweep[1])
    budget = round(per_cell / 2, 6)  # half a cell: the first two cells (one per slot) reach it
    line = _run_line(3).replace("--out results/", "--out budgeted/") + f" --max-cost {budget}"
    stopped = documented.machines.sh(line, "driver", check=False)
    assert stopped.returncode == 1, stopped.stdout[-3000:] + stopped.stderr[-3000:]
    assert "reached the --max-cost budget" in stopped.stdout
    held = _rows(documented.machines.root / "driver" / "budgeted")
    assert len(held) < 6, "cells were held back once the cluster's spend reached the budget"
    reported = _metered(stopped.stdout)
    assert reported >= budget
    assert reported < 2 * per_cell, "less than the two cells that ran at once would have cost"
