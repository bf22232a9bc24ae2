"""The default sandbox: every command runs inside bubblewrap, over a fresh root with nothing of the host.

The command sees an empty tmpfs root into which only these are placed: the system trees read-only
(``/usr`` and the ``/bin``, ``/lib``… links), a short list of ``/etc`` files, the Python runtime
read-only, a generated ``/etc/passwd``, a private home and ``/tmp``, the workspace at
``/workspace`` and the policy's declared mounts. The host root is never bound. See
:func:`bwrap_argv` for every argument and why it is there (reference: sessions_sandbox.md §3.2).

Environment values reach the command through the process environment given to ``execve``, never
through ``--setenv``: bwrap's argv is readable in ``/proc`` by anything inside the sandbox.
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
from collections.abc import Callable, Sequence

import attrs

from wfbench.adapters.sandbox.command_limits import DEFAULT_TMPFS_BYTES, CommandLimits, ResourceLimits
from wfbench.adapters.sandbox.common import (
    SANDBOX_GID,
    SANDBOX_HOME,
    SANDBOX_UID,
    SANDBOX_WORKSPACE,
    PrivateRoot,
    check_policy,
    command_env,
    private_root,
)
from wfbench.adapters.sandbox.launch import plan_launch
from wfbench.adapters.sandbox.pids_cgroup import DEFAULT_PIDS_LIMIT
from wfbench.adapters.sandbox.process import run_managed
from wfbench.adapters.sandbox.python_sites import site_dirs
from wfbench.adapters.sandbox.task_resources import task_limits
from wfbench.adapters.sandbox.tmpdir import SANDBOX_TMP, mount_targets, private_tmpdir
from wfbench.domain.errors import SandboxError, SandboxUnavailable
from wfbench.domain.ports import CancelToken
from wfbench.domain.workspace.sandbox import ExecResult, Mount, ProcessState, SandboxPolicy

#: System trees bound read-only at the same path (a host symlink such as ``/bin -> usr/bin``
#: is recreated as the same symlink instead).
SYSTEM_TREES = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: ``/etc`` entries programs need to run (TLS roots, the dynamic loader's cache, alternatives
#: links, time zone, name-service switch). Nothing else of ``/etc`` is visible.
ETC_ENTRIES = (
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/nsswitch.conf",
    "/etc/hosts",
)
#: Only commands that keep the network need name resolution.
NETWORK_ETC_ENTRIES = ("/etc/resolv.conf",)
PREFLIGHT_TIMEOUT_S = 10.0


@functools.cache
def python_runtime_paths() -> tuple[str, ...]:
    """The running Python's install trees (base prefix and venv prefix) not already under /usr."""
    found: list[str] = []
    for prefix in (sys.base_prefix, sys.prefix):
        real = os.path.realpath(prefix)
        if real not in found and not any(real == t or real.startswith(t + "/") for t in SYSTEM_TREES):
            found.append(real)
    return tuple(found)


def _system_args() -> list[str]:
    args: list[str] = []
    for tree in SYSTEM_TREES:
        if os.path.islink(tree):
            # Recreate /bin -> usr/bin as a link: the same view, no second mount.
            args += ["--symlink", os.readlink(tree), tree]
        elif os.path.isdir(tree):
            args += ["--ro-bind", tree, tree]
    return args


