"""Wire formats of the scripted provider: reading requests, building replies, error bodies.

Pure functions over parsed JSON (dicts), shared by :mod:`wfbench.adapters.scripted_provider`.
Two protocols are spoken: Anthropic Messages (plain JSON and SSE events) and OpenAI Responses
(plain JSON and SSE events). Usage fields a script leaves out are absent here, never 0.
"""

from __future__ import annotations

import enum
import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from wfbench.adapters.provider_script import Turn

DEFAULT_WORKSPACE = "/workspace"
WORKSPACE_PLACEHOLDER = "{workspace}"
#: The review artifact path a review prompt states (``Review output file: /path``); ``{review_output}``.
REVIEW_OUTPUT_PLACEHOLDER = "{review_output}"
DEFAULT_REVIEW_OUTPUT = "/review-output/review-output.json"
SYSTEM_REMINDER = "<system-reminder>"
_WORKDIR = re.compile(r"(?:primary |current )?working directory\s*:\s*(/[^\s<>\"'`]*)", re.IGNORECASE)
_REVIEW_OUTPUT = re.compile(r"review output file\s*:\s*(/[^\s<>\"'`]*)", re.IGNORECASE)
_ASSISTANT_ITEM_TYPES = frozenset({"function_call", "reasoning", "custom_tool_call"})

Event = tuple[str, dict[str, Any]]


class Protocol(enum.StrEnum):
    """Which wire protocol a request path speaks."""

    ANTHROPIC = "anthropic-messages"
    ANTHROPIC_COUNT_TOKENS = "anthropic-count-tokens"
    OPENAI_RESPONSES = "openai-responses"
    UNKNOWN = "unknown"


def protocol_for(path: str) -> Protocol:
    """The protocol of a request path; the query string and a trailing slash are ignored."""
    route = path.split("?", 1)[0].rstrip("/")
    if route.endswith("/messages/count_tokens"):
        return Protocol.ANTHROPIC_COUNT_TOKENS
    if route.endswith("/messages"):
        return Protocol.ANTHROPIC
    if route.endswith("/responses"):
        return Protocol.OPENAI_RESPONSES
    return Protocol.UNKNOWN


@attrs.frozen
class ReplyContext:
    """What a reply needs from its request: model, workspace, turn number and an id seed."""

    model: str
    workspace: str
    turn: int
    seed: str
    review_output: str = DEFAULT_REVIEW_OUTPUT

    @classmethod
    def from_request(cls, body: Mapping[str, Any], protocol: Protocol) -> ReplyContext:
        """Derive the context from the request body alone (no server state)."""
        text = user_text(body, protocol)
        model = body.get("model")
        return cls(
            model=model if isinstance(model, str) and model else "scripted-model",
            workspace=workspace_of(body, protocol),
            turn=assistant_turns(body, protocol),
            seed=hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:12],
            review_output=review_output_of(body, protocol),
        )

    def tool_id(self, prefix: str, index: int) -> str:
        """A tool-call id unique within the conversation and stable across runs."""
        return f"{prefix}_{self.seed}_{self.turn:02d}_{index:02d}"


# --------------------------------------------------------------------------- reading requests


def _text_parts(content: object, text_types: frozenset[str]) -> Iterator[str]:
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for block in content:
            if isinstance(block, Mapping) and block.get("type") in text_types:
                text = block.get("text")
                if isinstance(text, str):
                    yield text


def _messages(body: Mapping[str, Any], protocol: Protocol) -> list[Mapping[str, Any]]:
    key = "input" if protocol is Protocol.OPENAI_RESPONSES else "messages"
    items = body.get(key)
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    if not isinstance(items, list):
        return []
    return [item for item in items if isinstance(item, Mapping)]


def user_text(body: Mapping[str, Any], protocol: Protocol) -> str:
    """The text the user authored: text blocks of user messages, joined by newlines.

    Tool results, the system prompt (``system``, ``instructions``) and text blocks that open
    with ``<system-reminder>`` (context Claude Code injects into user messages) are excluded, so
    a rule cannot match on text the model or the agent's own harness put into the conversation.
    """
    text_types = frozenset({"text", "input_text"})
    parts = [
        part
        for message in _messages(body, protocol)
        if message.get("role") == "user"
        for part in _text_parts(message.get("content"), text_types)
        if not part.lstrip().startswith(SYSTEM_REMINDER)
    ]
    return "\n".join(parts)


