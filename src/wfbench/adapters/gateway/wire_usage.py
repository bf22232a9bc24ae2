"""Reading the usage an upstream reported from a reply as it streams through the key proxy.

A :class:`UsageReader` is fed the reply body piece by piece (the bytes the agent receives) and
says at the end what usage the reply reported and whether it was read to the end: a stream cut
after ``message_start`` still reports the input tokens the upstream counted (a lower bound).
Two protocols, plain JSON and SSE each:

* **Anthropic Messages**: the ``message_start`` event's ``message.usage``, updated field by
  field by each ``message_delta`` event's ``usage`` (the final output count arrives there);
  complete at ``message_stop``. A JSON reply: its top-level ``usage``.
* **OpenAI Responses**: the ``response.completed`` event's ``response.usage``
  (``input_tokens`` includes cached tokens: ``input_tokens_details.cached_tokens`` are cache
  reads and ``cache_write_tokens`` cache writes, subtracted to get the uncached input, as the
  Anthropic fields count it). A JSON reply: its top-level ``usage``.
* **Gemini API**: every chunk's ``usageMetadata`` (the last one seen wins: the API repeats the
  prompt counts in every chunk and completes them in the last); complete at the chunk whose
  candidate has a ``finishReason``. ``promptTokenCount`` includes ``cachedContentTokenCount``
  (cache reads); the output is ``candidatesTokenCount`` plus ``thoughtsTokenCount`` (thinking is
  billed as output); the API reports no cache writes. A JSON reply: its top-level ``usageMetadata``.

A usage field the reply did not carry stays ``None``; a value that is not a non-negative integer
makes the reply unreadable (``None``), so a forged or garbled number is never summed. SSE events
are split on blank lines and decoded only when they can carry usage; an event over
:data:`MAX_EVENT_BYTES` (a huge content delta) is skipped, a JSON body over it is unreadable.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from typing import Any

import attrs

from wfbench.domain.session.records import Usage

MAX_EVENT_BYTES = 8 * 1024 * 1024
_ANTHROPIC_FIELDS = (
    "input_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "output_tokens",
)
_USAGE_EVENTS = {b"message_start", b"message_delta", b"message_stop", b"response.completed"}


class WireProtocol(enum.StrEnum):
    """How a route's replies report usage."""

    ANTHROPIC = "anthropic-messages"
    OPENAI_RESPONSES = "openai-responses"
    GEMINI = "gemini"


def _count(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"usage value is not a non-negative integer: {value!r}")
    return value


def anthropic_usage(raw: object) -> dict[str, int | None]:
    """The four fields of an Anthropic usage object (absent ones None). Raises ValueError."""
    if not isinstance(raw, Mapping):
        raise ValueError("usage is not an object")
    return {name: _count(raw.get(name)) for name in _ANTHROPIC_FIELDS}


def responses_usage(raw: object) -> Usage:
    """An OpenAI Responses usage object in the Anthropic fields. Raises ValueError."""
    if not isinstance(raw, Mapping):
        raise ValueError("usage is not an object")
    details = raw.get("input_tokens_details") or {}
    if not isinstance(details, Mapping):
        raise ValueError("input_tokens_details is not an object")
    total = _count(raw.get("input_tokens"))
    cached = _count(details.get("cached_tokens"))
    written = _count(details.get("cache_write_tokens"))
    uncached = None if total is None else total - (cached or 0) - (written or 0)
    if uncached is not None and uncached < 0:
        raise ValueError("cached tokens exceed input_tokens")
    return Usage(uncached, written, cached, _count(raw.get("output_tokens")))


def gemini_usage(raw: object) -> Usage:
    """A Gemini ``usageMetadata`` object in the Anthropic fields. Raises ValueError."""
    if not isinstance(raw, Mapping):
        raise ValueError("usageMetadata is not an object")
    prompt, cached = _count(raw.get("promptTokenCount")), _count(raw.get("cachedContentTokenCount"))
    tool_prompt = _count(raw.get("toolUsePromptTokenCount"))
    candidates, thoughts = _count(raw.get("candidatesTokenCount")), _count(raw.get("thoughtsTokenCount"))
    uncached = None if prompt is None else prompt - (cached or 0) + (tool_prompt or 0)
    if uncached is not None and uncached < 0:
        raise ValueError("cachedContentTokenCount exceeds promptTokenCount")
    output = None if candidates is None and thoughts is None else (candidates or 0) + (thoughts or 0)
    return Usage(uncached, None, cached, output)


def _finished(chunk: Mapping[str, Any]) -> bool:
    candidates = chunk.get("candidates")
    return isinstance(candidates, list) and any(
        isinstance(candidate, Mapping) and candidate.get("finishReason") for candidate in candidates
    )


