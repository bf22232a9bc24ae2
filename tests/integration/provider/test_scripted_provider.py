"""The scripted provider over real HTTP on loopback, driven by clients nobody here wrote.

The official ``anthropic`` and ``openai`` SDKs (streaming and not), raw ``http.client`` for
what the SDKs hide (absent keys, event order, cut streams), and the real Claude Code CLI.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anthropic
import openai
import pytest

from tests.conftest import claude_binary, require_or_skip
from wfbench.adapters.provider.script import ProviderScript
from wfbench.adapters.provider.scripted import ReplySource, ScriptedProvider

SCRIPT = """
default: {say: "Nothing is scripted for this prompt.", usage: {input_tokens: 3, output_tokens: 2}}
conversations:
  - when: ["Task fix-median", "Use the plan skill"]
    turns:
      - say: "Planning."
        tools:
          - {name: Skill, input: {skill: plan}}
          - {name: Write, input: {file_path: "{workspace}/calc/stats.py", content: "def median(): ...\\n"}}
        usage: {input_tokens: 1200, output_tokens: 80, cache_read_input_tokens: 44000}
      - say: "Done."
        usage:
          {input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 0, cache_creation_input_tokens: 7}
  - {when: ["Task 429"], turns: [{status: 429}]}
  - {when: ["Task 500"], turns: [{status: 500}]}
  - {when: ["Task 529"], turns: [{status: 529}]}
  - {when: ["Task cut"], turns: [{say: "a longer sentence to cut", truncate_after_events: 3}]}
  - {when: ["Task stall"], turns: [{say: "late", stall_s: 30}]}
  - {when: ["Task reset"], turns: [{reset: true}]}
  - {when: ["Task malformed"], turns: [{say: "broken", malformed: true}]}
