"""Reading a headless agent's ``stream-json`` events into a session verdict (pure).

The adapter decodes the captured stdout (strict UTF-8, one JSON object per line, no NaN) and
hands the events here with the process outcome; this module decides everything else
(``docs/concepts.md``, "Reading a session's event stream"):

* exactly one ``result`` event, only ``system`` events after it; the evidence window ends there;
* a session error when the process did not exit 0, the stream is unusable, ``is_error`` is set,
  the subtype starts with ``error``, or a reported usage value is not a non-negative integer;
* the usage of an errored session is not a measurement: every field is ``None``, as is the cost;
* a usage field is ``None`` unless the model API reported it in at least one turn (the real CLI
  writes 0 into its totals for a field it never saw; the per-turn ``assistant`` usage shows it);
* a skill counts as invoked only when a matching ``Skill`` tool_use gets a later non-error
  ``tool_result``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from wfbench.domain.results.rows import ErrorKind
from wfbench.domain.session.records import Usage
from wfbench.domain.workspace.sandbox import ProcessState

USAGE_NAMES = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
_TOOL_NAME = re.compile(r"[A-Za-z0-9._:-]{1,64}")
_BLOCK_ID = re.compile(r"[A-Za-z0-9._:-]{1,256}")
DETAIL_TAIL_CHARS = 2000
#: Synthetic assistant messages (API error notices) report zeros nobody measured.
_SYNTHETIC_MODEL = "<synthetic>"

Event = Mapping[str, Any]


class SkillEvidenceError(ValueError):
    """The stream cannot prove or disprove a skill invocation (duplicate ids, a missing result…)."""


@attrs.frozen
class ProcessOutcome:
    """What the managed process did, reduced to what the verdict needs (text already decoded)."""

    state: ProcessState
    returncode: int | None
    detail: str = ""
    stderr_tail: str = ""
    stdout_tail: str = ""
    wall_s: float | None = None

    @property
    def ok(self) -> bool:
        """True when the process exited by itself with status 0."""
        return self.state is ProcessState.EXITED and self.returncode == 0


@attrs.frozen
class SessionVerdict:
    """Everything a session record says except the transcript bytes."""

    ok: bool
    error_kind: ErrorKind | None
    error_detail: str | None
    usage: Usage
    cost_usd: float | None
    num_turns: int | None
    duration_s: float | None
    session_id: str | None
    skill_invoked: bool | None
    stream_error: str | None
    diagnostics: tuple[str, ...] = ()
    tool_use_counts: Mapping[str, int] = attrs.field(factory=dict)


def measured_cost(raw: object) -> float | None:
    """A cost only when it is a finite, non-negative number (not a bool); anything else is unknown."""
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        return None
    try:
        value = float(raw)
    except OverflowError:  # an integer too large for a float is not a measurement
        return None
    return value if math.isfinite(value) and value >= 0 else None


def evidence_window(events: Sequence[Event]) -> tuple[tuple[Event, ...], Event]:
    """The events up to and including the single ``result`` event.

    Raises:
        ValueError: no events, not exactly one result, or a non-system event after it.
    """
    if not events:
        raise ValueError("the event stream is empty")
    indexes = [i for i, event in enumerate(events) if event.get("type") == "result"]
    if len(indexes) != 1:
        raise ValueError(f"expected exactly one final result event, observed {len(indexes)}")
    end = indexes[0]
    late = [event.get("type") for event in events[end + 1 :] if event.get("type") != "system"]
    if late:
        raise ValueError(f"final result event is not the last event (followed by {late[0]!r})")
    return tuple(events[: end + 1]), events[end]


def _blocks(event: Event) -> list[Mapping[str, Any]]:
    message = event.get("message")
    content = message.get("content") if isinstance(message, Mapping) else event.get("content")
    return [block for block in content if isinstance(block, Mapping)] if isinstance(content, list) else []


def reported_fields(window: Sequence[Event]) -> frozenset[str]:
    """Usage fields some real (non-synthetic) assistant turn reported."""
    seen: set[str] = set()
    for event in window:
        message = event.get("message")
        if event.get("type") != "assistant" or not isinstance(message, Mapping):
            continue
        usage = message.get("usage")
        if message.get("model") != _SYNTHETIC_MODEL and isinstance(usage, Mapping):
            seen.update(name for name in USAGE_NAMES if usage.get(name) is not None)
    return frozenset(seen)


def read_usage(result: Event, window: Sequence[Event]) -> Usage:
    """The four usage fields of the result; a field no turn reported is ``None``.

    Raises:
        ValueError: ``usage`` is not an object, or a reported value is not a non-negative int.
    """
    raw = result.get("usage")
    if raw is None:
        return Usage()
    if not isinstance(raw, Mapping):
        raise ValueError("result usage is not an object")
    reported = reported_fields(window)
    values: dict[str, int | None] = {}
    for name in USAGE_NAMES:
        value = raw.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise ValueError(f"result usage.{name} is not a non-negative integer: {value!r}")
        values[name] = value if name in reported else None
    return Usage(**values)


def normalize_skill_id(value: object) -> str | None:
    """``" /plugin:name args"`` → ``name``: first token, one leading ``/`` dropped, after the last ``:``."""
    if not isinstance(value, str) or not value.strip():
        return None
    token = value.strip().split()[0]
    token = token.removeprefix("/")
    name = token.rsplit(":", 1)[-1]
    return name or None


def _matches_skill(block: Mapping[str, Any], expected: str) -> bool:
    name = block.get("name")
    args = block.get("input")
    if not isinstance(name, str) or name.casefold() != "skill" or not isinstance(args, Mapping):
        return False
    return any(normalize_skill_id(args.get(key)) == expected for key in ("skill", "command", "name"))


def skill_invoked(window: Sequence[Event], expected_skill: str) -> bool:
    """True when a matching Skill tool_use has a later, non-error tool_result.

    Raises:
        SkillEvidenceError: bad or duplicate ids, a non-boolean ``is_error``, or a matching
            request whose result is missing or not later.
    """
    expected = normalize_skill_id(expected_skill)
    if expected is None:
        raise SkillEvidenceError(f"expected skill {expected_skill!r} is not a skill identifier")
    requests: dict[str, tuple[int, bool]] = {}
    results: dict[str, tuple[int, bool]] = {}
    for index, event in enumerate(window):
        for block in _blocks(event):
            if block.get("type") == "tool_use":
                _record(requests, block.get("id"), (index, _matches_skill(block, expected)), "tool_use")
            elif block.get("type") == "tool_result":
                flag = block.get("is_error", False)
                if not isinstance(flag, bool):
                    raise SkillEvidenceError(f"tool_result is_error is not a boolean: {flag!r}")
                _record(results, block.get("tool_use_id"), (index, flag), "tool_result")
    invoked = False
    for block_id, (index, matched) in requests.items():
        if not matched:
            continue
        if block_id not in results:
            raise SkillEvidenceError(f"matching Skill request {block_id} has no tool result")
        result_index, is_error = results[block_id]
        if result_index <= index:
            raise SkillEvidenceError(f"the tool result of Skill request {block_id} is not later than it")
        invoked = invoked or not is_error
    return invoked


def _record(table: dict[str, tuple[int, bool]], block_id: object, entry: tuple[int, bool], kind: str) -> None:
    if not isinstance(block_id, str) or not _BLOCK_ID.fullmatch(block_id):
        raise SkillEvidenceError(f"{kind} id is missing or malformed: {str(block_id)[:80]!r}")
    if block_id in table:
        raise SkillEvidenceError(f"duplicate {kind} id {block_id}")
    table[block_id] = entry


def tool_use_counts(window: Sequence[Event]) -> dict[str, int]:
    """tool_use blocks per tool name in assistant events (odd names counted as ``tool``)."""
    counts: dict[str, int] = {}
    for event in window:
        if event.get("type") != "assistant":
            continue
        for block in _blocks(event):
            if block.get("type") == "tool_use":
                name = block.get("name")
                key = name if isinstance(name, str) and _TOOL_NAME.fullmatch(name) else "tool"
                counts[key] = counts.get(key, 0) + 1
    return counts


def _count(raw: object) -> int | None:
    return raw if isinstance(raw, int) and not isinstance(raw, bool) and raw >= 0 else None


def _duration(result: Event, process: ProcessOutcome) -> float | None:
    ms = measured_cost(result.get("duration_ms"))
    if ms is not None:
        return round(ms / 1000, 3)
    return None if process.wall_s is None else round(process.wall_s, 3)


def process_reasons(process: ProcessOutcome, stream_error: str | None) -> list[str]:
    """Why any agent's session failed before its events say anything: its process, its event stream."""
    reasons: list[str] = []
    if not process.ok:
        detail = f": {process.detail}" if process.detail else ""
        reasons.append(f"agent process {process.state.value} (returncode {process.returncode}){detail}")
    if stream_error is not None:
        reasons.append(f"event stream: {stream_error}")
    return reasons


