"""Per-command resource limits of the bwrap sandbox (adapters/sandbox/command_limits.py, memory_cgroup.py).

Real bubblewrap, real cgroups: a memory limit the OOM killer enforces (and the result names),
RLIMIT_FSIZE and RLIMIT_NOFILE inherited by every process, groups removed after the run, the
doctor's lines, and the run options' refusals. Required under WFBENCH_REQUIRE_BWRAP=1.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from tests.conftest import require_or_skip
from tests.support.sweep_kit import bwrap_or_skip
from wfbench.adapters.sandbox import command_limits, cpu_cgroup, memory_cgroup, pids_cgroup
from wfbench.adapters.sandbox.bwrap import BwrapSandbox
from wfbench.adapters.sandbox.command_limits import ResourceLimits, parse_size
from wfbench.adapters.sandbox.memory_cgroup import MemoryUnavailable, find_memory_mount
from wfbench.domain.workspace.sandbox import ProcessState, SandboxPolicy, TaskResources

PY = os.path.realpath(sys.executable)


def _policy(tmp_path: Path) -> SandboxPolicy:
    return SandboxPolicy(
        workspace=str(tmp_path),
        workspace_writable=True,
        network=False,
        timeout_s=120.0,
        env={"PATH": "/usr/bin:/bin"},
    )


def _memory_parent() -> str:
    bwrap_or_skip()
    try:
        return memory_cgroup.detect().parent
    except MemoryUnavailable as exc:
        require_or_skip("WFBENCH_REQUIRE_BWRAP", f"no writable memory cgroup here: {exc}")
        raise


def test_an_allocation_past_the_memory_limit_is_killed_and_named(tmp_path: Path) -> None:
    """256 MiB limit: 1 GiB is OOM-killed (137) and the result says so; 32 MiB works; no group is left."""
    parent = _memory_parent()
    sandbox = BwrapSandbox(limits=ResourceLimits(memory_bytes=256 * 1024**2))
    big = sandbox.run([PY, "-c", "b = bytearray(1024**3); print('big ok')"], policy=_policy(tmp_path))
    assert (big.returncode, big.stdout) == (137, b"")
    assert "memory limit reached: the OOM killer ended 1 process(es)" in big.detail
    small = sandbox.run(
        [PY, "-c", "b = bytearray(32 * 1024**2); print('small ok')"], policy=_policy(tmp_path)
    )
    assert small.ok
    assert small.stdout == b"small ok\n"
    assert [n for n in os.listdir(parent) if n.startswith(f"{os.getpid()}-")] == []


def test_without_a_memory_limit_the_same_allocation_succeeds(tmp_path: Path) -> None:
    """Control: memory_bytes=None lets the 1 GiB allocation through."""
    bwrap_or_skip()
    sandbox = BwrapSandbox(limits=ResourceLimits(memory_bytes=None))
    done = sandbox.run([PY, "-c", "b = bytearray(1024**3); print('big ok')"], policy=_policy(tmp_path))
    assert done.ok, done
    assert sandbox.describe_limits()[1] == "memory limit: NOT enforced: disabled (memory limit turned off)"


def test_a_tasks_memory_limit_applies_even_where_the_sweeps_is_off(tmp_path: Path) -> None:
    """--memory-limit off, the task's limits.memory 256M: the 1 GiB allocation is OOM-killed and named."""
    _memory_parent()
    sandbox = BwrapSandbox(limits=ResourceLimits(memory_bytes=None))
    policy = attrs.evolve(_policy(tmp_path), resources=TaskResources(memory_bytes=256 * 1024**2))
    big = sandbox.run([PY, "-c", "b = bytearray(1024**3); print('big ok')"], policy=policy)
    assert (big.returncode, big.stdout) == (137, b"")
    assert "memory limit reached" in big.detail


def test_a_tasks_cpus_and_storage_become_a_cpu_quota_tmpfs_sizes_and_the_file_size_limit(
    tmp_path: Path,
) -> None:
    """limits.cpus 0.5: a cpu group with a 50 ms quota the launcher joins; storage 32M: /tmp and fsize."""
    bwrap_or_skip()
    try:
        parent = cpu_cgroup.detect().parent
    except cpu_cgroup.CpuUnavailable as exc:
        require_or_skip("WFBENCH_REQUIRE_BWRAP", f"no writable cpu cgroup here: {exc}")
        raise
    resources = TaskResources(cpus=0.5, storage_bytes=32 * 1024**2)
    script = "head -c 40000000 /dev/zero > /tmp/fill; echo fill=$?; df -k /tmp | tail -1"
    done = BwrapSandbox().run(
        ["/bin/sh", "-c", script], policy=attrs.evolve(_policy(tmp_path), resources=resources)
    )
    out = done.stdout.decode()
    assert "fill=0" not in out
    assert " 32768 " in out, out  # the tmpfs is 32 MiB
    commands = command_limits.CommandLimits()
    running = commands.start(ResourceLimits().for_task(resources))
    try:
        assert running.cpu is not None
        assert running.cpu.path.startswith(parent)
        assert Path(running.cpu.path, "cpu.cfs_quota_us").read_text().strip() == "50000"
        joined = os.path.join(running.cpu.path, "cgroup.procs")
        assert joined in running.wrap(["/bin/true"], str(tmp_path / "failed"))  # the launcher joins it
    finally:
        running.close()
    assert [n for n in os.listdir(parent) if n.startswith(f"{os.getpid()}-")] == []


