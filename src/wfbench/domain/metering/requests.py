"""What a model request may say: the key proxy's content allow-lists per protocol, as data and pure checks.

The proxy forwards the bytes it checked, so the body is decoded strictly
(:func:`decode_body`: UTF-8 only, no duplicate key anywhere, no ``NaN``),
and checked against an **allow-list**, never a deny-list: a field, block, source or item type
that is not listed here is refused until someone decides it is safe (a new provider feature
starts refused). What the lists keep out:

* anything that makes the *provider* reach the network for the agent (``url`` sources,
  ``image_url``/``file_url`` that are not ``data:`` URLs, server-side tools, MCP servers);
* provider-side state that crosses cells or escapes the wire meter (``file`` sources and
  ``file_id``, ``previous_response_id``, ``conversation``, ``prompt``, ``item_reference``,
  ``background``, ``store: true``, ``container``);
* fields that change the price (``service_tier``).

Each refusal names the field's path (``body.messages[1].content[0].source.type``); the proxy
answers 403 and the cell's row records it. Kinds: ``field`` (a field not on the list, or a value
it may not take), ``content`` (a block, source, part or item type not on the list),
``server-tool`` (a tool the provider runs), ``duplicate-key`` (one object names a key twice:
the provider might read the other value), ``body`` (not strict JSON, or not an object).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping

import attrs

__all__ = [
    "MESSAGES",
    "OUTPUT_CEILING",
    "RESPONSES",
    "BodyRefusal",
    "RequestRules",
    "check_request",
    "decode_body",
    "output_cap",
]

#: The output reserved for a request that sets no output cap (OpenAI Responses: Codex sends none):
#: the largest single-reply output of the models priced here (128k tokens), and the largest cap allowed.
OUTPUT_CEILING = 128_000


@attrs.frozen
class BodyRefusal:
    """Why a body is not forwarded: a closed-vocabulary kind, the field's path, a detail for people."""

    kind: str
    path: str
    detail: str

    def message(self) -> str:
        """``<path>: <detail>`` (what the 403 and the row carry)."""
        return f"{self.path}: {self.detail}"


@attrs.frozen
class RequestRules:
    """One protocol's allow-lists (pure data)."""

    #: Top-level fields a request may carry.
    fields: frozenset[str]
    #: Fields allowed only with one value (``store``: only ``false``).
    pinned: Mapping[str, object]
    #: ``tools[].type`` values of tools the agent runs itself (``None``: a tool with no type).
    tool_types: frozenset[str | None]
    #: Top-level fields whose presence is a server-side tool (reported as ``server-tool``).
    server_side: frozenset[str]
    #: Where the content is: ``messages`` (Anthropic: ``system`` and ``messages``) or ``input`` (Responses).
    content: str
    #: The field capping a reply's output tokens, and whether a request must set it.
    output_field: str
    output_required: bool


#: Anthropic Messages (``/v1/messages`` and ``count_tokens``): the fields Claude Code sends, and
#: the documented sampling fields. No ``mcp_servers``, ``container`` or ``service_tier``.
MESSAGES = RequestRules(
    fields=frozenset(
        [
            "model",
            "messages",
            "system",
            "max_tokens",
            "metadata",
            "stop_sequences",
            "stream",
            "temperature",
            "top_k",
            "top_p",
            "tools",
            "tool_choice",
            "thinking",
            "context_management",
            "output_config",
        ]
    ),
    pinned={},
    tool_types=frozenset({None, "custom"}),
    server_side=frozenset({"mcp_servers", "container"}),
    content="messages",
    output_field="max_tokens",
    output_required=True,
)
#: OpenAI Responses: the fields Codex sends (``store`` only ``false``; ``include`` only encrypted
#: reasoning), plus the output cap and sampling fields.
RESPONSES = RequestRules(
    fields=frozenset(
        [
            "model",
            "input",
            "instructions",
            "tools",
            "tool_choice",
            "parallel_tool_calls",
            "reasoning",
            "store",
            "stream",
            "include",
            "prompt_cache_key",
            "text",
            "client_metadata",
            "max_output_tokens",
            "temperature",
            "top_p",
            "metadata",
        ]
    ),
    pinned={"store": False},
    tool_types=frozenset({"function", "custom", "local_shell", "tool_search"}),
    server_side=frozenset(),
    content="input",
    output_field="max_output_tokens",
    output_required=False,
)

