"""Wire formats of the scripted provider: reading requests, and the Anthropic Messages replies.

Pure functions over parsed JSON (dicts), shared by :mod:`wfbench.adapters.provider.scripted`.
Reading a request (user text, turn number, workspace, placeholders, compaction) serves both
protocols; the OpenAI Responses replies live in :mod:`wfbench.adapters.provider.responses`.
Usage fields a script leaves out are absent on the Messages wire, never 0.

Agents put their own text into user messages (Claude Code's ``<system-reminder>``, Codex's
AGENTS.md block, ``<environment_context>``, injected ``<skill>`` bodies, compaction prompts and
summaries): :data:`HARNESS_PREFIXES` keeps it out of the text rules match on.
"""

from __future__ import annotations

import enum
import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from wfbench.adapters.provider import gemini_read as gemini
from wfbench.adapters.provider.script import Turn

DEFAULT_WORKSPACE = "/workspace"
WORKSPACE_PLACEHOLDER = "{workspace}"
#: The review artifact path a review prompt states (``Review output file: /path``); ``{review_output}``.
REVIEW_OUTPUT_PLACEHOLDER = "{review_output}"
DEFAULT_REVIEW_OUTPUT = "/review-output/review-output.json"
SYSTEM_REMINDER = "<system-reminder>"
#: ``{exec_session_id}``: the session id of the last command Codex left running (see ``exec_session_of``).
EXEC_SESSION_PLACEHOLDER = "{exec_session_id}"
#: Codex's compaction prompt (the request's last user message) and the summary message after it.
COMPACTION_PROMPT = "You are performing a CONTEXT CHECKPOINT COMPACTION"
COMPACTION_SUMMARY = "Another language model started to solve this problem"
#: A user text part that opens with one of these was put there by the agent's harness, not the user.
#: How OpenCode's ``skill`` tool result starts: the loaded skill's instructions.
SKILL_CONTENT = "<skill_content name="
HARNESS_PREFIXES = (
    SYSTEM_REMINDER,  # Claude Code
    "<environment_context>",  # Codex: cwd, shell, date
    "# AGENTS.md instructions for ",  # Codex: the AGENTS.md block
    "<user_instructions>",  # Codex (older): the AGENTS.md block
    "<skill>",  # Codex: a $skill mention's injected body
    "<session_context>",  # Gemini CLI: date, OS, workspace directories and their listing
    COMPACTION_PROMPT,
    COMPACTION_SUMMARY,
)
#: The marker a compaction summary carries so the conversation resumes at the right turn.
_COMPACTED = re.compile(r"\[wfbench compaction: (\d{1,6}) assistant turns?\]")
_EXEC_SESSION = re.compile(r"Process running with session ID (\d{1,12})")
_WORKDIR = re.compile(r"(?:primary |current )?working directory\s*:\s*(/[^\s<>\"'`]*)", re.IGNORECASE)
_CWD = re.compile(r"<cwd>(/[^<>\n]*)</cwd>")
#: The Gemini CLI's ``<session_context>``: ``- **Workspace Directories:**`` then ``  - /path``.
_GEMINI_DIRS = re.compile(r"\*\*Workspace Directories:\*\*\s*\n\s*- (/[^\s<>\"'`]*)")
#: A command that reads a skill's instructions (Codex: ``cat ~/.agents/skills/plan/SKILL.md``).
_SKILL_FILE = re.compile(r"(?:^|[/\s\"'])skills/[A-Za-z0-9_.:-]+/SKILL\.md\b")
_REVIEW_OUTPUT = re.compile(r"review output file\s*:\s*(/[^\s<>\"'`]*)", re.IGNORECASE)
_ASSISTANT_ITEM_TYPES = frozenset({"function_call", "reasoning", "custom_tool_call"})
_TOOL_OUTPUT_TYPES = frozenset({"function_call_output", "custom_tool_call_output"})

Event = tuple[str, dict[str, Any]]


