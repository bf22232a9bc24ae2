"""``manifest.json`` on disk: build it for a new sweep, and hold a ``--resume`` to it.

The rules (what a resume may change) are the domain's (:mod:`wfbench.domain.sweep.manifest`);
this module reads and writes the file, normalizes the command line the way the manifest records
it, and turns conflicts into one ``wfbench: error:`` line (exit 2) naming the option and both
values.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from wfbench.app.sweep.start import SweepStart, refuse
from wfbench.cli.run.setup import Setup
from wfbench.domain.errors import InputError
from wfbench.domain.sweep.manifest import CONFIG_OPTIONS, MANIFEST_NAME, RunManifest, option_conflicts

#: RunRequest attribute → manifest option name, for the options a resume checks.
REQUEST_OPTIONS: Mapping[str, str] = {
    "corpus": "CORPUS",
    "arms": "--arms",
    "runs": "--runs",
    "model": "--model",
    "agent": "--agent",
    "sandbox": "--sandbox",
    "provider_script": "--provider-script",
    "base_url": "--base-url",
    "candidate_overlay": "--candidate-overlay",
    "reuse_results": "--reuse-results",
    "include_expensive": "--include-expensive",
    "timeout": "--timeout",
    "verify_timeout": "--verify-timeout",
    "tasks": "--tasks",
    "no_provider_script": "--no-provider-script",
}
_PATHS = frozenset({"corpus", "provider_script", "candidate_overlay", "reuse_results"})


def file_digest(path: str | None) -> str | None:
    """``sha256:<hex>`` of a file's bytes (None for no file)."""
    if path is None:
        return None
    with open(path, "rb") as handle:
        return "sha256:" + hashlib.sha256(handle.read()).hexdigest()


#: Files only wfbench leaves in a sweep directory: with one of them, a directory without a manifest
#: is a sweep stopped before it recorded its configuration (or one from before run manifests).
SWEEP_TRACES = ("results.jsonl", "results.cancelled.jsonl", "wfbench.log", ".wfbench.lock")


def read_manifest(resume_dir: str) -> RunManifest | None:
    """The manifest of the sweep in ``resume_dir``; None for a sweep directory that has none.

    A directory without a manifest is still a sweep when wfbench left a trace in it
    (:data:`SWEEP_TRACES`): one stopped before it recorded its configuration, or one from before
    run manifests. Its resume runs the options given and is checked against its rows
    (:func:`wfbench.domain.sweep.manifest.row_conflicts`).

    Raises:
        InputError: no such directory, not a sweep directory, or an unreadable manifest.
    """
    if not os.path.exists(resume_dir):
        raise InputError("no such directory; nothing to resume", field="--resume", source=resume_dir)
    if not os.path.isdir(resume_dir):
        raise InputError("is not a directory; nothing to resume", field="--resume", source=resume_dir)
    path = os.path.join(resume_dir, MANIFEST_NAME)
    if not os.path.isfile(path):
        if any(os.path.lexists(os.path.join(resume_dir, name)) for name in SWEEP_TRACES):
            return None
        raise InputError(
            "no manifest.json and no rows: not a wfbench sweep directory, nothing to resume (start a"
            " sweep into it with --out)",
            field="--resume",
            source=resume_dir,
        )
    try:
        with open(path, encoding="utf-8") as handle:
            raw = json.load(handle)
    except (OSError, ValueError) as exc:
        raise InputError(f"unreadable run manifest: {exc}", source=path) from None
    return RunManifest.from_mapping(raw, source=path)


def given_options(request: Any) -> dict[str, object]:
    """The configuration options the user typed, normalized as the manifest records them."""
    given: dict[str, object] = {}
    for attribute, option in REQUEST_OPTIONS.items():
        if attribute not in request.explicit:
            continue
        value = getattr(request, attribute)
        if attribute in _PATHS and isinstance(value, str):
            value = os.path.abspath(value)
        elif attribute == "model" and isinstance(value, str):
            value = value.strip()
        elif attribute == "base_url" and isinstance(value, str):
            value = value.rstrip("/")
        given[option] = value
    return given


def resumed_request(request: Any, recorded: RunManifest | None) -> Any:
    """``request`` with the manifest's configuration; a contradicting option is refused.

    Without a manifest (see :func:`read_manifest`) the options given stand, written to ``DIR``.

    Raises:
        InputError: an option contradicts the manifest, or ``--out`` names another directory.
    """
    resume_dir = os.path.abspath(request.resume)
    if "out" in request.explicit and request.out is not None and os.path.abspath(request.out) != resume_dir:
        raise InputError(
            f"{os.path.abspath(request.out)} contradicts --resume {resume_dir}: a resumed sweep writes into"
            " its own directory (drop --out)",
            field="--out",
        )
    if recorded is None:
        return attrs.evolve(request, out=resume_dir)
    refuse(option_conflicts(recorded, given_options(request)), source=os.path.join(resume_dir, MANIFEST_NAME))
    values = {attribute: recorded.option_value(option) for attribute, option in REQUEST_OPTIONS.items()}
    values["corpus"] = None if recorded.demo else recorded.corpus_path
    values["arms"] = tuple(recorded.arms)
    values["tasks"] = tuple(recorded.task_filter)
    values["timeout"] = recorded.session_timeout_s
    values["verify_timeout"] = recorded.verify_timeout_s
    return attrs.evolve(request, **values, out=resume_dir)