#: What a model gateway (LiteLLM) sends upstream for an Anthropic request: Responses, plus ``user``
#: (Claude Code's ``metadata.user_id``, a session label: it carries nothing the provider acts on).
GATEWAY_RESPONSES = attrs.evolve(RESPONSES, fields=RESPONSES.fields | {"user"})

#: Messages content blocks, and the blocks a ``tool_result`` may hold.
MESSAGE_BLOCKS = frozenset(
    {"text", "image", "document", "tool_use", "tool_result", "thinking", "redacted_thinking"}
)
TOOL_RESULT_BLOCKS = frozenset({"text", "image", "document"})
#: Sources carried in the request itself (never ``url``, ``file`` or ``content``) and their fields.
SOURCE_FIELDS: Mapping[str, frozenset[str]] = {
    "base64": frozenset({"type", "media_type", "data"}),
    "text": frozenset({"type", "media_type", "data"}),
}
#: Responses input items and the fields each may carry (an item without ``type`` is a message).
ITEM_FIELDS: Mapping[str, frozenset[str]] = {
    "message": frozenset({"type", "id", "role", "content", "status"}),
    "function_call": frozenset({"type", "id", "call_id", "name", "arguments", "status"}),
    "function_call_output": frozenset({"type", "id", "call_id", "output", "status"}),
    "custom_tool_call": frozenset({"type", "id", "call_id", "name", "input", "status"}),
    "custom_tool_call_output": frozenset({"type", "id", "call_id", "output", "status"}),
    "local_shell_call": frozenset({"type", "id", "call_id", "action", "status"}),
    "local_shell_call_output": frozenset({"type", "id", "call_id", "output", "status"}),
    "reasoning": frozenset({"type", "id", "summary", "content", "encrypted_content", "status"}),
}
#: Responses content parts and their fields (``input_image``/``input_file`` only inline data).
PART_FIELDS: Mapping[str, frozenset[str]] = {
    "input_text": frozenset({"type", "text"}),
    "output_text": frozenset({"type", "text", "annotations", "logprobs"}),
    "refusal": frozenset({"type", "refusal"}),
    "input_image": frozenset({"type", "image_url", "detail"}),
    "input_file": frozenset({"type", "file_data", "filename"}),
}
#: Where an input item keeps content parts (a reasoning item's content is the provider's own, not read).
PARTS_FIELDS: Mapping[str, str] = {
    "message": "content",
    "function_call_output": "output",
    "custom_tool_call_output": "output",
    "local_shell_call_output": "output",
}
INCLUDE_VALUES = frozenset({"reasoning.encrypted_content"})


class _Duplicate(Exception):
    """An object names ``key`` twice."""

    def __init__(self, key: str) -> None:
        self.key = key


def _pairs(pairs: list[tuple[str, object]]) -> dict[str, object]:
    members = dict(pairs)
    if len(members) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Duplicate(key)
            seen.add(key)
    return members


def _not_json(literal: str) -> object:
    raise ValueError(f"{literal} is not JSON")


def _finite(literal: str) -> float:
    value = float(literal)
    if math.isinf(value):
        raise ValueError(f"{literal} is out of range")
    return value


#: The standard library's decoder (its C scanner) with strict hooks: no duplicate key, no NaN or
#: Infinity, no number that overflows. Nesting is bounded by the interpreter's recursion limit.
_DECODER = json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_not_json, parse_float=_finite)


