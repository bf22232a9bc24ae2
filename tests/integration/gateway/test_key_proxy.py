"""The key-injecting proxy over real HTTP on loopback (only 127.0.0.1, never any other address).

The upstream is either the project's scripted provider (byte-exact comparisons: the same request
straight to it and through the proxy) or a tiny recorder written here, which keeps the raw
credential headers the scripted provider redacts, and can stall or echo the key back.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import anthropic
import pytest
import structlog

from wfbench.adapters.gateway.key_proxy import KeyProxy
from wfbench.adapters.provider.script import ProviderScript
from wfbench.adapters.provider.scripted import ScriptedProvider
from wfbench.domain.errors import InputError

REAL_KEY = "sk-ant-api03-wfbench-REAL-key-0123456789abcdefghij"
SCRIPT = """
default: {say: "Nothing is scripted for this prompt.", usage: {input_tokens: 3, output_tokens: 2}}
conversations:
  - when: ["Task write"]
    turns:
      - say: "Writing the file now, with a longer sentence so the stream has several pieces."
        tools: [{name: Write, input: {file_path: "/workspace/a.txt", content: "naïve ✓\\n"}}]
        usage: {input_tokens: 1200, output_tokens: 80, cache_read_input_tokens: 44000}
  - {when: ["Task 529"], turns: [{status: 529}]}
  - {when: ["Task cut"], turns: [{say: "a longer sentence to cut short", truncate_after_events: 3}]}
