"""``wfbench run --executor ray`` on a real multi-node Ray cluster inside a loopback-only network namespace.

One cluster per module (``tests/support/ray_kit.py``): a head with no slots and two worker
nodes with 2 ``wfbench_slot`` each, every one a separate ``ray start`` process, plus a third
worker whose runtime identity differs from the driver's (``WFBENCH_RUNTIME_DIGEST``), which the
preflight must refuse by name. Every driver runs inside the namespace too, with an explicit
address: no Ray traffic can reach anything but loopback.

The node-loss test kills a worker node's raylet for good, so it runs last.

Needs root (``unshare -n``) and the ray extra: ``bash scripts/test-ray`` (``docs/distributed.md``).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require_or_skip
from tests.support.demo_run import DEMO_CELLS, bwrap_or_skip
from tests.support.ray_kit import LoopbackCluster, ray_missing
from wfbench import demo

pytestmark = [pytest.mark.ray, pytest.mark.bwrap, pytest.mark.slow, pytest.mark.nightly]

WFBENCH = [sys.executable, "-m", "wfbench"]
#: Seconds the final reply of every (Anthropic) review session is held back: cells of a known length.
STALL_S = 20
REVIEW_TASKS = "review-pr-41,review-pr-42"
#: Row fields that differ between any two runs of one sweep (times, session ids, and the outputs
#: that print their own timings); every other field must be equal.
VOLATILE = {
    "recorded_at",
    "cell_wall_s",
    "duration_s",
    "node",
    "session_ids",
    "transcript_artifacts",
    "variant_head_sha",
}
_TIMING = re.compile(r"Ran (\d+) tests? in [0-9.]+s")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoopbackCluster]:
    """Head + two worker nodes (2 slots each) + a mismatched third worker, in their own namespace."""
    missing = ray_missing()
    if missing is not None:
        require_or_skip("WFBENCH_REQUIRE_RAY", missing)
    bwrap_or_skip()
    kit = LoopbackCluster(tmp_path_factory.mktemp("ray"), workers=2, slots=2)
    try:
        kit.start()
        kit.add_worker(3, env={"WFBENCH_RUNTIME_DIGEST": "a-different-runtime"})
        kit.wait_slots(6)
        yield kit
    finally:
        kit.stop()


def _ray_argv(kit: LoopbackCluster, *args: str) -> list[str]:
    return [*WFBENCH, "run", *args, "--executor", "ray", "--ray-address", kit.address, "--cancel-grace", "5"]


def _rows(out: Path) -> list[dict[str, Any]]:
    path = out / "results.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _comparable(row: dict[str, Any]) -> dict[str, Any]:
    kept = {k: v for k, v in row.items() if k not in VOLATILE}
    for key, value in kept.items():
        if isinstance(value, str):
            kept[key] = _TIMING.sub(r"Ran \1 tests in <t>", value)
    kept["transcripts"] = len(row.get("transcript_artifacts") or [])
    kept["session_measurements"] = [  # each paid session, without its id and its own timing
        {k: v for k, v in session.items() if k not in ("session_id", "duration_s")}
        for session in row.get("session_measurements") or []
    ]
    return kept


def _timeless(value: Any) -> Any:
    """``value`` without the durations (medians of the volatile ``duration_s``)."""
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if "duration" not in k}
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


def _stalling_script(tmp: Path) -> Path:
    """The demo's provider script with the last reply of each Anthropic review session held STALL_S s."""
    text = (Path(demo.__file__).parent / "provider.yaml").read_text()
    stalled, count = re.subn(r'(- \{say: "[^"]*", usage: \*review)\}', rf"\1, stall_s: {STALL_S}}}", text)
    assert count == 2, "the demo's two review rules changed shape"
    script = tmp / "stall.yaml"
    script.write_text(stalled)
    return script


def _cut_short(out: Path) -> list[str]:
    """Cells with a reply the key proxy could not meter to the end (``wire_incomplete``): none may be."""
    return [f"{r['task']}/{r['arm']}/{r['run']}" for r in _rows(out) if r.get("wire_incomplete")]


