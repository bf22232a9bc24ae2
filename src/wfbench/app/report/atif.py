"""A session's transcript as an ATIF trajectory (Harbor's Agent Trajectory Interchange Format, RFC 0001).

wfbench keeps each agent session's raw event stream (``transcripts/<phase>-<session>.jsonl``).
:func:`trajectory` turns one into an ATIF ``Trajectory`` mapping (``schema_version`` ``ATIF-v1.6``):

* **Claude Code / the stand-in** (``stream-json``): the ``system/init`` event is a ``system`` step;
  each assistant message (the events sharing one ``message.id``) is one ``agent`` step — its text
  the ``message``, its thinking the ``reasoning_content``, its ``tool_use`` blocks the
  ``tool_calls``, and the ``tool_result`` blocks that answer them that step's ``observation``
  (``source_call_id`` = the call's id: ATIF requires a result to sit in its call's step); the
  message's usage is the step's ``metrics`` (``prompt_tokens`` = input + cache read + cache
  creation, ``cached_tokens`` = cache read); text the harness injected (a skill body) is a
  ``system`` step, other user text a ``user`` step; the ``result`` event gives ``final_metrics``.
* **Codex** (``codex exec --json``): each completed item is a step — ``agent_message`` the
  message, ``reasoning`` the reasoning, a command, file change, MCP call or web search a tool call
  with its output as the observation; ``turn.completed`` usage is summed into ``final_metrics``.
* **Anything else** (another agent's stream, a torn line): every event becomes a ``system`` step
  holding its JSON, so nothing is dropped; the ``notes`` say so.

The prompt each session was sent (the cell's ``prompts.json``, as the harness built it) is the
trajectory's first ``user`` step, after the agent's leading ``system`` steps. A cell recorded
before wfbench kept ``prompts.json`` has no prompt to show: its trajectories have no such step,
``extra.wfbench.prompt`` is null and the ``notes`` say so (never an invented prompt). Every
trajectory carries ``extra.wfbench`` (task, arm, run, phase, session, the row's verdict) so a reader
can join it back to ``results.jsonl``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import attrs

__all__ = ["SCHEMA_VERSION", "SessionInfo", "decode_lines", "trajectory"]

SCHEMA_VERSION = "ATIF-v1.6"


@attrs.frozen
class SessionInfo:
    """What the row says about one session: who ran it and how the cell ended."""

    agent: str
    agent_version: str
    model: str | None
    #: ``extra.wfbench`` of the trajectory (task, arm, run, phase, session id, verdict…).
    wfbench: Mapping[str, Any]
    #: The prompt the session was sent (``prompts.json``); None when the cell kept none.
    prompt: str | None = None


def decode_lines(data: bytes) -> tuple[list[Mapping[str, Any]], int]:
    """The JSON objects of a JSON-lines transcript and how many lines were not one (torn, not JSON)."""
    events: list[Mapping[str, Any]] = []
    bad = 0
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            event = json.loads(line.decode("utf-8", "replace"))
        except ValueError:
            bad += 1
            continue
        if isinstance(event, Mapping):
            events.append(event)
        else:
            bad += 1
    return events, bad


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _text(content: Any) -> str:
    """A tool result's or message's content as text (text blocks joined, other blocks named)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for raw in content:
            block = _mapping(raw)
            kind = block.get("type")
            parts.append(str(block.get("text", "")) if kind == "text" else f"[{kind or 'block'}]")
        return "\n".join(parts)
    return "" if content is None else json.dumps(content, ensure_ascii=False)


class _Steps:
    """Steps in order, numbered from 1, with the agent step that holds each open tool call."""

    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self.calls: dict[str, dict[str, Any]] = {}

    def add(self, source: str, message: str, **fields: Any) -> dict[str, Any]:
        step = {"step_id": len(self.steps) + 1, "source": source, "message": message}
        step.update({k: v for k, v in fields.items() if v is not None})
        self.steps.append(step)
        return step

    def call(self, step: dict[str, Any], call_id: str, name: str, arguments: Any) -> None:
        args = dict(arguments) if isinstance(arguments, Mapping) else {"input": arguments}
        step.setdefault("tool_calls", []).append(
            {"tool_call_id": call_id, "function_name": name, "arguments": args}
        )
        self.calls[call_id] = step

    def observe(self, call_id: str | None, content: str, *, error: bool = False) -> None:
        """A result in its call's step; without a known call, a system step of its own."""
        result: dict[str, Any] = {"content": content}
        if error:
            result["extra"] = {"is_error": True}
        step = self.calls.get(call_id) if call_id is not None else None
        if step is None:
            self.add("system", "tool result without a recorded call", observation={"results": [result]})
            return
        result["source_call_id"] = call_id
        step.setdefault("observation", {"results": []})["results"].append(result)