def tail_detail(parts: Sequence[str], process: ProcessOutcome, *, with_stdout: bool) -> str:
    """``parts``, the stderr tail and (``with_stdout``: no events were read) the stdout tail, joined."""
    out = list(parts)
    if process.stderr_tail.strip():
        out.append(f"stderr tail: {process.stderr_tail[-DETAIL_TAIL_CHARS:]}")
    if process.stdout_tail.strip() and with_stdout:
        out.append(f"stdout tail: {process.stdout_tail[-DETAIL_TAIL_CHARS:]}")
    return "; ".join(out)


def verdict_kind(
    process: ProcessOutcome,
    *,
    reasons: Sequence[str],
    diagnostics: Sequence[str],
    invoked: bool | None,
    not_invoked: str,
    detail: Callable[[Sequence[str]], str],
) -> tuple[ErrorKind | None, str | None]:
    """A session's error kind and detail, the same rule for every agent (``None, None``: it is ok).

    Cancelled first, then any failure reason, then unverifiable evidence, then a skill that was
    expected but not invoked (``not_invoked`` says so in the agent's terms); ``detail`` words the
    reasons with what the agent's stream adds.
    """
    if process.state is ProcessState.CANCELLED:
        return ErrorKind.CANCELLED, detail(["the session was cancelled", *reasons])
    if reasons:
        return ErrorKind.SESSION_ERROR, detail(reasons)
    if diagnostics:
        return ErrorKind.EVIDENCE_UNVERIFIED, "; ".join(diagnostics)
    if invoked is False:
        return ErrorKind.SKILL_NOT_INVOKED, not_invoked
    return None, None


