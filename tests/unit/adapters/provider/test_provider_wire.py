"""The provider's wire functions: reading requests and building replies, without a server."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given

from tests.strategies import scripted_turns
from wfbench.adapters.provider import wire
from wfbench.adapters.provider.script import USAGE_KEYS, ProviderScript, ScriptedUsage, ToolCall, Turn
from wfbench.adapters.provider.scripted import ReplySource, redact_headers, select_turn
from wfbench.adapters.provider.wire import Protocol, ReplyContext
from wfbench.domain.errors import InputError

A = Protocol.ANTHROPIC
R = Protocol.OPENAI_RESPONSES
SCRIPT = ProviderScript.from_yaml(
    """
conversations:
  - when: ["Task one"]
    turns: [{say: first}, {say: second}]
  - when: ["Task"]
    turns: [{say: generic}]
"""
)


def ctx(workspace: str = "/ws", turn: int = 0) -> ReplyContext:
    return ReplyContext(model="m", workspace=workspace, turn=turn, seed="abc")


def test_the_path_decides_the_protocol_and_the_query_string_is_ignored() -> None:
    """/v1/messages, count_tokens and /v1/responses are routed; a query or trailing slash is ignored."""
    assert wire.protocol_for("/v1/messages?beta=true") is A
    assert wire.protocol_for("/v1/messages/") is A
    assert wire.protocol_for("/v1/messages/count_tokens?beta=true") is Protocol.ANTHROPIC_COUNT_TOKENS
    assert wire.protocol_for("/v1/responses") is R
    assert wire.protocol_for("/v1/complete") is Protocol.UNKNOWN


def test_user_text_keeps_user_text_blocks_and_drops_tool_results_system_and_reminders() -> None:
    """Only text the user authored is matched: no tool_result, system prompt, or system-reminder."""
    body = {
        "system": "Task hidden-in-system",
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "<system-reminder>Task reminder</system-reminder>"},
                    {"type": "text", "text": "Task one"},
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "Task assistant"}]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t", "content": "Task tool"}],
            },
        ],
    }
    assert wire.user_text(body, A) == "Task one"


def test_responses_user_text_reads_a_string_input_or_input_text_parts_but_not_instructions() -> None:
    """Responses input: a string, or user items with input_text parts; instructions are excluded."""
    assert wire.user_text({"input": "Task one", "instructions": "Task x"}, R) == "Task one"
    body = {
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "Task one"}]},
            {"type": "function_call_output", "call_id": "c", "output": "Task output"},
        ]
    }
    assert wire.user_text(body, R) == "Task one"


def test_the_turn_is_the_number_of_assistant_turns_already_in_the_request() -> None:
    """Anthropic counts assistant messages; Responses counts runs of assistant items."""
    anthropic = {
        "messages": [
            {"role": "user", "content": "Task one"},
            {"role": "assistant", "content": "a"},
            {"role": "user", "content": "b"},
            {"role": "assistant", "content": "c"},
            {"role": "user", "content": "d"},
        ]
    }
    assert wire.assistant_turns(anthropic, A) == 2
    responses = {
        "input": [
            {"role": "user", "content": "Task one"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "x"}]},
            {"type": "function_call", "call_id": "c1", "name": "Write", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "ok"},
            {"type": "function_call", "call_id": "c2", "name": "Read", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c2", "output": "ok"},
        ]
    }
    assert wire.assistant_turns(responses, R) == 2
    assert wire.assistant_turns({"messages": "not a list"}, A) == 0


def test_the_first_matching_rule_wins_and_its_turn_follows_the_request() -> None:
    """Rule order decides; turn i answers a request with i assistant turns; past the end is exhausted."""
    first = {"messages": [{"role": "user", "content": "Task one"}]}
    assert select_turn(SCRIPT, first, A).turn.say == "first"
    assert select_turn(SCRIPT, first, A).rule == 0
    second = {
        "messages": [
            *first["messages"],
            {"role": "assistant", "content": "x"},
            {"role": "user", "content": "y"},
        ]
    }
    assert select_turn(SCRIPT, second, A).turn.say == "second"
    third = {
        "messages": [
            *second["messages"],
            {"role": "assistant", "content": "x"},
            {"role": "user", "content": "z"},
        ]
    }
    exhausted = select_turn(SCRIPT, third, A)
    assert (exhausted.source, exhausted.turn, exhausted.turn_index) == (ReplySource.EXHAUSTED, Turn(), 2)
    other = select_turn(SCRIPT, {"messages": [{"role": "user", "content": "Task two"}]}, A)
    assert (other.rule, other.turn.say) == (1, "generic")
    unmatched = select_turn(SCRIPT, {"messages": [{"role": "user", "content": "hello"}]}, A)
    assert (unmatched.source, unmatched.rule, unmatched.turn) == (ReplySource.DEFAULT, None, SCRIPT.default)


def test_the_workspace_is_the_directory_the_agent_states_else_slash_workspace() -> None:
    """`Primary working directory: /p` in the system prompt or a user message is the workspace."""
    body = {"system": [{"type": "text", "text": " - Primary working directory: /tmp/ws1\n - Is a git"}]}
    assert wire.workspace_of(body, A) == "/tmp/ws1"
    user = {"messages": [{"role": "user", "content": "Working directory: /srv/x.\nTask"}]}
    assert wire.workspace_of(user, A) == "/srv/x"
    assert wire.workspace_of({"instructions": "working directory: /r"}, R) == "/r"
    assert wire.workspace_of({"messages": [{"role": "user", "content": "Task"}]}, A) == "/workspace"


def test_workspace_placeholders_expand_in_nested_tool_input_values_only() -> None:
    """Every string value has {workspace} replaced; keys and non-strings are untouched."""
    value = {"file_path": "{workspace}/a", "list": ["{workspace}", 3], "{workspace}": True}
    assert wire.expand_workspace(value, "/w") == {"file_path": "/w/a", "list": ["/w", 3], "{workspace}": True}


TOOL_TURN = Turn(
    say="Planning.",
    tools=(ToolCall("Write", {"file_path": "{workspace}/x.py", "content": "y"}),),
    usage=ScriptedUsage(input_tokens=1200, output_tokens=80, cache_read_input_tokens=44000),
)


def test_an_anthropic_message_carries_text_then_tool_use_and_only_scripted_usage() -> None:
    """Plain Messages JSON: text block, tool_use with the expanded input, stop tool_use, usage as scripted."""
    message = wire.anthropic_message(TOOL_TURN, ctx())
    assert [block["type"] for block in message["content"]] == ["text", "tool_use"]
    assert message["content"][1]["input"] == {"file_path": "/ws/x.py", "content": "y"}
    assert message["stop_reason"] == "tool_use"
    assert message["usage"] == {"input_tokens": 1200, "output_tokens": 80, "cache_read_input_tokens": 44000}


def test_anthropic_events_follow_the_real_stream_and_rebuild_the_message() -> None:
    """message_start first, message_delta then message_stop last; deltas rebuild text and JSON input."""
    events = wire.anthropic_events(TOOL_TURN, ctx())
    names = [name for name, _ in events]
    assert names[0] == "message_start"
    assert names[-2:] == ["message_delta", "message_stop"]
    assert events[0][1]["message"]["stop_reason"] is None
    text = "".join(d["delta"]["text"] for n, d in events if n == "content_block_delta" and d["index"] == 0)
    partial = "".join(
        d["delta"]["partial_json"] for n, d in events if n == "content_block_delta" and d["index"] == 1
    )
    assert text == "Planning."
    assert json.loads(partial) == {"file_path": "/ws/x.py", "content": "y"}
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"


def test_errors_take_the_anthropic_shape() -> None:
    """Anthropic: {type: error, error: {type, message}}."""
    assert wire.anthropic_error(529)["error"]["type"] == "overloaded_error"
    assert wire.anthropic_error(429)["error"]["type"] == "rate_limit_error"
    assert wire.anthropic_error(500) == {
        "type": "error",
        "error": {"type": "api_error", "message": "scripted api_error (500)"},
    }
    assert wire.anthropic_error(418)["error"]["type"] == "invalid_request_error"


def test_secret_header_values_are_redacted_and_names_lower_cased() -> None:
    """x-api-key and authorization values never reach the record."""
    headers = redact_headers([("X-Api-Key", "sk-secret"), ("Authorization", "Bearer t"), ("X-App", "cli")])
    assert headers == {"x-api-key": "<redacted>", "authorization": "<redacted>", "x-app": "cli"}


@given(turn=scripted_turns())
def test_for_any_turn_the_anthropic_stream_reassembles_into_the_plain_message(turn: Turn) -> None:
    """Deltas rebuild every block (text and tool input JSON); usage keys are exactly the scripted ones."""
    message = wire.anthropic_message(turn, ctx())
    events = wire.anthropic_events(turn, ctx())
    blocks: dict[int, dict[str, Any]] = {}
    for name, data in events:
        if name == "content_block_start":
            blocks[data["index"]] = {**data["content_block"], "_json": ""}
        elif name == "content_block_delta":
            delta = data["delta"]
            if delta["type"] == "text_delta":
                blocks[data["index"]]["text"] += delta["text"]
            else:
                blocks[data["index"]]["_json"] += delta["partial_json"]
    rebuilt = []
    for index in sorted(blocks):
        block = blocks[index]
        partial = block.pop("_json")
        if block["type"] == "tool_use":
            block["input"] = json.loads(partial)
        rebuilt.append(block)
    assert rebuilt == message["content"]
    assert events[-2][1]["delta"]["stop_reason"] == message["stop_reason"]
    scripted = {key for key in USAGE_KEYS if getattr(turn.usage, key) is not None}
    assert set(message["usage"]) == scripted
    assert set(events[0][1]["message"]["usage"]) == scripted


OFFERS = ProviderScript.from_yaml(
    """