def decode_body(body: bytes) -> tuple[dict[str, object] | None, BodyRefusal | None]:
    """The body as a JSON object, or why it is refused (not UTF-8, not strict JSON, not an object).

    Strict JSON here is :mod:`json` with hooks (a request body is decoded on every request, so the
    domain's located :func:`wfbench.domain.strict_json.loads` is not used: its depth walk costs a
    pass over the whole document).
    """
    try:
        value = _DECODER.decode(body.decode())
    except UnicodeDecodeError:
        return None, BodyRefusal("body", "body", "the request body is not UTF-8")
    except _Duplicate as duplicate:  # the provider might read the other value
        return None, BodyRefusal("duplicate-key", "body", f"Duplicate object key {_shown(duplicate.key)}")
    except (ValueError, RecursionError) as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        return None, BodyRefusal("body", "body", f"the request body is not strict JSON ({reason[:80]})")
    if not isinstance(value, dict):
        return None, BodyRefusal("body", "body", "the request body is not a JSON object")
    return value, None


def check_request(rules: RequestRules, body: Mapping[str, object]) -> BodyRefusal | None:
    """The first thing ``body`` says that ``rules`` do not allow, or None."""
    for name in sorted(body):
        path = f"body.{name}"
        if name in rules.server_side:
            return BodyRefusal("server-tool", path, "would make the provider reach the network")
        if name not in rules.fields:
            return BodyRefusal("field", path, "is not an allowed field")
        if name in rules.pinned and body[name] != rules.pinned[name]:
            return BodyRefusal("field", path, f"may only be {_json(rules.pinned[name])}")
    found = _check_tools(rules, body.get("tools"))
    if found is None and "include" in body:
        found = _check_include(body["include"])
    if found is not None:
        return found
    if rules.content == "messages":
        return _check_system(body.get("system")) or _check_messages(body.get("messages"))
    return _check_input(body.get("input"))


def output_cap(rules: RequestRules, body: Mapping[str, object]) -> int | BodyRefusal:
    """The most output tokens the reply can hold (what a budget reserves), or why there is none.

    Messages requires ``max_tokens`` (so does the API); a Responses request without
    ``max_output_tokens`` is reserved at :data:`OUTPUT_CEILING`. A cap must be a whole number from 1
    to the ceiling.
    """
    path = f"body.{rules.output_field}"
    value = body.get(rules.output_field)
    if value is None and not rules.output_required:
        return OUTPUT_CEILING
    if value is None:
        return BodyRefusal("field", path, "is required: the budget reserves the reply's worst case")
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= OUTPUT_CEILING:
        return BodyRefusal("field", path, f"must be a whole number from 1 to {OUTPUT_CEILING}")
    return value


def _check_tools(rules: RequestRules, tools: object) -> BodyRefusal | None:
    for index, tool in enumerate(_items(tools)):
        kind = tool.get("type") if isinstance(tool, dict) else "?"
        if kind not in rules.tool_types:
            return BodyRefusal(
                "server-tool",
                f"body.tools[{index}].type",
                f"server tool {_shown(kind)} would reach the network",
            )
    return None


def _check_include(include: object) -> BodyRefusal | None:
    for index, value in enumerate(_items(include)):
        if value not in INCLUDE_VALUES:
            return BodyRefusal("field", f"body.include[{index}]", f"{_shown(value)} is not allowed")
    return None


def _check_system(system: object) -> BodyRefusal | None:
    if isinstance(system, str):
        return None
    for index, block in enumerate(_items(system)):
        if not isinstance(block, dict) or block.get("type") != "text":
            return BodyRefusal("content", f"body.system[{index}].type", "only text blocks are allowed")
    return None


def _check_messages(messages: object) -> BodyRefusal | None:
    for index, message in enumerate(_items(messages)):
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            continue
        for place, block in enumerate(_items(content)):
            found = _check_block(block, MESSAGE_BLOCKS)
            if found is not None:
                return _under(f"body.messages[{index}].content[{place}]", found)
    return None


