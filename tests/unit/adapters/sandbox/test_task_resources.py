"""A task's own CPUs, memory and storage become the limits of each of its sandboxed commands."""

from __future__ import annotations

import resource

from structlog.testing import capture_logs

from wfbench.adapters.sandbox import task_resources
from wfbench.adapters.sandbox.command_limits import CommandLimits, ResourceLimits
from wfbench.adapters.sandbox.cpu_cgroup import CpuController
from wfbench.adapters.sandbox.podman_argv import ArgvInputs, podman_argv
from wfbench.adapters.sandbox.task_resources import fit_to_machine, task_limits
from wfbench.domain.environment.image import ContainerImage
from wfbench.domain.workspace.sandbox import SandboxPolicy, TaskResources

G = 1024**3
BASE = ResourceLimits(memory_bytes=2 * G, file_size_bytes=G, tmpfs_bytes=G)


def test_a_tasks_resources_replace_the_sandboxs_memory_file_size_and_tmpfs_sizes():
    limits = BASE.for_task(TaskResources(cpus=1.5, memory_bytes=G // 2, storage_bytes=4 * G))
    assert (limits.cpus, limits.memory_bytes) == (1.5, G // 2)
    assert (limits.file_size_bytes, limits.tmpfs_bytes) == (4 * G, 4 * G)
    assert limits.pids == BASE.pids


def test_a_task_without_resources_keeps_the_sandboxs_limits():
    assert task_limits(BASE, TaskResources()) is BASE
    assert BASE.for_task(TaskResources(cpus=1.0)).memory_bytes == 2 * G


def test_resources_above_the_machine_are_clamped_to_it():
    fitted = fit_to_machine(TaskResources(cpus=64.0, memory_bytes=512 * G), cpus=2, memory=8 * G)
    assert fitted == TaskResources(cpus=2.0, memory_bytes=8 * G)
    within = TaskResources(cpus=0.5, memory_bytes=G, storage_bytes=900 * G)
    assert fit_to_machine(within, cpus=2, memory=8 * G) == within


def test_a_clamped_value_is_warned_once(monkeypatch):
    # "Once" is per process: start from a process that has warned nothing (mutmut runs the suite
    # twice in one process, and an earlier test may have clamped the same value).
    monkeypatch.setattr(task_resources, "_warned", set())
    with capture_logs() as logs:
        for _ in range(2):
            fit_to_machine(TaskResources(cpus=333.0), cpus=2, memory=8 * G)
    assert [(e["event"], e["resource"], e["declared"], e["machine"]) for e in logs] == [
        ("sandbox.task_limit_clamped", "cpus", 333.0, 2)
    ]


def test_podman_gets_the_tasks_cpus_memory_and_sizes_as_flags(tmp_path):
    limits = BASE.for_task(TaskResources(cpus=1.5, memory_bytes=G // 2, storage_bytes=3 * G))
    policy = SandboxPolicy(workspace=str(tmp_path), workspace_writable=True, network=False, timeout_s=5.0)
    inputs = ArgvInputs(
        podman=("podman",), name="n", owner="1:2", image=ContainerImage("sha256:feed"), limits=limits
    )
    argv = " ".join(podman_argv(["/bin/true"], policy=policy, inputs=inputs)[0])
    assert "--cpus 1.5" in argv
    assert f"--memory {G // 2} --memory-swap {G // 2}" in argv
    assert f"size={3 * G}," in argv
    _soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    assert f"fsize={3 * G if hard == resource.RLIM_INFINITY else min(3 * G, hard)}" in argv


def test_the_cpu_quota_is_cpus_periods_of_cpu_time_in_either_cgroup_version():
    assert CpuController("/cg", 1).limit_files(1.5) == (
        ("cpu.cfs_period_us", "100000"),
        ("cpu.cfs_quota_us", "150000"),
    )
    assert CpuController("/cg", 2).limit_files(0.25) == (("cpu.max", "25000 100000"),)


def test_a_tasks_storage_sets_the_file_size_rlimit_of_its_commands():
    commands = CommandLimits(BASE)
    fsize = dict(commands.rlimits(BASE.for_task(TaskResources(storage_bytes=3 * G))))[resource.RLIMIT_FSIZE]
    assert fsize[0] in (3 * G, resource.getrlimit(resource.RLIMIT_FSIZE)[1])
    assert dict(commands.rlimits())[resource.RLIMIT_FSIZE][0] <= G
