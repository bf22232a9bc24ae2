"""A process limit per sandboxed command: one pids cgroup per run, joined before exec.

``RLIMIT_NPROC`` cannot bound a sandbox when wfbench runs as root (the sandbox's user namespace
maps to root, which the kernel exempts), so the bwrap backend puts each command in its own pids
cgroup instead: ``<pids hierarchy>/wfbench/<owner pid>-<random>/`` with ``pids.max`` set. The child
joins the group (writes ``0`` to its ``cgroup.procs``) between fork and exec, so bwrap and every
descendant are counted from the first instruction (no window in which a fork escapes). Past the
limit, ``fork`` fails with EAGAIN ("Resource temporarily unavailable") inside the sandbox.

The hierarchy is the cgroup v1 ``pids`` controller, or a cgroup2 mount that offers ``pids`` (the
controller is then enabled for the ``wfbench`` parent). Where neither is writable (no root, a
read-only ``/sys/fs/cgroup``), :func:`detect` raises :class:`PidsUnavailable` and the caller runs
without a limit (``wfbench doctor`` says so). Groups whose owner process is gone are removed by
:func:`remove_stale`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import signal
import time
import uuid

import attrs

__all__ = [
    "DEFAULT_PIDS_LIMIT",
    "PARENT_NAME",
    "PidsController",
    "PidsGroup",
    "PidsUnavailable",
    "detect",
    "find_controller_mount",
    "find_pids_mount",
    "prepare_parent",
    "remove_stale",
    "write_control",
]

#: Processes (and threads) one sandboxed command may hold at once.
DEFAULT_PIDS_LIMIT = 512
#: The directory under the pids hierarchy that holds every wfbench group.
PARENT_NAME = "wfbench"
#: ``<owner pid>-n<owner's PID namespace inode>-<random>`` (``<pid>-<random>``: an older wfbench's,
#: which named only the pid, always from the initial PID namespace).
_GROUP_RE = re.compile(r"^(\d+)-(?:n(\d+)-)?[0-9a-f]{12}$")
#: The inode of the kernel's initial PID namespace (``PROC_PID_INIT_INO``).
INITIAL_PIDNS = 4026531836
_REMOVE_WAIT_S = 5.0
_POLL_S = 0.02


class PidsUnavailable(Exception):
    """No writable pids controller on this machine; the message says why."""


def find_pids_mount(mounts: str) -> tuple[str, int] | None:
    """The (mount point, cgroup version) offering pids in a ``/proc/mounts`` text: v1 first, else v2."""
    return find_controller_mount(mounts, "pids")


def find_controller_mount(mounts: str, controller: str) -> tuple[str, int] | None:
    """The (mount point, cgroup version) offering ``controller`` in a ``/proc/mounts`` text.

    A writable v1 hierarchy of that controller first, else the first writable cgroup2 mount.
    """
    v2: str | None = None
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        point, kind, options = fields[1].replace("\\040", " "), fields[2], fields[3].split(",")
        if kind == "cgroup" and controller in options and "ro" not in options:
            return point, 1
        if kind == "cgroup2" and "ro" not in options and v2 is None:
            v2 = point
    return None if v2 is None else (v2, 2)


@attrs.frozen
class PidsGroup:
    """One command's pids cgroup: ``join`` (in the child, before exec), then ``close`` (after the run)."""

    path: str
    procs_fd: int

    def join(self) -> None:
        """Move the calling process into the group (runs between fork and exec: one system call).

        Writing ``0`` to ``cgroup.procs`` moves the writer itself (v1 and v2), so nothing is
        allocated in the child.
        """
        os.write(self.procs_fd, b"0")

    def close(self) -> None:
        """Remove the group, killing any process still in it (they are all this command's)."""
        with contextlib.suppress(OSError):
            os.close(self.procs_fd)
        remove_group(self.path)


@attrs.frozen
class PidsController:
    """The writable ``wfbench`` directory of a pids hierarchy and the limit per command."""

    parent: str
    version: int
    limit: int

    def describe(self) -> str:
        """One line for ``wfbench doctor``."""
        return f"pids cgroup (v{self.version}) at {self.parent}, at most {self.limit} per command"

    def create(self) -> PidsGroup:
        """A fresh group with ``pids.max`` = the limit. Raises OSError when the kernel refuses."""
        path = os.path.join(self.parent, group_name())
        os.mkdir(path)
        try:
            write_control(os.path.join(path, "pids.max"), str(self.limit))
            fd = os.open(os.path.join(path, "cgroup.procs"), os.O_WRONLY | os.O_CLOEXEC)
        except OSError:
            with contextlib.suppress(OSError):
                os.rmdir(path)
            raise
        return PidsGroup(path, fd)


