"""A CPU quota per sandboxed command of a task that declares ``limits.cpus`` (bwrap backend).

The sibling of :mod:`wfbench.adapters.sandbox.memory_cgroup`, used only when a task names its CPUs
(Harbor's ``[environment] cpus``): the command gets ``<cpu hierarchy>/wfbench/<owner pid>-<random>/``
with a CFS quota of ``cpus`` × the period, joined between fork and exec like the other groups, so
the command and every descendant share that much CPU time per period (throttled, never killed).

cgroup v1: ``cpu.cfs_period_us`` and ``cpu.cfs_quota_us``; cgroup2: ``cpu.max`` (``quota period``).
Where no cpu hierarchy is writable, :func:`detect` raises :class:`CpuUnavailable`: the command then
runs without a quota, and one warning says so.
"""

from __future__ import annotations

import contextlib
import os

import attrs

from wfbench.adapters.sandbox.pids_cgroup import PidsGroup, group_name, prepare_parent, write_control

__all__ = ["PERIOD_US", "CpuController", "CpuUnavailable", "detect"]

#: The CFS period (100 ms, the kernel's default); the quota is ``cpus`` periods' worth of it.
PERIOD_US = 100_000


class CpuUnavailable(Exception):
    """No writable cpu controller on this machine; the message says why."""


@attrs.frozen
class CpuController:
    """The writable ``wfbench`` directory of a cpu hierarchy."""

    parent: str
    version: int

    def limit_files(self, cpus: float) -> tuple[tuple[str, str], ...]:
        """(file, value) pairs that give a group of this hierarchy ``cpus`` CPUs' worth of time."""
        quota = max(1000, round(cpus * PERIOD_US))  # the kernel's smallest quota is 1 ms
        if self.version == 1:
            return (("cpu.cfs_period_us", str(PERIOD_US)), ("cpu.cfs_quota_us", str(quota)))
        return (("cpu.max", f"{quota} {PERIOD_US}"),)

    def create(self, cpus: float) -> PidsGroup:
        """A fresh group with the quota set (joined and closed like a pids group). OSError if refused."""
        path = os.path.join(self.parent, group_name())
        os.mkdir(path)
        try:
            for name, value in self.limit_files(cpus):
                write_control(os.path.join(path, name), value)
            fd = os.open(os.path.join(path, "cgroup.procs"), os.O_WRONLY | os.O_CLOEXEC)
        except OSError:
            with contextlib.suppress(OSError):
                os.rmdir(path)
            raise
        return PidsGroup(path, fd)


def detect(mounts_path: str = "/proc/mounts") -> CpuController:
    """The usable cpu controller, with its ``wfbench`` parent created and stale groups removed.

    Raises:
        CpuUnavailable: no cpu hierarchy, or it is not writable here.
    """
    parent, version = prepare_parent("cpu", mounts_path, CpuUnavailable)
    return CpuController(parent, version)
