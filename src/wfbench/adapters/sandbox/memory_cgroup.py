"""A memory limit per sandboxed command: one memory cgroup per run, joined before exec.

The sibling of :mod:`wfbench.adapters.sandbox.pids_cgroup` (same layout, same lifecycle): each command
gets ``<memory hierarchy>/wfbench/<owner pid>-<random>/`` with the limit set, and the child joins
it between fork and exec, so bwrap and every descendant are charged from the first page (their
anonymous memory and the tmpfs pages they write: ``/tmp``, ``/home/agent``, ``/dev/shm``). Past
the limit the kernel's OOM killer ends the largest process of the group (``SIGKILL``); the
harness reads the group's OOM-kill count before removing it, so the failure can be named.

cgroup v1: ``memory.limit_in_bytes`` (and ``memory.memsw.limit_in_bytes`` where swap accounting
exists, so swap is no way around it); cgroup2: ``memory.max`` and ``memory.swap.max = 0``. Where
no memory hierarchy is writable, :func:`detect` raises :class:`MemoryUnavailable` and commands run
without a memory limit (``wfbench doctor`` says so, like the process limit).
"""

from __future__ import annotations

import contextlib
import os
import re

import attrs

from wfbench.adapters.sandbox.pids_cgroup import (
    find_controller_mount,
    group_name,
    prepare_parent,
    remove_group,
    write_control,
)

__all__ = [
    "DEFAULT_MEMORY_LIMIT",
    "MemoryController",
    "MemoryGroup",
    "MemoryUnavailable",
    "detect",
    "find_memory_mount",
]

#: Bytes one sandboxed command (the agent, its tools, verify or the oracle) may hold at once.
DEFAULT_MEMORY_LIMIT = 2 * 1024**3
_OOM_KILL_RE = re.compile(r"^oom_kill (\d+)$", re.M)


class MemoryUnavailable(Exception):
    """No writable memory controller on this machine; the message says why."""


def find_memory_mount(mounts: str) -> tuple[str, int] | None:
    """The (mount point, cgroup version) offering memory in a ``/proc/mounts`` text: v1 first, else v2."""
    return find_controller_mount(mounts, "memory")


@attrs.frozen
class MemoryGroup:
    """One command's memory cgroup: ``join`` (in the child, before exec), then ``close``."""

    path: str
    procs_fd: int
    version: int

    def join(self) -> None:
        """Move the calling process into the group (one system call, safe between fork and exec)."""
        os.write(self.procs_fd, b"0")

    def oom_kills(self) -> int | None:
        """How many processes the OOM killer ended in this group (None when the kernel does not say)."""
        name = "memory.oom_control" if self.version == 1 else "memory.events"
        try:
            with open(os.path.join(self.path, name), encoding="ascii") as handle:
                found = _OOM_KILL_RE.search(handle.read())
        except OSError:
            return None
        return None if found is None else int(found.group(1))

    def close(self) -> None:
        """Remove the group, killing any process still in it (they are all this command's)."""
        with contextlib.suppress(OSError):
            os.close(self.procs_fd)
        remove_group(self.path)


@attrs.frozen
class MemoryController:
    """The writable ``wfbench`` directory of a memory hierarchy and the limit per command."""

    parent: str
    version: int
    limit: int

    def describe(self) -> str:
        """One line for ``wfbench doctor``."""
        return f"memory cgroup (v{self.version}) at {self.parent}, at most {_size(self.limit)} per command"

    def limit_files(self) -> tuple[tuple[str, str], ...]:
        """(file, value) pairs that set the limit in a group of this hierarchy."""
        if self.version == 1:
            return (
                ("memory.limit_in_bytes", str(self.limit)),
                ("memory.memsw.limit_in_bytes", str(self.limit)),
            )
        return (("memory.max", str(self.limit)), ("memory.swap.max", "0"))

    def create(self) -> MemoryGroup:
        """A fresh group with the limit set. Raises OSError when the kernel refuses."""
        path = os.path.join(self.parent, group_name())
        os.mkdir(path)
        try:
            for name, value in self.limit_files():
                target = os.path.join(path, name)
                if name.endswith(("memsw.limit_in_bytes", "swap.max")) and not os.path.exists(target):
                    continue  # no swap accounting on this kernel: nothing to close
                write_control(target, value)
            fd = os.open(os.path.join(path, "cgroup.procs"), os.O_WRONLY | os.O_CLOEXEC)
        except OSError:
            with contextlib.suppress(OSError):
                os.rmdir(path)
            raise
        return MemoryGroup(path, fd, self.version)


def detect(limit: int = DEFAULT_MEMORY_LIMIT, mounts_path: str = "/proc/mounts") -> MemoryController:
    """The usable memory controller, with its ``wfbench`` parent created and stale groups removed.

    Raises:
        MemoryUnavailable: no memory hierarchy, or it is not writable here.
    """
    if limit <= 0:
        raise ValueError("the memory limit must be positive")
    parent, version = prepare_parent("memory", mounts_path, MemoryUnavailable)
    return MemoryController(parent, version, limit)


def _size(value: int) -> str:
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if value >= scale and value % scale == 0:
            return f"{value // scale} {unit}"
    return f"{value} bytes"