@pytest.fixture(scope="module")
def demo_pair(
    cluster: LoopbackCluster, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, subprocess.CompletedProcess[str], Path, subprocess.CompletedProcess[str]]:
    """The demo sweep through ``--executor ray`` and through the local executor (``--workers 3``).

    Both run once, in the namespace, with the same provider.
    """
    root = tmp_path_factory.mktemp("demo-pair")
    out, local_out = root / "ray", root / "local"
    done = cluster.run(_ray_argv(cluster, "--out", str(out)), capture=True, check=False, timeout=900)
    local = cluster.run(
        [*WFBENCH, "run", "--out", str(local_out), "--workers", "3"], capture=True, check=False, timeout=900
    )
    return out, done, local_out, local


@pytest.fixture(scope="module")
def ray_demo(demo_pair) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The demo sweep through ``--executor ray``: its output directory and the finished process."""
    return demo_pair[0], demo_pair[1]


def test_the_demo_sweep_through_ray_gives_the_rows_and_decisions_of_the_local_executor(demo_pair):
    """Same cells, outcomes, usage, cost, digests and decisions; the cells spread over both nodes."""
    out, done, local_out, local = demo_pair
    assert _cut_short(out) + _cut_short(local_out) == []  # every reply metered whole, on a node as locally
    assert local.returncode == 0, local.stderr[-2000:]
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    ray_rows, local_rows = _rows(out), _rows(local_out)
    assert len(ray_rows) == len(local_rows) == DEMO_CELLS
    assert [_comparable(r) for r in ray_rows] == [_comparable(r) for r in local_rows]
    assert len({r["node"] for r in ray_rows}) == 2  # both accepted nodes ran cells
    assert all(r.get("node") is None for r in local_rows)
    ray_decisions = _timeless(json.loads((out / "promotion.json").read_text())["decisions"])
    local_decisions = _timeless(json.loads((local_out / "promotion.json").read_text())["decisions"])
    assert ray_decisions == local_decisions
    assert (out / "report.md").is_file()
    for row in ray_rows:  # the driver wrote every artifact a row names
        for artifact in row["transcript_artifacts"]:
            assert (out / artifact["path"]).is_file(), artifact


def test_a_node_whose_runtime_identity_differs_is_refused_by_name_and_gets_no_cell(cluster, ray_demo):
    """The third worker's probe reports another runtime digest: one [node-refused] line names it."""
    out, done = ray_demo
    refused = [line for line in (done.stdout + done.stderr).splitlines() if "[node-refused]" in line]
    assert len(refused) == 1, done.stdout[-3000:] + done.stderr[-3000:]
    third = cluster.node_id(cluster.node_raylets[2])
    assert third[:12] in refused[0]
    assert "runtime identity" in refused[0]
    assert third[:8] not in {r["node"].split("/")[-1] for r in _rows(out)}
    accepted = {cluster.node_id(raylet)[:8] for raylet in cluster.node_raylets[:2]}
    assert {r["node"].split("/")[-1] for r in _rows(out)} == accepted


def _wait_busy(kit: LoopbackCluster, proc: subprocess.Popen[str], raylets: list[int], each: int) -> None:
    """Wait until every node in ``raylets`` runs ``each`` cells (their sessions are in the stall)."""
    deadline = time.monotonic() + 300
    while not all(kit.busy_workers(raylet) >= each for raylet in raylets):
        assert proc.poll() is None, "the sweep ended before its cells were all running"
        assert time.monotonic() < deadline, "the cells never all started"
        time.sleep(0.5)


def _wait_running(kit: LoopbackCluster, proc: subprocess.Popen[str], raylets: list[int], total: int) -> None:
    """Wait until ``total`` cells run on the nodes of ``raylets``, wherever Ray placed them.

    (Which node frees its slots first is timing: both last cells may go to one node.)
    """
    deadline = time.monotonic() + 300
    while sum(kit.busy_workers(raylet) for raylet in raylets) < total:
        assert proc.poll() is None, "the sweep ended before its cells were all running"
        assert time.monotonic() < deadline, "the cells never all started"
        time.sleep(0.5)


