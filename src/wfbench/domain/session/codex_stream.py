"""Reading the Codex CLI's ``codex exec --json`` events into a session verdict (pure).

Codex 0.171.0 prints one JSON object per line: ``thread.started`` (the session id), then per
turn ``turn.started``, ``item.started`` / ``item.updated`` / ``item.completed`` (items of type
``agent_message``, ``reasoning``, ``command_execution``, ``file_change``, ``mcp_tool_call``,
``web_search``, ``todo_list`` and ``error`` — the last a warning, not a failure), and
``turn.completed`` (with usage) or ``turn.failed``; a fatal problem is also a top-level
``error`` event. There is no result event and no cost. The adapter decodes stdout strictly
(:func:`wfbench.adapters.agents.claude.decode_events`); this module decides the rest
(``docs/agents.md``, "Codex"):

* **a session error** when the process did not exit 0, the stream is unusable (no
  ``thread.started`` first, a turn without its end, events after the last turn ended), a turn
  failed, a top-level ``error`` event was printed, or a usage value is not a non-negative
  integer (or its cached part exceeds its input);
* **usage** is summed over the ``turn.completed`` events and mapped to wfbench's four fields:
  Codex's ``input_tokens`` includes cached tokens, so ``input_tokens`` here is
  ``input_tokens - cached_input_tokens - cache_write_input_tokens``; ``cache_read`` is
  ``cached_input_tokens``; ``cache_creation`` is ``cache_write_input_tokens``; ``output`` is
  ``output_tokens`` (reasoning included). Codex writes 0 for anything the provider did not
  report — a request's usage cannot be zero input, so a turn reporting ``input_tokens: 0``
  reported *nothing* and its usage is unknown (every field ``None``); likewise a cache field of
  0 cannot be told from an absent one, so it is ``None`` (not reported: the wire meter, which
  sees the provider's own figures, is the measurement and is never contradicted by a guessed 0).
  An errored session's usage is not a measurement (``None``), and the cost is always ``None``;
* **a skill counts as invoked** only when a ``command_execution`` item completed with exit code
  0 and non-empty output, and its command names the expected skill's ``skills/<name>/SKILL.md``
  (Codex has no Skill tool: the model reads the skill file itself). A ``$name`` mention in the
  prompt makes Codex inject the skill body without the model doing anything, and is invisible in
  this stream: it never counts;
* tool counts are the completed tool items by item type (``command_execution``,
  ``file_change``, ``mcp_tool_call``, ``web_search``); the turn count is unknown (Codex does not
  report its model requests); the duration is the process's wall time.
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
    "CODEX_USAGE_NAMES",
    "TOOL_ITEM_TYPES",
    "classify_codex_session",
    "codex_skill_invoked",
    "read_codex_usage",
]

#: The usage fields of ``turn.completed`` that map to wfbench's four.
CODEX_USAGE_NAMES = ("input_tokens", "cached_input_tokens", "cache_write_input_tokens", "output_tokens")
#: Item types that are the agent acting on the world (counted as tool uses).
TOOL_ITEM_TYPES = frozenset({"command_execution", "file_change", "mcp_tool_call", "web_search"})
_TURN_END = frozenset({"turn.completed", "turn.failed"})
_ITEM_ID = re.compile(r"[A-Za-z0-9._:-]{1,256}")

Event = Mapping[str, Any]


def _message(raw: object) -> str:
    if isinstance(raw, Mapping):
        raw = raw.get("message")
    return raw[:500] if isinstance(raw, str) else ""


def evidence_window(events: Sequence[Event]) -> tuple[Event, ...]:
    """The events from ``thread.started`` up to and including the last turn's end.

    Raises:
        ValueError: no events, no ``thread.started`` first, a turn that never ended, no turn at
            all, or an event after the last turn ended.
    """
    if not events:
        raise ValueError("the event stream is empty")
    if events[0].get("type") != "thread.started":
        raise ValueError(f"the first event is {events[0].get('type')!r}, not thread.started")
    open_turn = False
    last_end: int | None = None
    for index, event in enumerate(events[1:], 1):
        kind = event.get("type")
        if kind == "thread.started":
            raise ValueError("a second thread.started event")
        if kind == "turn.started":
            if open_turn:
                raise ValueError("a turn started before the previous one ended")
            open_turn = True
        elif kind in _TURN_END:
            if not open_turn:
                raise ValueError(f"{kind} without turn.started")
            open_turn, last_end = False, index
    if open_turn:
        raise ValueError("the last turn never ended (no turn.completed or turn.failed)")
    if last_end is None:
        raise ValueError("no turn ran (no turn.completed or turn.failed)")
    if last_end != len(events) - 1:
        raise ValueError(f"the last turn's end is followed by {events[last_end + 1].get('type')!r}")
    return tuple(events)


def _non_negative(usage: Mapping[str, Any], name: str) -> int | None:
    value = usage.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"turn.completed usage.{name} is not a non-negative integer: {value!r}")
    return value


def _turn_usage(raw: object) -> Usage:
    """One ``turn.completed`` usage in wfbench's fields (all ``None`` when it reported nothing)."""
    if raw is None:
        return Usage()
    if not isinstance(raw, Mapping):
        raise ValueError("turn.completed usage is not an object")
    values = {name: _non_negative(raw, name) for name in CODEX_USAGE_NAMES}
    total = values["input_tokens"]
    if not total:  # Codex writes 0 for a usage nobody reported; no model request has no input
        return Usage()
    cached, written = values["cached_input_tokens"], values["cache_write_input_tokens"]
    uncached = total - (cached or 0) - (written or 0)
    if uncached < 0:
        raise ValueError(
            f"turn.completed usage: cached tokens ({cached} + {written}) exceed input_tokens ({total})"
        )
    # Codex prints 0 for a cache field the provider did not send: a 0 there is "0 or not
    # reported", so it is not reported (None); the wire meter holds the measurement.
    return Usage(
        input_tokens=uncached,
        cache_creation_input_tokens=written or None,
        cache_read_input_tokens=cached or None,
        output_tokens=values["output_tokens"],
    )


