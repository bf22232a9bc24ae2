"""``host-unsafe``: runs commands directly on the host. NOT a sandbox; explicit opt-in only.

What it does NOT protect: the host filesystem (the command can read and write anything the
harness user can: other repositories, ``~/.ssh``, the corpus and its hidden oracles), the host
network (every command, agent sessions included, shares the host's network namespace: a bridge's
forwarder listens on the host's loopback), other processes (no PID namespace:
a descendant that calls ``setsid`` escapes the process group and can outlive the run; nothing
dies with the harness), and credentials in files. What it still does: the environment is the
explicit allow-list (nothing inherited), HOME and TMPDIR are private per run, the process group
is killed on timeout or cancellation, and read-only phases lock the workspace with mode bits
(restored afterwards) — which stops accidents, not an agent that runs ``chmod``. When the
harness runs as root, commands run through ``setpriv`` with an empty capability bounding set,
so the mode bits bind them (root without capabilities still owns the files and can ``chmod``).

Refused when the ``CI`` environment variable is set: CI must prove the real sandbox.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator, Mapping, Sequence

import structlog

from wfbench.adapters.sandbox.common import check_policy, command_env, private_root
from wfbench.adapters.sandbox.launch import plan_launch
from wfbench.adapters.sandbox.process import run_managed
from wfbench.domain.errors import SandboxError, SandboxUnavailable
from wfbench.domain.ports import CancelToken
from wfbench.domain.workspace.sandbox import ExecResult, SandboxPolicy

SETPRIV = "/usr/bin/setpriv"
#: Prefix for commands started by root: no capabilities at all (no DAC override), no new privileges.
#: ``env`` is executed first so that the command itself is executed by a process that already has
#: no capability: an execute-only file (the non-dumpable loader) is then unreadable to the exec.
DROP_CAPABILITIES = (
    SETPRIV,
    "--bounding-set=-all",
    "--inh-caps=-all",
    "--no-new-privs",
    "--",
    "/usr/bin/env",
)

WARNING = (
    "host-unsafe runs agents, verify and oracle commands directly on the host with no containment: "
    "it does not protect host files, the network, or other processes (no PID namespace)"
)


def _lock_tree(root: str, saved: list[tuple[str, int]]) -> None:
    """Remove write bits from ``root`` and everything below it (links untouched), recording modes."""
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for path in (dirpath, *(os.path.join(dirpath, n) for n in (*dirnames, *filenames))):
            info = os.lstat(path)
            if path != dirpath and stat.S_ISDIR(info.st_mode):
                continue  # locked when os.walk visits it as dirpath
            if stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode):
                mode = stat.S_IMODE(info.st_mode)
                saved.append((path, mode))
                os.chmod(path, mode & ~0o222)


def _restore(saved: list[tuple[str, int]]) -> str | None:
    failures = []
    for path, mode in reversed(saved):
        try:
            os.chmod(path, mode, follow_symlinks=False)
        except FileNotFoundError:
            continue  # removed by the command (possible: the lock is no boundary)
        except OSError as exc:
            failures.append(f"{path}: {exc.strerror}")
    return "; ".join(failures[:5]) or None


@contextlib.contextmanager
def write_lock(policy: SandboxPolicy) -> Iterator[None]:
    """Lock the workspace (read-only policy) or its ``read_only_paths`` with mode bits; restore after.

    Raises:
        SandboxError: the modes could not be set or restored.
    """
    roots = (
        [policy.workspace]
        if not policy.workspace_writable
        else [os.path.join(policy.workspace, rel) for rel in policy.read_only_paths]
    )
    saved: list[tuple[str, int]] = []
    try:
        for root in roots:
            if os.path.isdir(root) and not os.path.islink(root):
                _lock_tree(root, saved)
            elif os.path.isfile(root) and not os.path.islink(root):
                mode = stat.S_IMODE(os.lstat(root).st_mode)
                saved.append((root, mode))
                os.chmod(root, mode & ~0o222)
    except OSError as exc:
        _restore(saved)
        raise SandboxError(f"cannot lock the workspace read-only: {exc}") from exc
    try:
        yield
    finally:
        failure = _restore(saved)
        if failure:
            raise SandboxError(f"cannot restore workspace modes after a read-only run: {failure}")


class UnsafeHostSandbox:
    """host-unsafe: NO containment (host files, network and processes are exposed); see the module doc.

    Construction logs a warning saying so, and is refused when ``CI`` is set in ``environ``
    (default: the process environment).
    """

    name = "host-unsafe"

    def __init__(
        self, *, environ: Mapping[str, str] | None = None, private_parent: str | None = None
    ) -> None:
        environ = os.environ if environ is None else environ
        if environ.get("CI"):
            raise SandboxUnavailable(
                "the host-unsafe sandbox is refused because the CI environment variable is set: "
                "CI must run every agent, verify and oracle command under bubblewrap"
            )
        if os.geteuid() == 0 and not os.access(SETPRIV, os.X_OK):
            raise SandboxUnavailable(f"host-unsafe as root needs {SETPRIV} (util-linux) to drop capabilities")
        self._private_parent = private_parent
        structlog.get_logger("wfbench.sandbox").warning(
            "sandbox.host_unsafe",
            backend=self.name,
            message=WARNING,
            unprotected=["host files", "network", "pid"],
        )

    def preflight(self) -> None:
        """Run ``true`` on the host once.

        Raises:
            SandboxUnavailable: not even a host process can be started.
        """
        result = run_managed(["/usr/bin/env", "true"], env={"PATH": "/usr/bin:/bin"}, timeout_s=10.0)
        if not result.ok:
            raise SandboxUnavailable(f"host-unsafe preflight failed: {result.state} {result.detail}")

    def workspace_path(self, policy: SandboxPolicy) -> str:
        """The workspace's host path (there are no bind mounts)."""
        return policy.workspace

    def mount_path(self, mount_target: str, policy: SandboxPolicy) -> str:
        """The host source of the mount declared with ``mount_target`` (read-only is NOT enforced).

        Raises:
            SandboxError: no mount with that target is declared.
        """
        for mount in policy.mounts:
            if mount.target == mount_target:
                return mount.host
        raise SandboxError(f"no mount declared with target {mount_target}")

    def run(
        self,
        argv: Sequence[str],
        *,
        policy: SandboxPolicy,
        stdin: bytes | None = None,
        cancel: CancelToken | None = None,
    ) -> ExecResult:
        """Run ``argv`` on the host in its own process group, HOME/TMPDIR private, modes locked as needed.

        Raises:
            SandboxError: the policy names unusable paths, or modes / private dirs cannot be managed.
        """
        if not argv:
            raise SandboxError("empty command")
        check_policy(policy)
        if policy.image is not None:
            raise SandboxError(
                f"the task's environment is the container image {policy.image.ref}: run it with"
                " --sandbox podman (docs/containers.md)"
            )
        cwd = os.path.join(policy.workspace, policy.cwd) if policy.cwd else policy.workspace
        with private_root(self._private_parent) as private, write_lock(policy):
            env = command_env(policy, home=private.home, tmp=private.tmp, pwd=cwd)
            prefix = DROP_CAPABILITIES if os.geteuid() == 0 else ()
            launch = plan_launch(argv, policy, private_root=private.root, host_path=str, in_sandbox=False)
            return run_managed(
                [*prefix, *launch.argv],
                env=env,
                cwd=cwd,
                timeout_s=policy.timeout_s,
                stdin=stdin,
                cancel=cancel,
                stdout_limit=policy.stdout_limit,
            )
