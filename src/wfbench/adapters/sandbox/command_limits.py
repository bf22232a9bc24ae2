"""Resource limits of one sandboxed command: processes, memory, open files, file size, tmpfs size.

:class:`ResourceLimits` is the configuration (``wfbench run --memory-limit …``; defaults in
``docs/security.md``); :class:`CommandLimits` applies it to each command of the bwrap backend:

* a pids cgroup (:mod:`~wfbench.adapters.sandbox.pids_cgroup`) and a memory cgroup
  (:mod:`~wfbench.adapters.sandbox.memory_cgroup`) per command, created before the command starts and
  joined by the child between fork and exec; removed (anything left in them killed) when it ends;
* ``RLIMIT_NOFILE`` and ``RLIMIT_FSIZE`` set in the same child, so bwrap and every descendant
  inherit them (a write past the file-size limit fails with ``EFBIG``, ``fallocate`` included);
* the size of every writable tmpfs inside the sandbox (``/tmp``, ``/home/agent``, ``/dev/shm``),
  read by :func:`wfbench.adapters.sandbox.bwrap.bwrap_argv`.

A controller that is missing or read-only here is not fatal: the command runs without that
limit, one structlog warning says so per process, and :meth:`CommandLimits.describe` (printed by
``wfbench doctor``) says ``NOT enforced: <why>`` for it. rlimits and tmpfs sizes always apply.
"""

from __future__ import annotations

import os
import resource
import threading
from collections.abc import Callable, Sequence

import attrs
import structlog

from wfbench.adapters.sandbox import cpu_cgroup, memory_cgroup, pids_cgroup
from wfbench.adapters.sandbox.cpu_cgroup import CpuController, CpuUnavailable
from wfbench.adapters.sandbox.memory_cgroup import (
    DEFAULT_MEMORY_LIMIT,
    MemoryController,
    MemoryGroup,
    MemoryUnavailable,
)
from wfbench.adapters.sandbox.pids_cgroup import (
    DEFAULT_PIDS_LIMIT,
    PidsController,
    PidsGroup,
    PidsUnavailable,
)
from wfbench.domain.errors import SandboxError
from wfbench.domain.workspace.sandbox import TaskResources

__all__ = [
    "DEFAULT_FILE_SIZE_LIMIT",
    "DEFAULT_OPEN_FILES",
    "DEFAULT_TMPFS_BYTES",
    "CommandLimits",
    "ResourceLimits",
    "RunLimits",
    "format_size",
    "parse_size",
]

#: Open file descriptors per process (``RLIMIT_NOFILE``, soft and hard).
DEFAULT_OPEN_FILES = 4096
#: Largest file a sandboxed process may write (``RLIMIT_FSIZE``).
DEFAULT_FILE_SIZE_LIMIT = 1024**3
#: Size of each writable tmpfs in the sandbox (``/tmp``, ``/home/agent``, ``/dev/shm``).
DEFAULT_TMPFS_BYTES = 1024**3
_UNITS = {"": 1, "B": 1} | {
    unit + tail: 1024**power for power, unit in enumerate("KMGT", 1) for tail in ("", "B", "IB")
}
_warned: set[str] = set()
_warned_lock = threading.Lock()


def parse_size(text: str) -> int:
    """Bytes in ``512M``, ``2G``, ``1.5GiB``, ``4096`` (binary units). ValueError when malformed or ≤ 0."""
    raw = text.strip().upper().replace(" ", "")
    number = raw.rstrip("KMGTIB")
    unit = raw[len(number) :]
    if not number or unit not in _UNITS:
        raise ValueError(f"not a size: {text!r} (use e.g. 512M, 2G)")
    value = int(float(number) * _UNITS[unit])
    if value <= 0:
        raise ValueError(f"a size must be positive: {text!r}")
    return value


def format_size(value: int) -> str:
    """``2 GiB``, ``512 MiB``… (exact binary units when they divide, else bytes)."""
    for unit, scale in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if value >= scale and value % scale == 0:
            return f"{value // scale} {unit}"
    return f"{value} bytes"


