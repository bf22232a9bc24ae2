"""Reading OpenCode's ``opencode run --format json`` events into a session verdict (pure).

OpenCode 1.18.33 prints one JSON object per line, each with ``type``, ``timestamp``,
``sessionID`` and a ``part``: per model request one ``step_start``, then ``text`` and
``tool_use`` parts (``part.tool``, ``part.callID``, ``part.state`` with ``status``
``completed`` | ``error``, ``input``, ``output``), and one ``step_finish`` (``part.reason``
``tool-calls`` | ``stop`` | ``length`` | …, ``part.tokens``, ``part.cost``); an ``error`` event
(``error.name``, ``error.data.message``) when the session fails. There is no final result
event. The session-title request OpenCode makes first (no tools) is not in the stream; the wire
meter counts it. This module decides (``docs/agents.md``, "OpenCode"):

* **a session error** when the process did not exit 0, the stream is unusable (no
  ``step_start`` first, a step opened twice or never finished, events of two sessions), an
  ``error`` event was printed, the last step did not finish with reason ``stop``, or a usage
  value is nonsense;
* **usage** is summed over the steps' ``tokens``: ``input`` (uncached), ``cache.read``,
  ``cache.write``, and ``output`` plus ``reasoning`` (billed as output); the **cost** is the sum
  of the steps' ``cost`` (OpenCode's own price table), unknown when a step has none. An errored
  session's usage is not a measurement;
* **a skill counts as invoked** only when a ``tool_use`` of the ``skill`` tool names the
  expected skill (``state.input.name``) with status ``completed`` (OpenCode answers an unknown
  skill with an error state);
* tool counts are the ``tool_use`` parts per tool (each ``callID`` once); the turn count is the
  number of steps (model requests the agent reported); the duration is the process's wall time.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from wfbench.domain.session.event_stream import (
    ProcessOutcome,
    SessionVerdict,
    SkillEvidenceError,
    measured_cost,
    normalize_skill_id,
    process_reasons,
)
from wfbench.domain.session.records import Usage
from wfbench.domain.session.stream_verdict import StreamReading, classify_stream

__all__ = [
    "SKILL_TOOL",
    "classify_opencode_session",
    "opencode_evidence_window",
    "opencode_skill_invoked",
    "opencode_tool_counts",
    "read_opencode_cost",
    "read_opencode_usage",
]

#: OpenCode's tool that loads a skill's instructions.
SKILL_TOOL = "skill"
_CALL_ID = re.compile(r"[A-Za-z0-9._:-]{1,256}")

Event = Mapping[str, Any]


def _part(event: Event) -> Mapping[str, Any]:
    part = event.get("part")
    return part if isinstance(part, Mapping) else {}


def opencode_evidence_window(events: Sequence[Event]) -> tuple[Event, ...]:
    """The events, checked: ``step_start`` first, steps closed in order, one session.

    Raises:
        ValueError: no events, no ``step_start`` first, a step started inside another, a
            ``step_finish`` outside a step, a step never finished, or a second session id.
    """
    if not events:
        raise ValueError("the event stream is empty")
    if events[0].get("type") != "step_start":
        raise ValueError(f"the first event is {events[0].get('type')!r}, not step_start")
    session = events[0].get("sessionID")
    open_step = False
    for event in events:
        kind = event.get("type")
        if event.get("sessionID") != session:
            raise ValueError("events of a second session")
        if kind == "step_start":
            if open_step:
                raise ValueError("a step started before the previous one finished")
            open_step = True
        elif kind == "step_finish":
            if not open_step:
                raise ValueError("a step finished that never started")
            open_step = False
    if open_step:
        raise ValueError("the last step never finished")
    return tuple(events)


def _count(tokens: Mapping[str, Any], name: str) -> int:
    value = tokens.get(name, 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"step_finish tokens.{name} is not a non-negative integer: {value!r}")
    return value


def read_opencode_usage(window: Sequence[Event]) -> Usage:
    """The session's usage summed over its ``step_finish`` tokens.

    Raises:
        ValueError: tokens (or their ``cache``) that are not an object, or a bad count.
    """
    sums = [0, 0, 0, 0]  # input, cache write, cache read, output + reasoning
    for event in window:
        if event.get("type") != "step_finish":
            continue
        tokens = _part(event).get("tokens")
        cache = tokens.get("cache", {}) if isinstance(tokens, Mapping) else None
        if not isinstance(tokens, Mapping) or not isinstance(cache, Mapping):
            raise ValueError("step_finish tokens are not an object")
        sums[0] += _count(tokens, "input")
        sums[1] += _count(cache, "write")
        sums[2] += _count(cache, "read")
        sums[3] += _count(tokens, "output") + _count(tokens, "reasoning")
    return Usage(
        input_tokens=sums[0],
        cache_creation_input_tokens=sums[1],
        cache_read_input_tokens=sums[2],
        output_tokens=sums[3],
    )


def read_opencode_cost(window: Sequence[Event]) -> float | None:
    """The sum of the steps' ``cost``; unknown (``None``) when a step reports none or nonsense."""
    total = 0.0
    for event in window:
        if event.get("type") == "step_finish":
            cost = measured_cost(_part(event).get("cost"))
            if cost is None:
                return None
            total += cost
    return round(total, 10)


