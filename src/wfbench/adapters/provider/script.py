"""The scripted provider's input: a YAML script of conversations, loaded and validated.

A script says, per conversation, what the model answers on each turn: text (``say``), tool
calls, the exact usage it reports, and injected failures. See ``docs/provider-script.md``.

Validation is strict: an unknown key, a wrong type or an out-of-range value raises one
:class:`~wfbench.domain.errors.InputError` naming the file, the rule and turn, and the field.
A usage field that is not scripted stays ``None`` here and is *omitted on the wire*.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import yaml

from wfbench.adapters.provider.jitter import UsageJitter, parse_jitter
from wfbench.domain.errors import InputError

USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)
#: Thinking tokens: only the Gemini wire reports them apart (``thoughtsTokenCount``); on the
#: Anthropic and OpenAI wires thinking is part of ``output_tokens``, so it is not sent there.
THINKING_KEY = "thinking_tokens"
TURN_KEYS = frozenset(
    {
        "say",
        "tools",
        "usage",
        "raw_usage",
        "status",
        "stop_reason",
        "truncate_after_events",
        "stall_s",
        "malformed",
        "reset",
    }
)
STOP_REASONS = frozenset({"end_turn", "tool_use", "max_tokens", "stop_sequence", "pause_turn", "refusal"})
MAX_STALL_S = 600.0
MIN_ERROR_STATUS = 400
MAX_STATUS = 599


@attrs.frozen
class ScriptedUsage:
    """Token counts one turn reports; ``None`` means *not scripted* and is omitted on the wire."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    #: Gemini's ``thoughtsTokenCount`` (not sent on the other wires; see :data:`THINKING_KEY`).
    thinking_tokens: int | None = None

    def present(self) -> dict[str, int]:
        """The scripted fields only, in wire order (absent fields are left out, never 0)."""
        return {key: value for key in USAGE_KEYS if (value := getattr(self, key)) is not None}


@attrs.frozen
class ToolCall:
    """One tool request the model makes: a tool name and its JSON input (a mapping).

    ``text`` set makes it a *custom* tool call whose input is free text (Codex's ``apply_patch``
    is such a tool): a ``custom_tool_call`` item on OpenAI Responses; on Anthropic Messages a
    ``tool_use`` whose input is ``{"input": text}``. ``input`` is then empty.
    """

    name: str
    input: Mapping[str, Any] = attrs.field(factory=dict, hash=False)
    text: str | None = None


@attrs.frozen
class Turn:
    """One scripted model reply (or one injected failure).

    ``raw_usage``, when set, replaces the usage object verbatim (any JSON, unvalidated) so a
    consumer's refusal of nonsense usage can be tested. ``status`` >= 400 answers with that HTTP
    error; ``malformed`` sends an invalid JSON body; ``reset`` resets the connection without
    answering; ``truncate_after_events`` closes the connection after N events.
    """

    say: str | None = None
    tools: tuple[ToolCall, ...] = ()
    usage: ScriptedUsage = ScriptedUsage()
    raw_usage: Any = attrs.field(default=None, hash=False)
    status: int | None = None
    stop_reason: str | None = None
    truncate_after_events: int | None = None
    stall_s: float | None = None
    malformed: bool = False
    reset: bool = False

    @property
    def effective_stop_reason(self) -> str:
        """``tool_use`` when tools are called, else ``end_turn``; a scripted stop_reason wins."""
        if self.stop_reason is not None:
            return self.stop_reason
        return "tool_use" if self.tools else "end_turn"


EMPTY_END_TURN = Turn()
DEFAULT_TURN = Turn(say="Nothing is scripted for this prompt.")
#: The reply to an agent's context-compaction request (Codex): a summary, usage not reported.
DEFAULT_COMPACTION = Turn(say="Summary of the work so far: continue with the next step of the task.")


#: The wire protocols a rule may be limited to (``protocol:``), as the provider names them.
RULE_PROTOCOLS = frozenset({"anthropic-messages", "openai-responses", "gemini"})