"""


def ask(text: str, **extra: Any) -> dict[str, Any]:
    return {
        "model": "claude-test",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": text}],
        **extra,
    }


@pytest.fixture
def provider() -> Iterator[ScriptedProvider]:
    with ScriptedProvider(ProviderScript.from_yaml(SCRIPT, source="inline")) as running:
        yield running


@pytest.fixture
def proxy(provider: ScriptedProvider) -> Iterator[KeyProxy]:
    with KeyProxy(provider.base_url, REAL_KEY) as running:
        yield running


def post(
    base_url: str, path: str, body: bytes | Any, headers: dict[str, str], *, chunked: bool = False
) -> tuple[int, dict[str, str], bytes]:
    """One raw POST over loopback; the status, the headers (lower-cased) and every body byte."""
    url = urlsplit(base_url)
    assert url.hostname == "127.0.0.1"
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    try:
        payload = body if isinstance(body, bytes) else json.dumps(body).encode()
        if chunked:
            pieces = iter([payload[:7], payload[7:]])
            connection.request(
                "POST", path, pieces, {**headers, "content-type": "application/json"}, encode_chunked=True
            )
        else:
            connection.request("POST", path, payload, {**headers, "content-type": "application/json"})
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


class Recorder:
    """A loopback upstream that keeps each raw request head and answers with ``reply`` (or stalls)."""

    def __init__(self, reply: bytes | None) -> None:
        self.reply = reply
        self.heads: list[str] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.release = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}"

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            with connection:
                data = b""
                while b"\r\n\r\n" not in data:
                    piece = connection.recv(65536)
                    if not piece:
                        break
                    data += piece
                self.heads.append(data.split(b"\r\n\r\n", 1)[0].decode("latin-1"))
                if self.reply is None:
                    self.release.wait(60)
                    continue
                connection.sendall(self.reply)

    def header(self, index: int, name: str) -> list[str]:
        lines = self.heads[index].split("\r\n")[1:]
        return [line.split(":", 1)[1].strip() for line in lines if line.split(":", 1)[0].lower() == name]

    def close(self) -> None:
        """Stop accepting and wait for the server thread: a thread still blocked in ``accept`` would
        take a later test's connection once the kernel reuses the listener's descriptor or port."""
        self.release.set()
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes a blocked accept (EINVAL)
        self.listener.close()
        self.thread.join(timeout=70)
        assert not self.thread.is_alive(), "the upstream's thread did not stop"


@pytest.fixture
def recorder_for() -> Iterator[Any]:
    made: list[Recorder] = []

    def make(
        reply: bytes | None = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
    ) -> Recorder:
        made.append(Recorder(reply))
        return made[-1]

    yield make
    for recorder in made:
        recorder.close()


# ------------------------------------------------------------------ pass-through


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streaming"])
def test_a_reply_through_the_proxy_is_byte_identical_to_the_providers_own(provider, proxy, stream):
    """The same request straight to the provider and through the proxy: same status, same body bytes."""
    body = ask("Task write", stream=stream)
    direct = post(provider.base_url, "/v1/messages", body, {"x-api-key": "anything"})
    proxied = post(proxy.base_url, "/v1/messages", body, {"x-api-key": proxy.dummy_token})
    assert direct[0] == proxied[0] == 200
    assert proxied[2] == direct[2]
    assert proxied[1]["content-type"] == direct[1]["content-type"]
    if stream:
        assert b"event: message_stop" in proxied[2]


def test_the_anthropic_sdk_gets_the_same_message_and_stream_through_the_proxy(provider, proxy):
    """The official SDK (Bearer auth in this version) against both: equal messages and event lists."""
    direct = anthropic.Anthropic(base_url=provider.base_url, api_key="anything", max_retries=0)
    through = anthropic.Anthropic(base_url=proxy.base_url, api_key=proxy.dummy_token, max_retries=0)
    request = ask("Task write")
    assert through.messages.create(**request).model_dump() == direct.messages.create(**request).model_dump()
    with direct.messages.stream(**request) as one, through.messages.stream(**request) as two:
        assert [e.model_dump() for e in two] == [e.model_dump() for e in one]
    assert proxy.forwarded == 2


def test_a_chunked_request_body_and_a_query_string_pass_through(provider, proxy, recorder_for):
    """A chunked upload reaches the provider whole; ``?beta=true`` reaches the upstream path."""
    body = ask("Task write")
    direct = post(provider.base_url, "/v1/messages", body, {"x-api-key": "x"})
    proxied = post(proxy.base_url, "/v1/messages", body, {"x-api-key": proxy.dummy_token}, chunked=True)
    assert proxied[2] == direct[2]
    recorder = recorder_for()
    with KeyProxy(recorder.base_url + "/prefix", REAL_KEY) as prefixed:
        post(prefixed.base_url, "/v1/messages?beta=true", body, {"x-api-key": prefixed.dummy_token})
    assert recorder.heads[0].split("\r\n")[0] == "POST /prefix/v1/messages?beta=true HTTP/1.1"


def test_an_upstream_529_passes_through_with_its_body(provider, proxy):
    """An overloaded upstream is relayed as it is: status 529 and the provider's own error body."""
    direct = post(provider.base_url, "/v1/messages", ask("Task 529"), {"x-api-key": "x"})
    proxied = post(proxy.base_url, "/v1/messages", ask("Task 529"), {"x-api-key": proxy.dummy_token})
    assert proxied[0] == direct[0] == 529
    assert proxied[2] == direct[2]
    assert json.loads(proxied[2])["error"]["type"] == "overloaded_error"


@pytest.mark.parametrize("stream", [False, True], ids=["content-length", "chunked-sse"])
def test_a_reply_the_upstream_cuts_short_is_cut_short_for_the_agent_too(provider, proxy, stream):
    """Half a JSON body or an SSE stream without its last chunk: the same partial bytes, the same error."""
    body = ask("Task cut", stream=stream)
    cuts = []
    for base_url, key in ((provider.base_url, "x"), (proxy.base_url, proxy.dummy_token)):
        with pytest.raises(http.client.IncompleteRead) as cut:  # not a hang, not a clean end
            post(base_url, "/v1/messages", body, {"x-api-key": key})
        cuts.append(cut.value.partial)
    assert cuts[0] == cuts[1]
    assert cuts[1]