def assistant_turns(body: Mapping[str, Any], protocol: Protocol) -> int:
    """How many assistant turns the request already holds (a run of assistant items is one turn)."""
    turns = 0
    in_run = False
    for item in _messages(body, protocol):
        is_assistant = item.get("role") == "assistant" or item.get("type") in _ASSISTANT_ITEM_TYPES
        if is_assistant and not in_run:
            turns += 1
        in_run = is_assistant
    return turns


def workspace_of(body: Mapping[str, Any], protocol: Protocol) -> str:
    """The working directory the agent states (``Working directory: /path``), else ``/workspace``."""
    system = body.get("instructions" if protocol is Protocol.OPENAI_RESPONSES else "system")
    texts = [*_text_parts(system, frozenset({"text", "input_text"}))]
    for message in _messages(body, protocol):
        texts.extend(_text_parts(message.get("content"), frozenset({"text", "input_text"})))
    for text in texts:
        found = _WORKDIR.search(text)
        if found:
            return found.group(1).rstrip(".,;:")
    return DEFAULT_WORKSPACE


def review_output_of(body: Mapping[str, Any], protocol: Protocol) -> str:
    """The review artifact path the user prompt states (``Review output file: /path``), else the default."""
    for message in _messages(body, protocol):
        if message.get("role") != "user":
            continue
        for text in _text_parts(message.get("content"), frozenset({"text", "input_text"})):
            found = _REVIEW_OUTPUT.search(text)
            if found:
                return found.group(1).rstrip(".,;:")
    return DEFAULT_REVIEW_OUTPUT


def expand_workspace(value: Any, workspace: str, review_output: str = DEFAULT_REVIEW_OUTPUT) -> Any:
    """Replace ``{workspace}`` and ``{review_output}`` in every string of a tool input (keys untouched)."""
    if isinstance(value, str):
        expanded = value.replace(WORKSPACE_PLACEHOLDER, workspace)
        return expanded.replace(REVIEW_OUTPUT_PLACEHOLDER, review_output)
    if isinstance(value, Mapping):
        return {key: expand_workspace(item, workspace, review_output) for key, item in value.items()}
    if isinstance(value, list):
        return [expand_workspace(item, workspace, review_output) for item in value]
    return value


# --------------------------------------------------------------------------- Anthropic Messages


def anthropic_usage(turn: Turn) -> Any:
    """The usage object on the Anthropic wire: scripted fields only (or ``raw_usage`` verbatim)."""
    return turn.raw_usage if turn.raw_usage is not None else turn.usage.present()


def anthropic_content(turn: Turn, ctx: ReplyContext) -> list[dict[str, Any]]:
    """Content blocks: a text block when ``say`` is scripted, then one tool_use per tool."""
    blocks: list[dict[str, Any]] = []
    if turn.say is not None:
        blocks.append({"type": "text", "text": turn.say})
    for index, tool in enumerate(turn.tools):
        blocks.append(
            {
                "type": "tool_use",
                "id": ctx.tool_id("toolu", index),
                "name": tool.name,
                "input": expand_workspace(tool.input, ctx.workspace, ctx.review_output),
            }
        )
    return blocks


def anthropic_message(turn: Turn, ctx: ReplyContext) -> dict[str, Any]:
    """The plain-JSON Messages reply."""
    return {
        "id": f"msg_{ctx.seed}_{ctx.turn:02d}",
        "type": "message",
        "role": "assistant",
        "model": ctx.model,
        "content": anthropic_content(turn, ctx),
        "stop_reason": turn.effective_stop_reason,
        "stop_sequence": None,
        "usage": anthropic_usage(turn),
    }


def _halves(text: str) -> list[str]:
    middle = len(text) // 2
    return [part for part in (text[:middle], text[middle:]) if part] or [""]


