"""The OCI container backend: every command runs in a fresh Podman container (docs/containers.md).

One ``podman run`` per command, like one bwrap per command: a container cannot change its mounts,
network or read-only-ness once started, and the policies of one cell differ per command (a
writable workspace for the agent, read-only for verify and the oracle, the oracle's files staged
only after the agent's last session). ``bench/container_overhead.py`` measures the cost against
bwrap and against ``podman exec`` into a kept container.

What each command gets (:func:`podman_argv` lists every flag):

* the task's image (``policy.image``) or the backend's default image, ``--pull never``;
* the workspace bind-mounted at the image's ``workdir`` (``/workspace`` by default), read-only
  unless the policy says writable, its ``read_only_paths`` read-only; the declared mounts (a
  target under ``/workspace`` moves with the workdir);
* ``--network none`` (a private loopback only) unless the policy keeps the host network; the
  policy's bridges are presented on that loopback by the same forwarder as under bwrap (PID 1 of
  the container, started non-dumpable, :mod:`wfbench.adapters.sandbox.launch`);
* ``--read-only`` root, private bounded tmpfs ``/tmp``, ``/home/agent`` and ``/dev/shm``;
  ``--cap-drop ALL``, ``no-new-privileges``, the runtime's default seccomp profile;
  ``--pids-limit``, ``--memory`` (no swap), ``--ulimit nofile/fsize/nproc`` under the host's
  hard limits (a container's default ulimits exceed them on some machines and fail every start);
* the harness's Python runtime read-only at its host path (its site-packages hidden), as under
  bwrap: the forwarder and the stand-in agent run with it, and the agent CLIs come read-only from
  the host install, so a task image needs no agent inside. Both need a **glibc** image (a musl
  image is refused with a clear message, once per image);
* environment values through podman's own process environment (``--env NAME``), never argv;
* a name ``wfbench-<pid>-n<pidns>-<random>`` and an owner label: containers whose harness died
  (a SIGKILLed sweep) are removed at the next preflight (:func:`remove_stale_containers`).

The command runs as uid 1000 in a user namespace that maps the harness's uid to it (``USER_ARGS``),
without any capability: it can write what the harness gave it writable and nothing of the image.
"""

from __future__ import annotations

import os
import resource
import secrets
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence

import attrs

from wfbench.adapters.sandbox.bwrap import python_runtime_paths
from wfbench.adapters.sandbox.command_limits import ResourceLimits
from wfbench.adapters.sandbox.common import (
    SANDBOX_HOME,
    SANDBOX_WORKSPACE,
    check_policy,
    command_env,
    private_root,
)
from wfbench.adapters.sandbox.launch import plan_launch
from wfbench.adapters.sandbox.net_bridge import pid_namespace
from wfbench.adapters.sandbox.process import run_managed
from wfbench.adapters.sandbox.python_sites import site_dirs
from wfbench.adapters.sandbox.tmpdir import SANDBOX_TMP, private_tmpdir
from wfbench.domain.errors import SandboxError, SandboxUnavailable
from wfbench.domain.ports import CancelToken
from wfbench.domain.workspace.sandbox import ContainerImage, ExecResult, Mount, ProcessState, SandboxPolicy

__all__ = ["OWNER_LABEL", "PodmanSandbox", "podman_argv", "remove_stale_containers"]

#: The label naming the harness process that owns a container: ``<pid>:<pid namespace inode>``.
OWNER_LABEL = "io.wfbench.owner"
NAME_PREFIX = "wfbench-"
#: The command runs as uid/gid 1000 in a user namespace where host root (the harness, owner of the
#: workspace and every mount) is 1000 and the image's root is an unprivileged host uid: like bwrap's
#: ``agent``, it owns what the harness gave it and nothing of the image (``/etc/shadow``, ``/root``).
SANDBOX_ID = 1000
USER_ARGS = (
    "--uidmap",
    f"0:1:{SANDBOX_ID}",
    "--uidmap",
    f"{SANDBOX_ID}:0:1",
    "--uidmap",
    f"{SANDBOX_ID + 1}:{SANDBOX_ID + 1}:64535",
    "--user",
    f"{SANDBOX_ID}:{SANDBOX_ID}",
)
#: The runtime that works on hybrid/v1 cgroups (crun refuses them); ``WFBENCH_PODMAN_RUNTIME`` overrides.
DEFAULT_RUNTIME = "runc"
PREFLIGHT_TIMEOUT_S = 60.0
#: Present in every glibc image; it drops the ``HOSTNAME`` podman sets, then execs the command.
ENV_PROGRAM = "/usr/bin/env"
#: Every tmpfs starts empty: podman's default ``tmpcopyup`` would copy the image's files into it
#: (slow, and it would un-hide the host site-packages a read-only tmpfs covers).
TMPFS_OPTIONS = "rw,nosuid,nodev,notmpcopyup"
CLI_TIMEOUT_S = 60.0
#: ``RLIMIT_NPROC`` for the container when no process limit is set (under any sane hard limit).
DEFAULT_NPROC = 4096
MUSL_MESSAGE = (
    "image {image} uses the musl C library: wfbench runs its forwarder, the stand-in agent and the"
    " agent CLIs from the host's glibc install inside the container, so task images must be glibc"
    " based (Debian, Ubuntu, Fedora…; not Alpine)"
)


