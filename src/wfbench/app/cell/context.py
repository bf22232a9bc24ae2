"""The cell's context: what a cell runs with (its ports, run-wide settings) and sandboxed helpers."""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import stat
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from wfbench.app.cell.wire import CellWire
from wfbench.app.corpus.arms import Overlay
from wfbench.app.corpus.binding import BoundTask
from wfbench.domain.environment.image import IMAGE_DEFAULT_PATH
from wfbench.domain.environment.spec import ENV_MOUNT
from wfbench.domain.errors import SandboxError
from wfbench.domain.ports import (
    CancelToken,
    Clock,
    Environments,
    ModelCLI,
    ModelGateway,
    Sandbox,
    SweepDirectory,
    Workspaces,
)
from wfbench.domain.results.rows import ErrorKind
from wfbench.domain.session.records import SessionRecord
from wfbench.domain.workspace.rules import WorkspaceState
from wfbench.domain.workspace.sandbox import CommandScope, Mount, SandboxPolicy

#: Bytes a workspace may grow on disk over its sessions (``wfbench run --disk-budget``).
DEFAULT_DISK_BUDGET = 4 * 1024**3
MAX_SKILL_BYTES = 4 * 1024 * 1024


class SetupFailed(SandboxError):
    """The task's setup (or the overlay commit) failed: the cell is an ``infra-error``."""


