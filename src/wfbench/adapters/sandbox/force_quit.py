"""A second Ctrl-C: end every process this sweep started, now, without waiting for grace periods.

The first SIGINT cancels the sweep gracefully (each running command gets SIGTERM, then SIGKILL
after its grace period; the rows of running cells are still written). A second one means "stop
now": :func:`kill_everything` SIGKILLs every process group
:func:`wfbench.adapters.sandbox.process.run_managed` started (the host-unsafe backend's commands,
and each bwrap's group) and every process in the pids cgroups this process owns (everything inside
every sandbox, whatever session or process group it made for itself). The caller then exits at
once; rows already appended are whole (each is one ``write`` of a complete line), and the next
run's start removes the scratch tree.
"""

from __future__ import annotations

import contextlib
import os
import signal

from wfbench.adapters.sandbox import pids_cgroup, process

__all__ = ["kill_everything"]


def kill_everything(*, mounts_path: str = "/proc/mounts") -> int:
    """SIGKILL every process the sweep started; how many groups and processes were signalled."""
    count = process.kill_live_groups()
    for pid in _owned_cgroup_members(mounts_path):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
            count += 1
    return count


def _owned_cgroup_members(mounts_path: str) -> list[int]:
    """The processes in the pids cgroups named after this process (``<pid>-<random>``)."""
    try:
        with open(mounts_path, encoding="utf-8") as handle:
            found = pids_cgroup.find_pids_mount(handle.read())
    except OSError:
        return []
    if found is None:
        return []
    parent = os.path.join(found[0], pids_cgroup.PARENT_NAME)
    prefix = f"{os.getpid()}-"
    members: list[int] = []
    with contextlib.suppress(OSError):
        for name in os.listdir(parent):
            if name.startswith(prefix):
                members += _members(os.path.join(parent, name))
    return members


def _members(path: str) -> list[int]:
    try:
        with open(os.path.join(path, "cgroup.procs"), encoding="ascii") as handle:
            return [int(line) for line in handle if line.strip()]
    except (OSError, ValueError):
        return []
