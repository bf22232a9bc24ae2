"""Value objects of the Sandbox port: what a sandboxed command may touch, and what came back."""

from __future__ import annotations

import enum
from collections.abc import Mapping

import attrs

from wfbench.domain.environment.image import ContainerImage


class ProcessState(enum.StrEnum):
    """Terminal state of a managed process."""

    EXITED = "exited"
    INPUT_FAILURE = "input-failure"
    TIMEOUT = "timeout"
    FORCED_KILL = "forced-kill"
    CANCELLED = "cancelled"
    SPAWN_FAILURE = "spawn-failure"
    REAP_FAILURE = "reap-failure"


@attrs.frozen
class Mount:
    """A host path made visible inside the sandbox at ``target`` (read-only unless ``writable``)."""

    host: str
    target: str
    writable: bool = False


@attrs.frozen
class Bridge:
    """A host UNIX stream socket the command reaches as ``127.0.0.1:<port>`` on its own loopback.

    The sandbox mounts ``socket`` into the command's view and runs a forwarder beside the command
    that accepts TCP connections on ``127.0.0.1:port`` (inside the command's own network
    namespace) and relays each one to the socket. Whatever listens on the socket on the host
    (the key proxy's cell lease, a registry proxy) is all the command can reach through it.
    """

    socket: str
    port: int

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``: the address the command uses."""
        return f"http://127.0.0.1:{self.port}"


@attrs.frozen
class TaskResources:
    """A task's own resources (``limits: {cpus, memory, storage}``; Harbor's ``[environment]``).

    ``None`` leaves the sandbox's own limit for that resource. Each backend states what it enforces
    (docs/containers.md, "Limits"): the CPU quota, the memory cgroup, and the size of every writable
    tmpfs and of the largest file a command writes (``storage_bytes``).
    """

    cpus: float | None = None
    memory_bytes: int | None = None
    storage_bytes: int | None = None

    @property
    def declared(self) -> bool:
        """True when the task names at least one resource."""
        return (self.cpus, self.memory_bytes, self.storage_bytes) != (None, None, None)


@attrs.frozen
class CommandScope:
    """Which sweep and cell a sandboxed command belongs to: a container backend names its container
    after it (a container of a killed sweep is recognisable, and the next start of that sweep removes
    it, never another sweep's). Commands of one phase of one cell run one after another."""

    sweep: str
    task: str
    arm: str
    run: int
    phase: str


@attrs.frozen
class SandboxPolicy:
    """What one sandboxed command may see and do.

    ``workspace`` is the host path of the cell's private copy; inside bwrap it appears at
    ``/workspace``. ``env`` is the *whole* environment of the command (an explicit allow-list,
    nothing inherited). ``network`` keeps the **host** network (the documented, contaminating
    ``network: host`` opt-out); without it the command has its own network namespace with only a
    loopback, on which each of ``bridges`` is presented (agent sessions reach the model endpoint
    that way). ``non_dumpable`` starts the command's program non-dumpable, so nothing else in the
    sandbox can ptrace it, read its memory or environment, or open its file descriptors.
    """

    workspace: str
    workspace_writable: bool
    network: bool
    timeout_s: float
    env: Mapping[str, str] = attrs.field(factory=dict)
    mounts: tuple[Mount, ...] = ()
    #: Paths inside the workspace that stay read-only even when it is writable (skill dirs).
    read_only_paths: tuple[str, ...] = ()
    #: Working directory relative to the workspace root ("" is the root).
    cwd: str = ""
    #: Bytes of stdout kept in full; past that only the overflow flag is set.
    stdout_limit: int = 8 * 1024 * 1024
    #: Host UNIX sockets presented on the command's own loopback (see :class:`Bridge`).
    bridges: tuple[Bridge, ...] = ()
    #: Start the program (``argv[0]``, a dynamically linked ELF file) non-dumpable.
    non_dumpable: bool = False
    #: The task's container image (a container backend runs the command in it; bwrap and
    #: host-unsafe refuse a policy that names one). ``None``: the backend's own default userland.
    image: ContainerImage | None = None
    #: The task's own CPU, memory and storage limits (replacing the sandbox's for this command).
    resources: TaskResources = TaskResources()
    #: The sweep and cell the command belongs to (None: not a cell's command, such as a build).
    scope: CommandScope | None = None


@attrs.frozen
class ExecResult:
    """What a sandboxed command did. A failing command is a value, not an exception."""

    state: ProcessState
    returncode: int | None
    stdout: bytes
    stderr_tail: bytes
    duration_s: float
    stdout_overflow: bool = False
    timed_out: bool = False
    forced_kill: bool = False
    detail: str = ""

    @property
    def ok(self) -> bool:
        """True when the command exited by itself with status 0."""
        return self.state is ProcessState.EXITED and self.returncode == 0
