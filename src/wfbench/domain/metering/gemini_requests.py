"""What a Gemini API request may say: the key proxy's allow-lists for ``generateContent`` (pure).

The same rules as :mod:`wfbench.domain.metering.requests` (an allow-list, never a deny-list; each
refusal names the field's path), for the Gemini API's shape (what Gemini CLI 0.61.0 sends):

* top-level fields: ``contents``, ``systemInstruction``, ``tools``, ``toolConfig``,
  ``generationConfig``, ``safetySettings`` — never ``cachedContent`` (provider-side state that
  crosses cells and escapes the wire meter);
* a tool is only ``functionDeclarations`` (tools the agent runs itself): ``googleSearch``,
  ``googleSearchRetrieval``, ``urlContext``, ``codeExecution``, ``googleMaps``, ``computerUse``,
  ``retrieval`` and anything else make the provider act for the agent (``server-tool``);
* a content's ``role`` is ``user`` or ``model``, its parts carry ``text`` (with ``thought`` and
  ``thoughtSignature``), ``functionCall``, ``functionResponse`` or ``inlineData`` only — never
  ``fileData`` (a URI the provider would fetch, or the Files API's state) nor
  ``executableCode``/``codeExecutionResult`` (the provider's code execution).

The model is in the path (``/v1beta/models/{model}:…``), so the proxy checks it there.
"""

from __future__ import annotations

from collections.abc import Mapping

from wfbench.domain.metering.requests import BodyRefusal, RequestRules

__all__ = ["GEMINI", "check_gemini_content"]

GEMINI = RequestRules(
    fields=frozenset(
        ["contents", "systemInstruction", "tools", "toolConfig", "generationConfig", "safetySettings"]
    ),
    pinned={},
    tool_types=frozenset({None}),
    server_side=frozenset({"cachedContent"}),
    content="contents",
    output_field="maxOutputTokens",
    output_required=False,
)
#: Tool object keys of tools the agent runs itself.
TOOL_KEYS = frozenset({"functionDeclarations"})
ROLES = frozenset({"user", "model"})
#: Part keys (a part holds one kind of data plus these annotations).
PART_KEYS = frozenset(
    {"text", "thought", "thoughtSignature", "functionCall", "functionResponse", "inlineData", "videoMetadata"}
)
CONTENT_KEYS = frozenset({"role", "parts"})


def _list(value: object) -> list[object]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _check_tools(tools: object) -> BodyRefusal | None:
    for index, tool in enumerate(_list(tools)):
        if not isinstance(tool, Mapping):
            return BodyRefusal("content", f"body.tools[{index}]", "a tool must be an object")
        extra = sorted(key for key in tool if key not in TOOL_KEYS)
        if extra:
            return BodyRefusal(
                "server-tool",
                f"body.tools[{index}].{extra[0][:40]}",
                "would make the provider reach the network",
            )
    return None


def _check_parts(parts: object, path: str) -> BodyRefusal | None:
    for place, part in enumerate(_list(parts)):
        if not isinstance(part, Mapping):
            return BodyRefusal("content", f"{path}.parts[{place}]", "a part must be an object")
        extra = sorted(key for key in part if key not in PART_KEYS)
        if extra:
            return BodyRefusal("content", f"{path}.parts[{place}].{extra[0][:40]}", "is not an allowed part")
    return None


def _check_contents(contents: object) -> BodyRefusal | None:
    for index, content in enumerate(_list(contents)):
        path = f"body.contents[{index}]"
        if not isinstance(content, Mapping):
            return BodyRefusal("content", path, "a content must be an object")
        extra = sorted(key for key in content if key not in CONTENT_KEYS)
        if extra:
            return BodyRefusal("field", f"{path}.{extra[0][:40]}", "is not an allowed field")
        if content.get("role") not in ROLES:
            return BodyRefusal("content", f"{path}.role", "must be user or model")
        found = _check_parts(content.get("parts"), path)
        if found is not None:
            return found
    return None


def check_gemini_content(body: Mapping[str, object]) -> BodyRefusal | None:
    """The first tool, content or part of ``body`` the Gemini rules do not allow, or None.

    The top-level fields are :data:`GEMINI`'s (:func:`~wfbench.domain.metering.requests.check_request`).
    """
    found = _check_tools(body.get("tools"))
    if found is not None:
        return found
    system = body.get("systemInstruction")
    if isinstance(system, Mapping):
        found = _check_parts(system.get("parts"), "body.systemInstruction")
        if found is not None:
            return found
    return _check_contents(body.get("contents"))
