"""One classifier for every JSON-lines agent stream (Codex, Gemini CLI, OpenCode).

Each agent's parser says how to read its stream (:class:`StreamReading`: the evidence window, usage,
failure reasons, skill evidence, session id, tool counts, and its own cost and turns where the stream
reports them); :func:`classify_stream` applies the one rule (``verdict_kind``) to what they read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from wfbench.domain.results.rows import ErrorKind
from wfbench.domain.session.event_stream import (
    Event,
    ProcessOutcome,
    SessionVerdict,
    SkillEvidenceError,
    tail_detail,
    verdict_kind,
)
from wfbench.domain.session.records import Usage

Window = tuple[Event, ...]


@attrs.frozen
class StreamReading:
    """How one agent's stream is read; ``not_invoked`` is formatted with ``{skill}``."""

    window: Callable[[Sequence[Event]], Window]
    usage: Callable[[Window], Usage]
    reasons: Callable[[ProcessOutcome, str | None, Window | None], list[str]]
    skill_invoked: Callable[[Window, str], bool]
    not_invoked: str
    session_id: Callable[[Sequence[Event]], object]
    tool_counts: Callable[[Window], dict[str, int]]
    cost: Callable[[Window], float | None] | None = None
    turns: Callable[[Window], int] | None = None


def _window(
    reading: StreamReading, events: Sequence[Event] | None, stream_error: str | None
) -> tuple[Window | None, str | None]:
    if stream_error is not None:
        return None, stream_error
    if events is None:
        return None, "no event stream was captured"
    try:
        return reading.window(events), None
    except ValueError as exc:
        return None, str(exc)


def classify_stream(
    reading: StreamReading,
    events: Sequence[Event] | None,
    *,
    process: ProcessOutcome,
    stream_error: str | None = None,
    expected_skill: str | None = None,
) -> SessionVerdict:
    """The verdict on one session from its decoded events (``None`` when undecodable)."""
    window, stream_error = _window(reading, events, stream_error)
    usage, usage_error = Usage(), None
    if window is not None:
        try:
            usage = reading.usage(window)
        except ValueError as exc:
            usage_error = str(exc)
    reasons = reading.reasons(process, stream_error, window) + ([usage_error] if usage_error else [])
    diagnostics: tuple[str, ...] = (
        (f"unverifiable parent event stream: {stream_error}",) if stream_error else ()
    )
    invoked: bool | None = None
    if expected_skill is not None and window is not None:
        try:
            invoked = reading.skill_invoked(window, expected_skill)
        except SkillEvidenceError as exc:
            diagnostics += (f"unverifiable skill evidence: {exc}",)
    kind, detail = verdict_kind(
        process,
        reasons=reasons,
        diagnostics=diagnostics,
        invoked=invoked,
        not_invoked=reading.not_invoked.format(skill=expected_skill),
        detail=lambda parts: tail_detail(list(dict.fromkeys(parts)), process, with_stdout=window is None),
    )
    measured = kind in (None, ErrorKind.SKILL_NOT_INVOKED, ErrorKind.EVIDENCE_UNVERIFIED)
    session = reading.session_id(events) if events else None
    return SessionVerdict(
        ok=kind is None,
        error_kind=kind,
        error_detail=detail,
        usage=usage if measured else Usage(),
        cost_usd=reading.cost(window) if reading.cost and measured and window is not None else None,
        num_turns=reading.turns(window) if reading.turns and window is not None else None,
        duration_s=None if process.wall_s is None else round(process.wall_s, 3),
        session_id=session if isinstance(session, str) and session else None,
        skill_invoked=invoked,
        stream_error=stream_error,
        diagnostics=diagnostics,
        tool_use_counts=reading.tool_counts(window) if window is not None else {},
    )
