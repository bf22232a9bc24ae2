"""The provider's OpenAI Responses wire and what it reads from Codex requests, without a server."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given

from tests.strategies import scripted_turns
from wfbench.adapters.provider import responses, wire
from wfbench.adapters.provider.script import ProviderScript, ScriptedUsage, ToolCall, Turn
from wfbench.adapters.provider.scripted import ReplySource, select_turn
from wfbench.adapters.provider.wire import Protocol, ReplyContext
from wfbench.domain.errors import InputError

R = Protocol.OPENAI_RESPONSES
TOOL_TURN = Turn(
    say="Planning.",
    tools=(ToolCall("Write", {"file_path": "{workspace}/x.py", "content": "y"}),),
    usage=ScriptedUsage(input_tokens=1200, output_tokens=80, cache_read_input_tokens=44000),
)
PATCH = "*** Begin Patch\n*** Add File: {workspace}/a.txt\n+hello\n*** End Patch\n"


def ctx(workspace: str = "/ws", turn: int = 0, exec_session: int | None = None) -> ReplyContext:
    return ReplyContext(model="m", workspace=workspace, turn=turn, seed="abc", exec_session=exec_session)


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def codex_request(*history: dict[str, Any], prompt: str = "Task one") -> dict[str, Any]:
    """A request shaped like Codex 0.171.0's: developer messages, harness user parts, the prompt."""
    developer = {
        "type": "message",
        "role": "developer",
        "content": [{"type": "input_text", "text": "Task dev"}],
    }
    agents = "# AGENTS.md instructions for /workspace\n\n<INSTRUCTIONS>\nTask agents\n</INSTRUCTIONS>"
    context = (
        "<environment_context>\n  <cwd>/workspace/sub</cwd>\n  <shell>sh</shell>\n</environment_context>"
    )
    skill = "<skill>\n<name>plan</name>\n<path>/x/SKILL.md</path>\nTask skill\n</skill>"
    return {"input": [developer, user(agents), user(context), user(prompt), user(skill), *history]}


# ------------------------------------------------------------------ usage


def test_responses_usage_counts_the_whole_input_and_omits_unscripted_cache_fields() -> None:
    """input_tokens = input + cache read (+ write when scripted); total = input + output."""
    assert responses.openai_usage(TOOL_TURN) == {
        "input_tokens": 45200,
        "input_tokens_details": {"cached_tokens": 44000},
        "output_tokens": 80,
        "total_tokens": 45280,
    }
    written = Turn(usage=ScriptedUsage(input_tokens=1, output_tokens=2, cache_creation_input_tokens=7))
    assert responses.openai_usage(written)["input_tokens_details"] == {"cache_write_tokens": 7}
    assert responses.openai_usage(written)["input_tokens"] == 8
    assert responses.openai_usage(Turn(raw_usage={"input_tokens": -5})) == {"input_tokens": -5}


@pytest.mark.parametrize(
    "usage",
    [
        ScriptedUsage(),
        ScriptedUsage(output_tokens=3),
        ScriptedUsage(input_tokens=3),
        ScriptedUsage(input_tokens=3, cache_read_input_tokens=4),
        ScriptedUsage(output_tokens=3, cache_read_input_tokens=4, cache_creation_input_tokens=1),
    ],
)
def test_a_usage_without_both_input_and_output_tokens_is_null_on_the_wire(usage: ScriptedUsage) -> None:
    """Codex fails a turn on a partial usage object; unknown is sent as `usage: null`, never zeros."""
    assert responses.openai_usage(Turn(usage=usage)) is None
    assert responses.openai_response(Turn(usage=usage), ctx(), created_at=0)["usage"] is None


# ------------------------------------------------------------------ output items and events


def test_responses_output_has_a_message_then_one_function_call_per_tool() -> None:
    """Tools become function_call items whose arguments are the JSON of the expanded input."""
    output = responses.openai_output(TOOL_TURN, ctx())
    assert [item["type"] for item in output] == ["message", "function_call"]
    assert json.loads(output[1]["arguments"]) == {"file_path": "/ws/x.py", "content": "y"}
    events = responses.openai_events(TOOL_TURN, ctx(), created_at=0)
    assert events[0][0] == "response.created"
    assert events[-1][0] == "response.completed"
    assert [data["sequence_number"] for _, data in events] == list(range(len(events)))