"""
FIX = "Task fix-median. Use the plan skill."
SECRET = "sk-test-secret-value"


@pytest.fixture
def provider() -> Iterator[ScriptedProvider]:
    with ScriptedProvider(ProviderScript.from_yaml(SCRIPT, source="inline")) as running:
        yield running


def claude_client(provider: ScriptedProvider, **options: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=provider.base_url, api_key=SECRET, max_retries=0, **options)


def openai_client(provider: ScriptedProvider, **options: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=provider.base_url + "/v1", api_key=SECRET, max_retries=0, **options)


def ask(text: str, **extra: Any) -> dict[str, Any]:
    return {
        "model": "claude-test",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": text}],
        **extra,
    }


def raw_post(provider: ScriptedProvider, path: str, body: dict[str, Any]) -> tuple[int, bytes]:
    """POST with http.client; returns the status and whatever body bytes arrived."""
    url = urlsplit(provider.base_url)
    connection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=10)
    try:
        connection.request("POST", path, json.dumps(body), {"content-type": "application/json"})
        response = connection.getresponse()
        try:
            return response.status, response.read()
        except http.client.IncompleteRead as cut:
            return response.status, cut.partial
    finally:
        connection.close()


def sse(payload: bytes) -> list[tuple[str, dict[str, Any]]]:
    """Parse complete SSE events (``event:`` + ``data:`` lines)."""
    events = []
    for block in payload.decode().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in lines and "data" in lines:
            events.append((lines["event"], json.loads(lines["data"])))
    return events


# ------------------------------------------------------------------ Anthropic Messages


def test_the_anthropic_sdk_gets_text_tool_use_blocks_and_exact_usage(provider: ScriptedProvider) -> None:
    """Plain Messages: text then tool_use blocks, stop tool_use, cache_read_input_tokens exactly 44000."""
    message = claude_client(provider).messages.create(**ask(FIX))
    assert [block.type for block in message.content] == ["text", "tool_use", "tool_use"]
    assert message.content[0].text == "Planning."  # type: ignore[union-attr]
    skill, write = message.content[1], message.content[2]
    assert (skill.name, skill.input) == ("Skill", {"skill": "plan"})  # type: ignore[union-attr]
    assert write.input["file_path"] == "/workspace/calc/stats.py"  # type: ignore[union-attr]
    assert skill.id != write.id  # type: ignore[union-attr]
    assert message.stop_reason == "tool_use"
    assert message.model == "claude-test"
    assert message.usage.cache_read_input_tokens == 44000
    assert (message.usage.input_tokens, message.usage.output_tokens) == (1200, 80)


def test_an_unscripted_cache_field_is_absent_from_the_raw_json(provider: ScriptedProvider) -> None:
    """The omission rule on the wire: no cache_creation_input_tokens key at all, not a 0."""
    raw = claude_client(provider).messages.with_raw_response.create(**ask(FIX))
    usage = raw.http_response.json()["usage"]
    assert "cache_creation_input_tokens" not in usage
    assert usage["cache_read_input_tokens"] == 44000
    status, payload = raw_post(provider, "/v1/messages", ask(FIX, stream=True))
    assert status == 200
    for name, data in sse(payload):
        if name in {"message_start", "message_delta"}:
            wire_usage = data["message"]["usage"] if name == "message_start" else data["usage"]
            assert "cache_creation_input_tokens" not in wire_usage


def test_a_scripted_zero_arrives_as_a_literal_zero(provider: ScriptedProvider) -> None:
    """A scripted 0 is a measured zero: the key is present with value 0."""
    history = [
        {"role": "user", "content": FIX},
        {"role": "assistant", "content": "Planning."},
        {"role": "user", "content": "go on"},
    ]
    raw = claude_client(provider).messages.with_raw_response.create(model="m", max_tokens=8, messages=history)
    body = raw.http_response.json()
    assert body["content"] == [{"type": "text", "text": "Done."}]
    assert body["usage"]["cache_read_input_tokens"] == 0
    assert body["usage"]["cache_creation_input_tokens"] == 7


def test_the_anthropic_sdk_streams_the_same_message(provider: ScriptedProvider) -> None:
    """Streaming SSE rebuilds the same blocks, tool input and usage through the SDK's accumulator."""
    with claude_client(provider).messages.stream(**ask(FIX)) as stream:
        kinds = [event.type for event in stream]
        message = stream.get_final_message()
    assert [block.type for block in message.content] == ["text", "tool_use", "tool_use"]
    assert message.content[2].input == {  # type: ignore[union-attr]
        "file_path": "/workspace/calc/stats.py",
        "content": "def median(): ...\n",
    }
    assert message.stop_reason == "tool_use"
    assert message.usage.cache_read_input_tokens == 44000
    assert message.usage.output_tokens == 80
    assert "input_json" in kinds


def test_the_sse_event_order_is_the_real_apis(provider: ScriptedProvider) -> None:
    """message_start first, message_delta then message_stop last, input_json_delta for tools."""
    status, payload = raw_post(provider, "/v1/messages?beta=true", ask(FIX, stream=True))
    events = sse(payload)
    names = [name for name, _ in events]
    assert status == 200
    assert names[0] == "message_start"
    assert names[-2:] == ["message_delta", "message_stop"]
    assert events[0][1]["message"]["content"] == []
    deltas = [data["delta"]["type"] for name, data in events if name == "content_block_delta"]
    assert {"text_delta", "input_json_delta"} <= set(deltas)
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"


def test_a_query_string_such_as_beta_true_is_accepted_and_recorded(provider: ScriptedProvider) -> None:
    """`/v1/messages?beta=true` is served as Messages and the recorded path keeps the query."""
    message = claude_client(provider).messages.create(**ask(FIX), extra_query={"beta": "true"})
    assert message.content[0].text == "Planning."  # type: ignore[union-attr]
    assert provider.requests[-1].path == "/v1/messages?beta=true"


def test_count_tokens_answers_an_estimate(provider: ScriptedProvider) -> None:
    """POST /v1/messages/count_tokens returns a positive input_tokens and is recorded as such."""
    counted = claude_client(provider).messages.count_tokens(
        model="m", messages=[{"role": "user", "content": FIX}]
    )
    assert counted.input_tokens > 0
    assert provider.requests[-1].source is ReplySource.COUNT_TOKENS


# ------------------------------------------------------------------ OpenAI Responses