class Protocol(enum.StrEnum):
    """Which wire protocol a request path speaks."""

    ANTHROPIC = "anthropic-messages"
    ANTHROPIC_COUNT_TOKENS = "anthropic-count-tokens"
    OPENAI_RESPONSES = "openai-responses"
    GEMINI = "gemini"
    GEMINI_COUNT_TOKENS = "gemini-count-tokens"
    UNKNOWN = "unknown"


def protocol_for(path: str) -> Protocol:
    """The protocol of a request path; the query string and a trailing slash are ignored."""
    route = path.split("?", 1)[0].rstrip("/")
    found = gemini.model_of_path(route)
    if found is not None:
        return Protocol.GEMINI_COUNT_TOKENS if found[1] == "countTokens" else Protocol.GEMINI
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
    #: The session id of the last command the agent reported as still running (Codex), if any.
    exec_session: int | None = None

    @classmethod
    def from_request(
        cls, body: Mapping[str, Any], protocol: Protocol, *, path_model: str | None = None
    ) -> ReplyContext:
        """Derive the context from the request alone (no server state); Gemini names the model in the path."""
        text = user_text(body, protocol)
        model = path_model or body.get("model")
        return cls(
            model=model if isinstance(model, str) and model else "scripted-model",
            workspace=workspace_of(body, protocol),
            turn=assistant_turns(body, protocol),
            seed=hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:12],
            review_output=review_output_of(body, protocol),
            exec_session=exec_session_of(body, protocol),
        )

    def expand(self, value: Any) -> Any:
        """A tool input with every placeholder this request can fill replaced."""
        return expand_workspace(value, self.workspace, self.review_output, self.exec_session)

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
    if protocol in (Protocol.GEMINI, Protocol.GEMINI_COUNT_TOKENS):
        return list(gemini.as_messages(body))
    key = "input" if protocol is Protocol.OPENAI_RESPONSES else "messages"
    items = body.get(key)
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    if not isinstance(items, list):
        return []
    return [item for item in items if isinstance(item, Mapping)]


def is_harness_text(part: str) -> bool:
    """True for a user text part the agent's own harness wrote (see :data:`HARNESS_PREFIXES`)."""
    return part.lstrip().startswith(HARNESS_PREFIXES)


def user_text(body: Mapping[str, Any], protocol: Protocol) -> str:
    """The text the user authored: text blocks of user messages, joined by newlines.

    Tool results, the system prompt (``system``, ``instructions``, Codex's ``developer``
    messages) and text parts the agent's harness injected into user messages
    (:data:`HARNESS_PREFIXES`) are excluded, so a rule cannot match on text the model or the
    agent's own harness put into the conversation.
    """
    text_types = frozenset({"text", "input_text"})
    messages = _messages(body, protocol)
    parts = [
        part
        for message in messages
        if message.get("role") == "user"
        for part in [*_text_parts(message.get("content"), text_types), *_loaded_skills(message)]
        if not is_harness_text(part)
    ]
    return "\n".join([*parts, *_skill_reads(messages)])


def _skill_reads(items: list[Mapping[str, Any]]) -> list[str]:
    """What Codex's commands that read a skill's ``SKILL.md`` printed (:data:`_SKILL_FILE`), as user text.

    Codex has no skill tool: the model loads a skill by reading its file with a command, the
    evidence wfbench counts (docs/agents.md). Its output is the skill's instructions, as
    OpenCode's ``skill`` result is, so a rule can follow what the skill says. Only the output
    of a call whose command names a ``skills/<name>/SKILL.md`` counts, never another command's.
    """
    readers = {
        item.get("call_id")
        for item in items
        if item.get("type") == "function_call" and _SKILL_FILE.search(str(item.get("arguments", "")))
    }
    return [
        text
        for item in items
        if item.get("type") in _TOOL_OUTPUT_TYPES and item.get("call_id") in readers - {None}
        for text in _output_texts(item.get("output"))
    ]