def _claude_metrics(usage: Mapping[str, Any]) -> dict[str, Any] | None:
    fresh, read = _count(usage.get("input_tokens")), _count(usage.get("cache_read_input_tokens"))
    made, out = _count(usage.get("cache_creation_input_tokens")), _count(usage.get("output_tokens"))
    metrics: dict[str, Any] = {}
    if fresh is not None:
        metrics["prompt_tokens"] = fresh + (read or 0) + (made or 0)
    if read is not None:
        metrics["cached_tokens"] = read
    if out is not None:
        metrics["completion_tokens"] = out
    if made is not None:
        metrics["extra"] = {"cache_creation_input_tokens": made}
    return metrics or None


def _claude_assistant(
    steps: _Steps, event: Mapping[str, Any], current: dict[str, Any] | None
) -> dict[str, Any]:
    message = _mapping(event.get("message"))
    msg_id = message.get("id")
    if current is None or msg_id is None or current.get("_message_id") != msg_id:
        current = steps.add("agent", "", model_name=message.get("model") or None)
        current["_message_id"] = msg_id
        metrics = _claude_metrics(_mapping(message.get("usage")))
        if metrics is not None:
            current["metrics"] = metrics
    raw = message.get("content")
    for item in raw if isinstance(raw, list) else [{"type": "text", "text": _text(raw)}]:
        block = _mapping(item)
        kind = block.get("type")
        if kind == "text":
            current["message"] = "\n\n".join(p for p in (current["message"], str(block.get("text", ""))) if p)
        elif kind == "thinking":
            thought = str(block.get("thinking", ""))
            current["reasoning_content"] = "\n\n".join(
                p for p in (current.get("reasoning_content"), thought) if p
            )
        elif kind == "tool_use":
            steps.call(
                current, str(block.get("id")), str(block.get("name", "tool")), block.get("input") or {}
            )
    return current


def _claude_user(steps: _Steps, event: Mapping[str, Any]) -> None:
    content = _mapping(event.get("message")).get("content")
    blocks = content if isinstance(content, list) else [{"type": "text", "text": _text(content)}]
    for item in blocks:
        block = _mapping(item)
        if block.get("type") == "tool_result":
            error = block.get("is_error") is True
            steps.observe(str(block.get("tool_use_id")), _text(block.get("content")), error=error)
        else:
            steps.add("system" if event.get("isSynthetic") else "user", _text([block]))


def _claude_final(event: Mapping[str, Any]) -> dict[str, Any]:
    usage = _mapping(event.get("usage"))
    metrics = _claude_metrics(usage) or {}
    final: dict[str, Any] = {
        "total_prompt_tokens": metrics.get("prompt_tokens"),
        "total_completion_tokens": metrics.get("completion_tokens"),
        "total_cached_tokens": metrics.get("cached_tokens"),
        "extra": {
            k: event.get(k) for k in ("subtype", "num_turns", "is_error", "api_error_status") if k in event
        },
    }
    cost = event.get("total_cost_usd")
    if isinstance(cost, int | float) and not isinstance(cost, bool):
        final["total_cost_usd"] = float(cost)
    return {k: v for k, v in final.items() if v is not None}


def _claude(
    events: Sequence[Mapping[str, Any]],
) -> tuple[list[dict[str, Any]], dict[str, Any] | None, str | None]:
    steps = _Steps()
    final: dict[str, Any] | None = None
    session: str | None = None
    current: dict[str, Any] | None = None
    for event in events:
        kind = event.get("type")
        session = session or (event.get("session_id") if isinstance(event.get("session_id"), str) else None)
        if kind == "assistant":
            current = _claude_assistant(steps, event, current)
            continue
        current = None
        if kind == "user":
            _claude_user(steps, event)
        elif kind == "result":
            final = _claude_final(event)
        elif kind == "system" and event.get("subtype") == "init":
            tools = ", ".join(map(str, event.get("tools") or [])) or "none"
            model, cwd = event.get("model", "n/a"), event.get("cwd", "n/a")
            steps.add("system", f"session started: model {model}, tools {tools}, cwd {cwd}")
        else:
            steps.add("system", json.dumps(event, ensure_ascii=False, sort_keys=True))
    for step in steps.steps:
        step.pop("_message_id", None)
    return steps.steps, final, session


_CODEX_TOOLS = {
    "command_execution": ("command", "aggregated_output"),
    "file_change": ("changes", None),
    "mcp_tool_call": ("arguments", "result"),
    "web_search": ("query", None),
    "todo_list": ("items", None),
}


def _codex_item(steps: _Steps, item: Mapping[str, Any]) -> None:
    kind = str(item.get("type"))
    if kind == "agent_message":
        steps.add("agent", str(item.get("text", "")))
    elif kind == "reasoning":
        steps.add("agent", "", reasoning_content=str(item.get("text", "")))
    elif kind in _CODEX_TOOLS:
        argument, output = _CODEX_TOOLS[kind]
        call_id = str(item.get("id", f"item-{len(steps.steps) + 1}"))
        step = steps.add("agent", "")
        name = f"{item.get('server')}.{item.get('tool')}" if kind == "mcp_tool_call" else kind
        steps.call(step, call_id, name, {argument: item.get(argument)})
        result = (
            item.get(output)
            if output
            else {k: v for k, v in item.items() if k not in ("id", "type", argument)}
        )
        failed = item.get("status") == "failed" or item.get("exit_code") not in (None, 0)
        steps.observe(
            call_id,
            result if isinstance(result, str) else json.dumps(result, ensure_ascii=False),
            error=failed,
        )
    else:
        steps.add("system", json.dumps(dict(item), ensure_ascii=False, sort_keys=True))