def read_codex_usage(window: Sequence[Event]) -> Usage:
    """The session's usage: every ``turn.completed`` summed; a field any turn left unknown is ``None``.

    Raises:
        ValueError: a usage that is not an object, a bad value, or cached tokens above the input.
    """
    turns = [_turn_usage(event.get("usage")) for event in window if event.get("type") == "turn.completed"]
    if not turns:
        return Usage()
    fields: dict[str, int | None] = {}
    for name in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens"):
        values = [getattr(turn, name) for turn in turns]
        fields[name] = None if any(v is None for v in values) else sum(v for v in values if v is not None)
    return Usage(**fields)


def _completed_items(window: Sequence[Event]) -> list[Mapping[str, Any]]:
    """The items of ``item.completed`` events (an item is final only there)."""
    return [
        event["item"]
        for event in window
        if event.get("type") == "item.completed" and isinstance(event.get("item"), Mapping)
    ]


def _skill_file(expected: str) -> re.Pattern[str]:
    return re.compile(r"(?:^|[/\s'\"=~])skills/" + re.escape(expected) + r"/SKILL\.md(?:$|[\s'\";|&)<>])")


def codex_skill_invoked(window: Sequence[Event], expected_skill: str) -> bool:
    """True when a completed command read the expected skill's SKILL.md (exit 0, output shown).

    Raises:
        SkillEvidenceError: the expected skill is no identifier, or a command item is malformed
            (no usable id, a command that is not text, an exit code that is not an integer).
    """
    expected = normalize_skill_id(expected_skill)
    if expected is None:
        raise SkillEvidenceError(f"expected skill {expected_skill!r} is not a skill identifier")
    pattern = _skill_file(expected)
    for item in _completed_items(window):
        if item.get("type") != "command_execution":
            continue
        item_id, command, code = item.get("id"), item.get("command"), item.get("exit_code")
        if not isinstance(item_id, str) or not _ITEM_ID.fullmatch(item_id):
            raise SkillEvidenceError(f"command_execution id is missing or malformed: {str(item_id)[:80]!r}")
        if not isinstance(command, str):
            raise SkillEvidenceError(f"command_execution {item_id} has no command text")
        if code is not None and (isinstance(code, bool) or not isinstance(code, int)):
            raise SkillEvidenceError(f"command_execution {item_id} exit_code is not an integer: {code!r}")
        output = item.get("aggregated_output")
        shown = isinstance(output, str) and bool(output.strip())
        if item.get("status") == "completed" and code == 0 and shown and pattern.search(command):
            return True
    return False


def codex_tool_counts(window: Sequence[Event]) -> dict[str, int]:
    """Completed tool items per item type (each item id once)."""
    seen: set[object] = set()
    counts: dict[str, int] = {}
    for item in _completed_items(window):
        kind, item_id = item.get("type"), item.get("id")
        if kind not in TOOL_ITEM_TYPES or item_id in seen:
            continue
        seen.add(item_id)
        counts[str(kind)] = counts.get(str(kind), 0) + 1
    return counts


def _error_reasons(
    process: ProcessOutcome, stream_error: str | None, window: Sequence[Event] | None
) -> list[str]:
    reasons = process_reasons(process, stream_error)
    for event in window or ():
        if event.get("type") == "turn.failed":
            reasons.append(f"turn.failed: {_message(event.get('error'))}".rstrip(": "))
        elif event.get("type") == "error":
            reasons.append(f"error: {_message(event)}".rstrip(": "))
    return reasons


def _thread_id(events: Sequence[Event]) -> object:
    return events[0].get("thread_id") if events[0].get("type") == "thread.started" else None


CODEX_READING = StreamReading(
    window=evidence_window,
    usage=read_codex_usage,
    reasons=_error_reasons,
    skill_invoked=codex_skill_invoked,
    not_invoked="parent event stream shows no command reading {skill}'s SKILL.md",
    session_id=_thread_id,
    tool_counts=codex_tool_counts,
)


def classify_codex_session(
    events: Sequence[Event] | None,
    *,
    process: ProcessOutcome,
    stream_error: str | None = None,
    expected_skill: str | None = None,
) -> SessionVerdict:
    """The verdict on one Codex session from its decoded events (``None`` when undecodable)."""
    return classify_stream(
        CODEX_READING, events, process=process, stream_error=stream_error, expected_skill=expected_skill
    )
