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
from tests.support.podman_kit import base_image
from wfbench.adapters.sandbox.containers import sweep_key

# The whole demo under podman (~3x a bwrap cell, minutes): the nightly tier (CONTRIBUTING.md).
pytestmark = [pytest.mark.slow, pytest.mark.nightly]

WFBENCH = [sys.executable, "-m", "wfbench"]


def _containers_of(out: Path) -> list[str]:
    """Names of the containers (running or not) labelled with the sweep at ``out``."""
    label = f"io.wfbench.sweep={sweep_key(str(out))}"
    return subprocess.run(
        ["podman", "ps", "--all", "--filter", f"label={label}", "--format", "{{.Names}}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()


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
    # A container lives for one command: what was seen is kept, never looked up a second time (the
    # flake of the previous version: it saw one, then asserted on a new listing made after it was gone).
    seen: list[str] = []
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not seen and sweep.poll() is None:
        seen = _containers_of(out)
        time.sleep(0.1)
    assert seen, f"the sweep never started a container (exit {sweep.poll()})"
    assert all(name.startswith(f"wfbench-{sweep_key(str(out))}-") for name in seen)  # named by its sweep
    sweep.send_signal(signal.SIGKILL)
    sweep.wait(30)
    resumed = subprocess.run(
        [*WFBENCH, "run", "--resume", str(out), "--workers", "2", "--sandbox", "podman"],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    assert _containers_of(out) == []  # the next start removed the killed run's; its own are gone too
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines() if line]
    assert len(rows) == DEMO_CELLS
    assert {r["sandbox_backend"] for r in rows} == {"podman"}
    bwrap_out, bwrap_done = demo_out
    assert bwrap_done.returncode == 0
    assert _decisions(out) == _decisions(bwrap_out)