@attrs.frozen
class Conversation:
    """A rule: when every ``when`` string occurs in the user text, turn i answers request i.

    ``protocol``, when set, limits the rule to requests of that wire protocol, so one script can
    answer Claude Code (Messages) and Codex (Responses) differently for the same prompt.
    ``offers``, when set, limits it to requests that offer the model every one of those tool
    names (exactly spelled): two agents on one protocol (Claude Code's ``Write``, OpenCode's
    ``write``) get their own rules for the same prompt.
    """

    when: tuple[str, ...]
    turns: tuple[Turn, ...]
    protocol: str | None = None
    #: ``burst: {status: 529, requests: N}``: the first N requests this rule matches, counted over
    #: the provider's life and across conversations, get that error instead of their turn — a
    #: rate-limit burst (the one stateful rule; concurrent requests take the N in arrival order).
    burst: Turn | None = None
    burst_requests: int = 0
    offers: tuple[str, ...] = ()
    #: ``jitter: false``: the script's usage jitter leaves this rule's usage exact.
    jitter: bool = True

    @property
    def jitter_key(self) -> str:
        """The rule's name for the usage jitter: what it matches (``when``, protocol, offers), not where."""
        return "\x1f".join(("\x1e".join(self.when), self.protocol or "", "\x1e".join(self.offers)))

    def matches(
        self, user_text: str, protocol: str | None = None, tools: frozenset[str] = frozenset()
    ) -> bool:
        """True when every ``when`` string occurs in ``user_text`` (and the protocol and tools fit)."""
        if self.protocol is not None and protocol is not None and protocol != self.protocol:
            return False
        if not tools.issuperset(self.offers):
            return False
        return all(needle in user_text for needle in self.when)


@attrs.frozen
class ProviderScript:
    """A whole script: the rules in order and the reply for requests that match none."""

    conversations: tuple[Conversation, ...] = ()
    default: Turn = DEFAULT_TURN
    source: str = "<script>"
    #: What a compaction request is answered with (its ``say`` is the summary; see the docs).
    compaction: Turn = DEFAULT_COMPACTION
    #: ``jitter: {seed, usage}``: scripted usage scaled per cell and rule (``jitter.py``); ``None``: exact.
    jitter: UsageJitter | None = None

    @classmethod
    def from_mapping(cls, raw: object, *, source: str = "<script>") -> ProviderScript:
        """Validate a parsed script; raise :class:`InputError` naming the rule, turn and field."""
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            raise InputError("the script must be a mapping with `conversations`", source=source)
        _refuse_unknown(raw, {"default", "conversations", "compaction", "jitter"}, source=source, locator="")
        default = DEFAULT_TURN
        if "default" in raw:
            default = _turn(raw["default"], source=source, locator="default")
        compaction = DEFAULT_COMPACTION
        if "compaction" in raw:
            compaction = _compaction(raw["compaction"], source=source)
        rules = raw.get("conversations", [])
        if not isinstance(rules, list):
            raise InputError("must be a list", source=source, field="conversations")
        conversations = tuple(
            _conversation(rule, source=source, index=index) for index, rule in enumerate(rules)
        )
        jitter = None if raw.get("jitter") is None else parse_jitter(raw["jitter"], source=source)
        return cls(
            conversations=conversations, default=default, source=source, compaction=compaction, jitter=jitter
        )

    @classmethod
    def from_yaml(cls, text: str, *, source: str = "<script>") -> ProviderScript:
        """Parse YAML text (``yaml.safe_load``) and validate it."""
        try:
            raw = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = "" if mark is None else f" at line {mark.line + 1}, column {mark.column + 1}"
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            reason = f"not valid YAML{where} ({exc.__class__.__name__}: {problem})"
            raise InputError(reason, source=source) from exc
        except RecursionError:
            raise InputError("not valid YAML (nested too deeply)", source=source) from None
        return cls.from_mapping(raw, source=source)

    @classmethod
    def load(cls, path: str | Path) -> ProviderScript:
        """Read and validate a script file."""
        source = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read the script ({exc.__class__.__name__})", source=source) from exc
        return cls.from_yaml(text, source=source)