def _check_block(block: object, allowed: frozenset[str]) -> BodyRefusal | None:
    """One Messages content block: its type, its source, a tool result's own blocks (paths relative)."""
    kind = block.get("type") if isinstance(block, dict) else None
    if not isinstance(block, dict) or kind not in allowed:
        return BodyRefusal("content", ".type", f"block type {_shown(kind)} is not allowed")
    if "source" in block:
        found = _check_source(block["source"])
        if found is not None:
            return _under(".source", found)
    inner = block.get("content")
    if kind == "tool_result" and not isinstance(inner, str):
        for place, nested in enumerate(_items(inner)):
            found = _check_block(nested, TOOL_RESULT_BLOCKS)
            if found is not None:
                return _under(f".content[{place}]", found)
    return None


def _check_source(source: object) -> BodyRefusal | None:
    kind = source.get("type") if isinstance(source, dict) else None
    fields = SOURCE_FIELDS.get(kind) if isinstance(kind, str) else None
    if not isinstance(source, dict) or fields is None:
        return BodyRefusal("content", ".type", f"source type {_shown(kind)} is not allowed")
    return _extra_field(source, fields, "")


def _under(prefix: str, found: BodyRefusal) -> BodyRefusal:
    """``found`` with its (relative) path under ``prefix``: paths are only built for a refusal."""
    return attrs.evolve(found, path=prefix + found.path)


def _check_input(value: object) -> BodyRefusal | None:
    if isinstance(value, str):
        return None
    for index, item in enumerate(_items(value)):
        found = _check_item(item)
        if found is not None:
            return _under(f"body.input[{index}]", found)
    return None


def _check_item(item: object) -> BodyRefusal | None:
    """One Responses input item: its type, its fields and its parts (paths relative)."""
    if not isinstance(item, dict):
        return BodyRefusal("content", ".type", "an input item must be an object")
    kind = item.get("type", "message")
    if not isinstance(kind, str) or kind not in ITEM_FIELDS:
        return BodyRefusal("content", ".type", f"input item type {_shown(kind)} is not allowed")
    return _extra_field(item, ITEM_FIELDS[kind], "") or _check_parts(item, kind)


def _check_parts(item: Mapping[str, object], kind: str) -> BodyRefusal | None:
    """The content parts of a message, or of a tool output given as parts (a string is plain text)."""
    name = PARTS_FIELDS.get(kind)
    if name is None:
        return None
    parts = item.get(name)
    if isinstance(parts, str):
        return None
    for place, part in enumerate(_items(parts)):
        part_kind = part.get("type") if isinstance(part, dict) else None
        fields = PART_FIELDS.get(part_kind) if isinstance(part_kind, str) else None
        if not isinstance(part, dict) or fields is None:
            found: BodyRefusal | None = BodyRefusal(
                "content", ".type", f"content part type {_shown(part_kind)} is not allowed"
            )
        else:
            found = _extra_field(part, fields, "") or _inline_only(part)
        if found is not None:
            return _under(f".{name}[{place}]", found)
    return None


def _inline_only(part: Mapping[str, object]) -> BodyRefusal | None:
    """An image is a ``data:`` URL (never one the provider would fetch)."""
    url = part.get("image_url")
    if url is not None and not (isinstance(url, str) and url.startswith("data:")):
        return BodyRefusal("content", ".image_url", "only data: URLs are allowed")
    return None


def _extra_field(value: Mapping[str, object], fields: frozenset[str], path: str) -> BodyRefusal | None:
    """The first field of ``value`` (in name order) not in ``fields``, at ``path``.<name>."""
    if value.keys() <= fields:
        return None
    extra = min(name for name in value if name not in fields)
    return BodyRefusal("field", f"{path}.{extra}", "is not an allowed field")


def _items(value: object) -> list[object]:
    """A list as is; anything else (absent, or one value where a list belongs) as a one-item list."""
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _json(value: object) -> str:
    return json.dumps(value)


def _shown(value: object) -> str:
    """A value bounded and printable, for a refusal detail."""
    text = str(value)
    return "".join(ch if ch.isprintable() and ch.isascii() else "?" for ch in text)[:80]
