"""Reading Gemini API requests for the scripted provider: the route, and ``contents`` as messages.

Gemini CLI (0.61.0) posts to ``/v1beta/models/{model}:streamGenerateContent?alt=sse`` (the model
in the path) a body of ``contents`` (``role`` ``user`` | ``model``; ``parts`` of ``text``,
``functionCall``, ``functionResponse``, ``thought`` text), ``systemInstruction``, ``tools``
(``functionDeclarations``) and ``generationConfig``. :func:`as_messages` turns ``contents`` into
the Messages shape the provider's common readers (:mod:`wfbench.adapters.provider.wire`: user
text, turn count, workspace) use. Pure; the replies are :mod:`wfbench.adapters.provider.gemini`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["GEMINI_PATH", "SKILL_TOOL", "as_messages", "model_of_path", "system_text"]

#: Gemini CLI's tool that loads a skill's instructions.
SKILL_TOOL = "activate_skill"

#: ``/v1beta/models/{model}:{method}`` (``v1`` and ``v1alpha`` too), the method one of the three.
GEMINI_PATH = re.compile(
    r"/v1(?:beta|alpha)?/models/([A-Za-z0-9][A-Za-z0-9._-]{0,127})"
    r":(generateContent|streamGenerateContent|countTokens)"
)


def model_of_path(path: str) -> tuple[str, str] | None:
    """``(model, method)`` of a Gemini API path (the query ignored), or None."""
    found = GEMINI_PATH.fullmatch(path.split("?", 1)[0].rstrip("/"))
    return None if found is None else (found.group(1), found.group(2))


def _part_blocks(parts: object) -> tuple[list[dict[str, Any]], bool]:
    """Text blocks of a content's parts (thoughts left out), and whether it holds a function part."""
    blocks: list[dict[str, Any]] = []
    calls = False
    for part in parts if isinstance(parts, list) else []:
        if not isinstance(part, Mapping):
            continue
        if "functionCall" in part or "functionResponse" in part:
            calls = True
        text = part.get("text")
        if isinstance(text, str) and not part.get("thought"):
            blocks.append({"type": "text", "text": text})
    return blocks, calls


def _activated_skills(parts: object) -> list[dict[str, Any]]:
    """The bodies ``activate_skill`` returned, as text blocks (the CLI injecting a skill's instructions)."""
    blocks: list[dict[str, Any]] = []
    for part in parts if isinstance(parts, list) else []:
        reply = part.get("functionResponse") if isinstance(part, Mapping) else None
        if not isinstance(reply, Mapping) or reply.get("name") != SKILL_TOOL:
            continue
        response = reply.get("response")
        output = response.get("output") if isinstance(response, Mapping) else None
        if isinstance(output, str):
            blocks.append({"type": "text", "text": output})
    return blocks


def as_messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``contents`` in the Messages shape: ``user`` and ``assistant`` messages of text blocks.

    A ``model`` content is an assistant turn. Tool results are not user text — except a skill's
    body that ``activate_skill`` loaded, which the CLI injects as Claude Code injects a skill's
    text after its ``Skill`` tool (so a rule can follow what a skill says, as the demo's
    candidate plan does).
    """
    messages: list[dict[str, Any]] = []
    contents = body.get("contents")
    for content in contents if isinstance(contents, list) else []:
        if not isinstance(content, Mapping):
            continue
        blocks, _ = _part_blocks(content.get("parts"))
        role = "assistant" if content.get("role") == "model" else "user"
        if role == "user":
            blocks += _activated_skills(content.get("parts"))
        messages.append({"role": role, "content": blocks})
    return messages


def system_text(body: Mapping[str, Any]) -> list[str]:
    """The text parts of ``systemInstruction`` (an object with ``parts``, or a string)."""
    system = body.get("systemInstruction")
    if isinstance(system, str):
        return [system]
    if isinstance(system, Mapping):
        blocks, _ = _part_blocks(system.get("parts"))
        return [block["text"] for block in blocks]
    return []