def test_the_openai_sdk_gets_function_call_items_and_cached_tokens(provider: ScriptedProvider) -> None:
    """Plain Responses: a message item, then function_call items; cached_tokens 44000; whole input."""
    response = openai_client(provider).responses.create(model="gpt-test", input=FIX)
    assert [item.type for item in response.output] == ["message", "function_call", "function_call"]
    assert response.output_text == "Planning."
    call = response.output[2]
    assert call.name == "Write"  # type: ignore[union-attr]
    assert json.loads(call.arguments)["file_path"] == "/workspace/calc/stats.py"  # type: ignore[union-attr]
    assert response.usage is not None
    assert response.usage.input_tokens_details.cached_tokens == 44000
    assert response.usage.input_tokens == 45200
    assert response.usage.total_tokens == 45280


def test_an_unscripted_cache_field_is_absent_from_the_raw_responses_json(provider: ScriptedProvider) -> None:
    """Responses omission: no cache_write_tokens key; no invented reasoning_tokens either."""
    raw = openai_client(provider).responses.with_raw_response.create(model="gpt-test", input=FIX)
    usage = raw.http_response.json()["usage"]
    assert usage["input_tokens_details"] == {"cached_tokens": 44000}
    assert "output_tokens_details" not in usage


def test_the_openai_sdk_streams_the_same_response(provider: ScriptedProvider) -> None:
    """Streaming Responses: the SDK accumulates the same items and usage; events end in completed."""
    with openai_client(provider).responses.stream(model="gpt-test", input=FIX) as stream:
        kinds = [event.type for event in stream]
        response = stream.get_final_response()
    assert kinds[0] == "response.created"
    assert kinds[-1] == "response.completed"
    assert "response.function_call_arguments.delta" in kinds
    assert [item.type for item in response.output] == ["message", "function_call", "function_call"]
    assert json.loads(response.output[1].arguments) == {"skill": "plan"}  # type: ignore[union-attr]
    assert response.usage is not None
    assert response.usage.input_tokens_details.cached_tokens == 44000


# ------------------------------------------------------------------ errors and faults


@pytest.mark.parametrize(
    ("status", "error_class", "kind"),
    [
        (429, anthropic.RateLimitError, "rate_limit_error"),
        (500, anthropic.InternalServerError, "api_error"),
        (529, anthropic.OverloadedError, "overloaded_error"),
    ],
)
def test_scripted_errors_take_the_anthropic_shape(
    provider: ScriptedProvider, status: int, error_class: type[Exception], kind: str
) -> None:
    """The SDK raises its own class for 429/500/529, streaming or not; the body is {type: error}."""
    client = claude_client(provider)
    with pytest.raises(error_class) as caught:
        client.messages.create(**ask(f"Task {status}"))
    assert caught.value.status_code == status  # type: ignore[attr-defined]
    assert caught.value.body == {
        "type": "error",
        "error": {"type": kind, "message": f"scripted {kind} ({status})"},
    }  # type: ignore[attr-defined]
    with pytest.raises(error_class), client.messages.stream(**ask(f"Task {status}")) as stream:
        stream.get_final_message()


@pytest.mark.parametrize(
    ("status", "error_class"),
    [(429, openai.RateLimitError), (500, openai.InternalServerError), (529, openai.InternalServerError)],
)
def test_scripted_errors_take_the_openai_shape(
    provider: ScriptedProvider, status: int, error_class: type[Exception]
) -> None:
    """The OpenAI SDK raises its class with the status; the body is {error: {message, type, code}}."""
    with pytest.raises(error_class) as caught:
        openai_client(provider).responses.create(model="gpt-test", input=f"Task {status}", stream=True)
    assert caught.value.status_code == status  # type: ignore[attr-defined]
    assert set(caught.value.body) == {"message", "type", "param", "code"}  # type: ignore[attr-defined]