def detect(limit: int = DEFAULT_PIDS_LIMIT, mounts_path: str = "/proc/mounts") -> PidsController:
    """The usable pids controller, with its ``wfbench`` parent created and stale groups removed.

    Raises:
        PidsUnavailable: no pids hierarchy, or it is not writable here.
    """
    parent, version = prepare_parent("pids", mounts_path, PidsUnavailable)
    return PidsController(parent, version, limit)


def prepare_parent(controller: str, mounts_path: str, unavailable: type[Exception]) -> tuple[str, int]:
    """(``wfbench`` parent, version) of the hierarchy offering ``controller``, created and swept.

    The parent is created (on cgroup2, with the controller enabled down to it), checked writable,
    and cleared of the groups whose owner is gone (:func:`remove_stale`).

    Raises:
        unavailable: no such hierarchy, or it is not writable here (the message says why).
    """
    try:
        with open(mounts_path, encoding="utf-8") as handle:
            found = find_controller_mount(handle.read(), controller)
    except OSError as exc:
        raise unavailable(f"cannot read {mounts_path}: {exc.strerror}") from None
    if found is None:
        raise unavailable(f"no writable {controller} cgroup controller is mounted")
    point, version = found
    parent = os.path.join(point, PARENT_NAME)
    try:
        if version == 2:
            _enable_v2(point, parent, controller)
        else:
            os.makedirs(parent, exist_ok=True)
        if not os.access(os.path.join(parent, "cgroup.procs"), os.W_OK):
            raise PermissionError(errno.EACCES, "cgroup.procs is not writable")
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise unavailable(f"the {controller} cgroup at {point} is not writable here: {reason}") from None
    remove_stale(parent)
    return parent, version


def _enable_v2(point: str, parent: str, controller: str) -> None:
    with open(os.path.join(point, "cgroup.controllers"), encoding="ascii") as handle:
        if controller not in handle.read().split():
            raise PermissionError(
                errno.ENOENT, f"the cgroup2 hierarchy does not offer the {controller} controller"
            )
    for directory in (point, parent):
        os.makedirs(directory, exist_ok=True)
        control = os.path.join(directory, "cgroup.subtree_control")
        with open(control, encoding="ascii") as handle:
            enabled = handle.read().split()
        if controller not in enabled:
            write_control(control, f"+{controller}")


def group_name() -> str:
    """A fresh group name for this process: its pid, its PID namespace and a random part.

    The namespace is in the name because the cgroup hierarchy is shared by every PID namespace
    of the machine (a container, the nodes of a Ray cluster started in a namespace): a pid means
    something only in its own namespace, so :func:`remove_stale` judges only groups of its own.
    """
    namespace = pid_namespace()
    middle = "" if namespace is None else f"n{namespace}-"
    return f"{os.getpid()}-{middle}{uuid.uuid4().hex[:12]}"


def pid_namespace() -> int | None:
    """The inode of this process's PID namespace (``None``: unreadable)."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return None


def remove_stale(parent: str, namespace: int | None = None) -> tuple[str, ...]:
    """Remove the groups under ``parent`` whose owner process is gone; returns the removed paths.

    Only groups owned from this process's PID namespace (``namespace``, default: this
    process's) are judged: a group of another namespace names a pid this one cannot see, so it
    is left alone, and a process that cannot tell its namespace removes nothing.
    """
    mine = pid_namespace() if namespace is None else namespace
    if mine is None:
        return ()
    removed: list[str] = []
    try:
        names = os.listdir(parent)
    except OSError:
        return ()
    for name in names:
        match = _GROUP_RE.match(name)
        if match is None:
            continue
        owner_ns = int(match.group(2)) if match.group(2) is not None else INITIAL_PIDNS
        if owner_ns != mine or _alive(int(match.group(1))):
            continue
        path = os.path.join(parent, name)
        if remove_group(path, wait_s=1.0):
            removed.append(path)
    return tuple(removed)


def remove_group(path: str, wait_s: float = _REMOVE_WAIT_S) -> bool:
    """rmdir ``path``, SIGKILLing what is left in it until it is empty; True once it is gone."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            os.rmdir(path)
        except FileNotFoundError:
            return True
        except OSError as exc:
            if exc.errno != errno.EBUSY or time.monotonic() >= deadline:
                return False
        else:
            return True
        for pid in _members(path):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(_POLL_S)


def _members(path: str) -> list[int]:
    try:
        with open(os.path.join(path, "cgroup.procs"), encoding="ascii") as handle:
            return [int(line) for line in handle if line.strip()]
    except (OSError, ValueError):
        return []


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def write_control(path: str, text: str) -> None:
    """Write ``text`` to a cgroup control file in one system call (no buffering, close-on-exec)."""
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)