def _refuse_unknown(
    raw: Mapping[Any, Any], allowed: set[str] | frozenset[str], *, source: str, locator: str
) -> None:
    unknown = sorted(str(key) for key in raw if key not in allowed)
    if unknown:
        raise InputError(
            f"unknown key (allowed: {', '.join(sorted(allowed))})",
            source=source,
            locator=locator,
            field=unknown[0],
        )


def _conversation(raw: object, *, source: str, index: int) -> Conversation:
    locator = f"conversations[{index}]"
    if not isinstance(raw, Mapping):
        raise InputError("must be a mapping with `when` and `turns`", source=source, locator=locator)
    allowed = {"when", "turns", "protocol", "burst", "jitter", "offers"}
    _refuse_unknown(raw, allowed, source=source, locator=locator)
    jitter = raw.get("jitter", True)
    if not isinstance(jitter, bool):
        raise InputError("must be true or false", source=source, locator=locator, field="jitter")
    burst, burst_requests = _burst(raw.get("burst"), source=source, locator=locator)
    protocol = raw.get("protocol")
    if protocol is not None and protocol not in RULE_PROTOCOLS:
        raise InputError(
            f"must be one of {', '.join(sorted(RULE_PROTOCOLS))}",
            source=source,
            locator=locator,
            field="protocol",
        )
    when = raw.get("when")
    if isinstance(when, str):
        when = [when]
    if not isinstance(when, list) or not when or not all(isinstance(w, str) and w for w in when):
        raise InputError(
            "must be a non-empty list of non-empty strings", source=source, locator=locator, field="when"
        )
    offers = raw.get("offers", [])
    if not isinstance(offers, list) or not all(isinstance(name, str) and name for name in offers):
        raise InputError("must be a list of tool names", source=source, locator=locator, field="offers")
    turns = raw.get("turns")
    if not isinstance(turns, list) or not turns:
        raise InputError("must be a non-empty list of turns", source=source, locator=locator, field="turns")
    return Conversation(
        jitter=jitter,
        protocol=protocol,
        burst=burst,
        burst_requests=burst_requests,
        when=tuple(when),
        offers=tuple(offers),
        turns=tuple(
            _turn(turn, source=source, locator=f"{locator}.turns[{number}]")
            for number, turn in enumerate(turns)
        ),
    )


def _burst(raw: object, *, source: str, locator: str) -> tuple[Turn | None, int]:
    """``burst: {status, requests}`` as the error turn and its count (``None, 0`` when absent)."""
    if raw is None:
        return None, 0
    where = f"{locator}.burst"
    if not isinstance(raw, Mapping):
        raise InputError("must be a mapping with `status` and `requests`", source=source, locator=where)
    _refuse_unknown(raw, {"status", "requests"}, source=source, locator=where)
    status, requests = raw.get("status"), raw.get("requests")
    if not isinstance(status, int) or _not_int(status) or not MIN_ERROR_STATUS <= status <= MAX_STATUS:
        raise InputError(
            f"must be an HTTP error code between {MIN_ERROR_STATUS} and {MAX_STATUS}",
            source=source,
            locator=where,
            field="status",
        )
    if not isinstance(requests, int) or _not_int(requests) or requests < 1:
        raise InputError("must be a positive integer", source=source, locator=where, field="requests")
    return Turn(status=status), requests