def bwrap_argv(
    bwrap: str,
    argv: Sequence[str],
    *,
    policy: SandboxPolicy,
    private: PrivateRoot,
    runtime_paths: Sequence[str] = (),
    tmpfs_bytes: int = DEFAULT_TMPFS_BYTES,
    launch_mounts: Sequence[Mount] = (),
) -> tuple[list[str], str]:
    """The full bwrap command line for ``argv`` under ``policy``, and the command's ``TMPDIR``.

    Pure apart from reading the host layout.

    Each argument, in order:

    * ``--unshare-user --disable-userns --uid 1000 --gid 1000``: a user namespace in which the
      command is the unprivileged user ``agent``; host root maps to it, so there is no real root
      and no capability, and no nested user namespace can be created to regain one.
    * ``--unshare-pid``: a fresh PID namespace with its own ``/proc``; host processes are
      invisible and killing bwrap kills every descendant, even one that called ``setsid``.
    * ``--as-pid-1``: the command itself is PID 1, with no bwrap process inside the namespace.
      bwrap's own process holds the whole environment (secrets included) in
      ``/proc/<pid>/environ`` and its argv (host paths) in ``cmdline``; as PID 1 inside, any tool
      subprocess could read both. When PID 1 exits, the kernel kills everything left in the
      namespace, so no background process survives the command.
    * ``--unshare-ipc --unshare-uts --hostname wfbench``: no shared System V IPC or hostname.
    * ``--unshare-cgroup-try``: a private cgroup view where the kernel allows it.
    * ``--unshare-net`` unless ``policy.network`` (the ``network: host`` opt-out): only a
      private loopback. Agent sessions reach the model endpoint through ``policy.bridges``, each
      presented on that loopback by the forwarder (:mod:`wfbench.adapters.sandbox.net_bridge`).
    * ``--die-with-parent``: the sandbox is killed if the harness dies.
    * ``--new-session``: no controlling terminal (blocks TIOCSTI injection into the harness's tty).
    * ``--cap-drop ALL``: an empty capability bounding set.
    * the system trees and ``/etc`` entries above, ``--ro-bind`` (``--ro-bind-try`` for optional
      ones); ``/etc/resolv.conf`` only with the network.
    * ``--size <tmpfs_bytes> --tmpfs /home/agent`` and ``--size <tmpfs_bytes> --tmpfs /tmp``:
      private, per run, bounded (their pages are charged to the command's memory cgroup). Made
      before anything is bound below them, so a runtime whose host path is under ``/tmp`` stays
      visible instead of being hidden by the tmpfs.
    * the Python runtime and ``runtime_paths`` read-only at the same path.
    * ``--tmpfs <d> --remount-ro <d>`` over every ``site-packages``/``dist-packages`` of ``/usr``,
      those runtimes and same-path read-only mounts (:mod:`wfbench.adapters.sandbox.python_sites`): no
      host package is importable; a task's packages come from its environment at ``/env``.
    * ``--ro-bind <private>/passwd /etc/passwd`` (and ``group``): names ``agent`` only.
    * ``--proc /proc --dev /dev``: a fresh procfs for the PID namespace and a minimal ``/dev``;
      ``--size <tmpfs_bytes> --tmpfs /dev/shm`` then ``--remount-ro /dev``.
    * ``--bind`` (or ``--ro-bind`` when the workspace is read-only) ``<workspace> /workspace``.
    * ``--ro-bind <workspace>/<p> /workspace/<p>`` for each of ``policy.read_only_paths``.
    * each declared mount, parents before children: ``--bind`` if writable else ``--ro-bind``.
    * ``--ro-bind`` for each of ``launch_mounts`` (the forwarder, the bridge sockets, the
      execute-only loader: :mod:`wfbench.adapters.sandbox.launch`).
    * ``--size <tmpfs_bytes> --tmpfs <TMPDIR>`` when a mount above lies inside ``/tmp`` (its mount
      point is a directory there): ``TMPDIR`` is then a tmpfs of its own that no mount lies in
      (:mod:`wfbench.adapters.sandbox.tmpdir`), so it starts empty; otherwise ``TMPDIR`` is ``/tmp``.
    * ``--remount-ro /``: the sandbox's own root tmpfs (where mount points were made) is
      read-only, so nothing can fill it.
    * ``--chdir /workspace[/<cwd>]`` then ``--`` and the command.
    """
    size = str(tmpfs_bytes)
    runtimes = (*python_runtime_paths(), *runtime_paths)
    args = [
        *_namespace_args(bwrap, policy),
        *_system_args(),
        *_host_args(policy, private, runtimes, size),
        *_workspace_args(policy, runtimes, launch_mounts),
    ]
    tmpdir = private_tmpdir(mount_targets(args))
    if tmpdir != SANDBOX_TMP:
        args += ["--size", size, "--tmpfs", tmpdir]
    chdir = f"{SANDBOX_WORKSPACE}/{policy.cwd}" if policy.cwd else SANDBOX_WORKSPACE
    return [*args, "--remount-ro", "/", "--chdir", chdir, "--", *argv], tmpdir


def _namespace_args(bwrap: str, policy: SandboxPolicy) -> list[str]:
    """bwrap, then its namespaces and process flags (:func:`bwrap_argv`'s first five items)."""
    args = [bwrap, "--unshare-user", "--disable-userns", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_GID)]
    args += [
        "--unshare-pid",
        "--as-pid-1",
        "--unshare-ipc",
        "--unshare-uts",
        "--hostname",
        "wfbench",
        "--unshare-cgroup-try",
    ]
    if not policy.network:
        args.append("--unshare-net")
    return [*args, "--die-with-parent", "--new-session", "--cap-drop", "ALL"]