def _output_texts(output: object) -> list[str]:
    return [output] if isinstance(output, str) else list(_text_parts(output, frozenset({"input_text"})))


def _loaded_skills(message: Mapping[str, Any]) -> list[str]:
    """The skill bodies OpenCode's ``skill`` tool returned (:data:`SKILL_CONTENT`), as user text.

    OpenCode injects a skill's instructions as that tool's result, as Claude Code injects them
    after its ``Skill`` tool: a rule can follow what a skill says (the demo's candidate plan).
    """
    content = message.get("content")
    return [
        block["content"]
        for block in (content if isinstance(content, list) else [])
        if isinstance(block, Mapping)
        and block.get("type") == "tool_result"
        and isinstance(block.get("content"), str)
        and block["content"].startswith(SKILL_CONTENT)
    ]


def offered_tools(body: Mapping[str, Any]) -> frozenset[str]:
    """The tool names a request offers the model (Messages and Responses ``tools``, Gemini's declarations)."""
    names: set[str] = set()
    tools = body.get("tools")
    for tool in tools if isinstance(tools, list) else []:
        if not isinstance(tool, Mapping):
            continue
        declared = tool.get("functionDeclarations")
        for entry in [tool, *(declared if isinstance(declared, list) else [])]:
            name = entry.get("name") if isinstance(entry, Mapping) else None
            if isinstance(name, str):
                names.add(name)
    return frozenset(names)


def _is_assistant(item: Mapping[str, Any]) -> bool:
    return item.get("role") == "assistant" or item.get("type") in _ASSISTANT_ITEM_TYPES


def _compacted_turns(item: Mapping[str, Any]) -> int | None:
    """The turn count a compaction summary this provider wrote carries, or None."""
    if item.get("role") != "user":
        return None
    for part in _text_parts(item.get("content"), frozenset({"text", "input_text"})):
        found = _COMPACTED.search(part) if part.lstrip().startswith(COMPACTION_SUMMARY) else None
        if found:
            return int(found.group(1))
    return None


def assistant_turns(body: Mapping[str, Any], protocol: Protocol) -> int:
    """How many assistant turns the request already holds (a run of assistant items is one turn).

    After a compaction the history restarts from the summary this provider wrote: its marker
    says how many turns came before, and the turns after it are added, so the script resumes
    where it was instead of starting over.
    """
    turns = 0
    in_run = False
    for item in _messages(body, protocol):
        compacted = _compacted_turns(item)
        if compacted is not None:
            turns, in_run = compacted, False
            continue
        is_assistant = _is_assistant(item)
        if is_assistant and not in_run:
            turns += 1
        in_run = is_assistant
    return turns


def is_compaction(body: Mapping[str, Any], headers: Mapping[str, str] | None = None) -> bool:
    """True for an agent's context-compaction request (Codex), not a turn of the conversation.

    Codex marks it in ``x-codex-turn-metadata`` (``request_kind: compaction``) and ends the
    input with its compaction prompt as a user message; either is enough.
    """
    metadata = (headers or {}).get("x-codex-turn-metadata", "")
    if metadata:
        try:
            decoded = json.loads(metadata)
        except ValueError:
            decoded = None
        if isinstance(decoded, Mapping) and decoded.get("request_kind") == "compaction":
            return True
    items = _messages(body, Protocol.OPENAI_RESPONSES)
    if not items or items[-1].get("role") != "user":
        return False
    parts = list(_text_parts(items[-1].get("content"), frozenset({"text", "input_text"})))
    return bool(parts) and parts[0].lstrip().startswith(COMPACTION_PROMPT)


def compaction_marker(turns: int) -> str:
    """The marker a compaction summary ends with (read back by :func:`assistant_turns`)."""
    return f"[wfbench compaction: {turns} assistant turns]"