def test_a_close_delimited_reply_stays_close_delimited(recorder_for):
    """No length and no chunks upstream: the agent reads to the end of the connection, byte for byte."""
    recorder = recorder_for(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nhello, until the close")
    with KeyProxy(recorder.base_url, REAL_KEY) as proxy:
        status, headers, body = post(
            proxy.base_url, "/v1/messages", ask("hi"), {"x-api-key": proxy.dummy_token}
        )
    assert (status, body) == (200, b"hello, until the close")
    assert "content-length" not in headers
    assert "transfer-encoding" not in headers


# ------------------------------------------------------------------ the key


@pytest.mark.parametrize("header", ["x-api-key", "authorization"])
def test_the_upstream_receives_the_real_key_while_the_client_used_only_the_dummy(recorder_for, header):
    """The credential header the agent sent is rewritten to the real key; the dummy never leaves."""
    recorder = recorder_for()
    with KeyProxy(recorder.base_url, REAL_KEY) as proxy:
        value = proxy.dummy_token if header == "x-api-key" else f"Bearer {proxy.dummy_token}"
        status, _, _ = post(proxy.base_url, "/v1/messages", ask("hi"), {header: value})
        dummy = proxy.dummy_token
    assert status == 200
    assert recorder.header(0, header) == [REAL_KEY if header == "x-api-key" else f"Bearer {REAL_KEY}"]
    assert dummy not in recorder.heads[0]
    assert recorder.header(0, "host") == [urlsplit(recorder.base_url).netloc]
    assert recorder.header(0, "accept-encoding") == ["identity"]


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({}, 401),
        ({"x-api-key": "wrong"}, 403),
        ({"x-api-key": REAL_KEY}, 403),  # the real key itself does not open the proxy
        ({"authorization": "Bearer wrong"}, 403),
        ({"authorization": "Basic {dummy}"}, 403),
        ({"x-api-key": "{dummy}", "authorization": "Bearer wrong"}, 403),
    ],
    ids=["none", "wrong-x-api-key", "real-key", "wrong-bearer", "basic-scheme", "one-good-one-wrong"],
)
def test_a_request_without_the_dummy_token_is_refused_and_never_forwarded(recorder_for, headers, status):
    """No token is 401, any other token 403; the upstream never sees a byte of the request."""
    recorder = recorder_for()
    with KeyProxy(recorder.base_url, REAL_KEY) as proxy:
        sent = {name: value.format(dummy=proxy.dummy_token) for name, value in headers.items()}
        got, _, body = post(proxy.base_url, "/v1/messages", ask("hi"), sent)
        assert (proxy.refused, proxy.forwarded) == (1, 0)
    assert got == status
    assert json.loads(body)["type"] == "error"
    assert recorder.heads == []


def test_a_dummy_token_accepts_and_the_refusal_control_shares_the_same_recorder(recorder_for):
    """Negative control for the refusal test: the same request with the dummy is forwarded."""
    recorder = recorder_for()
    with KeyProxy(recorder.base_url, REAL_KEY) as proxy:
        assert post(proxy.base_url, "/v1/messages", ask("hi"), {"x-api-key": proxy.dummy_token})[0] == 200
    assert len(recorder.heads) == 1


def test_only_a_proxy_told_to_names_the_cell_upstream_and_no_client_can_name_it(recorder_for):
    """names_cells (the run's own scripted provider): x-wfbench-cell-label is the lease's label, never the
    agent's; without it (a real API) no such header leaves the proxy, whatever the client sent."""
    recorder = recorder_for()
    forged = {"x-wfbench-cell-label": "forged-by-the-agent"}
    with KeyProxy(recorder.base_url, REAL_KEY, names_cells=True) as naming:
        assert (
            post(naming.base_url, "/v1/messages", ask("hi"), {"x-api-key": naming.dummy_token, **forged})[0]
            == 200
        )
    with KeyProxy(recorder.base_url, REAL_KEY) as plain:
        assert (
            post(plain.base_url, "/v1/messages", ask("hi"), {"x-api-key": plain.dummy_token, **forged})[0]
            == 200
        )
    assert recorder.header(0, "x-wfbench-cell-label") == ["direct"]
    assert recorder.header(1, "x-wfbench-cell-label") == []