def test_a_truncated_stream_stops_after_n_events_without_a_clean_end(provider: ScriptedProvider) -> None:
    """truncate_after_events: 3 delivers three events then cuts the chunked body; the SDK raises."""
    status, payload = raw_post(provider, "/v1/messages", ask("Task cut", stream=True))
    assert status == 200
    assert [name for name, _ in sse(payload)] == ["message_start", "ping", "content_block_start"]
    with (
        pytest.raises(Exception) as caught,
        claude_client(provider).messages.stream(**ask("Task cut")) as stream,
    ):
        stream.get_final_message()
    assert "incomplete" in str(caught.value) or isinstance(caught.value, anthropic.APIConnectionError)
    with pytest.raises(anthropic.APIConnectionError):
        claude_client(provider).messages.create(**ask("Task cut"))


def test_a_stall_outlasts_the_client_timeout_and_stop_interrupts_it() -> None:
    """stall_s holds the reply back (the client times out) and stop() wakes the stalled handler."""
    running = ScriptedProvider(ProviderScript.from_yaml(SCRIPT)).start()
    try:
        with pytest.raises(anthropic.APITimeoutError):
            claude_client(running, timeout=0.3).messages.create(**ask("Task stall"))
    finally:
        started = time.monotonic()
        running.stop()
        elapsed = time.monotonic() - started
    assert elapsed < 15, "stop() waited for the 30 s stall instead of interrupting it"
    assert not any(thread.name == "scripted-provider" for thread in threading.enumerate())


def test_reset_and_malformed_replies_fail_the_client(provider: ScriptedProvider) -> None:
    """reset aborts the connection; malformed sends a body that is not JSON (plain and streamed)."""
    with pytest.raises(anthropic.APIConnectionError):
        claude_client(provider).messages.create(**ask("Task reset"))
    with pytest.raises(openai.APIConnectionError):
        openai_client(provider).responses.create(model="m", input="Task reset")
    status, payload = raw_post(provider, "/v1/messages", ask("Task malformed"))
    assert status == 200
    with pytest.raises(ValueError):
        json.loads(payload)
    with (
        pytest.raises(ValueError),
        claude_client(provider).messages.stream(**ask("Task malformed")) as stream,
    ):
        stream.get_final_message()


# ------------------------------------------------------------------ selection, recording, lifecycle


def test_an_unmatched_request_gets_the_default_and_is_recorded_as_unmatched(
    provider: ScriptedProvider,
) -> None:
    """No rule matches: the default replies, and the record says unmatched with no rule."""
    message = claude_client(provider).messages.create(**ask("Something else entirely"))
    assert message.content[0].text == "Nothing is scripted for this prompt."  # type: ignore[union-attr]
    assert message.usage.input_tokens == 3
    (request,) = provider.unmatched
    assert (request.source, request.rule, request.turn) == (ReplySource.DEFAULT, None, 0)
    assert request.body["messages"][0]["content"] == "Something else entirely"


def test_the_turn_follows_the_assistant_messages_and_runs_out_into_an_empty_end_turn(
    provider: ScriptedProvider,
) -> None:
    """Request with 0, 1, 2 assistant messages gets turn 0, 1, then an empty end_turn (exhausted)."""
    client = claude_client(provider)
    history: list[dict[str, Any]] = [{"role": "user", "content": FIX}]
    replies = []
    for _ in range(3):
        message = client.messages.create(model="m", max_tokens=8, messages=history)
        replies.append((message.stop_reason, [block.type for block in message.content]))
        history += [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "next"}]
    assert replies == [
        ("tool_use", ["text", "tool_use", "tool_use"]),
        ("end_turn", ["text"]),
        ("end_turn", []),
    ]
    assert [(r.rule, r.turn, r.source) for r in provider.requests] == [
        (0, 0, ReplySource.SCRIPTED),
        (0, 1, ReplySource.SCRIPTED),
        (0, 2, ReplySource.EXHAUSTED),
    ]


def test_workspace_expands_to_the_directory_the_request_states(provider: ScriptedProvider) -> None:
    """`Working directory: /path` in the system prompt replaces {workspace} in tool inputs."""
    message = claude_client(provider).messages.create(
        **ask(FIX), system="Environment:\n - Primary working directory: /tmp/cell-7\n"
    )
    assert message.content[2].input["file_path"] == "/tmp/cell-7/calc/stats.py"  # type: ignore[union-attr]


