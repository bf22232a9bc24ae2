"""What both sandbox backends share: policy checks, the private root, and the command environment.

Every run gets a *private root*: a fresh 0700 directory holding ``home/`` and ``tmp/`` (the
command's HOME and TMPDIR) and a generated ``etc/passwd`` and ``etc/group`` naming the sandbox
user. It is removed when the run ends, write bits restored first, because a command may leave
read-only trees behind (reference: sessions_sandbox.md §3.1 step 7).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator

import attrs

from wfbench.domain.errors import SandboxError
from wfbench.domain.workspace.rules import mount_target_problem, relative_path_problem
from wfbench.domain.workspace.sandbox import SandboxPolicy

#: The user the command runs as inside bubblewrap (no capabilities, not root).
SANDBOX_USER = "agent"
SANDBOX_UID = 1000
SANDBOX_GID = 1000
SANDBOX_HOME = "/home/agent"
SANDBOX_WORKSPACE = "/workspace"
#: Variables the sandbox itself sets (a value in ``policy.env`` for them is replaced).
SANDBOX_SET_VARS = ("HOME", "TMPDIR", "PWD")


@attrs.frozen
class PrivateRoot:
    """Host paths of one run's private directories."""

    root: str
    home: str
    tmp: str
    passwd: str
    group: str


def _real_path_problem(path: str) -> str | None:
    """Why ``path`` is not an existing, non-symlinked file or directory, or None."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        return f"{path}: {exc.strerror}"
    if stat.S_ISLNK(info.st_mode):
        return f"{path}: is a symlink"
    if not (stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)):
        return f"{path}: is neither a regular file nor a directory"
    if os.path.realpath(path) != os.path.abspath(path):
        return f"{path}: has a symlinked parent"
    return None


def check_policy(policy: SandboxPolicy) -> None:
    """Refuse a policy whose paths could point the sandbox somewhere unintended.

    The workspace must be a real directory; ``read_only_paths`` and ``cwd`` simple relative
    paths naming real entries inside it; every mount a real source and a normalised absolute
    target; a mount target inside ``/workspace`` must already exist in the workspace (bwrap would
    otherwise create it there, or fail on a read-only workspace); environment names plain.

    Raises:
        SandboxError: naming the offending path or variable.
    """
    if not os.path.isabs(policy.workspace):
        raise SandboxError(f"workspace must be an absolute path: {policy.workspace}")
    problem = _real_path_problem(policy.workspace)
    if problem or not os.path.isdir(policy.workspace):
        raise SandboxError(f"workspace must be a real directory: {problem or policy.workspace}")
    for rel in policy.read_only_paths:
        reason = relative_path_problem(rel)
        problem = reason or _real_path_problem(os.path.join(policy.workspace, rel))
        if problem:
            raise SandboxError(f"read-only path {rel!r}: {problem}")
    if policy.cwd and (reason := relative_path_problem(policy.cwd)):
        raise SandboxError(f"working directory {policy.cwd!r}: {reason}")
    for mount in policy.mounts:
        problem = mount_target_problem(mount.target) or _real_path_problem(mount.host)
        if not problem and not os.path.isabs(mount.host):
            problem = "mount source must be absolute"
        if not problem and mount.target.startswith(SANDBOX_WORKSPACE + "/"):
            inside = os.path.join(policy.workspace, mount.target[len(SANDBOX_WORKSPACE) + 1 :])
            problem = _real_path_problem(inside) and f"mount point {mount.target} must exist in the workspace"
        if problem:
            raise SandboxError(f"mount {mount.host} -> {mount.target}: {problem}")
    for name, value in policy.env.items():
        if not name or "=" in name or "\x00" in name or "\x00" in value:
            raise SandboxError(f"environment variable {name!r} has an invalid name or value")


def command_env(policy: SandboxPolicy, *, home: str, tmp: str, pwd: str) -> dict[str, str]:
    """The whole environment of the command: ``policy.env`` plus HOME, TMPDIR and PWD."""
    env = {k: v for k, v in policy.env.items() if k not in SANDBOX_SET_VARS}
    env.update(HOME=home, TMPDIR=tmp, PWD=pwd)
    return env


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o444)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)


@contextlib.contextmanager
def private_root(parent: str | None = None) -> Iterator[PrivateRoot]:
    """A fresh private root for one run, removed afterwards (write bits restored first).

    Raises:
        SandboxError: the root could not be created, or could not be removed.
    """
    try:
        root = tempfile.mkdtemp(prefix="wfbench-sandbox-", dir=parent)
        paths = PrivateRoot(
            root=root,
            home=os.path.join(root, "home"),
            tmp=os.path.join(root, "tmp"),
            passwd=os.path.join(root, "passwd"),
            group=os.path.join(root, "group"),
        )
        os.mkdir(paths.home, 0o700)
        os.mkdir(paths.tmp, 0o700)
        _write(paths.passwd, f"{SANDBOX_USER}:x:{SANDBOX_UID}:{SANDBOX_GID}::{SANDBOX_HOME}:/bin/sh\n")
        _write(paths.group, f"{SANDBOX_USER}:x:{SANDBOX_GID}:\n")
    except OSError as exc:
        raise SandboxError(f"cannot create the sandbox's private root: {exc}") from exc
    try:
        yield paths
    finally:
        failure = force_remove(root)
        if failure:
            raise SandboxError(f"cannot remove the sandbox's private root: {failure}")


def _restore_write_bits(path: str) -> None:
    for dirpath, dirnames, filenames in os.walk(path, followlinks=False):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            with contextlib.suppress(OSError):
                info = os.lstat(full)
                if stat.S_ISDIR(info.st_mode):
                    os.chmod(full, stat.S_IMODE(info.st_mode) | 0o700)
                elif stat.S_ISREG(info.st_mode):
                    os.chmod(full, stat.S_IMODE(info.st_mode) | 0o600)


def force_remove(path: str) -> str | None:
    """Remove ``path`` (a tree, never following symlinks); the reason on failure, else None.

    Owner write and search bits are restored first, so a tree a command left read-only
    (``chmod -R a-w``) is still removed. A missing path is not a failure.
    """
    if not os.path.lexists(path):
        return None
    try:
        if os.path.islink(path) or not os.path.isdir(path):
            os.unlink(path)
            return None
        try:
            shutil.rmtree(path)  # the common case: nothing was locked
        except OSError:
            os.chmod(path, stat.S_IMODE(os.lstat(path).st_mode) | 0o700)
            _restore_write_bits(path)
            shutil.rmtree(path)
    except OSError as exc:
        return f"{path}: {exc}"
    return None if not os.path.lexists(path) else f"{path}: still exists after removal"