def test_each_proxy_makes_its_own_random_dummy_token(provider):
    """Two sweeps never share a token, and neither token is the key."""
    with KeyProxy(provider.base_url, REAL_KEY) as one, KeyProxy(provider.base_url, REAL_KEY) as two:
        assert one.dummy_token != two.dummy_token
        assert REAL_KEY not in (one.dummy_token, two.dummy_token)
        assert REAL_KEY not in repr(one)


@pytest.mark.parametrize("framing", ["length", "chunked"])
def test_an_upstream_echoing_the_key_is_masked_before_the_agent_sees_it(recorder_for, framing):
    """The key in a reply header or body becomes a same-length [REDACTED] mask; the framing stays valid."""
    text = f'{{"error": "bad key {REAL_KEY}", "again": "{REAL_KEY}"}}'.encode()
    if framing == "length":
        framed = b"Content-Length: %d\r\n\r\n%b" % (len(text), text)
    else:  # split the key across two chunks
        cut = text.index(REAL_KEY.encode()) + 10
        framed = b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%b\r\n%x\r\n%b\r\n0\r\n\r\n" % (
            cut,
            text[:cut],
            len(text) - cut,
            text[cut:],
        )
    reply = (
        b"HTTP/1.1 401 Unauthorized\r\nX-Echo: " + REAL_KEY.encode() + b"\r\nConnection: close\r\n" + framed
    )
    recorder = recorder_for(reply)
    with KeyProxy(recorder.base_url, REAL_KEY) as proxy:
        status, headers, body = post(
            proxy.base_url, "/v1/messages", ask("hi"), {"x-api-key": proxy.dummy_token}
        )
    assert status == 401
    assert REAL_KEY not in headers["x-echo"]
    assert headers["x-echo"].startswith("[REDACTED]")
    assert REAL_KEY.encode() not in body
    assert len(body) == len(text)
    assert json.loads(body)["again"].startswith("[REDACTED]***")


# ------------------------------------------------------------------ failures and stop


def test_an_unreachable_upstream_is_a_502_that_names_no_key():
    """Nothing listens upstream: the agent gets an Anthropic-shaped 502, holding neither token."""
    idle = socket.create_server(("127.0.0.1", 0))
    port = idle.getsockname()[1]
    idle.close()
    with KeyProxy(f"http://127.0.0.1:{port}", REAL_KEY) as proxy:
        status, _, body = post(proxy.base_url, "/v1/messages", ask("hi"), {"x-api-key": proxy.dummy_token})
        dummy = proxy.dummy_token
    assert status == 502
    assert json.loads(body)["error"]["type"] == "api_error"
    assert REAL_KEY.encode() not in body
    assert dummy.encode() not in body


def test_a_stalled_upstream_does_not_hang_stop(recorder_for):
    """The upstream accepts and never answers: stop() cuts the exchange and returns; the client errs."""
    recorder = recorder_for(None)
    proxy = KeyProxy(recorder.base_url, REAL_KEY).start()
    outcome: list[object] = []

    def client() -> None:
        try:
            outcome.append(post(proxy.base_url, "/v1/messages", ask("hi"), {"x-api-key": proxy.dummy_token}))
        except (OSError, http.client.HTTPException) as exc:
            outcome.append(exc)

    caller = threading.Thread(target=client, daemon=True)
    caller.start()
    while not recorder.heads:  # the request reached the stalled upstream
        caller.join(0.05)
        assert caller.is_alive()
    stopper = threading.Thread(target=proxy.stop, daemon=True)
    stopper.start()
    stopper.join(60)
    caller.join(60)
    assert not stopper.is_alive()
    assert not caller.is_alive()
    assert len(outcome) == 1
    assert not isinstance(outcome[0], tuple) or outcome[0][0] >= 500