def test_eight_concurrent_conversations_share_no_state() -> None:
    """Eight threads interleave their own 3-turn conversations; each gets only its own turns."""
    rules = "\n".join(
        f"  - when: ['Task cell-{k}']\n    turns: [{{say: 'cell-{k} t0'}}, {{say: 'cell-{k} t1'}},"
        f" {{say: 'cell-{k} t2'}}]"
        for k in range(8)
    )
    script = ProviderScript.from_yaml(f"conversations:\n{rules}\n")
    failures: list[str] = []
    with ScriptedProvider(script) as running:
        client = claude_client(running)
        barrier = threading.Barrier(8)

        def converse(k: int) -> None:
            barrier.wait()
            for _round in range(4):
                history: list[dict[str, Any]] = [{"role": "user", "content": f"Task cell-{k}"}]
                for turn in range(3):
                    with client.messages.stream(model="m", max_tokens=8, messages=history) as stream:
                        text = stream.get_final_message().content[0].text  # type: ignore[union-attr]
                    if text != f"cell-{k} t{turn}":
                        failures.append(f"cell {k} turn {turn} got {text!r}")
                    history += [{"role": "assistant", "content": text}, {"role": "user", "content": "go"}]

        threads = [threading.Thread(target=converse, args=(k,)) for k in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        recorded = running.requests
    assert failures == []
    assert len(recorded) == 8 * 4 * 3
    assert {request.rule for request in recorded} == set(range(8))


def test_the_log_is_jsonl_with_every_request_and_no_secret(
    provider: ScriptedProvider, tmp_path: Path
) -> None:
    """write_log writes one JSON line per request; the API key never reaches it."""
    claude_client(provider).messages.create(**ask(FIX))
    openai_client(provider).responses.create(model="m", input="hello")
    log = provider.write_log(tmp_path / "requests.jsonl")
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [line["protocol"] for line in lines] == ["anthropic-messages", "openai-responses"]
    assert [line["source"] for line in lines] == ["scripted", "default"]
    assert lines[0]["body"]["messages"][0]["content"] == FIX
    assert SECRET not in log.read_text()
    assert all(
        value == "<redacted>"
        for line in lines
        for key, value in line["headers"].items()
        if key in {"x-api-key", "authorization"}
    )
    assert any(key in {"x-api-key", "authorization"} for key in lines[0]["headers"])


def test_unknown_paths_and_methods_get_a_404_and_non_json_a_400(provider: ScriptedProvider) -> None:
    """Only the documented routes answer; a body that is not JSON is a 400 in the protocol's shape."""
    status, payload = raw_post(provider, "/v1/complete", ask(FIX))
    assert status == 404
    assert json.loads(payload)["error"]["type"] == "not_found_error"
    url = urlsplit(provider.base_url)
    connection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=10)
    connection.request("POST", "/v1/responses", b"{not json", {"content-type": "application/json"})
    response = connection.getresponse()
    assert response.status == 400
    assert json.loads(response.read())["error"]["type"] == "invalid_request_error"
    connection.close()


def raw_exchange(provider: ScriptedProvider, request: bytes) -> bytes:
    """Send raw bytes on a fresh socket and read the reply until the server closes it."""
    import socket

    url = urlsplit(provider.base_url)
    with socket.create_connection((url.hostname or "", url.port or 0), timeout=10) as sock:
        sock.sendall(request)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    return received


def test_a_chunked_request_body_is_read_and_bad_framing_is_a_400(provider: ScriptedProvider) -> None:
    """Transfer-Encoding: chunked bodies are decoded; a garbled chunk size or length gets a 400."""
    body = json.dumps(ask(FIX)).encode()
    head = b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n"
    chunked = head + b"%x\r\n%b\r\n%x\r\n%b\r\n0\r\n\r\n" % (10, body[:10], len(body) - 10, body[10:])
    reply = raw_exchange(provider, chunked)
    assert reply.startswith(b"HTTP/1.1 200")
    assert json.loads(reply.split(b"\r\n\r\n", 1)[1])["content"][0]["text"] == "Planning."
    assert raw_exchange(provider, head + b"zz\r\n{}\r\n0\r\n\r\n").startswith(b"HTTP/1.1 400")
    bad_length = b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: -3\r\n\r\n"
    assert raw_exchange(provider, bad_length).startswith(b"HTTP/1.1 400")
    assert [request.source for request in provider.requests] == [ReplySource.SCRIPTED]


