"""Reading the Gemini CLI's ``--output-format stream-json`` events into a session verdict (pure).

Gemini CLI 0.61.0 prints one JSON object per line: ``init`` (``session_id``, ``model``), then
``message`` (``role`` user or assistant, assistant text as ``delta`` pieces), ``tool_use``
(``tool_name``, ``tool_id``, ``parameters``), ``tool_result`` (``tool_id``, ``status``
``success`` | ``error``, ``output``, ``error``), ``error`` (``severity`` ``warning`` | ``error``,
``message``), and one ``result`` last (``status`` ``success`` | ``error``, ``error``, ``stats``).
The adapter decodes stdout strictly (:func:`wfbench.adapters.agents.claude.decode_events`); this
module decides the rest (``docs/agents.md``, "Gemini CLI"):

* **a session error** when the process did not exit 0, the stream is unusable (no ``init``
  first, no ``result`` last, a second ``init`` or ``result``), the result's status is not
  ``success``, an ``error`` event of severity ``error`` was printed (a ``warning`` is not a
  failure), or a usage value is nonsense;
* **usage** comes from ``result.stats``, the CLI's sums over the session's model requests:
  ``input_tokens`` there is the whole prompt (cached included) and ``input`` the uncached part,
  ``cached`` the cache reads, ``output_tokens`` the candidates (thinking excluded) and
  ``total_tokens`` everything. wfbench's ``input_tokens`` = ``input``, ``cache_read`` =
  ``cached``, ``cache_creation`` = ``None`` (the Gemini API reports no cache writes), ``output``
  = ``total_tokens - input_tokens`` (the candidates plus the thinking, which the provider bills as
  output). The CLI writes 0 for a count the provider did not send: a prompt of 0 tokens reported
  *nothing* (every field ``None``), and a ``cached`` of 0 is ``None`` (not reported; the wire
  meter holds the measurement). An errored session's usage is not a measurement (``None``);
  the cost is always ``None`` (the CLI reports none);
* **a skill counts as invoked** only when a ``tool_use`` of ``activate_skill`` names the
  expected skill (``parameters.name``) and a later ``tool_result`` of the same ``tool_id`` has
  status ``success`` (the CLI answers an unknown skill name with an error result). Gemini CLI
  lists the skills it discovered to the model; ``activate_skill`` loads one's instructions, as
  Claude Code's ``Skill`` tool does;
* tool counts are the ``tool_use`` events per tool name (each ``tool_id`` once); the turn count
  is unknown (the stream does not report model requests); the duration is the process's wall time.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from wfbench.domain.session.event_stream import (
    ProcessOutcome,
    SessionVerdict,
    SkillEvidenceError,
    normalize_skill_id,
    process_reasons,
)
from wfbench.domain.session.records import Usage
from wfbench.domain.session.stream_verdict import StreamReading, classify_stream

__all__ = [
    "GEMINI_STATS_NAMES",
    "SKILL_TOOL",
    "classify_gemini_session",
    "gemini_evidence_window",
    "gemini_skill_invoked",
    "gemini_tool_counts",
    "read_gemini_usage",
]

#: The ``result.stats`` counts wfbench reads.
GEMINI_STATS_NAMES = ("input_tokens", "input", "cached", "output_tokens", "total_tokens")
#: Gemini CLI's tool that loads a skill's instructions.
SKILL_TOOL = "activate_skill"
_TOOL_ID = re.compile(r"[A-Za-z0-9._:-]{1,256}")

Event = Mapping[str, Any]


def gemini_evidence_window(events: Sequence[Event]) -> tuple[Event, ...]:
    """The events from ``init`` to the ``result``, which must be the last event.

    Raises:
        ValueError: no events, no ``init`` first, a second ``init``, no ``result`` last, or a
            ``result`` before the end.
    """
    if not events:
        raise ValueError("the event stream is empty")
    if events[0].get("type") != "init":
        raise ValueError(f"the first event is {events[0].get('type')!r}, not init")
    for index, event in enumerate(events[1:], 1):
        kind = event.get("type")
        if kind == "init":
            raise ValueError("a second init event")
        if kind == "result" and index != len(events) - 1:
            raise ValueError(f"the result is followed by {events[index + 1].get('type')!r}")
    if events[-1].get("type") != "result":
        raise ValueError("the session never printed its result")
    return tuple(events)


def _count(stats: Mapping[str, Any], name: str) -> int | None:
    value = stats.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"result stats.{name} is not a non-negative integer: {value!r}")
    return value


def read_gemini_usage(result: Event) -> Usage:
    """The session's usage from ``result.stats`` (every field ``None`` when nothing was reported).

    Raises:
        ValueError: stats that are not an object, a bad value, or counts that contradict each
            other (cached above the prompt, uncached plus cached not the prompt, a total below
            prompt plus output).
    """
    stats = result.get("stats")
    if stats is None:
        return Usage()
    if not isinstance(stats, Mapping):
        raise ValueError("result stats is not an object")
    values = {name: _count(stats, name) for name in GEMINI_STATS_NAMES}
    prompt, output, total = values["input_tokens"], values["output_tokens"], values["total_tokens"]
    if not prompt:  # the CLI writes 0 for usage nobody reported; no model request has no input
        return Usage()
    cached = values["cached"] or 0
    uncached = values["input"] if values["input"] is not None else prompt - cached
    if cached > prompt or uncached + cached != prompt:
        raise ValueError(f"result stats: input {uncached} + cached {cached} is not input_tokens {prompt}")
    if output is None or total is None:
        return Usage(input_tokens=uncached, cache_read_input_tokens=cached or None)
    if total < prompt + output:
        raise ValueError(f"result stats: total_tokens {total} is below input plus output ({prompt + output})")
    return Usage(input_tokens=uncached, cache_read_input_tokens=cached or None, output_tokens=total - prompt)


def _tool_id(event: Event) -> str:
    tool_id = event.get("tool_id")
    if not isinstance(tool_id, str) or not _TOOL_ID.fullmatch(tool_id):
        raise SkillEvidenceError(
            f"{event.get('type')} tool_id is missing or malformed: {str(tool_id)[:80]!r}"
        )
    return tool_id


def gemini_skill_invoked(window: Sequence[Event], expected_skill: str) -> bool:
    """True when ``activate_skill`` named the expected skill and its result was a success.

    Raises:
        SkillEvidenceError: the expected skill is no identifier, or a tool event is malformed (no
            usable ``tool_id``, parameters that are not an object, a status that is not text).
    """
    expected = normalize_skill_id(expected_skill)
    if expected is None:
        raise SkillEvidenceError(f"expected skill {expected_skill!r} is not a skill identifier")
    asked: set[str] = set()
    for event in window:
        kind = event.get("type")
        if kind == "tool_use" and event.get("tool_name") == SKILL_TOOL:
            tool_id, parameters = _tool_id(event), event.get("parameters")
            if not isinstance(parameters, Mapping):
                raise SkillEvidenceError(f"tool_use {tool_id} parameters are not an object")
            if normalize_skill_id(parameters.get("name")) == expected:
                asked.add(tool_id)
        elif kind == "tool_result":
            tool_id, status = _tool_id(event), event.get("status")
            if not isinstance(status, str):
                raise SkillEvidenceError(f"tool_result {tool_id} status is not text")
            if tool_id in asked and status == "success":
                return True
    return False


def gemini_tool_counts(window: Sequence[Event]) -> dict[str, int]:
    """``tool_use`` events per tool name (each ``tool_id`` once)."""
    seen: set[object] = set()
    counts: dict[str, int] = {}
    for event in window:
        name, tool_id = event.get("tool_name"), event.get("tool_id")
        if event.get("type") != "tool_use" or not isinstance(name, str) or tool_id in seen:
            continue
        seen.add(tool_id)
        counts[name] = counts.get(name, 0) + 1
    return counts


def _message(raw: object) -> str:
    if isinstance(raw, Mapping):
        raw = raw.get("message")
    return raw[:500] if isinstance(raw, str) else ""


def _error_reasons(
    process: ProcessOutcome, stream_error: str | None, window: Sequence[Event] | None
) -> list[str]:
    reasons = process_reasons(process, stream_error)
    for event in window or ():
        kind = event.get("type")
        if kind == "error" and event.get("severity") != "warning":
            reasons.append(f"error: {_message(event)}".rstrip(": "))
        elif kind == "result" and event.get("status") != "success":
            reasons.append(
                f"result status {str(event.get('status'))[:40]}: {_message(event.get('error'))}".rstrip(": ")
            )
    return reasons


def _session_id(events: Sequence[Event]) -> object:
    return events[0].get("session_id") if events[0].get("type") == "init" else None


GEMINI_READING = StreamReading(
    window=gemini_evidence_window,
    usage=lambda window: read_gemini_usage(window[-1]),
    reasons=_error_reasons,
    skill_invoked=gemini_skill_invoked,
    not_invoked="parent event stream shows no successful activate_skill of {skill}",
    session_id=_session_id,
    tool_counts=gemini_tool_counts,
)


def classify_gemini_session(
    events: Sequence[Event] | None,
    *,
    process: ProcessOutcome,
    stream_error: str | None = None,
    expected_skill: str | None = None,
) -> SessionVerdict:
    """The verdict on one Gemini CLI session from its decoded events (``None`` when undecodable)."""
    return classify_stream(
        GEMINI_READING, events, process=process, stream_error=stream_error, expected_skill=expected_skill
    )