def _leftovers(kit: LoopbackCluster, before: set[int], timeout: float = 60.0) -> list[tuple[int, str]]:
    """Processes of the namespace that were not there before the sweep, once they had ``timeout`` s to go."""
    deadline = time.monotonic() + timeout
    while True:
        extra = [(pid, cmd) for pid, cmd in kit.processes() if pid not in before]
        if not extra or time.monotonic() > deadline:
            return extra
        time.sleep(0.5)


def test_sigint_exits_130_with_every_cell_recorded_cancelled_and_every_process_gone(cluster, tmp_path):
    """Ctrl-C once 4 of 6 stalled cells have their rows and the last 2 run on the nodes: exit 130,
    those 2 rows ``cancelled`` (the nodes' own rows, not lost), no process of the sweep left anywhere.

    (Interrupting before any row exists would exit 1: an arm whose every fresh attempt was cancelled
    is UNUSABLE, which the exit code ranks above the cancellation, as on one machine.)
    """
    script = _stalling_script(tmp_path)
    out = tmp_path / "out"
    before = {pid for pid, _cmd in cluster.processes()}
    argv = _ray_argv(
        cluster, "--out", str(out), "--tasks", REVIEW_TASKS, "--runs", "3", "--provider-script", str(script)
    )
    proc = cluster.popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 300
        while len(_rows(out)) < 4:
            assert proc.poll() is None, "the sweep ended early"
            assert time.monotonic() < deadline, "the first 4 cells never finished"
            time.sleep(0.5)
        _wait_running(cluster, proc, cluster.node_raylets[:2], 2)
        os.kill(cluster.child_of(proc), signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stdout[-2000:] + stderr[-3000:]
    rows = _rows(out)
    kinds = [r["error_kind"] for r in rows]
    assert kinds == [None] * 4 + ["cancelled"] * 2, [r["error_detail"] for r in rows]
    cancelled = rows[4:]
    accepted = {cluster.node_id(raylet)[:8] for raylet in cluster.node_raylets[:2]}
    assert {r["node"].split("/")[-1] for r in cancelled} <= accepted  # the nodes' own rows
    assert not any(r["resolved"] for r in cancelled)
    assert not any("returned nothing" in (r["error_detail"] or "") for r in cancelled)
    assert _leftovers(cluster, before) == []


def test_killing_a_worker_nodes_raylet_mid_sweep_gives_infra_error_rows_and_the_sweep_continues(
    cluster, tmp_path
):
    """Worker 1's raylet SIGKILLed while its 2 cells stall: 2 infra-error rows; worker 2 runs the rest."""
    script = _stalling_script(tmp_path)
    out = tmp_path / "out"
    argv = _ray_argv(
        cluster, "--out", str(out), "--tasks", REVIEW_TASKS, "--runs", "3", "--provider-script", str(script)
    )
    victim, survivor = cluster.node_raylets[0], cluster.node_raylets[1]
    lost, kept = cluster.node_id(victim)[:8], cluster.node_id(survivor)[:8]
    proc = cluster.popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_busy(cluster, proc, [victim, survivor], 2)
        cluster.kill_raylet(1)
        stdout, stderr = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    rows = _rows(out)
    assert len(rows) == 6, stdout[-2000:] + stderr[-3000:]
    by_node: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_node.setdefault(row["node"].split("/")[-1], []).append(row)
    assert set(by_node) == {lost, kept}
    assert [r["error_kind"] for r in by_node[lost]] == ["infra-error", "infra-error"]
    assert all("was lost while running the cell" in r["error_detail"] for r in by_node[lost])
    assert [(r["error_kind"], r["resolved"]) for r in by_node[kept]] == [(None, True)] * 4
    assert "[node-lost]" in stdout + stderr
    assert proc.returncode == 0, stdout[-2000:] + stderr[-3000:]  # the arm stays usable: 4 of 6 admissible
