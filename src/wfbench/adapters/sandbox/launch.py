"""How a sandbox backend starts a command: bridges (a forwarder in front) and a non-dumpable program.

Both backends call :func:`plan_launch` after the policy checks. It returns the argv to execute
and the extra read-only mounts it needs (bwrap binds them; host-unsafe runs host paths):

* ``policy.non_dumpable``: ``argv[0]`` is started through an execute-only copy of its ELF
  interpreter (:mod:`wfbench.adapters.sandbox.nondumpable`), made in the run's private root;
* ``policy.bridges``: the forwarder (:mod:`wfbench.adapters.sandbox.bridge_forwarder`) runs first — under
  bwrap it is PID 1 — itself non-dumpable, binds each bridge's loopback port, then starts the
  command (see :mod:`wfbench.adapters.sandbox.net_bridge`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence

import attrs

from wfbench.adapters.sandbox.net_bridge import (
    FORWARDER_TARGET,
    forwarder_argv,
    forwarder_source,
    socket_target,
)
from wfbench.adapters.sandbox.nondumpable import LOADER_TARGET, elf_interpreter, exec_only_copy
from wfbench.domain.errors import SandboxError
from wfbench.domain.workspace.sandbox import Mount, SandboxPolicy


@attrs.frozen
class Launch:
    """The argv to execute and the read-only mounts (host → target) it needs."""

    argv: tuple[str, ...]
    mounts: tuple[Mount, ...] = ()


def python_executable() -> str:
    """This interpreter's real path inside its base installation (bound at the same path under bwrap)."""
    runtime = os.path.realpath(sys.base_prefix)
    python = os.path.realpath(sys.executable)
    if not python.startswith(runtime + os.sep):
        python = os.path.join(runtime, "bin", f"python{sys.version_info.major}.{sys.version_info.minor}")
    return python


def plan_launch(
    argv: Sequence[str],
    policy: SandboxPolicy,
    *,
    private_root: str,
    host_path: Callable[[str], str],
    in_sandbox: bool,
) -> Launch:
    """The command line and mounts for ``argv`` under ``policy`` (see the module docstring).

    ``host_path`` maps a path as the command sees it to the host file (for reading ELF headers);
    ``in_sandbox`` says whether mounts are bound (bwrap) or the host paths are used directly.

    Raises:
        SandboxError: a non-dumpable start was asked for a program that is not a dynamically
            linked ELF file, or a loader copy cannot be made.
    """
    loaders: dict[str, Mount] = {}

    def through_loader(program: str) -> str:
        interpreter = elf_interpreter(host_path(program))
        if interpreter is None:
            raise SandboxError(
                f"cannot start {program} non-dumpable: it is not a dynamically linked ELF program"
            )
        if interpreter not in loaders:
            copy = os.path.join(private_root, f"ld-exec-only-{len(loaders)}")
            try:
                exec_only_copy(os.path.realpath(interpreter), copy)
            except OSError as exc:
                raise SandboxError(f"cannot make the execute-only loader copy: {exc}") from exc
            target = LOADER_TARGET if not loaders else f"{LOADER_TARGET}.{len(loaders)}"
            loaders[interpreter] = Mount(copy, target if in_sandbox else copy)
        return loaders[interpreter].target

    command = list(argv)
    if policy.non_dumpable:
        command = [through_loader(command[0]), *command]
    mounts: list[Mount] = []
    if policy.bridges:
        python = python_executable()
        script = FORWARDER_TARGET if in_sandbox else forwarder_source()
        command = forwarder_argv(
            [through_loader(python), python, "-I", "-S"],
            script,
            policy.bridges,
            command,
            socket_of=socket_target if in_sandbox else (lambda bridge: bridge.socket),
        )
        if in_sandbox:
            mounts.append(Mount(forwarder_source(), FORWARDER_TARGET))
            mounts += [Mount(bridge.socket, socket_target(bridge)) for bridge in policy.bridges]
    if in_sandbox:
        mounts = [*loaders.values(), *mounts]
    return Launch(tuple(command), tuple(mounts))