def test_a_custom_tool_call_is_a_custom_tool_call_item_with_free_text_input() -> None:
    """`text` makes a custom_tool_call (Codex's apply_patch); placeholders expand inside the text."""
    turn = Turn(tools=(ToolCall("apply_patch", text=PATCH),))
    (item,) = responses.openai_output(turn, ctx())
    assert item["type"] == "custom_tool_call"
    assert item["name"] == "apply_patch"
    assert item["input"] == PATCH.replace("{workspace}", "/ws")
    assert item["call_id"].startswith("call_")
    assert item["id"].startswith("ctc_")
    events = responses.openai_events(turn, ctx(), created_at=0)
    names = [name for name, _ in events]
    assert "response.custom_tool_call_input.delta" in names
    deltas = [d["delta"] for n, d in events if n == "response.custom_tool_call_input.delta"]
    assert "".join(deltas) == item["input"]
    done = next(d for n, d in events if n == "response.custom_tool_call_input.done")
    assert done["input"] == item["input"]
    added = next(d for n, d in events if n == "response.output_item.added")
    assert added["item"]["input"] == ""


def test_on_anthropic_messages_a_custom_tool_call_is_a_tool_use_holding_the_text() -> None:
    """Messages has no free-text tools: the text travels as the tool_use's `input` field."""
    turn = Turn(tools=(ToolCall("apply_patch", text="patch {workspace}"),))
    (block,) = wire.anthropic_content(turn, ctx())
    assert block["type"] == "tool_use"
    assert block["input"] == {"input": "patch /ws"}


def test_a_max_tokens_stop_ends_the_stream_with_response_incomplete() -> None:
    """The real API ends an incomplete response with `response.incomplete`, not `response.completed`."""
    turn = Turn(say="cut short", stop_reason="max_tokens")
    events = responses.openai_events(turn, ctx(), created_at=0)
    assert events[-1][0] == "response.incomplete"
    assert "response.completed" not in [name for name, _ in events]
    final = events[-1][1]["response"]
    assert final["status"] == "incomplete"
    assert final["incomplete_details"] == {"reason": "max_output_tokens"}
    assert responses.openai_events(Turn(say="x"), ctx(), created_at=0)[-1][0] == "response.completed"


def test_openai_errors_take_the_openai_shape() -> None:
    """{error: {message, type, param, code}}; 429 is rate_limit_exceeded, 529 overloaded."""
    assert responses.openai_error(429)["error"]["code"] == "rate_limit_exceeded"
    assert responses.openai_error(529)["error"]["code"] == "overloaded"
    assert set(responses.openai_error(500)["error"]) == {"message", "type", "param", "code"}


@given(turn=scripted_turns())
def test_for_any_turn_the_responses_stream_ends_in_the_plain_response(turn: Turn) -> None:
    """The final event carries the plain response; argument deltas join to each call's arguments."""
    events = responses.openai_events(turn, ctx(), created_at=7)
    assert events[-1][1]["response"] == responses.openai_response(turn, ctx(), created_at=7)
    for item in events[-1][1]["response"]["output"]:
        if item["type"] == "function_call":
            parts = [
                d["delta"] for n, d in events if n.endswith("arguments.delta") and d["item_id"] == item["id"]
            ]
            assert "".join(parts) == item["arguments"]
    usage = responses.openai_usage(turn)
    complete = turn.usage.input_tokens is not None and turn.usage.output_tokens is not None
    assert (usage is not None) == complete
    if usage is not None:
        assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
        details = usage.get("input_tokens_details", {})
        assert ("cached_tokens" in details) == (turn.usage.cache_read_input_tokens is not None)
        assert ("cache_write_tokens" in details) == (turn.usage.cache_creation_input_tokens is not None)


# ------------------------------------------------------------------ reading Codex requests


def test_rules_never_match_text_codex_itself_put_into_user_messages() -> None:
    """AGENTS.md blocks, environment context, injected skill bodies and compaction text are excluded."""
    body = codex_request()
    assert wire.user_text(body, R) == "Task one"
    summary = user(f"{wire.COMPACTION_SUMMARY} and produced a summary:\nTask summary")
    prompt = user(f"{wire.COMPACTION_PROMPT}. Create a handoff summary. Task compaction")
    assert wire.user_text(codex_request(summary, prompt), R) == "Task one"
    legacy = user("<user_instructions>\nTask legacy\n</user_instructions>")
    assert wire.user_text({"input": [legacy, user("Task two")]}, R) == "Task two"


def test_the_workspace_is_the_cwd_codex_states_in_its_environment_context() -> None:
    """`<cwd>/path</cwd>` sets {workspace}; the older `working directory:` form still wins where given."""
    assert wire.workspace_of(codex_request(), R) == "/workspace/sub"
    assert ReplyContext.from_request(codex_request(), R).workspace == "/workspace/sub"
    both = {"input": [user("Working directory: /a"), user("<environment_context><cwd>/b</cwd>")]}
    assert wire.workspace_of(both, R) == "/a"


