"""Test doubles shared by the integration tests: a pass-through sandbox that records what it ran."""

from __future__ import annotations

import os
from collections.abc import Sequence

import attrs

from wfbench.adapters.sandbox.process import run_managed
from wfbench.domain.errors import SandboxError
from wfbench.domain.ports import CancelToken
from wfbench.domain.workspace.sandbox import ExecResult, SandboxPolicy


@attrs.define
class RunCall:
    """One command a sandbox was asked to run, as it was asked."""

    argv: tuple[str, ...]
    policy: SandboxPolicy
    stdin: bytes | None


@attrs.define
class DirectSandbox:
    """No isolation: runs the command on the host in the workspace with exactly ``policy.env``.

    It protects nothing; it exists so adapter tests drive a real process without bubblewrap.
    Mounts resolve to their host paths. ``home`` (a host directory) becomes HOME and TMPDIR, as
    a real backend's private home would. Every call is recorded in ``calls``.
    """

    home: str
    name: str = "direct"
    grace_s: float = 1.0
    calls: list[RunCall] = attrs.field(factory=list)

    def preflight(self) -> None:
        """Nothing to check: the host can always run a command."""

    def workspace_path(self, policy: SandboxPolicy) -> str:
        """The host path of the workspace."""
        return policy.workspace

    def mount_path(self, mount_target: str, policy: SandboxPolicy) -> str:
        """The host source of the mount declared at ``mount_target``."""
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
        """Run ``argv`` through :func:`run_managed` (own process group, timeout, cancellation)."""
        self.calls.append(RunCall(tuple(argv), policy, stdin))
        env = {**policy.env, "HOME": self.home, "TMPDIR": self.home}
        return run_managed(
            argv,
            env=env,
            timeout_s=policy.timeout_s,
            cwd=os.path.join(policy.workspace, policy.cwd),
            stdin=stdin,
            cancel=cancel,
            stdout_limit=policy.stdout_limit,
            grace_s=self.grace_s,
        )