@attrs.frozen
class ArgvInputs:
    """What :func:`podman_argv` needs besides the policy (kept together: one call, one value)."""

    podman: tuple[str, ...]
    name: str
    owner: str
    image: ContainerImage
    limits: ResourceLimits
    runtimes: tuple[str, ...] = ()
    launch_mounts: tuple[Mount, ...] = ()
    env_names: tuple[str, ...] = ()
    interactive: bool = False
    #: A host directory mounted read-only over the image's ``/root`` (0700 there) holding only the
    #: mount points of host runtimes that live under ``/root`` (see :func:`root_shim`); "" for none.
    root_shim: str = ""


def root_shim(parent: str, runtimes: Sequence[str]) -> str:
    """A 0755 directory under ``parent`` with the mount points of the runtimes under ``/root``, or "".

    An image's ``/root`` is 0700 (its root's), and the command is not that user: a host runtime
    bound below it (a pyenv Python in ``/root/.pyenv``) would be unreachable. The shim replaces the
    image's ``/root`` read-only, so the command sees exactly those mount points there and nothing else.
    """
    below = [path for path in runtimes if path.startswith("/root/")]
    if not below:
        return ""
    shim = os.path.join(parent, "root-shim")
    for path in below:
        os.makedirs(os.path.join(shim, path[len("/root/") :]), mode=0o755, exist_ok=True)
    for dirpath, _dirs, _files in os.walk(shim):
        os.chmod(dirpath, 0o755)
    return shim


def in_workdir(path: str, workdir: str) -> str:
    """``path`` as the container sees it: a path under ``/workspace`` moves to the image's workdir."""
    if path == SANDBOX_WORKSPACE or path.startswith(SANDBOX_WORKSPACE + "/"):
        return workdir + path[len(SANDBOX_WORKSPACE) :]
    return path


def _bind(host: str, target: str, *, writable: bool) -> list[str]:
    for path in (host, target):
        if "," in path or "=" in path:
            raise SandboxError(f"a container mount path cannot hold ',' or '=': {path}")
    suffix = "" if writable else ",ro=true"
    return ["--mount", f"type=bind,source={host},destination={target}{suffix}"]


def _rlimit(kind: int, wanted: int) -> int:
    """``wanted`` capped at this process's hard limit (a container cannot raise it)."""
    hard = resource.getrlimit(kind)[1]
    return wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)


def _limit_args(limits: ResourceLimits) -> list[str]:
    size = limits.tmpfs_bytes
    args = ["--tmpfs", f"{SANDBOX_TMP}:{TMPFS_OPTIONS},size={size},mode=1777"]
    args += ["--tmpfs", f"{SANDBOX_HOME}:{TMPFS_OPTIONS},size={size},mode=0700,U"]
    args += ["--shm-size", str(size)]
    nproc = _rlimit(resource.RLIMIT_NPROC, limits.pids or DEFAULT_NPROC)
    args += ["--ulimit", f"nproc={nproc}:{nproc}"]
    if limits.pids is not None:
        args += ["--pids-limit", str(limits.pids)]
    if limits.memory_bytes is not None:
        args += ["--memory", str(limits.memory_bytes), "--memory-swap", str(limits.memory_bytes)]
    nofile = _rlimit(resource.RLIMIT_NOFILE, limits.open_files or 1024)
    args += ["--ulimit", f"nofile={nofile}:{nofile}"]
    if limits.file_size_bytes is not None:
        fsize = _rlimit(resource.RLIMIT_FSIZE, limits.file_size_bytes)
        args += ["--ulimit", f"fsize={fsize}:{fsize}"]
    return args