def _turn(raw: object, *, source: str, locator: str) -> Turn:
    if not isinstance(raw, Mapping):
        raise InputError("a turn must be a mapping", source=source, locator=locator)
    _refuse_unknown(raw, TURN_KEYS, source=source, locator=locator)

    def bad(field: str, reason: str) -> InputError:
        return InputError(reason, source=source, locator=locator, field=field)

    say = raw.get("say")
    if say is not None and not isinstance(say, str):
        raise bad("say", "must be a string")
    status = raw.get("status")
    if status is not None and (_not_int(status) or not MIN_ERROR_STATUS <= status <= MAX_STATUS):
        raise bad("status", f"must be an HTTP error code between {MIN_ERROR_STATUS} and {MAX_STATUS}")
    stop_reason = raw.get("stop_reason")
    if stop_reason is not None and (not isinstance(stop_reason, str) or stop_reason not in STOP_REASONS):
        raise bad("stop_reason", f"must be one of {', '.join(sorted(STOP_REASONS))}")
    truncate = raw.get("truncate_after_events")
    if truncate is not None and (_not_int(truncate) or truncate < 0):
        raise bad("truncate_after_events", "must be a non-negative integer")
    stall = raw.get("stall_s")
    if stall is not None and (
        isinstance(stall, bool) or not isinstance(stall, int | float) or not 0 <= stall <= MAX_STALL_S
    ):
        raise bad("stall_s", f"must be a number of seconds between 0 and {MAX_STALL_S:g}")
    flags = {}
    for flag in ("malformed", "reset"):
        value = raw.get(flag, False)
        if not isinstance(value, bool):
            raise bad(flag, "must be true or false")
        flags[flag] = value
    if "usage" in raw and "raw_usage" in raw:
        raise bad("raw_usage", "cannot be combined with `usage`")
    return Turn(
        say=say,
        tools=_tools(raw.get("tools", []), bad),
        usage=_usage(raw.get("usage", {}), bad),
        raw_usage=raw.get("raw_usage"),
        status=status,
        stop_reason=stop_reason,
        truncate_after_events=truncate,
        stall_s=None if stall is None else float(stall),
        malformed=flags["malformed"],
        reset=flags["reset"],
    )


def _compaction(raw: object, *, source: str) -> Turn:
    """The compaction reply: a turn of ``say`` and ``usage`` only (a summary is text, never a tool)."""
    if isinstance(raw, Mapping):
        _refuse_unknown(raw, {"say", "usage"}, source=source, locator="compaction")
    return _turn(raw, source=source, locator="compaction")


def _tools(raw: object, bad: Any) -> tuple[ToolCall, ...]:
    if not isinstance(raw, list):
        raise bad("tools", "must be a list of {name, input} or {name, text}")
    calls = []
    for number, tool in enumerate(raw):
        field = f"tools[{number}]"
        if not isinstance(tool, Mapping):
            raise bad(field, "must be a mapping with `name` and `input` (or `text`)")
        unknown = sorted(str(key) for key in tool if key not in {"name", "input", "text"})
        if unknown:
            raise bad(f"{field}.{unknown[0]}", "unknown key (allowed: input, name, text)")
        name = tool.get("name")
        if not isinstance(name, str) or not name:
            raise bad(f"{field}.name", "must be a non-empty string")
        if "text" in tool:
            text = tool["text"]
            if "input" in tool:
                raise bad(f"{field}.text", "cannot be combined with `input` (text makes a custom tool call)")
            if not isinstance(text, str):
                raise bad(f"{field}.text", "must be a string (the custom tool's free-text input)")
            calls.append(ToolCall(name=name, text=text))
            continue
        tool_input = tool.get("input", {})
        if not isinstance(tool_input, Mapping):
            raise bad(f"{field}.input", "must be a mapping")
        calls.append(ToolCall(name=name, input=dict(tool_input)))
    return tuple(calls)


def _usage(raw: object, bad: Any) -> ScriptedUsage:
    if not isinstance(raw, Mapping):
        raise bad("usage", f"must be a mapping of {', '.join(USAGE_KEYS)}")
    allowed = (*USAGE_KEYS, THINKING_KEY)
    unknown = sorted(str(key) for key in raw if key not in allowed)
    if unknown:
        raise bad(f"usage.{unknown[0]}", f"unknown usage field (allowed: {', '.join(allowed)})")
    for key, value in raw.items():
        if value is None or _not_int(value) or value < 0:
            raise bad(f"usage.{key}", "must be a non-negative integer (leave it out when it is not reported)")
    return ScriptedUsage(
        input_tokens=raw.get("input_tokens"),
        output_tokens=raw.get("output_tokens"),
        cache_read_input_tokens=raw.get("cache_read_input_tokens"),
        cache_creation_input_tokens=raw.get("cache_creation_input_tokens"),
        thinking_tokens=raw.get(THINKING_KEY),
    )


def _not_int(value: object) -> bool:
    return isinstance(value, bool) or not isinstance(value, int)
