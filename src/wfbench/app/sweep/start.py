"""What a sweep records once its tasks are bound, before its first cell: its run manifest.

A new sweep writes ``manifest.json`` through its directory; a resume of a sweep with a manifest
checks that nothing drifted since (files, runtime, task bindings), and a resume of one without
checks its rows against the configuration given. The rules are the domain's
(:mod:`wfbench.domain.sweep.manifest`); this module applies them and turns a conflict into one
``InputError`` naming the option and both values.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

import attrs

from wfbench.app.corpus.binding import BoundTask
from wfbench.domain.errors import InputError
from wfbench.domain.ports import ClaimableSweepDirectory, ResultStore, SweepClaim
from wfbench.domain.sweep.manifest import (
    MANIFEST_NAME,
    Conflict,
    RunManifest,
    drift_conflicts,
    row_conflicts,
)

__all__ = ["StartPorts", "SweepStart", "refuse", "starter"]

RESULTS_NAME = "results.jsonl"


@attrs.frozen(kw_only=True)
class SweepStart:
    """The manifest a sweep starts with (its tasks are added once bound), and what a resume holds it to."""

    manifest: RunManifest
    #: ``--resume`` of a sweep with a manifest: the configuration it started with.
    recorded: RunManifest | None = None
    resume: bool = False
    #: What this sweep cannot deliver, said once every input is valid.
    warnings: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class StartPorts:
    """Where the start is recorded: the claimed directory, its rows, the log, a person's warnings."""

    directory: ClaimableSweepDirectory
    claim: SweepClaim
    store: ResultStore
    log: Callable[..., None]
    warn: Callable[[str], None]
    #: The directory's path, for the messages of a refused resume.
    out_dir: str


def refuse(conflicts: Sequence[Conflict], *, source: str) -> None:
    """Raise the first conflict as one error line (the others are counted), or return.

    Raises:
        InputError: there is a conflict.
    """
    if not conflicts:
        return
    more = f" (and {len(conflicts) - 1} more)" if len(conflicts) > 1 else ""
    first = conflicts[0]
    advice = (
        "; resuming would mix two configurations in one results.jsonl — start a new sweep with --out"
        if first.drift
        else "; omit it to resume this sweep as it was started, or start a new sweep with --out"
    )
    raise InputError(first.message() + more + advice, source=source)


def starter(start: SweepStart, ports: StartPorts) -> Callable[[Sequence[BoundTask]], None]:
    """The sweep's ``on_bound`` hook: record (or check) the manifest, mark the claim started, warn.

    The hook raises ``InputError`` when a resume drifted from its manifest or its rows contradict
    the configuration given (nothing has run yet).
    """

    def on_bound(tasks: Sequence[BoundTask]) -> None:
        bound = attrs.evolve(
            start.manifest,
            tasks=tuple(task.binding() for task in tasks),
            environment_digests={
                task.spec.id: task.environment_digest for task in tasks if task.environment_digest is not None
            },
        )
        if start.recorded is not None:
            refuse(drift_conflicts(start.recorded, bound), source=os.path.join(ports.out_dir, MANIFEST_NAME))
            ports.log(
                "sweep_resumed", level="info", manifest=start.recorded.to_mapping(), argv=list(bound.argv)
            )
        else:
            if start.resume:  # a sweep without a manifest: its rows must agree
                refuse(
                    row_conflicts(bound, ports.store.rows()), source=os.path.join(ports.out_dir, RESULTS_NAME)
                )
            ports.directory.write_manifest(bound)
            ports.log("sweep_started", level="info", manifest=bound.to_mapping(), resumed=start.resume)
        ports.claim.started()
        for warning in start.warnings:  # every input is valid by now: say what this sweep cannot deliver
            ports.warn(f"wfbench: warning: {warning}")
            ports.log("warning", level="warning", text=warning)

    return on_bound
