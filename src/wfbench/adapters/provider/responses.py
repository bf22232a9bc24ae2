"""The OpenAI Responses wire of the scripted provider: usage, output items, SSE events, errors.

Pure functions over a scripted :class:`~wfbench.adapters.provider.script.Turn` and the
request's :class:`~wfbench.adapters.provider.wire.ReplyContext`. Shaped by what the official
``openai`` SDK parses and what the Codex CLI (0.171.0) accepts:

* **Usage is all or nothing.** Codex fails a turn whose usage object misses ``input_tokens``,
  ``output_tokens`` or ``total_tokens``, so a partly scripted usage cannot be sent as a partial
  object: unless both ``input_tokens`` and ``output_tokens`` are scripted the usage is ``null``
  (which Codex accepts and the SDK reads as ``None``). The cache fields stay optional inside
  ``input_tokens_details``: absent when not scripted.
* A ``max_tokens`` stop ends the stream with ``response.incomplete`` (status ``incomplete``,
  reason ``max_output_tokens``), as the real API does; Codex reports it and exits 1.
* A custom tool call (``text`` in the script) is a ``custom_tool_call`` item with free-text
  ``input`` (Codex's ``apply_patch``), streamed with ``response.custom_tool_call_input.*``.
"""

from __future__ import annotations

import json
from typing import Any

from wfbench.adapters.provider.script import Turn
from wfbench.adapters.provider.wire import Event, ReplyContext, halves

__all__ = ["openai_error", "openai_events", "openai_output", "openai_response", "openai_usage"]


def openai_usage(turn: Turn) -> Any:
    """Responses usage: complete (input, output, total; cache details when scripted) or ``None``.

    ``input_tokens`` is the whole input: the scripted uncached input plus the scripted cache
    reads and writes. ``raw_usage`` is sent verbatim.
    """
    if turn.raw_usage is not None:
        return turn.raw_usage
    usage = turn.usage
    if usage.input_tokens is None or usage.output_tokens is None:
        return None
    cached = (usage.cache_read_input_tokens or 0) + (usage.cache_creation_input_tokens or 0)
    wire: dict[str, Any] = {"input_tokens": usage.input_tokens + cached}
    details: dict[str, int] = {}
    if usage.cache_read_input_tokens is not None:
        details["cached_tokens"] = usage.cache_read_input_tokens
    if usage.cache_creation_input_tokens is not None:
        details["cache_write_tokens"] = usage.cache_creation_input_tokens
    if details:
        wire["input_tokens_details"] = details
    wire["output_tokens"] = usage.output_tokens
    wire["total_tokens"] = wire["input_tokens"] + usage.output_tokens
    return wire


def openai_output(turn: Turn, ctx: ReplyContext) -> list[dict[str, Any]]:
    """Output items: a message item when ``say`` is scripted, then one call item per tool."""
    items: list[dict[str, Any]] = []
    if turn.say is not None:
        items.append(
            {
                "id": f"msg_{ctx.seed}_{ctx.turn:02d}",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": turn.say, "annotations": []}],
            }
        )
    for index, tool in enumerate(turn.tools):
        call = {"status": "completed", "call_id": ctx.tool_id("call", index), "name": tool.name}
        if tool.text is not None:
            items.append(
                {
                    "id": ctx.tool_id("ctc", index),
                    "type": "custom_tool_call",
                    **call,
                    "input": ctx.expand(tool.text),
                }
            )
            continue
        arguments = json.dumps(ctx.expand(tool.input), separators=(",", ":"))
        items.append(
            {"id": ctx.tool_id("fc", index), "type": "function_call", **call, "arguments": arguments}
        )
    return items


def openai_response(turn: Turn, ctx: ReplyContext, *, created_at: int) -> dict[str, Any]:
    """The plain-JSON Responses reply (``status`` incomplete when the stop reason is max_tokens)."""
    incomplete = turn.effective_stop_reason == "max_tokens"
    return {
        "id": f"resp_{ctx.seed}_{ctx.turn:02d}",
        "object": "response",
        "created_at": created_at,
        "status": "incomplete" if incomplete else "completed",
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "instructions": None,
        "model": ctx.model,
        "output": openai_output(turn, ctx),
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": openai_usage(turn),
    }


def openai_events(turn: Turn, ctx: ReplyContext, *, created_at: int) -> list[Event]:
    """The SSE events of a streamed reply, numbered by ``sequence_number``.

    ``response.created``, ``response.in_progress``, each item's events, then
    ``response.completed`` — or ``response.incomplete`` for an incomplete response.
    """
    final = openai_response(turn, ctx, created_at=created_at)
    running = {**final, "status": "in_progress", "output": [], "usage": None}
    raw: list[dict[str, Any]] = [
        {"type": "response.created", "response": running},
        {"type": "response.in_progress", "response": running},
    ]
    for position, item in enumerate(final["output"]):
        raw.extend(_item_events(position, item))
    end = "response.incomplete" if final["status"] == "incomplete" else "response.completed"
    raw.append({"type": end, "response": final})
    return [(event["type"], {**event, "sequence_number": number}) for number, event in enumerate(raw)]


def _call_events(position: int, item: dict[str, Any], field: str, kind: str) -> list[dict[str, Any]]:
    at = {"output_index": position, "item_id": item["id"]}
    value = item[field]
    return [
        {
            "type": "response.output_item.added",
            "output_index": position,
            "item": {**item, "status": "in_progress", field: ""},
        },
        *({"type": f"response.{kind}.delta", **at, "delta": part} for part in halves(value)),
        {"type": f"response.{kind}.done", **at, field: value},
        {"type": "response.output_item.done", "output_index": position, "item": item},
    ]


def _item_events(position: int, item: dict[str, Any]) -> list[dict[str, Any]]:
    if item["type"] == "function_call":
        return _call_events(position, item, "arguments", "function_call_arguments")
    if item["type"] == "custom_tool_call":
        return _call_events(position, item, "input", "custom_tool_call_input")
    at = {"output_index": position, "item_id": item["id"]}
    part = item["content"][0]
    text = part["text"]
    at_part = {**at, "content_index": 0}
    return [
        {
            "type": "response.output_item.added",
            "output_index": position,
            "item": {**item, "status": "in_progress", "content": []},
        },
        {"type": "response.content_part.added", **at_part, "part": {**part, "text": ""}},
        *(
            {"type": "response.output_text.delta", **at_part, "delta": piece, "logprobs": []}
            for piece in halves(text)
        ),
        {"type": "response.output_text.done", **at_part, "text": text, "logprobs": []},
        {"type": "response.content_part.done", **at_part, "part": part},
        {"type": "response.output_item.done", "output_index": position, "item": item},
    ]


_OPENAI_ERRORS = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "not_found"),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", None),
    503: ("server_error", "overloaded"),
    529: ("server_error", "overloaded"),
}


def openai_error(status: int, message: str = "") -> dict[str, Any]:
    """An error body in the OpenAI shape: ``{error: {message, type, param, code}}``."""
    kind, code = _OPENAI_ERRORS.get(
        status, ("invalid_request_error" if status < 500 else "server_error", None)
    )
    return {
        "error": {
            "message": message or f"scripted {kind} ({status})",
            "type": kind,
            "param": None,
            "code": code,
        }
    }
