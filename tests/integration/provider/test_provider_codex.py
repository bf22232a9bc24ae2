"""The scripted provider's Codex fixes over real HTTP, driven by the official ``openai`` SDK.

Each fix is also driven through the real Codex CLI in ``test_codex_cli.py`` (the same script
shapes, under bwrap, through the ``CodexCLI`` adapter).
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import openai
import pytest

from wfbench.adapters.provider.script import ProviderScript
from wfbench.adapters.provider.scripted import ReplySource, ScriptedProvider
from wfbench.adapters.provider.wire import COMPACTION_PROMPT

SCRIPT = """
compaction: {say: "Summary: the first command ran."}
conversations:
  - when: ["Task usage-unknown"]
    turns: [{say: "no usage"}]
  - when: ["Task usage-partial"]
    turns: [{say: "half", usage: {input_tokens: 7, cache_read_input_tokens: 3}}]
  - when: ["Task usage-complete"]
    turns: [{say: "all", usage: {input_tokens: 7, output_tokens: 2, cache_read_input_tokens: 3}}]
  - when: ["Task patch"]
    turns:
      - tools:
          - name: apply_patch
            text: "*** Begin Patch\\n*** Add File: {workspace}/a.txt\\n+hi\\n*** End Patch\\n"
      - say: "patched"
  - when: ["Task cut"]
    turns: [{say: "cut short", stop_reason: max_tokens, usage: {input_tokens: 5, output_tokens: 1}}]
  - when: ["Task poll"]
    turns:
      - tools: [{name: exec_command, input: {cmd: "sleep 5", yield_time_ms: 250}}]
      - tools: [{name: write_stdin, input: {session_id: "{exec_session_id}", chars: ""}}]
  - when: ["Task long"]
    turns: [{say: "first"}, {say: "second"}]
"""
KEY = "sk-codex-test"


@pytest.fixture
def provider() -> Iterator[ScriptedProvider]:
    with ScriptedProvider(ProviderScript.from_yaml(SCRIPT, source="inline")) as running:
        yield running


def client(provider: ScriptedProvider) -> openai.OpenAI:
    return openai.OpenAI(base_url=provider.base_url + "/v1", api_key=KEY, max_retries=0)


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def test_unknown_usage_is_null_and_a_partial_usage_too_while_complete_usage_is_whole(
    provider: ScriptedProvider,
) -> None:
    """Responses usage is all or nothing: the SDK sees None unless input and output were scripted."""
    for task in ("usage-unknown", "usage-partial"):
        response = client(provider).responses.create(model="gpt-5.5", input=f"Task {task}")
        assert response.usage is None, task
        with client(provider).responses.stream(model="gpt-5.5", input=f"Task {task}") as stream:
            assert stream.get_final_response().usage is None
    complete = client(provider).responses.create(model="gpt-5.5", input="Task usage-complete").usage
    assert complete is not None
    assert (complete.input_tokens, complete.output_tokens, complete.total_tokens) == (10, 2, 12)
    assert complete.input_tokens_details.cached_tokens == 3


def test_a_custom_tool_call_reaches_the_sdk_as_a_custom_tool_call_item(provider: ScriptedProvider) -> None:
    """apply_patch as free text: plain and streamed, with {workspace} from Codex's <cwd>."""
    request: list[Any] = [
        user("<environment_context>\n  <cwd>/srv/ws</cwd>\n</environment_context>"),
        user("Task patch"),
    ]
    (item,) = client(provider).responses.create(model="gpt-5.5", input=request).output
    assert item.type == "custom_tool_call"
    assert item.name == "apply_patch"  # type: ignore[union-attr]
    assert item.input == "*** Begin Patch\n*** Add File: /srv/ws/a.txt\n+hi\n*** End Patch\n"  # type: ignore[union-attr]
    with client(provider).responses.stream(model="gpt-5.5", input=request) as stream:
        kinds = [event.type for event in stream]
        streamed = stream.get_final_response().output[0]
    assert "response.custom_tool_call_input.delta" in kinds
    assert streamed.input == item.input  # type: ignore[union-attr]


def test_a_max_tokens_stop_streams_response_incomplete(provider: ScriptedProvider) -> None:
    """The SDK's stream ends with response.incomplete and an incomplete final response."""
    with client(provider).responses.stream(model="gpt-5.5", input="Task cut") as stream:
        kinds = [event.type for event in stream]
    assert kinds[-1] == "response.incomplete"
    assert "response.completed" not in kinds
    plain = client(provider).responses.create(model="gpt-5.5", input="Task cut")
    assert plain.status == "incomplete"
    assert plain.incomplete_details is not None
    assert plain.incomplete_details.reason == "max_output_tokens"


def test_the_exec_session_placeholder_takes_the_id_of_the_running_command(provider: ScriptedProvider) -> None:
    """A tool output saying the command still runs fills {exec_session_id} as an integer."""
    first = client(provider).responses.create(model="gpt-5.5", input="Task poll").output[0]
    history: list[Any] = [
        user("Task poll"),
        {
            "type": "function_call",
            "call_id": first.call_id,
            "name": "exec_command",
            "arguments": first.arguments,
        },  # type: ignore[union-attr]
        {
            "type": "function_call_output",
            "call_id": first.call_id,
            "output": "Process running with session ID 73019",
        },  # type: ignore[union-attr]
    ]
    (poll,) = client(provider).responses.create(model="gpt-5.5", input=history).output
    assert json.loads(poll.arguments) == {"session_id": 73019, "chars": ""}  # type: ignore[union-attr]


def raw_responses(
    provider: ScriptedProvider, body: dict[str, Any], headers: dict[str, str]
) -> dict[str, Any]:
    url = urlsplit(provider.base_url)
    connection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=10)
    try:
        connection.request(
            "POST", "/v1/responses", json.dumps(body), {"content-type": "application/json", **headers}
        )
        return json.loads(connection.getresponse().read())
    finally:
        connection.close()


def test_a_compaction_request_is_answered_with_a_summary_and_the_script_resumes_after_it(
    provider: ScriptedProvider,
) -> None:
    """Codex's header marks the compaction: the summary comes back, and the next request gets turn 1."""
    assistant = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "first"}],
    }
    compaction = {"model": "gpt-5.5", "input": [user("Task long"), assistant, user(COMPACTION_PROMPT + ".")]}
    headers = {"x-codex-turn-metadata": json.dumps({"request_kind": "compaction"})}
    reply = raw_responses(provider, compaction, headers)
    summary = reply["output"][0]["content"][0]["text"]
    assert summary.startswith("Summary: the first command ran.")
    assert reply["usage"] is None
    resumed = [
        user("Task long"),
        user("Another language model started to solve this problem and produced a summary:\n" + summary),
    ]
    assert client(provider).responses.create(model="gpt-5.5", input=resumed).output_text == "second"
    sources = [(request.source, request.turn) for request in provider.requests]
    assert sources == [(ReplySource.COMPACTION, 1), (ReplySource.SCRIPTED, 1)]
