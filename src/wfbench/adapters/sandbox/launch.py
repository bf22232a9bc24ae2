"""How a sandbox backend starts a command: bridges (a forwarder in front) and a non-dumpable program.

Both backends call :func:`plan_launch` after the policy checks. It returns the argv to execute
and the extra read-only mounts it needs (bwrap binds them; host-unsafe runs host paths):

* ``policy.non_dumpable``: ``argv[0]`` is started through an execute-only copy of its ELF
  interpreter (:mod:`wfbench.adapters.sandbox.nondumpable`), made in the run's private root;
* ``policy.bridges``: the forwarder (:mod:`wfbench.adapters.sandbox.bridge_forwarder`) runs first — under
  bwrap it is PID 1 — itself non-dumpable, binds each bridge's loopback port, then starts the
  command (see :mod:`wfbench.adapters.sandbox.net_bridge`). The compiled forwarder
  (``bridge_forwarder.c``, built by ``scripts/install-tools``: :func:`compiled_forwarder`) when it is
  there, so no interpreter starts in front of every session; the Python script otherwise.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
from collections.abc import Callable, Mapping, Sequence

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


#: Where the compiled forwarder appears inside the sandbox.
COMPILED_TARGET = "/opt/wfbench/wfbench-bridge"


def compiled_forwarder(environ: Mapping[str, str]) -> str | None:
    """The compiled forwarder ``scripts/install-tools`` built from this checkout's
    ``bridge_forwarder.c`` (``$WFBENCH_CACHE/bridge/wfbench-bridge-<sha256 of the source, 16 hex>``),
    or None: the Python forwarder then runs. The name carries the source's digest, so a binary
    built from another version of the source is never started. ``WFBENCH_BRIDGE=python`` forces
    the Python forwarder.
    """
    if environ.get("WFBENCH_BRIDGE") == "python":
        return None
    root = environ.get("WFBENCH_CACHE") or os.path.join(
        environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "wfbench"
    )
    path = os.path.join(root, "bridge", f"wfbench-bridge-{_source_digest()}")
    return path if os.path.isfile(path) and os.access(path, os.X_OK) else None


@functools.cache
def _source_digest() -> str:
    source = os.path.join(os.path.dirname(os.path.realpath(__file__)), "bridge_forwarder.c")
    with open(source, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()[:16]


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

    def through_loader(program: str, host: str | None = None) -> str:
        interpreter = elf_interpreter(host or host_path(program))
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
        socket_of = socket_target if in_sandbox else (lambda bridge: bridge.socket)
        compiled = compiled_forwarder(os.environ)
        if compiled is not None:  # no interpreter start on the session's path
            binary = COMPILED_TARGET if in_sandbox else compiled
            start = [through_loader(binary, host=compiled), binary]
            command = forwarder_argv(start, None, policy.bridges, command, socket_of=socket_of)
            source = Mount(compiled, COMPILED_TARGET)
        else:
            python = python_executable()
            script = FORWARDER_TARGET if in_sandbox else forwarder_source()
            start = [through_loader(python), python, "-I", "-S"]
            command = forwarder_argv(start, script, policy.bridges, command, socket_of=socket_of)
            source = Mount(forwarder_source(), FORWARDER_TARGET)
        if in_sandbox:
            mounts.append(source)
            mounts += [Mount(bridge.socket, socket_target(bridge)) for bridge in policy.bridges]
    if in_sandbox:
        mounts = [*loaders.values(), *mounts]
    return Launch(tuple(command), tuple(mounts))