@attrs.frozen
class ResourceLimits:
    """What one sandboxed command may use. ``None`` disables a limit (documented as unsafe)."""

    pids: int | None = DEFAULT_PIDS_LIMIT
    memory_bytes: int | None = DEFAULT_MEMORY_LIMIT
    open_files: int | None = DEFAULT_OPEN_FILES
    file_size_bytes: int | None = DEFAULT_FILE_SIZE_LIMIT
    tmpfs_bytes: int = DEFAULT_TMPFS_BYTES
    #: CPUs' worth of time per command (a task's ``limits.cpus``; None: no quota).
    cpus: float | None = None

    def for_task(self, task: TaskResources) -> ResourceLimits:
        """These limits with the task's own in their place (see :mod:`.task_resources` for the mapping)."""
        storage = task.storage_bytes
        return attrs.evolve(
            self,
            cpus=task.cpus if task.cpus is not None else self.cpus,
            memory_bytes=task.memory_bytes if task.memory_bytes is not None else self.memory_bytes,
            file_size_bytes=storage if storage is not None else self.file_size_bytes,
            tmpfs_bytes=storage if storage is not None else self.tmpfs_bytes,
        )


def _warn_once(key: str, reason: str, unprotected: str) -> None:
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    structlog.get_logger("wfbench.sandbox").warning(
        f"sandbox.no_{key}_limit", backend="bwrap", reason=reason, unprotected=[unprotected]
    )


def _rlimit(kind: int, wanted: int | None) -> tuple[int, int] | None:
    """(soft, hard) to set for ``wanted``, never above the current hard limit (None: leave as is)."""
    if wanted is None:
        return None
    _soft, hard = resource.getrlimit(kind)
    value = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    return value, value


#: The command's start: join each cgroup, set each rlimit, then ``exec`` the command itself. The work a
#: ``preexec_fn`` did between fork and exec, done by ``/bin/sh`` (about a millisecond) so the harness
#: spawns with ``vfork`` instead of copying its whole address space (a full ``fork``: ~17 ms a
#: command). The process is the same (``exec``), so bwrap and every descendant still start inside the
#: groups, under the limits. A step that fails writes what failed into ``$1`` (a harness file no
#: sandboxed process can reach) and exits 125: the caller turns that into a spawn failure.
LAUNCHER_SCRIPT = """failed=$1; shift
while [ "$1" != -- ]; do
  case $1 in
    nofile=*) ulimit -n "${1#nofile=}" ;;
    fsize=*) ulimit -f "${1#fsize=}" ;;
    *) echo 0 >"$1" ;;
  esac 2>/dev/null || { echo "$1" >"$failed"; exit 125; }
  shift
done
shift
[ -x "$1" ] || { echo "exec $1" >"$failed"; exit 125; }
exec "$@"
"""
LAUNCHER_SHELL = "/bin/sh"
#: ``ulimit -f`` counts 512-byte blocks.
_FSIZE_BLOCK = 512


@attrs.frozen
class RunLimits:
    """The limits of one running command: ``wrap`` its argv (or ``preexec`` in the child), ``close`` after."""

    pids: PidsGroup | None
    memory: MemoryGroup | None
    rlimits: tuple[tuple[int, tuple[int, int]], ...]
    #: The CPU quota's group (v1; on cgroup2 the quota is in the pids group), when the task has one.
    cpu: PidsGroup | None = None

    def preexec(self) -> None:
        """Join the cgroups, then set the rlimits (a few system calls between fork and exec)."""
        for group in (self.pids, self.memory, self.cpu):
            if group is not None:
                group.join()
        for kind, value in self.rlimits:
            resource.setrlimit(kind, value)

    def wrap(self, argv: Sequence[str], failed: str) -> list[str]:
        """``argv`` started through :data:`LAUNCHER_SCRIPT` (``argv`` itself when there is nothing to do).

        ``argv[0]`` must be an absolute path. ``failed`` is a harness-only path the launcher writes
        when a step fails (see :meth:`launch_failure`).
        """
        groups = (self.pids, self.memory, self.cpu)
        steps = [os.path.join(g.path, "cgroup.procs") for g in groups if g is not None]
        steps = list(dict.fromkeys(steps))  # one cgroup2 group holds both controllers
        for kind, (soft, _hard) in self.rlimits:
            if kind == resource.RLIMIT_NOFILE:
                steps.append(f"nofile={soft}")
            elif kind == resource.RLIMIT_FSIZE:
                steps.append(f"fsize={soft // _FSIZE_BLOCK}")  # rounded down to a whole block
        if not steps:
            return list(argv)
        return [LAUNCHER_SHELL, "-c", LAUNCHER_SCRIPT, "wfbench-launch", failed, *steps, "--", *argv]

    @staticmethod
    def launch_failure(failed: str) -> str | None:
        """What the launcher could not do (a cgroup or limit it could not apply), or None."""
        try:
            with open(failed, encoding="utf-8", errors="replace") as handle:
                return handle.read().strip() or "unknown step"
        except FileNotFoundError:
            return None

    def oom_kills(self) -> int | None:
        """Processes the memory limit's OOM killer ended (None: no memory group or unknown)."""
        return None if self.memory is None else self.memory.oom_kills()

    def close(self) -> None:
        """Remove the groups (killing anything left in them)."""
        for group in (self.cpu, self.memory, self.pids):
            if group is not None:
                group.close()


