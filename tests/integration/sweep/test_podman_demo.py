"""The demo under ``--sandbox podman``: SIGKILLed mid-sweep, no container survives the next start,
``--resume`` finishes it, and its decisions equal bwrap's (issue 28's acceptance, one sweep)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.demo_run import DEMO_CELLS
from tests.support.podman_kit import base_image, podman_sandbox

# The whole demo under podman (~3x a bwrap cell, minutes): the nightly tier (CONTRIBUTING.md).
pytestmark = [pytest.mark.slow, pytest.mark.nightly]

WFBENCH = [sys.executable, "-m", "wfbench"]


def _containers_of(pid: int) -> list[str]:
    """Names of the wfbench containers (running or not) whose owner label names ``pid``."""
    listing = subprocess.run(
        ["podman", "ps", "--all", "--filter", "label=io.wfbench.owner", "--format", "{{.Names}}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [name for name in listing if name.startswith(f"wfbench-{pid}-")]


def _decisions(out: Path) -> list[tuple[Any, ...]]:
    promotion = json.loads((out / "promotion.json").read_text())
    return [
        (d["candidate_arm"], d["incumbent_arm"], d["decision"], d["metric"], d["median_improvement_pct"])
        for d in promotion["decisions"]
    ]


def test_a_killed_podman_demo_leaves_no_container_and_resumes_to_bwraps_decisions(
    tmp_path: Path, demo_out: tuple[Path, subprocess.CompletedProcess[str]]
) -> None:
    env = {**os.environ, "WFBENCH_PODMAN_IMAGE": base_image()}
    out = tmp_path / "out"
    sweep = subprocess.Popen(
        [*WFBENCH, "run", "--out", str(out), "--workers", "2", "--sandbox", "podman"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not _containers_of(sweep.pid) and sweep.poll() is None:
        time.sleep(0.2)
    assert _containers_of(sweep.pid), "the sweep never started a container"
    sweep.send_signal(signal.SIGKILL)
    sweep.wait(30)
    podman_sandbox().preflight()  # the next start: containers of the dead sweep are removed
    assert _containers_of(sweep.pid) == []
    resumed = subprocess.run(
        [*WFBENCH, "run", "--resume", str(out), "--workers", "2", "--sandbox", "podman"],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines() if line]
    assert len(rows) == DEMO_CELLS
    assert {r["sandbox_backend"] for r in rows} == {"podman"}
    bwrap_out, bwrap_done = demo_out
    assert bwrap_done.returncode == 0
    assert _decisions(out) == _decisions(bwrap_out)
