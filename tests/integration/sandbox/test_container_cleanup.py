"""A sweep's start removes the containers of a killed run of that sweep, and never another sweep's.

Real containers (podman and docker, one adapter): two commands of two sweeps sleep; removing the
first sweep's containers ends its command and leaves the second's running.
"""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.support.podman_kit import docker_sandbox, podman_sandbox
from wfbench.adapters.sandbox.containers import container_name, sweep_key
from wfbench.domain.workspace.sandbox import CommandScope, ExecResult, SandboxPolicy


def _names(sandbox: object, sweep: Path) -> list[str]:
    cli = sandbox.cli()  # type: ignore[attr-defined]
    listing = subprocess.run(
        cli.list_labelled("io.wfbench.sweep", sweep_key(str(sweep))),
        capture_output=True,
        text=True,
        check=True,
    )
    return [line.split()[0] for line in listing.stdout.splitlines() if line.strip()]


def _sleep_in(sandbox: object, ws: Path, sweep: Path, cancel: threading.Event) -> dict[str, ExecResult]:
    """Start ``sleep 60`` as a cell command of ``sweep`` in a thread; its result lands in the dict."""
    scope = CommandScope(str(sweep), "task", "arm", 1, "session-implement")
    policy = SandboxPolicy(str(ws), workspace_writable=True, network=False, timeout_s=60, scope=scope)
    done: dict[str, ExecResult] = {}

    def run() -> None:
        done["result"] = sandbox.run(["/bin/sleep", "60"], policy=policy, cancel=cancel)  # type: ignore[attr-defined]

    threading.Thread(target=run, daemon=True).start()
    return done


@pytest.mark.parametrize("backend", ["podman", "docker"])
def test_the_next_start_removes_this_sweeps_containers_and_no_other_sweeps(
    backend: str, tmp_path: Path
) -> None:
    sandbox = podman_sandbox() if backend == "podman" else docker_sandbox()
    ws = tmp_path / "ws"
    ws.mkdir()
    mine, other = tmp_path / "killed-sweep", tmp_path / "other-sweep"
    cancel_mine, cancel_other = threading.Event(), threading.Event()
    killed = _sleep_in(sandbox, ws, mine, cancel_mine)
    running = _sleep_in(sandbox, ws, other, cancel_other)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (_names(sandbox, mine) and _names(sandbox, other)):
            time.sleep(0.1)
        assert _names(sandbox, mine), "the command of the first sweep never started"
        assert _names(sandbox, other), "the command of the second sweep never started"
        removed = sandbox.remove_sweep_containers(str(mine))
        assert removed
        assert all(name.startswith(f"wfbench-{sweep_key(str(mine))}-") for name in removed)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and "result" not in killed:
            time.sleep(0.1)
        assert "result" in killed
        assert not killed["result"].ok
        assert _names(sandbox, mine) == []
        assert _names(sandbox, other) != []  # another sweep's container is never touched
        assert "result" not in running
    finally:
        cancel_mine.set()
        cancel_other.set()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _names(sandbox, other):
        time.sleep(0.1)
    assert _names(sandbox, other) == []


def test_without_a_docker_daemon_the_docker_sandbox_refuses_and_says_how_to_start_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """No fallback: a daemon that does not answer (or no docker at all) names scripts/docker-daemon."""
    from wfbench.cli.bootstrap import build_sandbox
    from wfbench.domain.errors import SandboxUnavailable

    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-daemon.sock")
    with pytest.raises(SandboxUnavailable, match=r"docker cannot run here.*scripts/docker-daemon"):
        build_sandbox("docker")


@pytest.mark.parametrize("backend", ["podman", "docker"])
def test_a_leftover_holding_a_cells_name_is_replaced_and_the_command_runs(
    backend: str, tmp_path: Path
) -> None:
    """A container of a killed run of the same cell and phase (same name) does not fail the command."""
    sandbox = podman_sandbox() if backend == "podman" else docker_sandbox()
    scope = CommandScope(str(tmp_path / "sweep"), "task", "arm", 0, "verify")
    name = container_name(scope)
    cli = sandbox.cli()
    limits = ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]
    subprocess.run(
        [*cli.base, "run", "-d", "--name", name, *limits, sandbox.default_image, "sleep", "120"],
        capture_output=True,
        check=True,
    )
    try:
        ws = tmp_path / "ws"
        ws.mkdir()
        policy = SandboxPolicy(str(ws), workspace_writable=False, network=False, timeout_s=60, scope=scope)
        result = sandbox.run(["/bin/echo", "ran"], policy=policy)
        assert result.ok, result
        assert result.stdout == b"ran\n"
    finally:
        subprocess.run(cli.remove([name]), capture_output=True, check=False)