class AgentFault(Exception):
    """A check after the sessions failed because of what the agent left: the arm's failure.

    The cell's row gets ``kind`` (``verify-failed``, ``oracle-failed`` or
    ``implementation-evidence-invalid``), ``resolved`` false and ``detail``, and keeps its
    sessions' tokens, cost and the bounded patch — never an ``infra-error``.
    """

    def __init__(self, kind: ErrorKind, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


@attrs.frozen
class CellServices:
    """The ports a cell uses: ``agent`` runs arms that name none; ``agents`` by key those that do."""

    sandbox: Sandbox
    agent: ModelCLI
    workspaces: Workspaces
    clock: Clock
    #: ``AgentChoice.key`` → the adapter for arms that name their own agent.
    agents: Mapping[str, ModelCLI] = attrs.field(factory=dict)
    #: Builds task environments (``None``: a task that declares one fails its preparation).
    environments: Environments | None = None
    #: The model endpoint's metered leases (None: the agent's own usage report is the only one).
    gateway: ModelGateway | None = None
    #: Told when each of a cell's sessions starts and ends (``app.events.PhaseStarted``/``PhaseFinished``).
    observe: Callable[[Any], None] | None = None

    def agent_for(self, key: str | None) -> ModelCLI:
        """The adapter of an arm's agent (``None``: the run's).

        Raises:
            SandboxError: the arm names an agent the composition root did not build.
        """
        if key is None:
            return self.agent
        if key not in self.agents:
            raise SandboxError(f"no agent adapter was built for {key!r}")
        return self.agents[key]


@attrs.frozen
class ArmRuntime:
    """What an arm's rows run under: the agent, its version, and the digest reuse compares."""

    agent: str
    agent_version: str | None
    runtime_digest: str | None


@attrs.frozen
class RunSettings:
    """Run-wide settings every cell shares (no secrets are ever written from here)."""

    out_dir: str
    work_dir: str
    model: str
    sandbox_backend: str
    command_env: Mapping[str, str]
    agent_env: Mapping[str, str]
    secrets: Mapping[str, str] = attrs.field(factory=dict, repr=False)
    effort: str | None = None
    session_timeout_s: float = 5400.0
    verify_timeout_s: float = 600.0
    clock: Clock | None = None
    #: Identity of the harness runtime (wfbench, agent, provider script): reuse needs it equal.
    runtime_digest: str | None = None
    #: Redacted from everything written, never given to the agent (the key behind the key proxy).
    withheld: tuple[str, ...] = attrs.field(default=(), repr=False)
    #: Bytes the workspace may grow on disk during the sessions (None: unchecked).
    disk_budget_bytes: int | None = DEFAULT_DISK_BUDGET
    #: Skill files every arm evaluating them runs with, on top of the repository's (``wfbench
    #: evolve``: the skills earlier generations promoted; an ``Overlay``). None: the repository's.
    incumbent_overlay: Overlay | None = None
    #: Arm name → its runtime identity; an arm missing here runs under ``runtime_digest``.
    arm_runtimes: Mapping[str, ArmRuntime] = attrs.field(factory=dict)
    #: ``--fail-on``: decisions that make a finished sweep exit 3 (and its events say so).
    fail_on: frozenset[str] = frozenset()
    #: ``out_dir`` as a port: every file a cell or the sweep writes there goes through it.
    directory: SweepDirectory = attrs.field(kw_only=True)

    def runtime_for(self, arm: str) -> ArmRuntime | None:
        """The runtime identity of ``arm`` when the composition root recorded one."""
        return self.arm_runtimes.get(arm)

    def redacted(self) -> tuple[str, ...]:
        """Every value to redact from what a cell writes: the agent's secrets and the withheld."""
        return (*self.secrets.values(), *self.withheld)

    def now(self) -> dt.datetime:
        """UTC now (from the clock when one is set)."""
        return self.clock.now() if self.clock is not None else dt.datetime.now(dt.UTC)


@attrs.define
class CellContext:
    """One running cell: its bound task, private workspace, scratch directory and ports."""

    task: BoundTask
    workspace: str
    scratch: str
    services: CellServices
    settings: RunSettings
    cancel: CancelToken
    transcripts: list[dict[str, object]] = attrs.field(factory=list)
    #: ``transcripts/index.json`` of the cell: which transcript is which phase, and how it ended.
    transcript_index: list[dict[str, object]] = attrs.field(factory=list)
    #: ``prompts.json`` of the cell: the prompt each phase sent, as built (:mod:`wfbench.app.cell.prompts`).
    prompts: list[dict[str, object]] = attrs.field(factory=list)
    #: The task's read-only dependencies, mounted for sessions, verify and the oracle.
    dependency_mounts: tuple[Mount, ...] = ()
    #: The workspace before the first session and after the latest one (for diagnostics).
    first_state: WorkspaceState | None = None
    last_state: WorkspaceState | None = None
    #: Bytes the workspace used on disk before the first session.
    start_usage: int | None = None
    #: The cell's lease on the model endpoint and its sessions' wire meters.
    wire: CellWire | None = None
    #: ``(phase, record)`` of every session run so far: kept by a row even if the cell then fails.
    sessions: list[tuple[str, SessionRecord]] = attrs.field(factory=list)
    #: Seconds spent in each step of the cell so far, in order (``wfbench.log``'s ``cell_timings``).
    timings: dict[str, float] = attrs.field(factory=dict)
    #: When the step being timed started (monotonic; set by the first :meth:`lap`'s caller).
    lap_started: float | None = None
    #: ``(arm, run)`` of this cell (with the task: the scope of every command, naming its container).
    cell: tuple[str, int] | None = None
    #: The step the cell's commands belong to now (``setup``, a phase's name, ``verify``, ``oracle``).
    phase: str = "prepare"

    def lap(self, step: str) -> None:
        """Close the step that ran since the previous lap under the name ``step`` (added up if repeated)."""
        now = self.services.clock.monotonic()
        if self.lap_started is not None:
            self.timings[step] = round(self.timings.get(step, 0.0) + now - self.lap_started, 4)
        self.lap_started = now

    @property
    def session_timeout_s(self) -> float:
        """An agent session's limit: the task's own (``limits.agent_timeout``), else the sweep's."""
        return self.task.spec.limits.agent_timeout_s or self.settings.session_timeout_s

    @property
    def verify_timeout_s(self) -> float:
        """verify's and the oracle's limit: the task's own (``limits.verifier_timeout``), else the sweep's."""
        return self.task.spec.limits.verifier_timeout_s or self.settings.verify_timeout_s

    @property
    def disk_budget_bytes(self) -> int | None:
        """Bytes the workspace may grow in the sessions: the task's ``limits.storage``, else the sweep's."""
        return self.task.spec.limits.storage_bytes or self.settings.disk_budget_bytes

    def redacted(self) -> tuple[str, ...]:
        """Every value to redact from what the cell writes: the run's secrets and the cell's token."""
        return (*self.settings.redacted(), *((self.wire.lease.token,) if self.wire is not None else ()))

    def policy(
        self,
        *,
        writable: bool,
        network: bool = False,
        mounts: tuple[Mount, ...] = (),
        timeout_s: float | None = None,
        read_only_paths: tuple[str, ...] = (),
        dependencies: bool = False,
    ) -> SandboxPolicy:
        """A policy over this cell's workspace (network off unless asked; with the dependencies if asked)."""
        return SandboxPolicy(
            workspace=self.workspace,
            workspace_writable=writable,
            network=network,
            timeout_s=timeout_s or self.verify_timeout_s,
            env=task_command_env(self.settings.command_env, self.task),
            mounts=mounts + environment_mounts(self.task) + (self.dependency_mounts if dependencies else ()),
            read_only_paths=read_only_paths,
            image=None if self.task.environment is None else self.task.environment.image,
            resources=self.task.spec.limits.resources,
            scope=self.scope(),
        )

    def scope(self) -> CommandScope | None:
        """The sweep, cell and phase the cell's commands now belong to (None outside a planned cell)."""
        if self.cell is None:
            return None
        arm, run = self.cell
        return CommandScope(self.settings.out_dir, self.task.spec.id, arm, run, self.phase)


def task_command_env(base: Mapping[str, str], task: BoundTask) -> dict[str, str]:
    """The command environment of ``task``: its environment's ``bin/`` first on PATH, then its variables."""
    env = dict(base)
    built = task.environment
    if built is not None and built.image is not None:  # the image's own toolchain, not the host's
        env["PATH"] = built.image.path or IMAGE_DEFAULT_PATH
    if built is not None and built.has_directory:
        env["PATH"] = f"{built.bin_dir}:{env.get('PATH', '/usr/local/bin:/usr/bin:/bin')}"
        if built.python:
            env["VIRTUAL_ENV"] = built.mount
    env.update(task.spec.env)
    return env


def environment_mounts(task: BoundTask) -> tuple[Mount, ...]:
    """The task's environment, read-only where cells see it, and the base interpreter it needs."""
    built = task.environment
    if built is None:
        return ()
    directory = (Mount(built.host_path, ENV_MOUNT),) if built.has_directory else ()
    return (*directory, *(Mount(path, path) for path in built.runtime_paths))


def checked_run(ctx: CellContext, argv: Sequence[str], *, writable: bool) -> str:
    """Run a harness command in the sandbox; its stdout, or SandboxError when it fails."""
    result = ctx.services.sandbox.run(
        argv, policy=ctx.policy(writable=writable, timeout_s=60.0), cancel=ctx.cancel
    )
    if not result.ok:
        tail = result.stderr_tail[-400:].decode("utf-8", "replace").strip()
        raise SandboxError(f"{argv[0]} {argv[-1]} failed ({result.state}, exit {result.returncode}): {tail}")
    return result.stdout.decode("utf-8", "replace")


def skill_digest(workspace: str, skills: Sequence[str], files: Sequence[str] = ()) -> str:
    """Length-prefixed sha256 over every file of ``.claude/skills/<skill>/`` (sorted); "" without skills.

    ``files`` are further workspace files the arm evaluates (a candidate overlay's ``AGENTS.md``);
    a missing one is hashed as missing. Symlinks and special files are hashed as what they are
    (never followed), so a planted link changes the digest instead of leaking a host file into it.
    """
    if not skills and not files:
        return ""
    digest = hashlib.sha256()
    total = 0
    for rel, kind, data in sorted([*_skill_entries(workspace, skills), *_file_entries(workspace, files)]):
        for part in (rel.encode(), kind.encode(), data):
            digest.update(len(part).to_bytes(8, "big"))
            digest.update(part)
        total += len(data)
        if total > MAX_SKILL_BYTES:
            raise SandboxError("evaluated skills exceed 4 MiB")
    return digest.hexdigest()


def _file_entries(workspace: str, files: Sequence[str]) -> list[tuple[str, str, bytes]]:
    entries: list[tuple[str, str, bytes]] = []
    for rel in files:
        path = os.path.join(workspace, rel)
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            entries.append((rel, "missing", b""))
            continue
        entries.append(_entry(rel, path, mode))
    return entries


def _skill_entries(workspace: str, skills: Sequence[str]) -> list[tuple[str, str, bytes]]:
    entries: list[tuple[str, str, bytes]] = []
    for skill in skills:
        root = os.path.join(workspace, ".claude", "skills", skill)
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for name in sorted(filenames) + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
                path = os.path.join(dirpath, name)
                entries.append(_entry(os.path.relpath(path, workspace), path, os.lstat(path).st_mode))
    return sorted(entries)


def _entry(rel: str, path: str, mode: int) -> tuple[str, str, bytes]:
    """What the digest hashes of one path: a file's bytes (bounded), a link's target, else nothing."""
    if stat.S_ISREG(mode):
        with open(path, "rb") as handle:
            return rel, "f", handle.read(MAX_SKILL_BYTES + 1)
    if stat.S_ISLNK(mode):
        return rel, "l", os.readlink(path).encode()
    return rel, "s", b""


def overlaid_skill_digest(root: str, skills: Sequence[str], overlay: Overlay | None) -> str:
    """:func:`skill_digest` of ``root``'s skills with ``overlay``'s files of those skills on top.

    What a cell's workspace holds once the incumbent overlay is committed (without building one).
    """
    touched = (
        [rel for rel, _ in overlay.files if rel.split("/")[2:3] and rel.split("/")[2] in skills]
        if overlay
        else []
    )
    if not touched or overlay is None:
        return skill_digest(root, skills)
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory(prefix="wfbench-skills-") as scratch:
        for skill in skills:
            source = os.path.join(root, ".claude", "skills", skill)
            if os.path.isdir(source) and not os.path.islink(source):
                shutil.copytree(source, os.path.join(scratch, ".claude", "skills", skill), symlinks=True)
        for rel, data in overlay.files:
            if rel in touched:
                target = os.path.join(scratch, *rel.split("/"))
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with open(target, "wb") as handle:
                    handle.write(data)
        return skill_digest(scratch, skills)
