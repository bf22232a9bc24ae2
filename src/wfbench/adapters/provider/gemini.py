"""The Gemini API wire of the scripted provider: reading its requests, its replies, usage and errors.

Pure functions over parsed JSON. Shaped by what the Gemini CLI (0.61.0, ``@google/genai``
1.30) sends and accepts (``docs/research/gemini-cli.md``):

* **Routes**: ``POST /v1beta/models/{model}:generateContent`` (plain JSON) and
  ``:streamGenerateContent?alt=sse`` (SSE, ``data:`` lines only, no event names, no end
  event: the stream ends with the body); ``:countTokens``. The model is in the path, not the body.
* **Requests** are read by :mod:`wfbench.adapters.provider.gemini_read`.
* **Replies**: one candidate whose ``content.parts`` are a text part when ``say`` is scripted,
  then one ``functionCall`` part per tool (no id: the API sends none, the CLI makes its own);
  ``finishReason`` ``STOP`` (``MAX_TOKENS`` for a scripted ``max_tokens`` stop).
* **Usage** (``usageMetadata``): ``promptTokenCount`` is the whole input (uncached plus
  ``cachedContentTokenCount``), ``candidatesTokenCount`` the output without thinking,
  ``thoughtsTokenCount`` the thinking (scripted ``thinking_tokens``), ``totalTokenCount`` the
  sum. A field the script leaves out is absent; without both input and output scripted the
  counts that need them are absent too (never a guessed 0). The Gemini API has no cache-write
  count: a scripted ``cache_creation_input_tokens`` counts as uncached input.
* **Streaming**: the text, then the calls, then a last chunk with ``finishReason`` and the
  usage; every chunk repeats ``usageMetadata`` with the prompt counts (as the API does), so a
  stream cut after its first chunk still shows the input it was charged for.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from wfbench.adapters.provider.gemini_read import as_messages
from wfbench.adapters.provider.script import Turn
from wfbench.adapters.provider.wire import Event, ReplyContext

__all__ = ["count_tokens_reply", "gemini_chunks", "gemini_error", "gemini_response", "gemini_usage"]


def gemini_usage(turn: Turn) -> dict[str, Any] | None:
    """``usageMetadata`` for the scripted usage (``raw_usage`` verbatim); None when nothing is scripted."""
    if turn.raw_usage is not None:
        return dict(turn.raw_usage) if isinstance(turn.raw_usage, Mapping) else turn.raw_usage
    usage = turn.usage
    wire: dict[str, Any] = {}
    uncached = None
    if usage.input_tokens is not None:
        uncached = usage.input_tokens + (usage.cache_creation_input_tokens or 0)
        wire["promptTokenCount"] = uncached + (usage.cache_read_input_tokens or 0)
    if usage.output_tokens is not None:
        wire["candidatesTokenCount"] = usage.output_tokens
    if usage.cache_read_input_tokens is not None:
        wire["cachedContentTokenCount"] = usage.cache_read_input_tokens
    if usage.thinking_tokens is not None:
        wire["thoughtsTokenCount"] = usage.thinking_tokens
    if uncached is not None and usage.output_tokens is not None:
        wire["totalTokenCount"] = (
            wire["promptTokenCount"] + usage.output_tokens + (usage.thinking_tokens or 0)
        )
    return wire or None


def _parts(turn: Turn, ctx: ReplyContext) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    if turn.say is not None:
        parts.append({"text": turn.say})
    for tool in turn.tools:
        args = {"input": ctx.expand(tool.text)} if tool.text is not None else ctx.expand(tool.input)
        parts.append({"functionCall": {"name": tool.name, "args": args}})
    return parts


def _finish(turn: Turn) -> str:
    return "MAX_TOKENS" if turn.effective_stop_reason == "max_tokens" else "STOP"


def gemini_response(turn: Turn, ctx: ReplyContext) -> dict[str, Any]:
    """The plain-JSON ``generateContent`` reply."""
    candidate = {
        "content": {"role": "model", "parts": _parts(turn, ctx)},
        "finishReason": _finish(turn),
        "index": 0,
    }
    reply: dict[str, Any] = {"candidates": [candidate]}
    usage = gemini_usage(turn)
    if usage is not None:
        reply["usageMetadata"] = usage
    reply["modelVersion"] = ctx.model
    reply["responseId"] = f"resp_{ctx.seed}_{ctx.turn:02d}"
    return reply


def _prompt_only(usage: Any) -> Any:
    """What every chunk before the last repeats: the prompt counts (the output is not known yet)."""
    if not isinstance(usage, Mapping):
        return None
    kept = {k: v for k, v in usage.items() if k in ("promptTokenCount", "cachedContentTokenCount")}
    return kept or None


def gemini_chunks(turn: Turn, ctx: ReplyContext) -> list[Event]:
    """The SSE chunks of a streamed reply (event name empty: the Gemini API names none)."""
    final = gemini_response(turn, ctx)
    usage = final.get("usageMetadata")
    parts = final["candidates"][0]["content"]["parts"]
    head = {"modelVersion": final["modelVersion"], "responseId": final["responseId"]}
    chunks: list[dict[str, Any]] = []
    for part in parts:
        chunk: dict[str, Any] = {"candidates": [{"content": {"role": "model", "parts": [part]}, "index": 0}]}
        early = _prompt_only(usage)
        if early is not None:
            chunk["usageMetadata"] = early
        chunks.append({**chunk, **head})
    last: dict[str, Any] = {
        "candidates": [
            {
                "content": {"role": "model", "parts": []},
                "finishReason": final["candidates"][0]["finishReason"],
                "index": 0,
            }
        ]
    }
    if usage is not None:
        last["usageMetadata"] = usage
    chunks.append({**last, **head})
    return [("", chunk) for chunk in chunks]


_GEMINI_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def gemini_error(status: int, message: str = "") -> dict[str, Any]:
    """An error body in the Google API shape: ``{error: {code, message, status}}``."""
    name = _GEMINI_STATUS.get(status, "INVALID_ARGUMENT" if status < 500 else "INTERNAL")
    return {"error": {"code": status, "message": message or f"scripted {name} ({status})", "status": name}}


def count_tokens_reply(body: Mapping[str, Any]) -> dict[str, Any]:
    """``:countTokens``: a deterministic estimate (about four characters per token)."""
    size = sum(len(block["text"]) for message in as_messages(body) for block in message["content"])
    return {"totalTokens": max(1, size // 4)}