def _host_args(policy: SandboxPolicy, private: PrivateRoot, runtimes: Sequence[str], size: str) -> list[str]:
    """``/etc`` entries, the private tmpfs homes, the runtimes, passwd and group, ``/proc`` and ``/dev``."""
    args: list[str] = []
    for entry in ETC_ENTRIES + (NETWORK_ETC_ENTRIES if policy.network else ()):
        args += ["--ro-bind-try", entry, entry]
    args += ["--size", size, "--tmpfs", SANDBOX_HOME, "--size", size, "--tmpfs", SANDBOX_TMP]
    for path in runtimes:
        args += ["--ro-bind", path, path]
    args += ["--ro-bind", private.passwd, "/etc/passwd", "--ro-bind", private.group, "/etc/group"]
    args += [
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--size",
        size,
        "--tmpfs",
        "/dev/shm",  # noqa: S108 - inside the sandbox's own mount namespace
        "--remount-ro",
        "/dev",
    ]
    return args


def _workspace_args(
    policy: SandboxPolicy, runtimes: Sequence[str], launch_mounts: Sequence[Mount]
) -> list[str]:
    """The workspace and its read-only paths, the declared mounts, hidden site-packages, launch mounts."""
    args = ["--bind" if policy.workspace_writable else "--ro-bind", policy.workspace, SANDBOX_WORKSPACE]
    for rel in policy.read_only_paths:
        args += ["--ro-bind", os.path.join(policy.workspace, rel), f"{SANDBOX_WORKSPACE}/{rel}"]
    for mount in sorted(policy.mounts, key=lambda m: m.target.count("/")):
        args += ["--bind" if mount.writable else "--ro-bind", mount.host, mount.target]
    same_path = [m.host for m in policy.mounts if m.host == m.target and not m.writable]
    for path in site_dirs(("/usr", *runtimes, *same_path)):  # no host package is importable
        args += ["--tmpfs", path, "--remount-ro", path]
    for mount in launch_mounts:
        args += ["--ro-bind", mount.host, mount.target]
    return args