def test_file_size_and_open_file_limits_reach_every_process(tmp_path: Path) -> None:
    """Default RLIMIT_FSIZE 1 GiB (truncate 2G fails, 1M works) and RLIMIT_NOFILE 4096 (soft and hard)."""
    bwrap_or_skip()
    script = "truncate -s 1M ok; truncate -s 2G big; echo big=$?; ls -s big; ulimit -n; ulimit -Hn"
    done = BwrapSandbox().run(["/bin/bash", "-c", script], policy=_policy(tmp_path))
    out = done.stdout.decode()
    assert "big=0" not in out
    assert out.splitlines()[-2:] == ["4096", "4096"]
    assert (tmp_path / "ok").stat().st_size == 1024**2
    assert not (tmp_path / "big").exists() or (tmp_path / "big").stat().st_size == 0


def test_the_memory_hierarchy_is_found_in_a_mounts_table() -> None:
    """cgroup v1 memory wins; a cgroup2 mount is the fallback; a read-only one or none is no hierarchy."""
    v1 = "cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0\n"
    v2 = "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n"
    assert find_memory_mount(v2 + v1) == ("/sys/fs/cgroup/memory", 1)
    assert find_memory_mount(v2) == ("/sys/fs/cgroup/unified", 2)
    assert find_memory_mount("cgroup /sys/fs/cgroup/memory cgroup ro,memory 0 0\n") is None
    assert find_memory_mount("proc /proc proc rw 0 0\n") is None


def test_sizes_parse_in_binary_units_and_refuse_nonsense() -> None:
    """512M, 2G, 1.5GiB, 4096; 0, -1, 'lots' are refused."""
    assert parse_size("512M") == 512 * 1024**2
    assert parse_size("2g") == 2 * 1024**3
    assert parse_size("1.5GiB") == 3 * 1024**3 // 2
    assert parse_size("4096") == 4096
    for bad in ("0", "-1", "lots", "", "3X"):
        with pytest.raises(ValueError):
            parse_size(bad)


def test_doctor_names_every_limit() -> None:
    """`wfbench doctor` prints the memory limit beside the process limit, and the rlimits and tmpfs size."""
    parent = _memory_parent()
    done = subprocess.run(
        [sys.executable, "-m", "wfbench", "doctor"], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert f"memory limit: memory cgroup (v1) at {parent}, at most 2 GiB per command" in done.stdout
    assert "open files: RLIMIT_NOFILE 4096 per process" in done.stdout
    assert "file size: RLIMIT_FSIZE 1 GiB per file" in done.stdout
    assert "tmpfs size: 1 GiB each for /tmp, /home/agent, /dev/shm" in done.stdout


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--memory-limit", "lots"), ("--process-limit", "2G"), ("--disk-budget", "0"), ("--tmpfs-size", "off")],
)
def test_a_bad_limit_option_is_one_line_naming_the_flag_exit_2(tmp_path: Path, flag: str, value: str) -> None:
    """A malformed limit fails before anything runs: exit 2, one line naming the option."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "wfbench",
            "run",
            str(tmp_path / "missing.yaml"),
            "--out",
            str(tmp_path / "o"),
            flag,
            value,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done
    assert flag in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_a_group_the_launcher_cannot_join_is_a_spawn_failure_and_the_command_never_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cgroups are joined by the launcher before exec: when that fails nothing of the command runs."""
    bwrap_or_skip()
    try:
        pids_cgroup.detect()
    except pids_cgroup.PidsUnavailable as exc:
        require_or_skip("WFBENCH_REQUIRE_BWRAP", f"no writable pids cgroup here: {exc}")
    start = command_limits.CommandLimits.start

    def gone(
        self: command_limits.CommandLimits, wanted: ResourceLimits | None = None
    ) -> command_limits.RunLimits:
        limits = start(self, wanted)
        assert limits.pids is not None
        os.rmdir(limits.pids.path)  # the group vanished between its creation and the join
        return limits

    monkeypatch.setattr(command_limits.CommandLimits, "start", gone)
    result = BwrapSandbox().run(["/bin/sh", "-c", "touch ran"], policy=_policy(tmp_path))
    assert result.state is ProcessState.SPAWN_FAILURE
    assert "cgroup.procs" in result.detail
    assert not (tmp_path / "ran").exists()
