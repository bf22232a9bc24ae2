"""The bwrap sandbox's process limit: one pids cgroup per command (adapters/sandbox/pids_cgroup.py).

Needs bwrap and a writable pids cgroup controller (root, ``/sys/fs/cgroup/pids`` or a cgroup2
mount offering ``pids``). Skipped with the reason otherwise; under WFBENCH_REQUIRE_BWRAP=1 a
missing controller fails, because the CI machine has one and the limit must be proven there.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from tests.conftest import HARNESS_PYTHON, require_or_skip
from tests.support.sweep_kit import bwrap_or_skip, processes_with
from wfbench.adapters.sandbox import command_limits, pids_cgroup
from wfbench.adapters.sandbox.bwrap import BwrapSandbox
from wfbench.adapters.sandbox.pids_cgroup import PidsController, PidsUnavailable, find_pids_mount
from wfbench.domain.workspace.sandbox import SandboxPolicy

PY = os.path.realpath(sys.executable)
FORK_LOOP = """
import subprocess, sys
started = 0
try:
    for _ in range(int(sys.argv[1])):
        subprocess.Popen(["sleep", sys.argv[2]])
        started += 1
    print("all started", started)
except OSError as exc:
    print("refused after", started, exc.strerror)
"""


def _controller() -> PidsController:
    bwrap_or_skip()
    try:
        return pids_cgroup.detect()
    except PidsUnavailable as exc:
        require_or_skip("WFBENCH_REQUIRE_BWRAP", f"no writable pids cgroup here: {exc}")
        raise


def _groups_of_this_process(parent: str) -> list[str]:
    return [name for name in os.listdir(parent) if name.startswith(f"{os.getpid()}-")]


def _fork_loop(tmp_path: Path, limit: int | None, forks: int) -> tuple[str, str]:
    """Run the fork loop in a fresh sandbox; (its output, the sleeps' unique argument)."""
    seconds = f"300.{random.randrange(10**8, 10**9)}"
    policy = SandboxPolicy(
        workspace=str(tmp_path),
        workspace_writable=True,
        network=False,
        timeout_s=120.0,
        env={"PATH": "/usr/bin:/bin"},
    )
    sandbox = BwrapSandbox(pids_limit=limit)
    result = sandbox.run([PY, "-c", FORK_LOOP, str(forks), seconds], policy=policy)
    return result.stdout.decode(), seconds


def test_a_fork_loop_meets_the_process_limit_and_leaves_nothing_behind(tmp_path: Path) -> None:
    """2000 background sleeps under a limit of 64: fork fails with EAGAIN; no sleep nor group remains."""
    parent = _controller().parent
    output, seconds = _fork_loop(tmp_path, 64, 2000)
    assert "refused after" in output, output
    assert "Resource temporarily unavailable" in output
    started = int(output.split()[2])
    assert 40 <= started < 64  # python and bwrap's monitor process count too
    assert processes_with(seconds) == []
    assert _groups_of_this_process(parent) == []


def test_without_a_limit_the_same_loop_starts_every_process(tmp_path: Path) -> None:
    """Negative control: with pids_limit=None a loop of 300 starts all 300 (the limit is the cgroup's)."""
    _controller()
    output, seconds = _fork_loop(tmp_path, None, 300)
    assert "all started 300" in output
    assert processes_with(seconds) == []  # the PID namespace still ends them with the command


def test_the_default_limit_is_512_and_leaves_room_for_ordinary_commands(tmp_path: Path) -> None:
    """BwrapSandbox() enforces 512 by default (a loop of 600 is refused) and a pipeline runs fine."""
    _controller()
    output, seconds = _fork_loop(tmp_path, pids_cgroup.DEFAULT_PIDS_LIMIT, 600)
    assert "refused after" in output, output
    assert 490 <= int(output.split()[2]) < 512
    assert processes_with(seconds) == []
    policy = SandboxPolicy(
        workspace=str(tmp_path),
        workspace_writable=True,
        network=False,
        timeout_s=30.0,
        env={"PATH": "/usr/bin:/bin"},
    )
    result = BwrapSandbox().run(["/bin/sh", "-c", "ls / | sort | wc -l"], policy=policy)
    assert result.ok, result


def test_groups_of_dead_owners_are_removed_and_live_ones_kept() -> None:
    """detect() removes a wfbench group whose owner pid is gone; a group of a live owner stays."""
    parent = _controller().parent
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = os.path.join(parent, f"{dead.pid}-{uuid.uuid4().hex[:12]}")
    live = os.path.join(parent, f"{os.getpid()}-{uuid.uuid4().hex[:12]}")
    os.mkdir(stale)
    os.mkdir(live)
    try:
        pids_cgroup.detect()
        assert not os.path.exists(stale)
        assert os.path.isdir(live)
    finally:
        for path in (stale, live):
            if os.path.exists(path):
                os.rmdir(path)


def test_without_a_controller_the_sandbox_warns_once_and_still_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No writable pids controller: one structlog warning, doctor's line says NOT enforced, commands run."""
    bwrap_or_skip()

    def unavailable(limit: int = 512, mounts_path: str = "") -> PidsController:
        raise PidsUnavailable("no writable pids cgroup controller is mounted")

    monkeypatch.setattr(pids_cgroup, "detect", unavailable)
    monkeypatch.setattr(command_limits, "_warned", set())
    policy = SandboxPolicy(workspace=str(tmp_path), workspace_writable=True, network=False, timeout_s=30.0)
    with capture_logs() as logs:
        first, second = BwrapSandbox(), BwrapSandbox()
        assert first.run(["/bin/true"], policy=policy).ok
        assert second.run(["/bin/true"], policy=policy).ok
        assert first.process_limit().startswith("NOT enforced: no writable pids")
    warnings = [entry for entry in logs if entry["event"] == "sandbox.no_process_limit"]
    assert len(warnings) == 1
    assert warnings[0]["log_level"] == "warning"


def test_the_pids_hierarchy_is_found_in_a_mounts_table() -> None:
    """cgroup v1 pids wins; a cgroup2 mount is the fallback; a read-only one or none is no hierarchy."""
    v1 = "cgroup /sys/fs/cgroup/pids cgroup rw,relatime,pids 0 0\n"
    v2 = "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n"
    assert find_pids_mount(v2 + v1) == ("/sys/fs/cgroup/pids", 1)
    assert find_pids_mount(v2) == ("/sys/fs/cgroup/unified", 2)
    assert find_pids_mount("cgroup /sys/fs/cgroup/pids cgroup ro,pids 0 0\n") is None
    assert find_pids_mount("cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\nproc /proc proc rw 0 0\n") is None


def test_a_missing_mounts_table_is_unavailable_not_a_crash(tmp_path: Path) -> None:
    """detect() on a machine without the table, or without a pids mount, raises PidsUnavailable."""
    with pytest.raises(PidsUnavailable, match="cannot read"):
        pids_cgroup.detect(mounts_path=str(tmp_path / "absent"))
    table = tmp_path / "mounts"
    table.write_text("proc /proc proc rw 0 0\n")
    with pytest.raises(PidsUnavailable, match="no writable pids"):
        pids_cgroup.detect(mounts_path=str(table))


def test_doctor_names_the_process_limit() -> None:
    """`wfbench doctor` (a subprocess) reports the pids cgroup and the per-command limit."""
    parent = _controller().parent
    done = subprocess.run(
        [sys.executable, "-m", "wfbench", "doctor"], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert f"process limit: pids cgroup (v1) at {parent}, at most 512 per command" in done.stdout


def _in_new_pid_namespace(code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a PID namespace of its own (its own /proc), as a Ray node of a test runs."""
    if os.geteuid() != 0:
        pytest.skip("a new PID namespace needs root (unshare --pid)")
    return subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", HARNESS_PYTHON, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ},
    )


def test_a_process_in_another_pid_namespace_leaves_this_namespaces_live_groups_alone() -> None:
    """From a child PID namespace our pid means nothing: detect() there keeps our live group and process."""
    parent = _controller().parent
    holder = subprocess.Popen(["sleep", "300"])
    group = pids_cgroup.PidsController(parent, pids_cgroup.detect().version, 64).create()
    legacy = os.path.join(parent, f"{os.getpid()}-{uuid.uuid4().hex[:12]}")
    os.mkdir(legacy)
    try:
        with open(os.path.join(group.path, "cgroup.procs"), "w", encoding="ascii") as handle:
            handle.write(str(holder.pid))
        done = _in_new_pid_namespace(
            "from wfbench.adapters.sandbox import pids_cgroup, memory_cgroup\n"
            "pids_cgroup.detect()\n"
            "try:\n    memory_cgroup.detect()\nexcept memory_cgroup.MemoryUnavailable:\n    pass\n"
            "print(pids_cgroup.group_name())"
        )
        assert done.returncode == 0, done.stderr
        assert os.path.isdir(group.path)
        assert os.path.isdir(legacy)
        assert holder.poll() is None, "a process of this namespace's group was killed from another one"
        inner = done.stdout.split()[-1]
        assert f"-n{pids_cgroup.pid_namespace()}-" not in inner  # the child names its own namespace
        assert f"-n{pids_cgroup.pid_namespace()}-" in os.path.basename(group.path)
    finally:
        holder.kill()
        holder.wait()
        group.close()
        if os.path.exists(legacy):
            os.rmdir(legacy)


def test_stale_groups_are_judged_only_in_their_own_namespace() -> None:
    """A dead owner's group goes when its namespace is ours; another namespace's, or a legacy name seen
    from outside the initial namespace, stays (positive control: the same names are removed from theirs)."""
    parent = _controller().parent
    dead = subprocess.Popen(["true"])
    dead.wait()
    ours = pids_cgroup.pid_namespace()
    assert ours is not None
    other = ours + 1
    names = {
        "ours": f"{dead.pid}-n{ours}-{uuid.uuid4().hex[:12]}",
        "other": f"{dead.pid}-n{other}-{uuid.uuid4().hex[:12]}",
        "legacy": f"{dead.pid}-{uuid.uuid4().hex[:12]}",
    }
    paths = {key: os.path.join(parent, name) for key, name in names.items()}
    for path in paths.values():
        os.mkdir(path)
    try:
        removed = set(pids_cgroup.remove_stale(parent, namespace=other))
        assert removed == {paths["other"]}  # seen from the other namespace: only its own group
        removed = set(pids_cgroup.remove_stale(parent, namespace=ours))
        expected = {paths["ours"]} | ({paths["legacy"]} if ours == pids_cgroup.INITIAL_PIDNS else set())
        assert removed == expected
    finally:
        for path in paths.values():
            if os.path.exists(path):
                os.rmdir(path)