class UsageReader:
    """Reads one reply's usage as its body streams past (see the module docstring)."""

    def __init__(self, protocol: WireProtocol, *, streaming: bool) -> None:
        self._protocol = protocol
        self._streaming = streaming
        self._buffer = bytearray()
        self._fields: dict[str, int | None] | None = None
        self._result: Usage | None = None
        self._complete = False
        self._broken = False

    def feed(self, data: bytes) -> None:
        """The next piece of the body."""
        if self._broken or self._complete:
            return
        self._buffer += data
        if not self._streaming:
            if len(self._buffer) > MAX_EVENT_BYTES:
                self._broken = True
                self._buffer.clear()
            return
        while not self._broken and not self._complete:
            end = self._event_end()
            if end is None:
                if len(self._buffer) > MAX_EVENT_BYTES:  # skip a huge event: it cannot carry usage
                    self._buffer.clear()
                return
            event, self._buffer = bytes(self._buffer[: end[0]]), self._buffer[end[1] :]
            self._event(event)

    @property
    def streaming(self) -> bool:
        """True for an SSE reply (read event by event), False for a plain JSON one (read at the end)."""
        return self._streaming

    @property
    def ended(self) -> bool:
        """True once the stream's last event (``message_stop``, ``response.completed``) was read intact.

        Nothing after it can change the usage: what is left of the body is its framing's end.
        """
        return self._streaming and self._complete and not self._broken

    def finish(self, *, cut: bool = False) -> tuple[Usage | None, bool]:
        """``(usage seen, complete)``: ``complete`` is False for a reply cut short or unparsable.

        ``cut`` says the body did not arrive whole. The usage of an incomplete Anthropic stream
        is what its ``message_start`` (and any ``message_delta``) reported; of anything else None.
        """
        if not self._streaming and not self._broken and not cut:
            try:
                self._json(json.loads(bytes(self._buffer)))
            except (ValueError, TypeError):
                self._broken = True
        if self._complete and not self._broken and not cut:
            return self._result, True
        partial = Usage(**self._fields) if self._fields is not None and not self._broken else None
        return partial, False

    def _event_end(self) -> tuple[int, int] | None:
        positions = [(self._buffer.find(sep), len(sep)) for sep in (b"\n\n", b"\r\n\r\n")]
        found = [(index, index + size) for index, size in positions if index >= 0]
        return min(found) if found else None

    def _event(self, raw: bytes) -> None:
        name = b""
        data: list[bytes] = []
        for line in raw.splitlines():
            if line.startswith(b"event:"):
                name = line[6:].strip()
            elif line.startswith(b"data:"):
                data.append(line[5:].lstrip())
        if not data or (name and name not in _USAGE_EVENTS):
            return
        try:
            event = json.loads(b"\n".join(data))
            if isinstance(event, Mapping):
                self._stream_event(event)
        except (ValueError, TypeError):
            self._broken = True

    def _stream_event(self, event: Mapping[str, Any]) -> None:
        if self._protocol is WireProtocol.GEMINI:
            if event.get("usageMetadata") is not None:
                self._fields = attrs.asdict(gemini_usage(event["usageMetadata"]))
            if _finished(event):
                self._result = Usage(**self._fields) if self._fields is not None else Usage()
                self._complete = True
            return
        kind = event.get("type")
        if self._protocol is WireProtocol.OPENAI_RESPONSES:
            if kind == "response.completed":
                response = event.get("response")
                usage = response.get("usage") if isinstance(response, Mapping) else None
                self._result = Usage() if usage is None else responses_usage(usage)
                self._complete = True
            return
        if kind == "message_start":
            message = event.get("message")
            usage = message.get("usage") if isinstance(message, Mapping) else None
            self._fields = anthropic_usage(usage) if usage is not None else dict.fromkeys(_ANTHROPIC_FIELDS)
        elif kind == "message_delta" and self._fields is not None and event.get("usage") is not None:
            update = anthropic_usage(event["usage"])
            self._fields.update({name: value for name, value in update.items() if value is not None})
        elif kind == "message_stop" and self._fields is not None:
            self._result = Usage(**self._fields)
            self._complete = True

    def _json(self, body: object) -> None:
        if not isinstance(body, Mapping):
            raise ValueError("the reply is not an object")
        usage = body.get("usageMetadata" if self._protocol is WireProtocol.GEMINI else "usage")
        if usage is None:
            self._result = Usage()
        elif self._protocol is WireProtocol.GEMINI:
            self._result = gemini_usage(usage)
        elif self._protocol is WireProtocol.OPENAI_RESPONSES:
            self._result = responses_usage(usage)
        else:
            self._result = Usage(**anthropic_usage(usage))
        self._complete = True