conversations:
  - {when: ["Task one"], offers: [todowrite], turns: [{say: opencode}, {say: opencode-2}]}
  - {when: ["Task one"], turns: [{say: claude}]}
"""
)


def test_a_rule_may_be_limited_to_requests_offering_tools_spelled_exactly() -> None:
    """OpenCode offers ``todowrite``, Claude Code ``TodoWrite``: one protocol, their own rules."""
    opencode = {"messages": [{"role": "user", "content": "Task one"}], "tools": [{"name": "todowrite"}]}
    claude = {"messages": [{"role": "user", "content": "Task one"}], "tools": [{"name": "TodoWrite"}]}
    assert select_turn(OFFERS, opencode, A).turn.say == "opencode"
    assert select_turn(OFFERS, claude, A).turn.say == "claude"
    assert select_turn(OFFERS, {**opencode, "tools": None}, A).turn.say == "claude"
    with pytest.raises(InputError, match=r"conversations\[0\]: offers: must be a list of tool names"):
        ProviderScript.from_yaml("conversations: [{when: x, offers: todowrite, turns: [{say: y}]}]")


def test_offered_tools_are_read_from_messages_responses_and_gemini_declarations() -> None:
    body = {
        "tools": [{"name": "a"}, {"functionDeclarations": [{"name": "b"}, "junk"]}, "junk", {"type": "x"}]
    }
    assert wire.offered_tools(body) == frozenset({"a", "b"})
    assert wire.offered_tools({"tools": "none"}) == frozenset()


def test_a_skill_body_opencode_loaded_counts_as_user_text_and_other_tool_results_do_not() -> None:
    """OpenCode returns a skill's instructions as its skill tool's result, as Claude Code injects them."""
    loaded = '<skill_content name="plan">\n# Plan\nKeep plans short.\n</skill_content>'
    body = {
        "messages": [
            {"role": "user", "content": "Task one"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "skill", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": loaded},
                    {"type": "tool_result", "tool_use_id": "t2", "content": "Keep it long"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "t3",
                        "content": [{"type": "text", "text": loaded}],
                    },
                ],
            },
        ]
    }
    assert wire.user_text(body, A) == "Task one\n" + loaded
