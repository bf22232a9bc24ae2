"""The ``podman run`` (or ``docker run``) command line of one sandboxed command (:func:`podman_argv`).

Pure but for host limits. Kept apart from :mod:`wfbench.adapters.sandbox.podman` (the backend:
preflight, images, cleanup) so that every flag and why it is there reads in one place; where docker
spells a flag differently, :mod:`wfbench.adapters.sandbox.oci_cli` says why.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Sequence

import attrs

from wfbench.adapters.sandbox.command_limits import ResourceLimits
from wfbench.adapters.sandbox.common import SANDBOX_HOME, SANDBOX_WORKSPACE
from wfbench.adapters.sandbox.python_sites import site_dirs
from wfbench.adapters.sandbox.tmpdir import SANDBOX_TMP, private_tmpdir
from wfbench.domain.environment.image import ContainerImage
from wfbench.domain.errors import SandboxError
from wfbench.domain.workspace.sandbox import Mount, SandboxPolicy

__all__ = [
    "CELL_LABEL",
    "OWNER_LABEL",
    "SWEEP_LABEL",
    "USER_ARGS",
    "ArgvInputs",
    "in_workdir",
    "podman_argv",
    "root_shim",
]

#: The label naming the harness process that owns a container: ``<pid>:<pid namespace inode>``.
OWNER_LABEL = "io.wfbench.owner"
#: The label naming the sweep of a cell's container (:func:`wfbench.adapters.sandbox.containers.sweep_key`).
SWEEP_LABEL = "io.wfbench.sweep"
#: The label naming the cell and phase (``task/arm/run/phase``) a cell's container runs a command of.
CELL_LABEL = "io.wfbench.cell"
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
#: Present in every glibc image; it drops the ``HOSTNAME`` podman sets, then execs the command.
ENV_PROGRAM = "/usr/bin/env"
#: Every tmpfs starts empty: podman's default ``tmpcopyup`` would copy the image's files into it
#: (slow, and it would un-hide the host site-packages a read-only tmpfs covers).
TMPFS_OPTIONS = "rw,nosuid,nodev,notmpcopyup"
#: docker never copies the image's files into a tmpfs (``notmpcopyup`` is podman's word).
DOCKER_TMPFS_OPTIONS = "rw,nosuid,nodev"
#: ``RLIMIT_NPROC`` for the container when no process limit is set (under any sane hard limit).
DEFAULT_NPROC = 4096


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
    #: docker's spelling (``oci_cli``): ``--user`` the harness's ``uid:gid``, no ``--uidmap``.
    docker: bool = False
    #: docker only: the image's own variables, removed by ``env -u`` (podman: ``--unsetenv-all``).
    unset_env: tuple[str, ...] = ()
    #: Further ``--label`` pairs (the sweep and cell of a cell's command).
    labels: tuple[tuple[str, str], ...] = ()
    #: docker only: an empty host file bound over ``/etc/resolv.conf`` without the host network
    #: (docker always writes the host's resolvers there; podman writes none under ``--network none``).
    empty_resolv_conf: str = ""


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
        os.chmod(dirpath, 0o755)  # noqa: S103 - mount points only, read-only in the container
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


def _limit_args(limits: ResourceLimits, owner: str) -> list[str]:
    """Tmpfs mounts and limits; ``owner``: docker's ``uid=…,gid=…`` of the home tmpfs ("": podman's ``U``)."""
    size = limits.tmpfs_bytes
    options = DOCKER_TMPFS_OPTIONS if owner else TMPFS_OPTIONS
    args = ["--tmpfs", f"{SANDBOX_TMP}:{options},size={size},mode=1777"]
    args += ["--tmpfs", f"{SANDBOX_HOME}:{options},size={size},mode=0700,{owner or 'U'}"]
    args += ["--shm-size", str(size)]
    nproc = _rlimit(resource.RLIMIT_NPROC, limits.pids or DEFAULT_NPROC)
    args += ["--ulimit", f"nproc={nproc}:{nproc}"]
    if limits.pids is not None:
        args += ["--pids-limit", str(limits.pids)]
    if limits.memory_bytes is not None:
        args += ["--memory", str(limits.memory_bytes), "--memory-swap", str(limits.memory_bytes)]
    if limits.cpus is not None:
        args += ["--cpus", f"{limits.cpus:g}"]
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
    (:func:`_limit_args`); ``--env NAME`` per variable (values come from podman's environment; only
    ``TMPDIR``, a harness-chosen path inside the container, by value);
    the workspace, its read-only paths, the declared mounts (parents first), the host runtimes
    read-only with their site-packages hidden by read-only tmpfs, the launch mounts (forwarder,
    bridge sockets, execute-only loader); a private ``TMPDIR`` tmpfs when a mount lies in ``/tmp``;
    ``--workdir``, ``--entrypoint`` (the image's own is never run), the image, the command.
    """
    workdir = inputs.image.workdir
    args = [*inputs.podman, "run", "--rm", "--name", inputs.name, "--label", f"{OWNER_LABEL}={inputs.owner}"]
    for key, value in inputs.labels:
        args += ["--label", f"{key}={value}"]
    args += ["--pull", "never", "--log-driver", "none", "--hostname", "wfbench"]
    args += ["--network", "host" if policy.network else "none"]
    args += _isolation_args(inputs.docker)
    args += _limit_args(inputs.limits, _docker_owner() if inputs.docker else "")
    for name in inputs.env_names:
        if name != "TMPDIR":  # the command's TMPDIR is a path inside the container: passed by value below
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
    declared = {m.target for m in policy.mounts}
    for path in inputs.runtimes:
        if path not in declared:  # an agent may declare the same runtime (the stand-in does)
            args += _bind(path, path, writable=False)
            targets.append(path)
    same_path = [m.host for m in policy.mounts if m.host == m.target and not m.writable]
    for path in site_dirs((*inputs.runtimes, *same_path)):  # no host package is importable
        hidden = "readonly" if inputs.docker else "ro=true,notmpcopyup"
        args += ["--mount", f"type=tmpfs,destination={path},{hidden}"]
    for mount in inputs.launch_mounts:
        args += _bind(mount.host, mount.target, writable=False)
        targets.append(mount.target)
    if inputs.empty_resolv_conf and not policy.network:
        args += _bind(inputs.empty_resolv_conf, "/etc/resolv.conf", writable=False)
    tmpdir = private_tmpdir(targets)
    if tmpdir != SANDBOX_TMP:
        options = DOCKER_TMPFS_OPTIONS if inputs.docker else TMPFS_OPTIONS
        args += ["--tmpfs", f"{tmpdir}:{options},size={inputs.limits.tmpfs_bytes},mode=1777"]
    if "TMPDIR" in inputs.env_names:
        # By value: podman's own process keeps the host's TMPDIR for its temporary files (a path such as
        # /tmp/wfbench-tmp exists only inside the container). A harness-chosen path, never a secret.
        args += ["--env", f"TMPDIR={tmpdir}"]
    chdir = f"{workdir}/{policy.cwd}" if policy.cwd else workdir
    args += ["--workdir", chdir]
    if inputs.interactive:
        args.append("--interactive")
    # podman and docker always set HOSTNAME; env(1) removes it (and under docker the image's own
    # variables) and execs the command (same pid, same PID 1).
    unset = [word for name in ("HOSTNAME", *inputs.unset_env) for word in ("-u", name)]
    args += ["--entrypoint", ENV_PROGRAM, inputs.image.ref, *unset, *argv]
    return args, tmpdir


def _isolation_args(docker: bool) -> list[str]:
    """Read-only root, no capability, no new privileges, the user (docker: the harness's own uid)."""
    if docker:
        user = _docker_owner().replace("uid=", "").replace(",gid=", ":")
        return ["--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--user", user]
    args = ["--read-only", "--read-only-tmpfs=false", "--cap-drop", "ALL"]
    return [*args, "--security-opt", "no-new-privileges", *USER_ARGS, "--unsetenv-all"]


def _docker_owner() -> str:
    """``uid=U,gid=G`` of the harness: under docker the command runs as it (no per-container userns)."""
    return f"uid={os.getuid()},gid={os.getgid()}"
