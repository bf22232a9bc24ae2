"""A task's own resources (``limits: {cpus, memory, storage}``) as one command's sandbox limits.

:func:`task_limits` puts a task's resources in place of the sandbox's per-command limits:

* ``cpus`` → a CPU quota (podman ``--cpus``; bwrap a cpu cgroup, :mod:`.cpu_cgroup`);
* ``memory`` → the memory limit (podman ``--memory``/``--memory-swap``; bwrap the memory cgroup);
* ``storage`` → the size of every writable tmpfs (``/tmp``, the home, ``/dev/shm``) and
  ``RLIMIT_FSIZE`` (the largest file a command writes, in the workspace too); the workspace's growth
  is checked against it after each session (the cell's disk budget, both backends).

A value above what this machine has is **clamped** to it, with one warning per task value: CPUs to
the CPUs this process may run on, memory to the machine's physical memory. Clamping (rather than
refusing) keeps a corpus written for a larger machine runnable. The reuse digest names the declared
limits, not the clamped ones: the warning (``sandbox.task_limit_clamped`` in ``wfbench.log``) is
where a clamped run says so.
"""

from __future__ import annotations

import os
import threading

import attrs
import structlog

from wfbench.adapters.sandbox.command_limits import ResourceLimits
from wfbench.domain.workspace.sandbox import TaskResources

__all__ = ["machine_cpus", "machine_memory", "task_limits"]

_warned: set[tuple[str, float]] = set()
_lock = threading.Lock()


def machine_cpus() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - every Linux has sched_getaffinity
        return os.cpu_count() or 1


def machine_memory() -> int:
    """Bytes of physical memory."""
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def fit_to_machine(task: TaskResources, *, cpus: int, memory: int) -> TaskResources:
    """``task`` with CPUs and memory above the machine's clamped to it (warned once per value)."""
    if task.cpus is not None and task.cpus > cpus:
        _warn("cpus", task.cpus, cpus)
        task = attrs.evolve(task, cpus=float(cpus))
    if task.memory_bytes is not None and task.memory_bytes > memory:
        _warn("memory", task.memory_bytes, memory)
        task = attrs.evolve(task, memory_bytes=memory)
    return task


def task_limits(base: ResourceLimits, task: TaskResources) -> ResourceLimits:
    """The limits of one command of ``task``: ``base`` with the task's resources (fitted) in place."""
    if not task.declared:
        return base
    return base.for_task(fit_to_machine(task, cpus=machine_cpus(), memory=machine_memory()))


def _warn(resource: str, declared: float, available: float) -> None:
    with _lock:
        if (resource, declared) in _warned:
            return
        _warned.add((resource, declared))
    structlog.get_logger("wfbench.sandbox").warning(
        "sandbox.task_limit_clamped", resource=resource, declared=declared, machine=available
    )