class BwrapSandbox:
    """Runs commands inside bubblewrap; fails closed (never falls back to the host).

    ``bwrap`` is the binary (default: ``bwrap`` on PATH); ``runtime_paths`` are extra host
    trees bound read-only at the same path (a toolchain outside ``/usr``); ``private_parent``
    is where per-run private roots are created (default: the system temporary directory);
    ``limits`` are the per-command resource limits (processes, memory, open files, file size,
    tmpfs size; see :mod:`wfbench.adapters.sandbox.command_limits`). ``pids_limit`` is kept as a shorthand
    for ``ResourceLimits(pids=...)`` when ``limits`` is not given (``None``: no process limit).
    """

    name = "bwrap"

    def __init__(
        self,
        bwrap: str | None = None,
        *,
        runtime_paths: Sequence[str] = (),
        private_parent: str | None = None,
        pids_limit: int | None = DEFAULT_PIDS_LIMIT,
        limits: ResourceLimits | None = None,
    ) -> None:
        self._bwrap = bwrap
        self._runtime_paths = tuple(os.path.realpath(p) for p in runtime_paths)
        self._private_parent = private_parent
        self._limits = CommandLimits(limits or ResourceLimits(pids=pids_limit))

    @property
    def limits(self) -> ResourceLimits:
        """The per-command resource limits this sandbox applies."""
        return self._limits.limits

    def process_limit(self) -> str:
        """How commands are limited in process count, or ``NOT enforced: <why>`` (for ``wfbench doctor``)."""
        return self._limits.process_limit()

    def describe_limits(self) -> tuple[str, ...]:
        """Every resource limit as a ``name: how`` line (``wfbench doctor``)."""
        return self._limits.describe()

    def _binary(self) -> str:
        found = shutil.which(self._bwrap or "bwrap")
        if not found or not os.path.isfile(found) or not os.access(found, os.X_OK):
            raise SandboxUnavailable(
                f"bubblewrap ({self._bwrap or 'bwrap'}) is not installed or not executable; "
                "install it (apt-get install bubblewrap) — wfbench never falls back to the host"
            )
        return found

    def preflight(self) -> None:
        """Start ``/usr/bin/true`` in the full sandbox (network unshared) once; detect the process limit.

        Raises:
            SandboxUnavailable: bwrap is missing, not Linux, or the namespaces cannot be created.
        """
        if not sys.platform.startswith("linux"):
            raise SandboxUnavailable("the bwrap sandbox is supported only on Linux")
        with private_root(self._private_parent) as private:
            policy = SandboxPolicy(
                workspace=private.tmp, workspace_writable=False, network=False, timeout_s=10
            )
            argv, _ = bwrap_argv(self._binary(), ["/usr/bin/true"], policy=policy, private=private)
            result = run_managed(argv, env={}, timeout_s=PREFLIGHT_TIMEOUT_S, grace_s=1.0)
        if not result.ok:
            detail = result.detail or result.stderr_tail.decode("utf-8", "replace")[-1000:].strip()
            raise SandboxUnavailable(
                f"bubblewrap preflight failed ({result.state}, exit {result.returncode}): {detail}; "
                "wfbench never falls back to the host (use a machine where user namespaces work)"
            )
        self._limits.detect()  # detect the cgroup controllers now: warn early, remove stale groups

    def _host_path(self, policy: SandboxPolicy) -> Callable[[str], str]:
        """Maps a path as the command sees it to the host file behind it (mounts, same-path trees)."""

        def host(path: str) -> str:
            for mount in sorted(policy.mounts, key=lambda m: len(m.target), reverse=True):
                if path == mount.target or path.startswith(mount.target.rstrip("/") + "/"):
                    return mount.host + path[len(mount.target) :]
            if path == SANDBOX_WORKSPACE or path.startswith(SANDBOX_WORKSPACE + "/"):
                return policy.workspace + path[len(SANDBOX_WORKSPACE) :]
            same = (*SYSTEM_TREES, *python_runtime_paths(), *self._runtime_paths)
            if any(path == tree or path.startswith(tree + "/") for tree in same):
                return path
            raise SandboxError(f"{path} is not inside any tree bound into the sandbox")

        return host

    def workspace_path(self, policy: SandboxPolicy) -> str:  # noqa: ARG002 - the port's signature
        """``/workspace``."""
        return SANDBOX_WORKSPACE

    def mount_path(self, mount_target: str, policy: SandboxPolicy) -> str:  # noqa: ARG002 - port signature
        """The target itself: mounts appear where they were declared."""
        return mount_target

    def run(
        self,
        argv: Sequence[str],
        *,
        policy: SandboxPolicy,
        stdin: bytes | None = None,
        cancel: CancelToken | None = None,
    ) -> ExecResult:
        """Run ``argv`` in a fresh sandbox; when this returns, every process in it is gone.

        Raises:
            SandboxError: the policy names unusable paths, bwrap is missing, or the private root
                cannot be created or removed.
        """
        if not argv:
            raise SandboxError("empty command")
        check_policy(policy)
        if policy.image is not None:
            raise SandboxError(
                f"the task's environment is the container image {policy.image.ref}: run it with"
                " --sandbox podman (docs/containers.md)"
            )
        try:
            binary = self._binary()
        except SandboxUnavailable as exc:
            raise SandboxError(str(exc)) from exc
        limits = task_limits(self.limits, policy.resources)
        with private_root(self._private_parent) as private:
            launch = plan_launch(
                argv, policy, private_root=private.root, host_path=self._host_path(policy), in_sandbox=True
            )
            full, tmpdir = bwrap_argv(
                binary,
                launch.argv,
                policy=policy,
                private=private,
                runtime_paths=self._runtime_paths,
                tmpfs_bytes=limits.tmpfs_bytes,
                launch_mounts=launch.mounts,
            )
            chdir = f"{SANDBOX_WORKSPACE}/{policy.cwd}" if policy.cwd else SANDBOX_WORKSPACE
            env = command_env(policy, home=SANDBOX_HOME, tmp=tmpdir, pwd=chdir)
            run_limits = self._limits.start(limits)
            failed = os.path.join(private.root, "launch-failed")
            try:
                result = run_managed(
                    run_limits.wrap(full, failed),
                    env=env,
                    timeout_s=policy.timeout_s,
                    stdin=stdin,
                    cancel=cancel,
                    stdout_limit=policy.stdout_limit,
                )
                killed = run_limits.oom_kills()
                step = run_limits.launch_failure(failed)
            finally:
                run_limits.close()
        if step is not None:
            detail = f"cannot start {binary}: the launcher could not apply {step}"
            return ExecResult(ProcessState.SPAWN_FAILURE, None, b"", b"", result.duration_s, detail=detail)
        if killed:
            note = f"memory limit reached: the OOM killer ended {killed} process(es)"
            result = attrs.evolve(result, detail=f"{result.detail}; {note}" if result.detail else note)
        return result