def test_the_ipv6_loopback_can_be_served() -> None:
    """host='::1' binds the IPv6 loopback and the base URL brackets the address."""
    import socket

    if not socket.has_ipv6:
        pytest.skip("no IPv6 on this machine")
    try:
        running = ScriptedProvider(ProviderScript(), host="::1").start()
    except OSError as exc:
        pytest.skip(f"the IPv6 loopback cannot be bound here: {exc}")
    try:
        assert running.base_url.startswith("http://[::1]:")
        message = claude_client(running).messages.create(**ask("hello"))
        assert message.content[0].text == "Nothing is scripted for this prompt."  # type: ignore[union-attr]
    finally:
        running.stop()


def test_stop_joins_its_threads_even_with_an_idle_keep_alive_connection() -> None:
    """An open keep-alive connection does not keep the server (or its handler thread) alive."""
    before = threading.active_count()
    running = ScriptedProvider(ProviderScript()).start()
    url = urlsplit(running.base_url)
    connection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=10)
    connection.request("POST", "/v1/messages", json.dumps(ask("hi")), {"content-type": "application/json"})
    assert connection.getresponse().read()
    running.stop()
    connection.close()
    assert threading.active_count() == before, threading.enumerate()


def test_the_provider_refuses_to_bind_anything_but_loopback() -> None:
    """A non-loopback host is refused before any socket is opened."""
    with pytest.raises(ValueError, match="loopback"):
        ScriptedProvider(ProviderScript(), host="0.0.0.0")


# ------------------------------------------------------------------ the real Claude Code CLI


@pytest.mark.claude
def test_the_real_claude_cli_states_its_workspace_and_writes_the_scripted_file(tmp_path: Path) -> None:
    """The real CLI: {workspace} expands to its cwd, its Write lands with the exact bytes, turns 0 then 1."""
    binary = claude_binary()
    if binary is None:
        require_or_skip("WFBENCH_REQUIRE_CLAUDE", "the real Claude Code CLI is not installed")
        return
    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir()
    home.mkdir()
    with ScriptedProvider(ProviderScript.from_yaml(SCRIPT)) as running:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "ANTHROPIC_BASE_URL": running.base_url,
            "ANTHROPIC_API_KEY": SECRET,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "CLAUDE_CODE_MAX_RETRIES": "0",
        }
        argv = [
            binary,
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--permission-mode",
            "acceptEdits",
            "--allowedTools",
            "Write",
        ]
        done = subprocess.run(
            argv,
            check=False,
            input="Task fix-median. Use the plan skill.",
            text=True,
            capture_output=True,
            cwd=workspace,
            env=env,
            timeout=120,
        )
        recorded = [request for request in running.requests if request.source is not ReplySource.COUNT_TOKENS]
        log = running.write_log(tmp_path / "requests.jsonl")
    assert (workspace / "calc" / "stats.py").read_text() == "def median(): ...\n", done.stdout[-2000:]
    assert [(request.rule, request.turn) for request in recorded] == [(0, 0), (0, 1)]
    assert all(request.path.startswith("/v1/messages") and request.stream for request in recorded)
    assert SECRET not in log.read_text()


def test_a_burst_answers_the_first_requests_of_its_rule_with_its_error_then_the_turns() -> None:
    """Two 529s for the rule (whatever the conversation), then its scripted reply; other rules untouched."""
    script = ProviderScript.from_yaml(
        "conversations:\n"
        "  - {when: [Burst], burst: {status: 529, requests: 2}, turns: [{say: through}]}\n"
        "  - {when: [Calm], turns: [{say: calm}]}\n",
        source="burst.yaml",
    )
    with ScriptedProvider(script) as provider:
        statuses = [raw_post(provider, "/v1/messages", ask(f"Burst {n}"))[0] for n in range(3)]
        calm = raw_post(provider, "/v1/messages", ask("Calm"))

    assert statuses == [529, 529, 200]
    assert calm[0] == 200
