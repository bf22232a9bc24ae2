"""``wfbench export``: a sweep's cells in formats other tools read (``docs/export.md``).

* ``atif``: one ATIF trajectory per agent session (:mod:`wfbench.app.report.atif`), at
  ``cells/<task>/<arm>/run-<i>/<phase>-<session>.json`` under the output directory, and an
  ``index.json`` naming each with its cell;
* ``inspect``: one Inspect AI eval log, ``<sweep>.json``, one sample per cell
  (:mod:`wfbench.app.report.inspect_log`).

Reads the rows and the transcripts they name (a path outside the row's own cell is refused, as
everywhere: :func:`wfbench.domain.sweep.layout.is_cell_artifact_path`); writes only through the
output directory's :class:`~wfbench.domain.ports.SweepDirectory`. A transcript that is missing or
whose bytes no longer match the row's sha256 is skipped and reported, never exported as evidence.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from wfbench.app.report.atif import SessionInfo, trajectory
from wfbench.app.report.inspect_log import CellSessions, LogFacts, eval_log
from wfbench.domain.ports import SweepDirectory
from wfbench.domain.results.rows import Row
from wfbench.domain.sweep import layout

__all__ = ["FORMATS", "ExportResult", "SweepSource", "export_sweep"]

FORMATS = ("atif", "inspect")


@attrs.frozen
class SweepSource:
    """What is exported: the rows (file order), the sweep's directory, its manifest, its name."""

    rows: tuple[Row, ...]
    directory: SweepDirectory
    name: str
    manifest: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class ExportResult:
    """What was written (relative to the output directory) and what was skipped, and why."""

    written: tuple[str, ...]
    cells: int
    sessions: int
    skipped: tuple[str, ...] = ()


@attrs.frozen
class _Session:
    phase: str
    session_id: str
    path: str
    data: bytes


def _sessions(row: Row, directory: SweepDirectory, skipped: list[str]) -> list[_Session]:
    """The row's transcripts, in the row's order, each checked against its recorded sha256."""
    found: list[_Session] = []
    measured = [m for m in row.extra.get("session_measurements") or [] if isinstance(m, Mapping)]
    for artifact in row.extra.get("transcript_artifacts") or []:
        path = artifact.get("path") if isinstance(artifact, Mapping) else None
        label = f"{row.task}/{row.arm}/run-{row.run}"
        if not isinstance(path, str) or not layout.is_cell_artifact_path(
            path, row.task, row.arm, row.run, transcript=True
        ):
            skipped.append(f"{label}: a transcript path outside the cell ({path!r})")
            continue
        data = directory.read(path)
        if data is None:
            skipped.append(f"{label}: {path} is missing")
            continue
        if artifact.get("sha256") and hashlib.sha256(data).hexdigest() != artifact["sha256"]:
            skipped.append(f"{label}: {path} does not match its recorded sha256")
            continue
        name = posixpath.basename(path).removesuffix(".jsonl")
        match = next((m for m in measured if name.endswith(f"-{m.get('session_id')}")), None)
        phase = str(match.get("phase")) if match else name.split("-", 1)[0]
        session = str(match.get("session_id")) if match else name.partition("-")[2]
        found.append(_Session(phase, session, path, data))
    return found


def cell_prompts(row: Row, directory: SweepDirectory) -> list[tuple[str, str]] | None:
    """(phase, prompt) of each session the cell sent, in order (``prompts.json``); None without one."""
    data = directory.read(layout.cell_file(row.task, row.arm, row.run, layout.PROMPTS_NAME))
    if data is None:
        return None
    try:
        phases = json.loads(data.decode("utf-8", "replace")).get("phases")
    except (ValueError, AttributeError):
        return None
    if not isinstance(phases, list):
        return None
    return [
        (str(entry.get("phase")), entry["prompt"])
        for entry in phases
        if isinstance(entry, Mapping) and isinstance(entry.get("prompt"), str)
    ]


def _prompt_of(prompts: list[tuple[str, str]] | None, phase: str) -> str | None:
    """The prompt of ``phase``'s session (taken once: a phase repeated takes its next prompt)."""
    if prompts is None:
        return None
    for index, (name, prompt) in enumerate(prompts):
        if name == phase:
            prompts.pop(index)
            return prompt
    return None


