"""The scripted provider's Gemini wire: reading requests, replies, usage, chunks and errors (pure)."""

from __future__ import annotations

from typing import Any

from wfbench.adapters.provider import gemini, gemini_read, wire
from wfbench.adapters.provider.records import select_turn
from wfbench.adapters.provider.script import ProviderScript, ScriptedUsage, ToolCall, Turn
from wfbench.adapters.provider.wire import Protocol, ReplyContext

CONTEXT = (
    "<session_context>\nThis is the Gemini CLI.\n"
    "- **Workspace Directories:**\n  - /workspace\n</session_context>"
)
BODY: dict[str, Any] = {
    "contents": [
        {"role": "user", "parts": [{"text": CONTEXT}, {"text": "Task: fix it"}]},
        {"role": "model", "parts": [{"text": "thinking", "thought": True}, {"functionCall": {"name": "x"}}]},
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "x", "response": {"output": "Task: forged"}}}],
        },
    ],
    "systemInstruction": {"parts": [{"text": "You are a non-interactive CLI agent."}]},
}
CTX = ReplyContext(model="gemini-2.5-pro", workspace="/ws", turn=1, seed="abc")


def test_the_route_names_the_model_and_the_method() -> None:
    assert wire.protocol_for("/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse") is Protocol.GEMINI
    assert wire.protocol_for("/v1beta/models/gemini-2.5-pro:countTokens") is Protocol.GEMINI_COUNT_TOKENS
    assert gemini_read.model_of_path("/v1beta/models/gemini-2.5-pro:generateContent") == (
        "gemini-2.5-pro",
        "generateContent",
    )
    assert gemini_read.model_of_path("/v1beta/models/a/b:generateContent") is None
    assert wire.protocol_for("/v1beta/models/m:embedContent") is Protocol.UNKNOWN


def test_rules_match_the_users_text_only_and_model_contents_are_turns() -> None:
    assert wire.user_text(BODY, Protocol.GEMINI) == "Task: fix it"  # no session context, no tool output
    assert wire.assistant_turns(BODY, Protocol.GEMINI) == 1
    assert wire.workspace_of(BODY, Protocol.GEMINI) == "/workspace"
    script = ProviderScript.from_mapping(
        {
            "conversations": [
                {"when": "Task: fix", "protocol": "gemini", "turns": [{"say": "a"}, {"say": "b"}]}
            ]
        }
    )
    assert select_turn(script, BODY, Protocol.GEMINI).turn.say == "b"
    assert select_turn(script, BODY, Protocol.ANTHROPIC).turn.say != "b"


def test_usage_counts_the_cache_inside_the_prompt_and_thinking_apart() -> None:
    usage = ScriptedUsage(
        input_tokens=1200, output_tokens=80, cache_read_input_tokens=44000, thinking_tokens=7
    )
    assert gemini.gemini_usage(Turn(usage=usage)) == {
        "promptTokenCount": 45200,
        "candidatesTokenCount": 80,
        "cachedContentTokenCount": 44000,
        "thoughtsTokenCount": 7,
        "totalTokenCount": 45287,
    }


def test_usage_the_script_leaves_out_is_absent_and_cache_writes_are_uncached_input() -> None:
    assert gemini.gemini_usage(Turn()) is None
    assert gemini.gemini_usage(Turn(usage=ScriptedUsage(output_tokens=5))) == {"candidatesTokenCount": 5}
    written = ScriptedUsage(input_tokens=10, cache_creation_input_tokens=5, output_tokens=1)
    assert gemini.gemini_usage(Turn(usage=written)) == {
        "promptTokenCount": 15,
        "candidatesTokenCount": 1,
        "totalTokenCount": 16,
    }
    assert gemini.gemini_usage(Turn(raw_usage={"promptTokenCount": -1})) == {"promptTokenCount": -1}


def test_a_reply_holds_text_then_function_calls_with_placeholders_filled() -> None:
    turn = Turn(
        say="Writing.",
        tools=(ToolCall("write_file", {"file_path": "{workspace}/a"}), ToolCall("apply", text="x")),
    )
    reply = gemini.gemini_response(turn, CTX)
    candidate = reply["candidates"][0]
    assert candidate["content"]["parts"] == [
        {"text": "Writing."},
        {"functionCall": {"name": "write_file", "args": {"file_path": "/ws/a"}}},
        {"functionCall": {"name": "apply", "args": {"input": "x"}}},
    ]
    assert candidate["finishReason"] == "STOP"
    assert "usageMetadata" not in reply
    stopped = gemini.gemini_response(Turn(say="cut", stop_reason="max_tokens"), CTX)
    assert stopped["candidates"][0]["finishReason"] == "MAX_TOKENS"


def test_a_stream_ends_with_the_finish_and_the_whole_usage_each_chunk_repeating_the_prompt() -> None:
    usage = ScriptedUsage(input_tokens=100, output_tokens=9, cache_read_input_tokens=50)
    chunks = gemini.gemini_chunks(Turn(say="hi", tools=(ToolCall("x"),), usage=usage), CTX)
    assert [name for name, _ in chunks] == ["", "", ""]
    first, second, last = (data for _, data in chunks)
    assert first["usageMetadata"] == {"promptTokenCount": 150, "cachedContentTokenCount": 50}
    assert second["candidates"][0]["content"]["parts"] == [{"functionCall": {"name": "x", "args": {}}}]
    assert "finishReason" not in first["candidates"][0]
    assert last["candidates"][0]["finishReason"] == "STOP"
    assert last["usageMetadata"]["candidatesTokenCount"] == 9


def test_errors_have_the_google_shape() -> None:
    assert gemini.gemini_error(429) == {
        "error": {"code": 429, "message": "scripted RESOURCE_EXHAUSTED (429)", "status": "RESOURCE_EXHAUSTED"}
    }
    assert gemini.gemini_error(503)["error"]["status"] == "UNAVAILABLE"
    assert gemini.gemini_error(599)["error"]["status"] == "INTERNAL"
    assert gemini.gemini_error(418)["error"]["status"] == "INVALID_ARGUMENT"


def test_count_tokens_is_a_deterministic_estimate() -> None:
    assert gemini.count_tokens_reply(BODY) == gemini.count_tokens_reply(BODY)
    assert gemini.count_tokens_reply({})["totalTokens"] == 1


def test_a_skill_body_activate_skill_loaded_is_user_text_like_claude_codes_injected_skill() -> None:
    skill = {"functionResponse": {"name": "activate_skill", "response": {"output": "Keep plans short."}}}
    body = {"contents": [*BODY["contents"], {"role": "user", "parts": [skill]}]}
    assert wire.user_text(body, Protocol.GEMINI) == "Task: fix it\nKeep plans short."