def exec_session_of(body: Mapping[str, Any], protocol: Protocol) -> int | None:
    """The session id in the last tool output that reports a command still running, or None.

    Codex answers an ``exec_command`` that outlives its ``yield_time_ms`` with
    ``Process running with session ID N`` (N random); a script polls it with ``write_stdin``
    and ``session_id: "{exec_session_id}"``.
    """
    found: int | None = None
    for item in _messages(body, protocol):
        if item.get("type") not in _TOOL_OUTPUT_TYPES:
            continue
        for text in _output_texts(item.get("output")):
            matches = _EXEC_SESSION.findall(text)
            if matches:
                found = int(matches[-1])
    return found


def workspace_of(body: Mapping[str, Any], protocol: Protocol) -> str:
    """The working directory the agent states, else ``/workspace``.

    Claude Code and the stand-in say ``… working directory: /path``; Codex states
    ``<cwd>/path</cwd>`` in its environment context.
    """
    system = body.get("instructions" if protocol is Protocol.OPENAI_RESPONSES else "system")
    texts = [*_text_parts(system, frozenset({"text", "input_text"})), *gemini.system_text(body)]
    for message in _messages(body, protocol):
        texts.extend(_text_parts(message.get("content"), frozenset({"text", "input_text"})))
    for text in texts:
        found = _WORKDIR.search(text)
        if found:
            return found.group(1).rstrip(".,;:")
        cwd = _CWD.search(text) or _GEMINI_DIRS.search(text)
        if cwd:
            return cwd.group(1).strip()
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


def expand_workspace(
    value: Any,
    workspace: str,
    review_output: str = DEFAULT_REVIEW_OUTPUT,
    exec_session: int | None = None,
) -> Any:
    """Replace the placeholders in every string of a tool input (keys untouched).

    ``{workspace}`` and ``{review_output}`` always; ``{exec_session_id}`` when the request holds
    a running command's session id — a value that is exactly the placeholder becomes the integer
    (``write_stdin`` wants a number), one that contains it gets the digits.
    """
    if isinstance(value, str):
        if exec_session is not None and value == EXEC_SESSION_PLACEHOLDER:
            return exec_session
        expanded = value.replace(WORKSPACE_PLACEHOLDER, workspace)
        expanded = expanded.replace(REVIEW_OUTPUT_PLACEHOLDER, review_output)
        if exec_session is not None:
            expanded = expanded.replace(EXEC_SESSION_PLACEHOLDER, str(exec_session))
        return expanded
    if isinstance(value, Mapping):
        return {
            key: expand_workspace(item, workspace, review_output, exec_session) for key, item in value.items()
        }
    if isinstance(value, list):
        return [expand_workspace(item, workspace, review_output, exec_session) for item in value]
    return value


# --------------------------------------------------------------------------- Anthropic Messages


def anthropic_usage(turn: Turn) -> Any:
    """The usage object on the Anthropic wire: scripted fields only (or ``raw_usage`` verbatim)."""
    return turn.raw_usage if turn.raw_usage is not None else turn.usage.present()


def anthropic_content(turn: Turn, ctx: ReplyContext) -> list[dict[str, Any]]:
    """Content blocks: a text block when ``say`` is scripted, then one tool_use per tool.

    A custom (free-text) tool call has no Messages form of its own: its text is the tool_use's
    ``input`` field.
    """
    blocks: list[dict[str, Any]] = []
    if turn.say is not None:
        blocks.append({"type": "text", "text": turn.say})
    for index, tool in enumerate(turn.tools):
        tool_input = {"input": ctx.expand(tool.text)} if tool.text is not None else ctx.expand(tool.input)
        blocks.append(
            {"type": "tool_use", "id": ctx.tool_id("toolu", index), "name": tool.name, "input": tool_input}
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


def halves(text: str) -> list[str]:
    """A text in two streamed pieces (one piece when it is too short to split)."""
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
            deltas = [{"type": "text_delta", "text": part} for part in halves(block["text"])]
        else:
            opening = {**block, "input": {}}
            payload = json.dumps(block["input"], separators=(",", ":"))
            deltas = [{"type": "input_json_delta", "partial_json": part} for part in halves(payload)]
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