def test_the_key_appears_in_no_log_line():
    """Refusals and upstream failures are logged by kind, method and path; never a token."""
    idle = socket.create_server(("127.0.0.1", 0))
    port = idle.getsockname()[1]
    idle.close()
    with structlog.testing.capture_logs() as logs:
        with KeyProxy(f"http://127.0.0.1:{port}", REAL_KEY) as proxy:
            post(proxy.base_url, "/v1/messages", ask("hi"), {"x-api-key": REAL_KEY})
            post(proxy.base_url, f"/v1/messages?k={proxy.dummy_token}", ask("hi"), {"x-api-key": "nope"})
            post(proxy.base_url, "/v1/messages", ask("hi"), {"x-api-key": proxy.dummy_token})
            dummy = proxy.dummy_token
    events = [entry["event"] for entry in logs]
    assert events == ["key_proxy.refused", "key_proxy.refused", "key_proxy.upstream_error"]
    assert all(REAL_KEY not in repr(entry) and dummy not in repr(entry) for entry in logs)


@pytest.mark.parametrize(
    "url",
    ["ftp://127.0.0.1/", "http:///v1", "http://user:pw@127.0.0.1", "http://127.0.0.1/?q=1", "http://h/#f"],
)
def test_an_unusable_upstream_url_is_an_input_error_naming_base_url(url):
    """Bad --base-url values are refused before anything binds."""
    with pytest.raises(InputError, match="--base-url"):
        KeyProxy(url, REAL_KEY)


def test_a_blank_key_is_an_input_error():
    """No key, no proxy."""
    with pytest.raises(InputError, match="blank"):
        KeyProxy("http://127.0.0.1:1", "  ")


# ------------------------------------------------------------------ the composition root


def test_a_scripted_run_talks_to_the_provider_through_a_proxy_that_stops_with_the_block(tmp_path):
    """endpoint(): the agent gets the proxy and a dummy; an error in the sweep still stops the proxy."""
    from wfbench.cli import bootstrap as boot

    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)
    with pytest.raises(KeyboardInterrupt):  # noqa: PT012 - the block is the sweep being interrupted
        with boot.endpoint(script_path=str(script), base_url=None, environ={}, warn=print) as ep:
            assert ep.api_key.startswith("wfbench-proxy-")
            assert ep.withheld == (boot.OFFLINE_KEY,)
            status, _, body = post(ep.base_url, "/v1/messages", ask("Task write"), {"x-api-key": ep.api_key})
            assert status == 200
            assert b"Writing the file now" in body
            assert post(ep.base_url, "/v1/messages", ask("x"), {"x-api-key": boot.OFFLINE_KEY})[0] == 403
            raise KeyboardInterrupt
    with pytest.raises(ConnectionRefusedError):
        post(ep.base_url, "/v1/messages", ask("Task write"), {"x-api-key": ep.api_key})


def test_a_base_url_run_hands_the_agent_a_dummy_and_the_upstream_the_key(recorder_for):
    """--base-url + WFBENCH_ANTHROPIC_API_KEY: the key is only ``withheld``; the upstream gets it."""
    from wfbench.cli import bootstrap as boot

    recorder = recorder_for()
    environ = {boot.API_KEY_ENV: REAL_KEY}
    with boot.endpoint(script_path=None, base_url=recorder.base_url, environ=environ, warn=print) as ep:
        assert REAL_KEY not in (ep.base_url, ep.api_key)
        assert REAL_KEY not in repr(ep)
        assert ep.withheld == (REAL_KEY,)
        assert post(ep.base_url, "/v1/messages", ask("hi"), {"x-api-key": ep.api_key})[0] == 200
    assert recorder.header(0, "x-api-key") == [REAL_KEY]
    with pytest.raises(ConnectionRefusedError):
        post(ep.base_url, "/v1/messages", ask("hi"), {"x-api-key": ep.api_key})
