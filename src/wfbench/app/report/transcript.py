"""A ``stream-json`` transcript as what a reader follows: text, tool calls with results, errors.

Each line of a captured transcript is one event (``system``, ``assistant``, ``user``,
``result``). :func:`read_transcript` turns them into :class:`Step` values in order: the session
start, the assistant's text (and thinking, folded), each tool call with its input and — paired
by ``tool_use_id`` — its result, text the harness injected (a skill body), and the final result
(turns, cost, usage, error). Lines that are not JSON objects become ``problem`` steps (a torn
tail is said, not hidden). Every text is bounded (:data:`TEXT_LIMIT`), so a hostile 8 MiB line
cannot make a page unreadable.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import attrs

from wfbench.app.report import fmt

__all__ = ["TEXT_LIMIT", "Step", "read_transcript"]

TEXT_LIMIT = 20_000


@attrs.frozen
class Step:
    """One thing that happened in a session, ready to render."""

    kind: str
    title: str
    text: str = ""
    error: bool = False
    #: For a tool call: its result (``None`` until one arrives; a call without a result says so).
    result: str | None = None
    result_error: bool = False


def _bounded(text: str) -> str:
    if len(text) <= TEXT_LIMIT:
        return text
    return text[:TEXT_LIMIT] + f"\n… {len(text) - TEXT_LIMIT:,} more characters (see the raw transcript)"


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, Mapping) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif isinstance(block, Mapping):
                parts.append(f"[{block.get('type', 'block')}]")
            else:
                parts.append(str(block))
        return "\n".join(parts)
    return "" if content is None else json.dumps(content, ensure_ascii=False)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _pretty(value: Any) -> str:
    try:
        return json.dumps(value, indent=2, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def _tool_input(value: Any) -> str:
    """A tool's input as ``key: value`` lines, multi-line strings as blocks (not escaped JSON)."""
    if not isinstance(value, Mapping):
        return _pretty(value)
    lines = []
    for key, item in value.items():
        if isinstance(item, str) and "\n" in item:
            lines.append(f"{key}:\n{item.rstrip()}")
        elif isinstance(item, str):
            lines.append(f"{key}: {item}")
        else:
            lines.append(f"{key}: {json.dumps(item, ensure_ascii=False)}")
    return "\n".join(lines)


class _Reader:
    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.calls: dict[str, int] = {}

    def system(self, event: Mapping[str, Any]) -> None:
        if event.get("subtype") == "init":
            tools: list[Any] = event["tools"] if isinstance(event.get("tools"), list) else []
            text = (
                f"model {event.get('model', 'n/a')} · tools {', '.join(map(str, tools)) or 'none'} · cwd "
                f"{event.get('cwd', 'n/a')}"
            )
            self.steps.append(Step("init", "session started", _bounded(text)))
        else:
            self.steps.append(
                Step("system", f"system: {event.get('subtype', 'event')}", _bounded(_pretty(event)))
            )

    def assistant(self, event: Mapping[str, Any]) -> None:
        message = _mapping(event.get("message"))
        raw = message.get("content")
        content: list[Any] = raw if isinstance(raw, list) else [raw]
        for block in content:
            if not isinstance(block, Mapping):
                if block:
                    self.steps.append(Step("assistant", "assistant", _bounded(str(block))))
                continue
            kind = block.get("type")
            if kind == "text":
                self.steps.append(Step("assistant", "assistant", _bounded(str(block.get("text", "")))))
            elif kind == "thinking":
                self.steps.append(Step("thinking", "thinking", _bounded(str(block.get("thinking", "")))))
            elif kind == "tool_use":
                name = str(block.get("name", "tool"))
                self.calls[str(block.get("id"))] = len(self.steps)
                self.steps.append(
                    Step("tool", f"tool call: {name}", _bounded(_tool_input(block.get("input"))))
                )
            else:
                self.steps.append(Step("assistant", f"assistant: {kind}", _bounded(_pretty(block))))

    def user(self, event: Mapping[str, Any]) -> None:
        message = _mapping(event.get("message"))
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": _content_text(content)}]
        for block in blocks:
            if isinstance(block, Mapping) and block.get("type") == "tool_result":
                self._result(block)
            else:
                text = _content_text([block])
                # The agent CLI writes these itself (a skill's text once the Skill tool loads it);
                # wfbench never adds to a session's conversation.
                title = "injected by the agent CLI" if event.get("isSynthetic") else "user"
                self.steps.append(Step("user", title, _bounded(text)))

    def _result(self, block: Mapping[str, Any]) -> None:
        text = _bounded(_content_text(block.get("content")))
        error = block.get("is_error") is True
        index = self.calls.pop(str(block.get("tool_use_id")), None)
        if index is None:
            self.steps.append(Step("tool", "tool result without a call", text, error=error))
            return
        self.steps[index] = attrs.evolve(self.steps[index], result=text, result_error=error)

    def result(self, event: Mapping[str, Any]) -> None:
        error = event.get("is_error") is True or str(event.get("subtype", "")).startswith("error")
        usage = _mapping(event.get("usage"))
        facts = [
            f"subtype {event.get('subtype', 'n/a')}",
            f"turns {event.get('num_turns', 'n/a')}",
            f"cost {fmt.money(event.get('total_cost_usd'))}",
            "usage "
            + (
                ", ".join(
                    f"{k} {_usage_value(v)}"
                    for k, v in usage.items()
                    if v is not None and not isinstance(v, Mapping | list)
                )
                or "n/a"
            ),
        ]
        if event.get("api_error_status") is not None:
            facts.append(f"API error status {event.get('api_error_status')}")
        text = " · ".join(facts)
        if isinstance(event.get("result"), str) and event["result"]:
            text += "\n\n" + event["result"]
        self.steps.append(
            Step(
                "result",
                "session ended with an error" if error else "session ended",
                _bounded(text),
                error=error,
            )
        )


def _usage_value(value: Any) -> str:
    """A usage figure as a reader wants it: ``12,000`` tokens, ``0.0388`` (never 17 digits)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    return f"{value:,}" if isinstance(value, int) else f"{value:.4g}"


def read_transcript(data: bytes, *, cut: bool = False) -> tuple[Step, ...]:
    """The steps of a transcript (``cut``: the bytes stop at a size limit; the last line may be partial)."""
    reader = _Reader()
    lines = data.split(b"\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            event = json.loads(line.decode("utf-8", "replace"))
        except ValueError:
            last = number == len(lines)
            why = "cut at the size limit" if cut and last else "torn or not JSON"
            reader.steps.append(
                Step(
                    "problem",
                    f"line {number}: {why}",
                    _bounded(line.decode("utf-8", "replace")[:2000]),
                    error=True,
                )
            )
            continue
        if not isinstance(event, Mapping):
            reader.steps.append(
                Step("problem", f"line {number}: not a JSON object", _bounded(str(event)[:2000]), error=True)
            )
            continue
        handler = (
            getattr(reader, str(event.get("type")), None)
            if event.get("type") in ("system", "assistant", "user", "result")
            else None
        )
        if handler is None:
            reader.steps.append(
                Step("system", f"event: {event.get('type', 'unknown')}", _bounded(_pretty(event)))
            )
        else:
            handler(event)
    for index in reader.calls.values():
        step = reader.steps[index]
        reader.steps[index] = attrs.evolve(
            step, result="(no result was recorded for this call)", result_error=True
        )
    return tuple(reader.steps)
