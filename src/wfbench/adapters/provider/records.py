"""What the scripted provider decides and records: reply selection and recorded requests.

Selection is a pure function of the script and the request (no server state), which is what
makes concurrent conversations safe. Records keep what the agent sent, secret headers redacted.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

import attrs

from wfbench.adapters.provider import wire
from wfbench.adapters.provider.jitter import CELL_HEADER
from wfbench.adapters.provider.script import EMPTY_END_TURN, ProviderScript, ScriptedUsage, Turn
from wfbench.adapters.provider.wire import Protocol

REDACTED = "<redacted>"
SECRET_HEADERS = frozenset(
    {"x-api-key", "authorization", "proxy-authorization", "api-key", "cookie", "x-goog-api-key"}
)


class ReplySource(enum.StrEnum):
    """Where a reply came from."""

    SCRIPTED = "scripted"  # a turn of the matched rule
    EXHAUSTED = "exhausted"  # the rule matched but has no turn this far: an empty end_turn
    COMPACTION = "compaction"  # an agent's context-compaction request: the summary, no script turn
    DEFAULT = "default"  # no rule matched (the request is *unmatched*)
    COUNT_TOKENS = "count-tokens"
    NOT_FOUND = "not-found"
    BAD_REQUEST = "bad-request"


@attrs.frozen
class Selection:
    """The reply chosen for a request: the turn, its source, the rule index and the turn index."""

    turn: Turn
    source: ReplySource
    rule: int | None
    turn_index: int


def select_turn(
    script: ProviderScript,
    body: Mapping[str, Any],
    protocol: Protocol,
    headers: Mapping[str, str] | None = None,
) -> Selection:
    """Choose the reply from the request alone: first matching rule, turn = assistant turns so far.

    A compaction request (Codex, :func:`~wfbench.adapters.provider.wire.is_compaction`) is
    answered with the script's ``compaction`` summary plus a marker of the turn reached, and
    never consumes a scripted turn: the request after it resumes at that turn.
    """
    text = wire.user_text(body, protocol)
    index = wire.assistant_turns(body, protocol)
    tools = wire.offered_tools(body)
    matched = next(
        (rule for rule, c in enumerate(script.conversations) if c.matches(text, protocol.value, tools)), None
    )
    if protocol is Protocol.OPENAI_RESPONSES and wire.is_compaction(body, headers):
        summary = "\n\n".join(part for part in (script.compaction.say, wire.compaction_marker(index)) if part)
        return Selection(attrs.evolve(script.compaction, say=summary), ReplySource.COMPACTION, matched, index)
    for rule, conversation in enumerate(script.conversations):
        if conversation.matches(text, protocol.value, tools):
            if index < len(conversation.turns):
                cell = (headers or {}).get(CELL_HEADER, "")
                turn = conversation.turns[index]
                if conversation.jitter:
                    turn = jittered(script, turn, cell=cell, rule=conversation.jitter_key)
                return Selection(turn, ReplySource.SCRIPTED, rule, index)
            return Selection(EMPTY_END_TURN, ReplySource.EXHAUSTED, rule, index)
    return Selection(script.default, ReplySource.DEFAULT, None, index)


def jittered(script: ProviderScript, turn: Turn, *, cell: str, rule: str) -> Turn:
    """``turn`` with its usage scaled by the script's jitter for this cell and rule (its jitter key)."""
    jitter = script.jitter
    if jitter is None or not turn.usage.present():
        return turn
    factor = jitter.factor(cell, rule)
    usage = ScriptedUsage(
        **{key: jitter.scale(value, factor) for key, value in attrs.asdict(turn.usage).items()}
    )
    return attrs.evolve(turn, usage=usage)


@attrs.frozen
class RecordedRequest:
    """One request the provider received, as the agent sent it (secret header values redacted).

    ``body`` is the parsed JSON, or ``{"_unparsed": text}`` when it was not JSON. ``rule`` is the
    matched rule's index (``None`` when unmatched or not a model call); ``turn`` the number of
    assistant turns the request already held.
    """

    method: str
    path: str
    headers: Mapping[str, str] = attrs.field(hash=False)
    body: Any = attrs.field(hash=False)
    protocol: Protocol
    source: ReplySource
    rule: int | None
    turn: int | None
    stream: bool

    @property
    def unmatched(self) -> bool:
        """True when no rule matched a model call and the default answered it."""
        return self.source is ReplySource.DEFAULT

    def to_mapping(self) -> dict[str, Any]:
        """A JSON-ready mapping (one line of the request log)."""
        return {
            "method": self.method,
            "path": self.path,
            "headers": dict(self.headers),
            "body": self.body,
            "protocol": self.protocol.value,
            "source": self.source.value,
            "rule": self.rule,
            "turn": self.turn,
            "stream": self.stream,
        }


def redact_headers(pairs: list[tuple[str, str]]) -> dict[str, str]:
    """Lower-cased header names; values of secret-bearing headers replaced by ``<redacted>``."""
    headers: dict[str, str] = {}
    for name, value in pairs:
        key = name.lower()
        shown = REDACTED if key in SECRET_HEADERS else value
        headers[key] = f"{headers[key]}, {shown}" if key in headers else shown
    return headers