def function_output(text: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": "c", "output": text}


def call() -> dict[str, Any]:
    return {"type": "function_call", "call_id": "c", "name": "exec_command", "arguments": "{}"}


def test_the_exec_session_placeholder_is_the_last_running_commands_session_id() -> None:
    """`Process running with session ID N` in a tool output fills {exec_session_id} (an int alone)."""
    body = codex_request(
        call(),
        function_output("Process running with session ID 111\nOutput:\n"),
        call(),
        function_output("Chunk ID: x\nProcess running with session ID 4242\n"),
    )
    context = ReplyContext.from_request(body, R)
    assert context.exec_session == 4242
    expanded = context.expand({"session_id": "{exec_session_id}", "note": "poll {exec_session_id}"})
    assert expanded == {"session_id": 4242, "note": "poll 4242"}
    assert (
        wire.exec_session_of(codex_request(call(), function_output("Process exited with code 0")), R) is None
    )
    unfilled = ReplyContext.from_request(codex_request(), R).expand({"session_id": "{exec_session_id}"})
    assert unfilled == {"session_id": "{exec_session_id}"}


SCRIPT = ProviderScript.from_yaml(
    """
compaction: {say: "Work so far: one command ran."}
conversations:
  - when: ["Task one"]
    turns: [{say: first}, {say: second}, {say: third}]
"""
)
COMPACTION_HEADERS = {"x-codex-turn-metadata": json.dumps({"request_kind": "compaction", "model": "m"})}
ASSISTANT = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "x"}]}


def test_a_compaction_request_gets_the_summary_and_consumes_no_scripted_turn() -> None:
    """Detected by header or by the compaction prompt; the summary marks the turn reached."""
    body = codex_request(ASSISTANT, user("go on"))
    by_header = select_turn(SCRIPT, body, R, COMPACTION_HEADERS)
    assert by_header.source is ReplySource.COMPACTION
    assert by_header.rule == 0
    assert by_header.turn_index == 1
    assert by_header.turn.say == "Work so far: one command ran.\n\n[wfbench compaction: 1 assistant turns]"
    by_prompt = select_turn(SCRIPT, codex_request(ASSISTANT, user(wire.COMPACTION_PROMPT + ".")), R)
    assert by_prompt.source is ReplySource.COMPACTION
    plain = select_turn(SCRIPT, body, R, {"x-codex-turn-metadata": '{"request_kind": "turn"}'})
    assert (plain.source, plain.turn.say) == (ReplySource.SCRIPTED, "second")
    assert select_turn(SCRIPT, body, R, {"x-codex-turn-metadata": "not json"}).source is ReplySource.SCRIPTED


def test_after_a_compaction_the_conversation_resumes_at_the_turn_it_reached() -> None:
    """History restarts from the summary: its marker plus the assistant turns after it is the turn."""
    summary = user(f"{wire.COMPACTION_SUMMARY} and produced a summary:\nWork.\n\n{wire.compaction_marker(1)}")
    assert select_turn(SCRIPT, codex_request(summary), R).turn.say == "second"
    assert select_turn(SCRIPT, codex_request(summary, ASSISTANT, user("more")), R).turn.say == "third"
    foreign = user(f"{wire.COMPACTION_SUMMARY}: no marker here")
    assert select_turn(SCRIPT, codex_request(foreign), R).turn.say == "first"


def test_the_compaction_reply_and_custom_tools_are_validated_in_the_script() -> None:
    """`compaction` takes say/usage only; a tool takes `text` or `input`, never both, and text is a string."""
    with pytest.raises(InputError, match="compaction: tools: unknown key"):
        ProviderScript.from_yaml("compaction: {tools: []}")
    with pytest.raises(InputError, match=r"tools\[0\]\.text: cannot be combined"):
        ProviderScript.from_yaml(
            "conversations: [{when: x, turns: [{tools: [{name: p, text: a, input: {}}]}]}]"
        )
    with pytest.raises(InputError, match=r"tools\[0\]\.text: must be a string"):
        ProviderScript.from_yaml("conversations: [{when: x, turns: [{tools: [{name: p, text: 3}]}]}]")
    loaded = ProviderScript.from_yaml("conversations: [{when: x, turns: [{tools: [{name: p, text: a}]}]}]")
    assert loaded.conversations[0].turns[0].tools[0] == ToolCall("p", text="a")
    assert ProviderScript.from_yaml("{}").compaction.say


def test_a_rule_may_be_limited_to_one_wire_protocol() -> None:
    """The same prompt from Claude Code (Messages) and Codex (Responses) can get different turns."""
    script = ProviderScript.from_yaml(
        """
conversations:
  - {when: ["Task one"], protocol: openai-responses, turns: [{say: codex}]}
  - {when: ["Task one"], turns: [{say: anyone}]}
"""
    )
    assert select_turn(script, codex_request(), R).turn.say == "codex"
    messages = {"messages": [{"role": "user", "content": "Task one"}]}
    assert select_turn(script, messages, Protocol.ANTHROPIC).turn.say == "anyone"
    with pytest.raises(InputError, match=r"conversations\[0\]: protocol: must be one of"):
        ProviderScript.from_yaml("conversations: [{when: x, protocol: grpc, turns: [{say: y}]}]")