class CommandLimits:
    """Applies :class:`ResourceLimits` to each command (controllers detected once, lazily)."""

    def __init__(self, limits: ResourceLimits | None = None) -> None:
        self.limits = limits or ResourceLimits()
        self._pids: PidsController | MemoryController | str | None = None
        self._memory: PidsController | MemoryController | str | None = None
        self._task_memory: PidsController | MemoryController | str | None = None
        self._cpu: CpuController | str | None = None
        self._lock = threading.Lock()

    def _detect(self) -> tuple[PidsController | str, MemoryController | str]:
        with self._lock:
            if self._pids is None:
                self._pids = self._find(
                    "process",
                    self.limits.pids,
                    lambda n: pids_cgroup.detect(n),  # noqa: PLW0108 - looked up per call (tests patch it)
                    PidsUnavailable,
                    "fork bombs",
                )
            if self._memory is None:
                self._memory = self._find(
                    "memory",
                    self.limits.memory_bytes,
                    lambda n: memory_cgroup.detect(n),  # noqa: PLW0108 - looked up per call (tests patch it)
                    MemoryUnavailable,
                    "memory exhaustion",
                )
            pids, memory = self._pids, self._memory
        assert not isinstance(pids, MemoryController)
        assert not isinstance(memory, PidsController)
        return pids, memory

    @staticmethod
    def _find(
        key: str,
        limit: int | None,
        detect: Callable[[int], PidsController | MemoryController],
        unavailable: type[Exception],
        unprotected: str,
    ) -> PidsController | MemoryController | str:
        if limit is None:
            return f"disabled ({key} limit turned off)"
        try:
            return detect(limit)
        except unavailable as exc:
            _warn_once(key, str(exc), unprotected)
            return str(exc)

    def detect(self) -> None:
        """Find the controllers now (warn early, remove stale groups of dead owners)."""
        self._detect()

    def process_limit(self) -> str:
        """How commands are limited in process count, or ``NOT enforced: <why>``."""
        found, _ = self._detect()
        return found.describe() if isinstance(found, PidsController) else f"NOT enforced: {found}"

    def memory_limit(self) -> str:
        """How commands are limited in memory, or ``NOT enforced: <why>``."""
        _, found = self._detect()
        return found.describe() if isinstance(found, MemoryController) else f"NOT enforced: {found}"

    def describe(self) -> tuple[str, ...]:
        """Every limit as ``name: how`` lines (``wfbench doctor``)."""
        limits = self.limits

        def rl(value: int | None, what: str) -> str:
            return "NOT enforced: turned off" if value is None else what

        return (
            f"process limit: {self.process_limit()}",
            f"memory limit: {self.memory_limit()}",
            f"open files: {rl(limits.open_files, f'RLIMIT_NOFILE {limits.open_files} per process')}",
            "file size: "
            + rl(
                limits.file_size_bytes,
                f"RLIMIT_FSIZE {format_size(limits.file_size_bytes or 0)} per file",
            ),
            f"tmpfs size: {format_size(limits.tmpfs_bytes)} each for /tmp, /home/agent, /dev/shm"
            " (the sandbox root and /dev are read-only)",
            f"task cpus (limits.cpus): {self.cpu_quota()}",
        )

    def cpu_quota(self) -> str:
        """How a task's ``limits.cpus`` is enforced here, or ``NOT enforced: <why>``."""
        with self._lock:
            if self._cpu is None:
                try:
                    self._cpu = cpu_cgroup.detect()
                except CpuUnavailable as exc:
                    self._cpu = str(exc)
            found = self._cpu
        if isinstance(found, CpuController):
            return f"cpu cgroup (v{found.version}) at {found.parent}, a CFS quota per command"
        return f"NOT enforced: {found}"

    def rlimits(self, limits: ResourceLimits | None = None) -> tuple[tuple[int, tuple[int, int]], ...]:
        """The (kind, (soft, hard)) pairs every command's child sets (``limits``: a task's, else these)."""
        limits = limits or self.limits
        pairs = []
        for kind, wanted in (
            (resource.RLIMIT_NOFILE, limits.open_files),
            (resource.RLIMIT_FSIZE, limits.file_size_bytes),
        ):
            value = _rlimit(kind, wanted)
            if value is not None:
                pairs.append((kind, value))
        return tuple(pairs)

    def start(self, limits: ResourceLimits | None = None) -> RunLimits:
        """Fresh groups for one command, under ``limits`` (a task's, :meth:`ResourceLimits.for_task`).

        Raises:
            SandboxError: a controller that was found refuses a new group.
        """
        limits = limits or self.limits
        pids, memory = self._detect()
        memory = self._memory_for(memory, limits.memory_bytes)
        pids_group: PidsGroup | None = None
        memory_group: MemoryGroup | None = None
        try:
            if isinstance(pids, PidsController):
                pids_group = pids.create()
            memory_group = self._memory_group(memory, pids_group)
            cpu_group = self._cpu_group(limits.cpus, pids_group)
        except OSError as exc:
            for group in (memory_group, pids_group):
                if group is not None:
                    group.close()
            raise SandboxError(f"cannot create the command's cgroups: {exc}") from None
        return RunLimits(pids_group, memory_group, self.rlimits(limits), cpu_group)

    def _memory_for(self, memory: MemoryController | str, wanted: int | None) -> MemoryController | str:
        """The controller with a task's own limit (found now when the sweep's limit is off)."""
        if wanted is None or wanted == self.limits.memory_bytes:
            return memory
        if isinstance(memory, MemoryController):
            return attrs.evolve(memory, limit=wanted)
        with self._lock:
            if self._task_memory is None:
                self._task_memory = self._find(
                    "memory",
                    wanted,
                    lambda n: memory_cgroup.detect(n),  # noqa: PLW0108 - looked up per call (tests patch it)
                    MemoryUnavailable,
                    "memory exhaustion",
                )
            found = self._task_memory
        assert not isinstance(found, PidsController)
        return attrs.evolve(found, limit=wanted) if isinstance(found, MemoryController) else found

    def _cpu_group(self, cpus: float | None, pids_group: PidsGroup | None) -> PidsGroup | None:
        """A group with the CPU quota (None: no quota asked, or no cpu controller here: warned once)."""
        if cpus is None:
            return None
        self.cpu_quota()
        found = self._cpu
        if not isinstance(found, CpuController):
            _warn_once("cpu", str(found), "CPU time (the task's limits.cpus)")
            return None
        if pids_group is not None and os.path.dirname(pids_group.path) == found.parent:
            _write_limits(pids_group.path, found.limit_files(cpus))  # cgroup2: one group holds all
            return None
        return found.create(cpus)

    @staticmethod
    def _memory_group(memory: MemoryController | str, pids_group: PidsGroup | None) -> MemoryGroup | None:
        if not isinstance(memory, MemoryController):
            return None
        if pids_group is not None and os.path.dirname(pids_group.path) == memory.parent:
            # One cgroup2 hierarchy holds both controllers: a process is in one group only,
            # so the memory limit goes into the pids group.
            _write_limits(pids_group.path, memory.limit_files())
            fd = os.open(os.path.join(pids_group.path, "cgroup.procs"), os.O_WRONLY | os.O_CLOEXEC)
            return MemoryGroup(pids_group.path, fd, memory.version)
        return memory.create()


def _write_limits(path: str, files: Sequence[tuple[str, str]]) -> None:
    for name, value in files:
        target = os.path.join(path, name)
        if os.path.exists(target):
            with open(target, "w", encoding="ascii") as handle:
                handle.write(value)