def _tool(event: Event) -> tuple[str, Mapping[str, Any]]:
    part = _part(event)
    call_id, state = part.get("callID"), part.get("state")
    if not isinstance(call_id, str) or not _CALL_ID.fullmatch(call_id):
        raise SkillEvidenceError(f"tool_use callID is missing or malformed: {str(call_id)[:80]!r}")
    if not isinstance(state, Mapping):
        raise SkillEvidenceError(f"tool_use {call_id} state is not an object")
    return call_id, state


def opencode_skill_invoked(window: Sequence[Event], expected_skill: str) -> bool:
    """True when the ``skill`` tool named the expected skill and completed.

    Raises:
        SkillEvidenceError: the expected skill is no identifier, or a skill tool part is
            malformed (no usable ``callID``, a state or input that is not an object).
    """
    expected = normalize_skill_id(expected_skill)
    if expected is None:
        raise SkillEvidenceError(f"expected skill {expected_skill!r} is not a skill identifier")
    for event in window:
        if event.get("type") != "tool_use" or _part(event).get("tool") != SKILL_TOOL:
            continue
        call_id, state = _tool(event)
        given = state.get("input")
        if not isinstance(given, Mapping):
            raise SkillEvidenceError(f"tool_use {call_id} input is not an object")
        if normalize_skill_id(given.get("name")) == expected and state.get("status") == "completed":
            return True
    return False


def opencode_tool_counts(window: Sequence[Event]) -> dict[str, int]:
    """``tool_use`` parts per tool name (each ``callID`` once)."""
    seen: set[object] = set()
    counts: dict[str, int] = {}
    for event in window:
        part = _part(event)
        name, call_id = part.get("tool"), part.get("callID")
        if event.get("type") != "tool_use" or not isinstance(name, str) or call_id in seen:
            continue
        seen.add(call_id)
        counts[name] = counts.get(name, 0) + 1
    return counts


def _error_message(event: Event) -> str:
    error = event.get("error")
    data = error.get("data") if isinstance(error, Mapping) else None
    message = data.get("message") if isinstance(data, Mapping) else None
    name = error.get("name") if isinstance(error, Mapping) else None
    text = ": ".join(str(x) for x in (name, message) if isinstance(x, str) and x)
    return text[:500]


def _error_reasons(
    process: ProcessOutcome, stream_error: str | None, window: Sequence[Event] | None
) -> list[str]:
    reasons = process_reasons(process, stream_error)
    if window is None:
        return reasons
    reasons += [f"error: {_error_message(e)}".rstrip(": ") for e in window if e.get("type") == "error"]
    finishes = [e for e in window if e.get("type") == "step_finish"]
    reason = _part(finishes[-1]).get("reason") if finishes else None
    if reason != "stop":
        reasons.append(f"the last step finished with reason {str(reason)[:40]}, not stop")
    return reasons


OPENCODE_READING = StreamReading(
    window=opencode_evidence_window,
    usage=read_opencode_usage,
    reasons=_error_reasons,
    skill_invoked=opencode_skill_invoked,
    not_invoked="parent event stream shows no completed skill tool call of {skill}",
    session_id=lambda events: events[0].get("sessionID"),
    tool_counts=opencode_tool_counts,
    cost=read_opencode_cost,
    turns=lambda window: sum(e.get("type") == "step_finish" for e in window),
)


def classify_opencode_session(
    events: Sequence[Event] | None,
    *,
    process: ProcessOutcome,
    stream_error: str | None = None,
    expected_skill: str | None = None,
) -> SessionVerdict:
    """The verdict on one OpenCode session from its decoded events (``None`` when undecodable)."""
    return classify_stream(
        OPENCODE_READING, events, process=process, stream_error=stream_error, expected_skill=expected_skill
    )