def _codex(
    events: Sequence[Mapping[str, Any]],
) -> tuple[list[dict[str, Any]], dict[str, Any] | None, str | None]:
    steps = _Steps()
    session: str | None = None
    totals = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0}
    turns = 0
    for event in events:
        kind = event.get("type")
        if kind == "thread.started":
            session = str(event.get("thread_id")) if event.get("thread_id") else None
        elif kind == "item.completed":
            _codex_item(steps, _mapping(event.get("item")))
        elif kind == "turn.completed":
            turns += 1
            usage = _mapping(event.get("usage"))
            for name in totals:
                totals[name] += _count(usage.get(name)) or 0
        elif kind in ("turn.failed", "error"):
            steps.add("system", json.dumps(dict(event), ensure_ascii=False, sort_keys=True))
    final = None
    if turns:
        final = {
            "total_prompt_tokens": totals["input_tokens"],
            "total_cached_tokens": totals["cached_input_tokens"],
            "total_completion_tokens": totals["output_tokens"],
            "extra": {"turns_completed": turns},
        }
    return steps.steps, final, session


def _generic(
    events: Sequence[Mapping[str, Any]],
) -> tuple[list[dict[str, Any]], dict[str, Any] | None, str | None]:
    steps = _Steps()
    for event in events:
        steps.add("system", json.dumps(dict(event), ensure_ascii=False, sort_keys=True))
    return steps.steps, None, None


def _dialect(events: Sequence[Mapping[str, Any]]) -> str:
    kinds = {event.get("type") for event in events}
    if "thread.started" in kinds or any(str(k).startswith(("item.", "turn.")) for k in kinds):
        return "codex"
    if (
        events and events[0].get("type") == "init"
    ):  # Gemini CLI's stream-json (its ``result`` is not Claude's)
        return "generic"
    if kinds & {"assistant", "result"} or any(e.get("type") == "system" and "subtype" in e for e in events):
        return "claude"
    return "generic"


def _notes(dialect: str, bad: int, steps: Sequence[Mapping[str, Any]], *, prompt: bool) -> str | None:
    notes = []
    if dialect == "generic":
        notes.append("the event stream's format is not one wfbench maps; each event is a system step")
    if bad:
        notes.append(f"{bad} transcript line(s) were not JSON objects (torn or cut) and are left out")
    if not steps:
        notes.append("the transcript holds no event")
    if not prompt:
        notes.append("no prompt was recorded for this session (the cell has no prompts.json); none is shown")
    return "; ".join(notes) or None


def _with_prompt(steps: list[dict[str, Any]], prompt: str | None) -> list[dict[str, Any]]:
    """``steps`` with the prompt as a ``user`` step after the leading ``system`` steps, renumbered."""
    if prompt is None:
        return steps
    at = next((i for i, step in enumerate(steps) if step.get("source") != "system"), len(steps))
    ordered = [
        *steps[:at],
        {"source": "user", "message": prompt, "extra": {"wfbench_prompt": True}},
        *steps[at:],
    ]
    return [
        {"step_id": number, **{k: v for k, v in step.items() if k != "step_id"}}
        for number, step in enumerate(ordered, 1)
    ]


def trajectory(data: bytes, info: SessionInfo) -> dict[str, Any]:
    """The ATIF trajectory of one session's transcript bytes (a JSON-ready mapping)."""
    events, bad = decode_lines(data)
    dialect = _dialect(events)
    steps, final, session = {"claude": _claude, "codex": _codex, "generic": _generic}[dialect](events)
    notes = _notes(dialect, bad, steps, prompt=info.prompt is not None)
    if not steps and info.prompt is None:
        steps = [{"step_id": 1, "source": "system", "message": "(no event was recorded)"}]
    steps = _with_prompt(steps, info.prompt)
    agent: dict[str, Any] = {"name": info.agent, "version": info.agent_version}
    if info.model:
        agent["model_name"] = info.model
    out: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "session_id": session or str(info.wfbench.get("session_id") or "unknown"),
        "agent": agent,
        "steps": steps,
        "notes": notes,
    }
    if final:
        out["final_metrics"] = {**final, "total_steps": len(steps)}
    else:
        out["final_metrics"] = {"total_steps": len(steps)}
    out["extra"] = {"wfbench": {**info.wfbench, "event_format": dialect, "prompt": info.prompt}}
    return out


def iter_tool_names(traj: Mapping[str, Any]) -> Iterator[str]:
    """Every tool call's function name, in order (for summaries and tests)."""
    for step in traj.get("steps", []):
        for call in step.get("tool_calls") or []:
            yield str(call.get("function_name"))