@attrs.frozen
class ManifestInputs:
    """What the manifest records beyond the resolved :class:`Setup`."""

    argv: tuple[str, ...]
    demo: bool
    agent: str
    agent_version: str | None
    sandbox: str
    base_url: str | None
    reuse_results: str | None
    include_expensive: bool
    task_filter: tuple[str, ...]
    no_provider_script: bool
    session_timeout_s: float
    verify_timeout_s: float
    runtime_digest: str
    workers: int
    window: int | None
    outage_streak: int
    started_at: dt.datetime


def build_manifest(
    setup: Setup, inputs: ManifestInputs, *, arm_runtimes: Mapping[str, Any] | None = None
) -> RunManifest:
    """The manifest of a sweep about to start (task bindings are added once tasks are bound).

    ``arm_runtimes`` (``{arm: ArmRuntime}``) records what each arm runs under (an arm may name its agent).
    """
    from wfbench import __version__

    return RunManifest(
        started_at=inputs.started_at.isoformat(),
        argv=inputs.argv,
        wfbench_version=__version__,
        corpus_path=setup.corpus.path,
        corpus_digest=file_digest(setup.corpus.path) or "",
        demo=inputs.demo,
        arms=tuple(arm.name for arm in setup.arms),
        runs=setup.runs,
        model=setup.model,
        agent=inputs.agent,
        agent_version=inputs.agent_version,
        sandbox=inputs.sandbox,
        provider_script=setup.provider_script,
        provider_script_digest=file_digest(setup.provider_script),
        base_url=None if inputs.base_url is None else inputs.base_url.rstrip("/"),
        candidate_overlay=None if setup.overlay is None else setup.overlay.root,
        candidate_overlay_digest=setup.overlay_digest,
        reuse_results=None if inputs.reuse_results is None else os.path.abspath(inputs.reuse_results),
        include_expensive=inputs.include_expensive,
        task_filter=inputs.task_filter,
        no_provider_script=inputs.no_provider_script,
        session_timeout_s=inputs.session_timeout_s,
        verify_timeout_s=inputs.verify_timeout_s,
        runtime_digest=inputs.runtime_digest,
        workers=inputs.workers,
        window=inputs.window,
        outage_streak=inputs.outage_streak,
        arm_runtimes={
            arm: {"agent": rt.agent, "agent_version": rt.agent_version, "runtime_digest": rt.runtime_digest}
            for arm, rt in (arm_runtimes or {}).items()
        },
    )


def start_manifest(
    request: Any, setup: Setup, runtime: str, *, secrets: Sequence[str], runtimes: Mapping[str, Any]
) -> RunManifest:
    """The manifest ``request``'s sweep starts with (secrets redacted from its command line)."""
    from wfbench.domain.redaction import redact_text

    inputs = ManifestInputs(
        argv=tuple(redact_text(arg, tuple(secrets)) for arg in argv()),
        demo=request.corpus is None,
        agent=request.agent,
        agent_version=_default_agent_version(request.agent, runtimes),
        sandbox=request.sandbox,
        base_url=request.base_url,
        reuse_results=request.reuse_results,
        include_expensive=request.include_expensive,
        task_filter=request.tasks,
        no_provider_script=request.no_provider_script,
        session_timeout_s=request.timeout,
        verify_timeout_s=request.verify_timeout,
        runtime_digest=runtime,
        workers=request.workers,
        window=request.window,
        outage_streak=request.outage_streak,
        started_at=dt.datetime.now(dt.UTC),
    )
    return build_manifest(setup, inputs, arm_runtimes=runtimes)


def sweep_start(
    request: Any, setup: Setup, manifest: RunManifest, *, recorded: RunManifest | None
) -> SweepStart:
    """What the run use case records once tasks are bound (a resume: what it checks)."""
    return SweepStart(
        manifest=manifest,
        recorded=recorded,
        resume=request.resume is not None,
        warnings=tuple(setup.warnings),
    )


def _default_agent_version(agent: str, runtimes: Mapping[str, Any]) -> str | None:
    """The version of ``--agent``, from the runtime of an arm that runs it (None when no arm does)."""
    for runtime in runtimes.values():
        if runtime.agent == agent:
            return str(runtime.agent_version) if runtime.agent_version is not None else None
    return None


def argv() -> tuple[str, ...]:
    """The command line, as typed (``wfbench`` first)."""
    return ("wfbench", *sys.argv[1:])


__all__ = [
    "CONFIG_OPTIONS",
    "ManifestInputs",
    "build_manifest",
    "file_digest",
    "given_options",
    "read_manifest",
    "resumed_request",
    "start_manifest",
    "sweep_start",
]
