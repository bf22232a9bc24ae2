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
* a name after its cell, ``wfbench-<sweep key>-<digest of sweep, task, arm, run, phase>``, with the
  sweep and cell as labels (a command outside a cell: ``wfbench-<pid>-n<pidns>-<random>``), and an
  owner label: the next start of a sweep removes that sweep's containers
  (:func:`remove_sweep_containers`), and every preflight those whose harness died
  (:func:`remove_stale_containers`).

``DockerSandbox`` is the same backend over the docker CLI (:mod:`wfbench.adapters.sandbox.oci_cli`
says where the two differ: the user, the image's variables, tmpfs options, removal).

The command runs as uid 1000 in a user namespace that maps the harness's uid to it (``USER_ARGS``),
without any capability: it can write what the harness gave it writable and nothing of the image.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
import tempfile
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
from wfbench.adapters.sandbox.containers import (
    NAME_PREFIX,
    check_daemon,
    container_name,
    image_env_names,
    owner,
    remove_all,
    remove_stale_containers,
    remove_sweep_containers,
    sweep_key,
)
from wfbench.adapters.sandbox.launch import plan_launch
from wfbench.adapters.sandbox.net_bridge import pid_namespace
from wfbench.adapters.sandbox.oci_cli import DOCKER, PODMAN, OciCli
from wfbench.adapters.sandbox.podman_argv import (
    CELL_LABEL,
    SWEEP_LABEL,
    ArgvInputs,
    in_workdir,
    podman_argv,
    root_shim,
)
from wfbench.adapters.sandbox.process import run_managed
from wfbench.adapters.sandbox.task_resources import task_limits
from wfbench.domain.environment.image import ContainerImage
from wfbench.domain.errors import SandboxError, SandboxUnavailable
from wfbench.domain.ports import CancelToken
from wfbench.domain.workspace.sandbox import CommandScope, ExecResult, ProcessState, SandboxPolicy

__all__ = [
    "DockerSandbox",
    "PodmanSandbox",
    "container_name",
    "remove_stale_containers",
    "remove_sweep_containers",
    "sweep_key",
]

#: The runtime that works on hybrid/v1 cgroups (crun refuses them); ``WFBENCH_PODMAN_RUNTIME`` overrides.
DEFAULT_RUNTIME = "runc"
MUSL_MESSAGE = (
    "image {image} uses the musl C library: wfbench runs its forwarder, the stand-in agent and the"
    " agent CLIs from the host's glibc install inside the container, so task images must be glibc"
    " based (Debian, Ubuntu, Fedora…; not Alpine)"
)


class PodmanSandbox:
    """Runs each command in a fresh Podman container; fails closed (never falls back to the host).

    ``image`` is the default image (a policy without ``image`` runs there: the demo's venv tasks);
    ``podman`` the binary (default ``podman`` on PATH); ``runtime`` the OCI runtime (default
    ``runc``, or ``$WFBENCH_PODMAN_RUNTIME``; ``""`` keeps podman's own choice); ``limits`` the
    per-command resource limits; ``runtime_paths`` extra host trees bound read-only at their path.
    """

    name = PODMAN

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
        self._image_env: dict[str, tuple[str, ...]] = {}
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
            "task limits (limits.cpus/memory/storage): --cpus, --memory, tmpfs size and --ulimit fsize",
        )

    def command(self) -> tuple[str, ...]:
        """``podman [--runtime R]`` (``docker``) as this backend calls it.

        Raises:
            SandboxUnavailable: the CLI is not installed.
        """
        return self.cli().base

    def cli(self) -> OciCli:
        """The container CLI this backend calls (:mod:`wfbench.adapters.sandbox.oci_cli`).

        Raises:
            SandboxUnavailable: the CLI is not installed.
        """
        flavor = self.name
        found = shutil.which(self._podman or flavor)
        if not found:
            raise SandboxUnavailable(
                f"{flavor} ({self._podman or flavor}) is not installed; install it ({INSTALL_HINT[flavor]})"
                " — wfbench never falls back to the host"
            )
        runtime = shutil.which(self._runtime) or self._runtime if self._runtime else ""
        return OciCli(flavor, found, runtime)

    def remove_sweep_containers(self, sweep: str) -> tuple[str, ...]:
        """Remove what a killed run of the sweep at ``sweep`` left (:func:`remove_sweep_containers`)."""
        return remove_sweep_containers(self.cli(), sweep)

    def preflight(self) -> None:
        """Remove stale containers, then start ``/usr/bin/true`` in the default image with every flag.

        Raises:
            SandboxUnavailable: podman is missing, the runtime cannot start containers here, or the
                default image is missing or not glibc based.
        """
        if not sys.platform.startswith("linux"):
            raise SandboxUnavailable(f"the {self.name} sandbox is supported only on Linux")
        cli = self.cli()
        if cli.docker:
            check_daemon(cli)
        remove_stale_containers(cli)
        try:
            self._check_image(ContainerImage(self._image))
        except SandboxError as exc:
            raise SandboxUnavailable(f"{self.name} preflight failed: {exc}") from None

    def _check_image(self, image: ContainerImage) -> None:
        """Once per image: it exists locally, is glibc based, and runs the host's Python runtime."""
        with self._lock:
            if image.ref in self._checked:
                return
        if self.name == DOCKER:
            self._image_env[image.ref] = image_env_names(self.cli(), image.ref)
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
                f"image {image.ref} cannot run the harness's runtime ({result.state}, exit"
                f" {result.returncode}): {result.detail or tail} (the image must exist locally and be glibc"
                " based, at least as new as the host's)"
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
            cli = self.cli()
        except SandboxUnavailable as exc:
            raise SandboxError(str(exc)) from exc
        podman = cli.base
        scope = policy.scope
        name = self._name(scope)
        labels: tuple[tuple[str, str], ...] = ()
        if scope is not None:
            cell = f"{scope.task}/{scope.arm}/{scope.run}/{scope.phase}"
            labels = ((SWEEP_LABEL, sweep_key(scope.sweep)), (CELL_LABEL, cell))
        limits = task_limits(self._limits, policy.resources)
        with private_root() as private:
            host_path = self._host_path(policy, image.workdir)
            launch = plan_launch(
                argv, policy, private_root=private.root, host_path=host_path, in_sandbox=True
            )
            inputs = ArgvInputs(
                podman=podman,
                name=name,
                owner=owner(),
                image=image,
                limits=limits,
                runtimes=self._runtimes(),
                launch_mounts=launch.mounts,
                root_shim=root_shim(private.root, self._runtimes()),
                env_names=tuple(sorted({*policy.env, "HOME", "TMPDIR", "PWD"})),
                interactive=stdin is not None,
                docker=cli.docker,
                empty_resolv_conf=_empty_file(private.root) if cli.docker else "",
                unset_env=tuple(n for n in self._image_env.get(image.ref, ()) if n not in policy.env),
                labels=labels,
            )
            full, tmpdir = podman_argv(launch.argv, policy=policy, inputs=inputs)
            chdir = f"{image.workdir}/{policy.cwd}" if policy.cwd else image.workdir
            env = command_env(policy, home=SANDBOX_HOME, tmp=tmpdir, pwd=chdir)
            env["TMPDIR"] = tempfile.gettempdir()  # podman's own temporary files; the command's is in argv
            for _attempt in range(2):
                result = run_managed(
                    full,
                    env=env,
                    cwd=private.root,  # conmon writes an `oom` file into podman's cwd on an OOM kill
                    timeout_s=policy.timeout_s,
                    stdin=stdin,
                    cancel=cancel,
                    stdout_limit=policy.stdout_limit,
                    grace_s=1.0,
                )
                if result.state is not ProcessState.EXITED or result.returncode in (125, 137):
                    remove_all(cli, [name])  # a killed `podman run` leaves its container running
                if not _name_in_use(result, name):
                    break  # else: a leftover of this cell's phase held the name; removed, run once more
        return _explain(result, limits)

    @staticmethod
    def _name(scope: CommandScope | None) -> str:
        """After the cell (:func:`container_name`), or the process and a random part outside a cell."""
        if scope is not None:
            return container_name(scope)
        return f"{NAME_PREFIX}{os.getpid()}-n{pid_namespace() or 0}-{secrets.token_hex(6)}"


def _name_in_use(result: ExecResult, name: str) -> bool:
    """The CLI refused to create the container: ``name`` was taken (exit 125; nothing ran)."""
    tail = result.stderr_tail
    return (
        result.returncode == 125
        and b"already in use" in tail
        and f'name "{name}"'.encode() in tail.replace(b'"/', b'"')
    )


def _empty_file(parent: str) -> str:
    path = os.path.join(parent, "resolv.conf")
    with open(path, "w", encoding="ascii"):
        pass
    os.chmod(path, 0o644)
    return path


class DockerSandbox(PodmanSandbox):
    """The same backend over the docker CLI and a running daemon (``--sandbox docker``).

    Where docker differs (:mod:`wfbench.adapters.sandbox.oci_cli`): the command runs as the harness's
    own uid without any capability (no per-container user namespace), the image's variables are
    removed by ``env -u``, the daemon's default runtime (runc) runs it. ``image`` must be in the
    daemon's store (``scripts/base-image --docker``).
    """

    name = DOCKER


INSTALL_HINT = {
    PODMAN: "apt-get install podman runc, or scripts/install-tools --podman",
    DOCKER: "apt-get install docker.io and start dockerd: scripts/docker-daemon",
}


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