def podman_argv(argv: Sequence[str], *, policy: SandboxPolicy, inputs: ArgvInputs) -> tuple[list[str], str]:
    """The full ``podman run`` command line for ``argv`` under ``policy``, and the command's ``TMPDIR``.

    In order: ``run --rm --name … --label owner --pull never``; ``--network none`` (or ``host``)
    and ``--hostname wfbench``; ``--read-only --read-only-tmpfs=false`` (no tmpfs but ours);
    ``--cap-drop ALL --security-opt no-new-privileges --user 0:0``; the tmpfs mounts and limits
    (:func:`_limit_args`); ``--env NAME`` per variable (values come from podman's environment);
    the workspace, its read-only paths, the declared mounts (parents first), the host runtimes
    read-only with their site-packages hidden by read-only tmpfs, the launch mounts (forwarder,
    bridge sockets, execute-only loader); a private ``TMPDIR`` tmpfs when a mount lies in ``/tmp``;
    ``--workdir``, ``--entrypoint`` (the image's own is never run), the image, the command.
    """
    workdir = inputs.image.workdir
    args = [*inputs.podman, "run", "--rm", "--name", inputs.name, "--label", f"{OWNER_LABEL}={inputs.owner}"]
    args += ["--pull", "never", "--log-driver", "none", "--hostname", "wfbench"]
    args += ["--network", "host" if policy.network else "none"]
    args += ["--read-only", "--read-only-tmpfs=false", "--cap-drop", "ALL"]
    args += ["--security-opt", "no-new-privileges", *USER_ARGS, "--unsetenv-all"]
    args += _limit_args(inputs.limits)
    for name in inputs.env_names:
        args += ["--env", name]
    args += _bind(policy.workspace, workdir, writable=policy.workspace_writable)
    targets = [SANDBOX_TMP, SANDBOX_HOME, workdir]
    for rel in policy.read_only_paths:
        args += _bind(os.path.join(policy.workspace, rel), f"{workdir}/{rel}", writable=False)
    for mount in sorted(policy.mounts, key=lambda m: m.target.count("/")):
        target = in_workdir(mount.target, workdir)
        args += _bind(mount.host, target, writable=mount.writable)
        targets.append(target)
    if inputs.root_shim:
        args += _bind(inputs.root_shim, "/root", writable=False)
    for path in inputs.runtimes:
        args += _bind(path, path, writable=False)
        targets.append(path)
    same_path = [m.host for m in policy.mounts if m.host == m.target and not m.writable]
    for path in site_dirs((*inputs.runtimes, *same_path)):  # no host package is importable
        args += ["--mount", f"type=tmpfs,destination={path},ro=true,notmpcopyup"]
    for mount in inputs.launch_mounts:
        args += _bind(mount.host, mount.target, writable=False)
        targets.append(mount.target)
    tmpdir = private_tmpdir(targets)
    if tmpdir != SANDBOX_TMP:
        args += ["--tmpfs", f"{tmpdir}:{TMPFS_OPTIONS},size={inputs.limits.tmpfs_bytes},mode=1777"]
    chdir = f"{workdir}/{policy.cwd}" if policy.cwd else workdir
    args += ["--workdir", chdir]
    if inputs.interactive:
        args.append("--interactive")
    # podman always sets HOSTNAME; env(1) removes it and execs the command (same pid, same PID 1).
    args += ["--entrypoint", ENV_PROGRAM, inputs.image.ref, "-u", "HOSTNAME", *argv]
    return args, tmpdir


def _owner() -> str:
    return f"{os.getpid()}:{pid_namespace() or 0}"


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def remove_stale_containers(podman: Sequence[str]) -> tuple[str, ...]:
    """Remove every wfbench container whose owner (pid, PID namespace) is this namespace's and dead.

    A SIGKILLed harness cannot stop its containers (they belong to the runtime's monitor, not to
    it); this runs at every preflight, like the stale socket and cgroup sweeps. Returns the names.
    """
    mine = str(pid_namespace() or 0)
    listing = subprocess.run(
        [
            *podman,
            "ps",
            "--all",
            "--filter",
            f"label={OWNER_LABEL}",
            "--format",
            f'{{{{.Names}}}} {{{{index .Labels "{OWNER_LABEL}"}}}}',
        ],
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        check=False,
    )
    stale: list[str] = []
    for line in listing.stdout.splitlines():
        name, _, owner = line.strip().partition(" ")
        pid, _, namespace = owner.partition(":")
        if name.startswith(NAME_PREFIX) and pid.isdigit() and namespace == mine and not _alive(int(pid)):
            stale.append(name)
    if stale:
        subprocess.run(
            [*podman, "rm", "--force", "--time", "0", *stale],
            capture_output=True,
            timeout=CLI_TIMEOUT_S,
            check=False,
        )
    return tuple(stale)


