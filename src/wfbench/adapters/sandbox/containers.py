"""The containers of the OCI backend: their names after the cell, and the removal of leftovers.

A SIGKILLed sweep cannot stop its containers (they belong to the runtime's monitor, conmon or
containerd-shim, never to the harness). Two sweeps find them:

* :func:`remove_sweep_containers`, when a sweep starts (a run or ``--resume``, its directory claimed):
  every container labelled with **this** sweep (:func:`sweep_key`) is a leftover of a killed run of
  it and is removed; another sweep's containers are never touched;
* :func:`remove_stale_containers`, at every preflight: containers whose owner process (pid and PID
  namespace, in a label) is dead, whatever their sweep.

A cell's container is named :func:`container_name` (``wfbench-<sweep key>-<digest of sweep, task, arm,
run, phase>``) and labelled with its sweep and ``task/arm/run/phase``, so ``podman ps`` (``docker
ps``) tells which sweep and cell a container belongs to.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Sequence

from wfbench.adapters.sandbox.net_bridge import pid_namespace
from wfbench.adapters.sandbox.oci_cli import OciCli
from wfbench.adapters.sandbox.podman_argv import OWNER_LABEL, SWEEP_LABEL
from wfbench.domain.errors import SandboxUnavailable
from wfbench.domain.workspace.sandbox import CommandScope

__all__ = [
    "CLI_TIMEOUT_S",
    "NAME_PREFIX",
    "check_daemon",
    "container_name",
    "image_env_names",
    "owner",
    "remove_all",
    "remove_stale_containers",
    "remove_sweep_containers",
    "sweep_key",
]

NAME_PREFIX = "wfbench-"
CLI_TIMEOUT_S = 60.0


def owner() -> str:
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


def sweep_key(sweep: str) -> str:
    """The sweep's label value: a digest of its directory's real path (the same on a resume)."""
    return hashlib.sha256(os.path.realpath(sweep).encode()).hexdigest()[:16]


def container_name(scope: CommandScope) -> str:
    """``wfbench-<sweep key>-<digest of (sweep, task, arm, run, phase)>``: stable per cell and phase."""
    cell = json.dumps([os.path.realpath(scope.sweep), scope.task, scope.arm, scope.run, scope.phase])
    return f"{NAME_PREFIX}{sweep_key(scope.sweep)}-{hashlib.sha256(cell.encode()).hexdigest()[:16]}"


def _listed(cli: OciCli, label: str, value: str | None = None) -> list[tuple[str, str]]:
    listing = subprocess.run(
        cli.list_labelled(label, value), capture_output=True, text=True, timeout=CLI_TIMEOUT_S, check=False
    )
    return [tuple(line.strip().partition(" ")[::2]) for line in listing.stdout.splitlines()]  # type: ignore[misc]


def remove_all(cli: OciCli, names: Sequence[str]) -> None:
    if names:
        subprocess.run(cli.remove(names), capture_output=True, timeout=CLI_TIMEOUT_S, check=False)


def remove_stale_containers(cli: OciCli) -> tuple[str, ...]:
    """Remove every wfbench container whose owner (pid, PID namespace) is this namespace's and dead.

    A SIGKILLed harness cannot stop its containers (they belong to the runtime's monitor, not to
    it); this runs at every preflight, like the stale socket and cgroup sweeps. Returns the names.
    """
    mine = str(pid_namespace() or 0)
    stale: list[str] = []
    for name, owner in _listed(cli, OWNER_LABEL):
        pid, _, namespace = owner.partition(":")
        if name.startswith(NAME_PREFIX) and pid.isdigit() and namespace == mine and not _alive(int(pid)):
            stale.append(name)
    remove_all(cli, stale)
    return tuple(stale)


def remove_sweep_containers(cli: OciCli, sweep: str) -> tuple[str, ...]:
    """Remove every container of the sweep at ``sweep`` (a killed run's), and no other sweep's.

    Called when the sweep starts (a run or ``--resume``), once its directory is claimed: no other
    process runs this sweep, so each container labelled with it is a leftover. Returns the names.
    """
    names = [name for name, _ in _listed(cli, SWEEP_LABEL, sweep_key(sweep)) if name.startswith(NAME_PREFIX)]
    remove_all(cli, names)
    return tuple(names)


def check_daemon(cli: OciCli) -> None:
    """docker needs its daemon: a clear message when it does not answer."""
    done = subprocess.run(
        [*cli.base, "version", "--format", "{{.Server.Version}}"],
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0 or not done.stdout.strip():
        why = done.stderr.strip().splitlines()[-1:] or ["no answer"]
        raise SandboxUnavailable(
            f"the docker daemon does not answer ({why[0]}); start it: scripts/docker-daemon"
        )


def image_env_names(cli: OciCli, ref: str) -> tuple[str, ...]:
    """The names of the variables ``ref`` declares (docker keeps them; ``env -u`` removes them)."""
    done = subprocess.run(
        cli.image_env(ref), capture_output=True, text=True, timeout=CLI_TIMEOUT_S, check=False
    )
    try:
        pairs = json.loads(done.stdout) if done.returncode == 0 else []
    except json.JSONDecodeError:
        pairs = []
    return tuple(str(pair).partition("=")[0] for pair in pairs or ())