def anthropic_events(turn: Turn, ctx: ReplyContext) -> list[Event]:
    """The SSE event sequence the real API streams for this reply (ping included)."""
    message = anthropic_message(turn, ctx)
    start = {**message, "content": [], "stop_reason": None}
    events: list[Event] = [
        ("message_start", {"type": "message_start", "message": start}),
        ("ping", {"type": "ping"}),
    ]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            opening: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": part} for part in _halves(block["text"])]
        else:
            opening = {**block, "input": {}}
            payload = json.dumps(block["input"], separators=(",", ":"))
            deltas = [{"type": "input_json_delta", "partial_json": part} for part in _halves(payload)]
        events.append(
            ("content_block_start", {"type": "content_block_start", "index": index, "content_block": opening})
        )
        events.extend(
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
            for delta in deltas
        )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    delta = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    events.append(("message_delta", {"type": "message_delta", "delta": delta, "usage": message["usage"]}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def count_tokens_reply(body: Mapping[str, Any]) -> dict[str, Any]:
    """``/v1/messages/count_tokens``: a deterministic estimate (about four bytes per token)."""
    size = len(json.dumps(body, separators=(",", ":")))
    return {"input_tokens": max(1, size // 4)}


_ANTHROPIC_ERRORS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def anthropic_error(status: int, message: str = "") -> dict[str, Any]:
    """An error body in the Anthropic shape: ``{type: error, error: {type, message}}``."""
    kind = _ANTHROPIC_ERRORS.get(status, "invalid_request_error" if status < 500 else "api_error")
    return {"type": "error", "error": {"type": kind, "message": message or f"scripted {kind} ({status})"}}


# --------------------------------------------------------------------------- OpenAI Responses


def openai_usage(turn: Turn) -> Any:
    """Responses usage: ``input_tokens`` is the whole input; cache fields only when scripted."""
    if turn.raw_usage is not None:
        return turn.raw_usage
    usage = turn.usage
    wire: dict[str, Any] = {}
    if usage.input_tokens is not None:
        cached = (usage.cache_read_input_tokens or 0) + (usage.cache_creation_input_tokens or 0)
        wire["input_tokens"] = usage.input_tokens + cached
    details: dict[str, int] = {}
    if usage.cache_read_input_tokens is not None:
        details["cached_tokens"] = usage.cache_read_input_tokens
    if usage.cache_creation_input_tokens is not None:
        details["cache_write_tokens"] = usage.cache_creation_input_tokens
    if details:
        wire["input_tokens_details"] = details
    if usage.output_tokens is not None:
        wire["output_tokens"] = usage.output_tokens
    if "input_tokens" in wire and "output_tokens" in wire:
        wire["total_tokens"] = wire["input_tokens"] + wire["output_tokens"]
    return wire


def openai_output(turn: Turn, ctx: ReplyContext) -> list[dict[str, Any]]:
    """Output items: a message item when ``say`` is scripted, then one function_call per tool."""
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
        arguments = expand_workspace(tool.input, ctx.workspace, ctx.review_output)
        items.append(
            {
                "id": ctx.tool_id("fc", index),
                "type": "function_call",
                "status": "completed",
                "call_id": ctx.tool_id("call", index),
                "name": tool.name,
                "arguments": json.dumps(arguments, separators=(",", ":")),
            }
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
    """The SSE event sequence of a streamed Responses reply, numbered by ``sequence_number``."""
    final = openai_response(turn, ctx, created_at=created_at)
    running = {**final, "status": "in_progress", "output": [], "usage": None}
    raw: list[dict[str, Any]] = [
        {"type": "response.created", "response": running},
        {"type": "response.in_progress", "response": running},
    ]
    for position, item in enumerate(final["output"]):
        raw.extend(_openai_item_events(position, item))
    raw.append({"type": "response.completed", "response": final})
    return [(event["type"], {**event, "sequence_number": number}) for number, event in enumerate(raw)]


def _openai_item_events(position: int, item: dict[str, Any]) -> list[dict[str, Any]]:
    at = {"output_index": position, "item_id": item["id"]}
    if item["type"] == "function_call":
        arguments = item["arguments"]
        return [
            {
                "type": "response.output_item.added",
                "output_index": position,
                "item": {**item, "status": "in_progress", "arguments": ""},
            },
            *(
                {"type": "response.function_call_arguments.delta", **at, "delta": part}
                for part in _halves(arguments)
            ),
            {"type": "response.function_call_arguments.done", **at, "arguments": arguments},
            {"type": "response.output_item.done", "output_index": position, "item": item},
        ]
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
            for piece in _halves(text)
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