def _info(row: Row, session: _Session, manifest: Mapping[str, Any], prompt: str | None = None) -> SessionInfo:
    measured = next(
        (
            m
            for m in row.extra.get("session_measurements") or []
            if isinstance(m, Mapping) and m.get("session_id") == session.session_id
        ),
        {},
    )
    model = row.extra.get("model") or manifest.get("model")
    return SessionInfo(
        agent=str(row.extra.get("agent") or manifest.get("agent") or "unknown"),
        agent_version=str(row.extra.get("agent_version") or manifest.get("agent_version") or "unknown"),
        model=str(model) if model else None,
        wfbench={
            "task": row.task,
            "arm": row.arm,
            "run": row.run,
            "phase": session.phase,
            "session_id": session.session_id,
            "session_ok": measured.get("ok"),
            "session_error_kind": measured.get("error_kind"),
            "cell_resolved": row.resolved,
            "cell_error_kind": row.error_kind.value if row.error_kind else None,
            "transcript": session.path,
        },
        prompt=prompt,
    )


def _dump(value: Any) -> bytes:
    return (json.dumps(value, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def export_sweep(source: SweepSource, *, fmt: str, out: SweepDirectory) -> ExportResult:
    """Write ``source`` in ``fmt`` (one of :data:`FORMATS`) through ``out``.

    Raises:
        ValueError: an unknown format.
        OSError: a file could not be written.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r} (choose from {', '.join(FORMATS)})")
    skipped: list[str] = []
    cells: list[CellSessions] = []
    written: list[str] = []
    index: list[dict[str, Any]] = []
    sessions = 0
    for row in source.rows:
        trajectories = []
        prompts = cell_prompts(row, source.directory)
        first_prompt = prompts[0][1] if prompts else None
        for session in _sessions(row, source.directory, skipped):
            prompt = _prompt_of(prompts, session.phase)
            traj = trajectory(session.data, _info(row, session, source.manifest, prompt))
            trajectories.append(traj)
            sessions += 1
            if fmt == "atif":
                rel = layout.cell_file(
                    row.task,
                    row.arm,
                    row.run,
                    f"{layout.path_segment(session.phase)}-{session.session_id}.json",
                )
                out.write(rel, _dump(traj))
                written.append(rel)
                index.append(
                    {"task": row.task, "arm": row.arm, "run": row.run, "phase": session.phase, "path": rel}
                )
        cells.append(CellSessions(row, tuple(trajectories), prompt=first_prompt))
    if fmt == "atif":
        out.write("index.json", _dump({"format": "ATIF", "trajectories": index, "skipped": skipped}))
        written.append("index.json")
    else:
        rel = f"{layout.path_segment(source.name)}.json"
        out.write(rel, _dump(eval_log(cells, _facts(source))))
        written.append(rel)
    return ExportResult(tuple(written), len(cells), sessions, tuple(skipped))


def _facts(source: SweepSource) -> LogFacts:
    manifest = source.manifest
    started = str(manifest.get("started_at") or "1970-01-01T00:00:00+00:00")
    recorded = [
        str(r.extra["recorded_at"]) for r in source.rows if isinstance(r.extra.get("recorded_at"), str)
    ]
    digest = hashlib.sha256(json.dumps([source.name, started], sort_keys=True).encode()).hexdigest()[:22]
    return LogFacts(
        name=source.name,
        model=str(
            manifest.get("model") or next((r.extra.get("model") for r in source.rows), None) or "unknown"
        ),
        started_at=started,
        completed_at=max(recorded, default=started),
        eval_id=digest,
        metadata={
            k: manifest[k]
            for k in ("wfbench_version", "corpus_digest", "arms", "runs", "agent")
            if k in manifest
        },
    )


def summary(result: ExportResult) -> Sequence[str]:
    """Lines for the terminal: what was written and what was skipped."""
    lines = [f"exported {result.cells} cell(s), {result.sessions} session(s): {len(result.written)} file(s)"]
    lines += [f"skipped: {reason}" for reason in result.skipped]
    return lines