def _error_reasons(process: ProcessOutcome, stream_error: str | None, result: Event | None) -> list[str]:
    reasons = process_reasons(process, stream_error)
    if result is not None:
        subtype = str(result.get("subtype"))
        if result.get("is_error"):
            status = result.get("api_error_status")
            reasons.append(
                "result is_error" + (f" (api_error_status {status})" if status is not None else "")
            )
        if subtype.startswith("error"):
            reasons.append(f"result subtype {subtype}")
    return reasons


def _detail(reasons: Sequence[str], process: ProcessOutcome, result: Event | None) -> str:
    parts = list(reasons)
    if result is not None and isinstance(result.get("result"), str) and result.get("is_error"):
        parts.append(f"result: {result['result'][:500]}")
    return tail_detail(parts, process, with_stdout=result is None)


def _skill_evidence(
    window: Sequence[Event] | None, expected_skill: str | None
) -> tuple[bool | None, tuple[str, ...]]:
    if expected_skill is None or window is None:
        return None, ()
    try:
        return skill_invoked(window, expected_skill), ()
    except SkillEvidenceError as exc:
        return None, (f"unverifiable skill evidence: {exc}",)


def classify_session(
    events: Sequence[Event] | None,
    *,
    process: ProcessOutcome,
    stream_error: str | None = None,
    expected_skill: str | None = None,
) -> SessionVerdict:
    """The verdict on one session from its decoded events (``None`` when they could not be decoded)."""
    window: tuple[Event, ...] | None = None
    result: Event | None = None
    if stream_error is None and events is not None:
        try:
            window, result = evidence_window(events)
        except ValueError as exc:
            stream_error = str(exc)
    elif stream_error is None:
        stream_error = "no event stream was captured"
    usage, usage_error = Usage(), None
    if result is not None and window is not None:
        try:
            usage = read_usage(result, window)
        except ValueError as exc:
            usage_error = str(exc)
    reasons = _error_reasons(process, stream_error, result) + ([usage_error] if usage_error else [])
    diagnostics: tuple[str, ...] = (
        (f"unverifiable parent event stream: {stream_error}",) if stream_error else ()
    )
    invoked, skill_diagnostics = _skill_evidence(window, expected_skill)
    diagnostics += skill_diagnostics
    kind, detail = verdict_kind(
        process,
        reasons=reasons,
        diagnostics=diagnostics,
        invoked=invoked,
        not_invoked=f"parent event stream shows no successful {expected_skill} invocation",
        detail=lambda parts: _detail(parts, process, result),
    )
    measured = kind in (None, ErrorKind.SKILL_NOT_INVOKED, ErrorKind.EVIDENCE_UNVERIFIED)
    return SessionVerdict(
        ok=kind is None,
        error_kind=kind,
        error_detail=detail,
        usage=usage if measured else Usage(),
        cost_usd=measured_cost(result.get("total_cost_usd")) if measured and result is not None else None,
        num_turns=_count(result.get("num_turns")) if result is not None else None,
        duration_s=_duration(result if result is not None else {}, process),
        session_id=_text(result.get("session_id")) if result is not None else None,
        skill_invoked=invoked,
        stream_error=stream_error,
        diagnostics=diagnostics,
        tool_use_counts=tool_use_counts(window) if window is not None else {},
    )


def _text(raw: object) -> str | None:
    return raw if isinstance(raw, str) and raw else None