class PodmanSandbox:
    """Runs each command in a fresh Podman container; fails closed (never falls back to the host).

    ``image`` is the default image (a policy without ``image`` runs there: the demo's venv tasks);
    ``podman`` the binary (default ``podman`` on PATH); ``runtime`` the OCI runtime (default
    ``runc``, or ``$WFBENCH_PODMAN_RUNTIME``; ``""`` keeps podman's own choice); ``limits`` the
    per-command resource limits; ``runtime_paths`` extra host trees bound read-only at their path.
    """

    name = "podman"

    def __init__(
        self,
        image: str,
        *,
        podman: str | None = None,
        runtime: str | None = None,
        limits: ResourceLimits | None = None,
        runtime_paths: Sequence[str] = (),
    ) -> None:
        self._image = image
        self._podman = podman
        chosen = os.environ.get("WFBENCH_PODMAN_RUNTIME", DEFAULT_RUNTIME) if runtime is None else runtime
        self._runtime = chosen
        self._limits = limits or ResourceLimits()
        self._runtime_paths = tuple(os.path.realpath(p) for p in runtime_paths)
        self._checked: set[str] = set()
        self._lock = threading.Lock()

    @property
    def limits(self) -> ResourceLimits:
        """The per-command resource limits this sandbox applies."""
        return self._limits

    @property
    def default_image(self) -> str:
        """The image a policy without one runs in."""
        return self._image

    def describe_limits(self) -> tuple[str, ...]:
        """Every resource limit as a ``name: how`` line (``wfbench doctor``)."""
        lim = self._limits
        return (
            f"processes: {lim.pids or 'off'} (--pids-limit)",
            f"memory: {lim.memory_bytes or 'off'} bytes (--memory, no swap)",
            f"open files: {lim.open_files or 'off'} (--ulimit nofile, under the host's hard limit)",
            f"file size: {lim.file_size_bytes or 'off'} bytes (--ulimit fsize)",
            f"tmpfs: {lim.tmpfs_bytes} bytes each (/tmp, /home/agent, /dev/shm)",
        )

    def command(self) -> tuple[str, ...]:
        """``podman [--runtime R]`` as this backend calls it.

        Raises:
            SandboxUnavailable: podman is not installed.
        """
        found = shutil.which(self._podman or "podman")
        if not found:
            raise SandboxUnavailable(
                f"podman ({self._podman or 'podman'}) is not installed; install it (apt-get install podman runc,"
                " or scripts/install-tools --podman) — wfbench never falls back to the host"
            )
        runtime = shutil.which(self._runtime) or self._runtime if self._runtime else ""
        return (found, "--runtime", runtime) if runtime else (found,)

    def preflight(self) -> None:
        """Remove stale containers, then start ``/usr/bin/true`` in the default image with every flag.

        Raises:
            SandboxUnavailable: podman is missing, the runtime cannot start containers here, or the
                default image is missing or not glibc based.
        """
        if not sys.platform.startswith("linux"):
            raise SandboxUnavailable("the podman sandbox is supported only on Linux")
        podman = self.command()
        remove_stale_containers(podman)
        try:
            self._check_image(ContainerImage(self._image))
        except SandboxError as exc:
            raise SandboxUnavailable(f"podman preflight failed: {exc}") from None

    def _check_image(self, image: ContainerImage) -> None:
        """Once per image: it exists locally, is glibc based, and runs the host's Python runtime."""
        with self._lock:
            if image.ref in self._checked:
                return
        probe = (
            'for f in /lib/ld-musl-*.so.1; do [ -e "$f" ] && { echo musl; exit 3; }; done; '
            f"exec '{python_launcher()}' -I -S -c 'print(\"wfbench-ok\")'"
        )
        with private_root() as empty:
            policy = SandboxPolicy(workspace=empty.tmp, workspace_writable=False, network=False, timeout_s=60)
            result = self._run(["/bin/sh", "-c", probe], policy=policy, image=image, stdin=None, cancel=None)
        if b"musl" in result.stdout:
            raise SandboxError(MUSL_MESSAGE.format(image=image.ref))
        if not result.ok or b"wfbench-ok" not in result.stdout:
            tail = result.stderr_tail.decode("utf-8", "replace").strip()[-600:]
            raise SandboxError(
                f"image {image.ref} cannot run the harness's runtime ({result.state}, exit {result.returncode}):"
                f" {result.detail or tail} (the image must exist locally and be glibc based, at least as new as"
                " the host's)"
            )
        with self._lock:
            self._checked.add(image.ref)

    def _host_path(self, policy: SandboxPolicy, workdir: str) -> Callable[[str], str]:
        """Maps a path as the command sees it to the host file behind it (mounts, runtimes)."""

        def host(path: str) -> str:
            for mount in sorted(policy.mounts, key=lambda m: len(m.target), reverse=True):
                target = in_workdir(mount.target, workdir)
                if path == target or path.startswith(target.rstrip("/") + "/"):
                    return mount.host + path[len(target) :]
            if path == workdir or path.startswith(workdir + "/"):
                return policy.workspace + path[len(workdir) :]
            if any(path == t or path.startswith(t + "/") for t in self._runtimes()):
                return path
            raise SandboxError(f"{path} is not a host file bound into the container (non-dumpable start)")

        return host

    def _runtimes(self) -> tuple[str, ...]:
        return (*python_runtime_paths(), *self._runtime_paths)

    def workspace_path(self, policy: SandboxPolicy) -> str:
        """The image's workdir (``/workspace`` unless the task's image says otherwise)."""
        return policy.image.workdir if policy.image is not None else SANDBOX_WORKSPACE

    def mount_path(self, mount_target: str, policy: SandboxPolicy) -> str:
        """The target itself, except that a target under ``/workspace`` moves with the workdir."""
        return in_workdir(mount_target, self.workspace_path(policy))

    def run(
        self,
        argv: Sequence[str],
        *,
        policy: SandboxPolicy,
        stdin: bytes | None = None,
        cancel: CancelToken | None = None,
    ) -> ExecResult:
        """Run ``argv`` in a fresh container; when this returns, the container and its processes are gone.

        Raises:
            SandboxError: the policy names unusable paths, podman is missing, or the image is
                missing, musl based or cannot run the host's runtime.
        """
        if not argv:
            raise SandboxError("empty command")
        check_policy(policy)
        image = policy.image or ContainerImage(self._image)
        self._check_image(image)
        return self._run(argv, policy=policy, image=image, stdin=stdin, cancel=cancel)

    def _run(
        self,
        argv: Sequence[str],
        *,
        policy: SandboxPolicy,
        image: ContainerImage,
        stdin: bytes | None,
        cancel: CancelToken | None,
    ) -> ExecResult:
        try:
            podman = self.command()
        except SandboxUnavailable as exc:
            raise SandboxError(str(exc)) from exc
        name = f"{NAME_PREFIX}{os.getpid()}-n{pid_namespace() or 0}-{secrets.token_hex(6)}"
        with private_root() as private:
            host_path = self._host_path(policy, image.workdir)
            launch = plan_launch(
                argv, policy, private_root=private.root, host_path=host_path, in_sandbox=True
            )
            inputs = ArgvInputs(
                podman=podman,
                name=name,
                owner=_owner(),
                image=image,
                limits=self._limits,
                runtimes=self._runtimes(),
                launch_mounts=launch.mounts,
                root_shim=root_shim(private.root, self._runtimes()),
                env_names=tuple(sorted(policy.env)) + ("HOME", "TMPDIR", "PWD"),
                interactive=stdin is not None,
            )
            full, tmpdir = podman_argv(launch.argv, policy=policy, inputs=inputs)
            chdir = f"{image.workdir}/{policy.cwd}" if policy.cwd else image.workdir
            env = command_env(policy, home=SANDBOX_HOME, tmp=tmpdir, pwd=chdir)
            result = run_managed(
                full,
                env=env,
                timeout_s=policy.timeout_s,
                stdin=stdin,
                cancel=cancel,
                stdout_limit=policy.stdout_limit,
                grace_s=1.0,
            )
            if result.state is not ProcessState.EXITED or result.returncode in (125, 137):
                self._remove(podman, name)  # a killed `podman run` leaves its container running
        return _explain(result, self._limits)

    @staticmethod
    def _remove(podman: Sequence[str], name: str) -> None:
        subprocess.run(
            [*podman, "rm", "--force", "--ignore", "--time", "0", name],
            capture_output=True,
            timeout=CLI_TIMEOUT_S,
            check=False,
        )


def _explain(result: ExecResult, limits: ResourceLimits) -> ExecResult:
    """A SIGKILLed command under a memory limit: say the limit was the likely cause (exit 137)."""
    if result.state is ProcessState.EXITED and result.returncode == 137 and limits.memory_bytes is not None:
        note = "killed (exit 137): memory limit reached, or another SIGKILL"
        return attrs.evolve(result, detail=f"{result.detail}; {note}" if result.detail else note)
    return result


def python_launcher() -> str:
    """The host Python the container runs (the forwarder's and the stand-in's interpreter)."""
    from wfbench.adapters.sandbox.launch import python_executable

    return python_executable()
