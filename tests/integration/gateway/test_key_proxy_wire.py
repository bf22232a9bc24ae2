"""The key proxy as a cell sees it: leases on UNIX sockets, the allow-lists, caps, wire metering, the budget.

Real HTTP over real sockets (a lease's UNIX socket, the proxy's loopback port) against the
scripted provider or a recorder that keeps every raw request head. Every refusal test has a
control: the same request, allowed, is forwarded (the recorder sees it).
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.gateway.test_key_proxy import REAL_KEY, Recorder, ask
from wfbench.adapters.gateway.key_proxy import KeyProxy, Lease
from wfbench.adapters.gateway.rules import ANTHROPIC_ROUTES, OPENAI_RESPONSES_ROUTE
from wfbench.adapters.provider.script import ProviderScript
from wfbench.adapters.provider.scripted import ScriptedProvider
from wfbench.domain.errors import InputError
from wfbench.domain.metering.prices import ModelPrices
from wfbench.domain.session.records import Usage

MODEL = "claude-test"
SCRIPT = """
default: {say: "Nothing is scripted.", usage: {input_tokens: 3, output_tokens: 2}}
conversations:
  - when: ["Task meter"]
    turns:
      - say: "Metered reply with a few words in it."
        usage:
          input_tokens: 1200
          output_tokens: 80
          cache_read_input_tokens: 44000
          cache_creation_input_tokens: 7
  - {when: ["Task 529"], turns: [{status: 529}]}
  - {when: ["Task cut"], turns: [{say: "a longer sentence to cut short", truncate_after_events: 3}]}
  - {when: ["Task bare"], turns: [{say: "no usage at all"}]}
"""


class UnixHTTPConnection(http.client.HTTPConnection):
    """``http.client`` over a UNIX socket (what the sandbox's forwarder relays to)."""

    def __init__(self, path: str, timeout: float = 30) -> None:
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


def send(
    lease_or_url: Lease | str,
    method: str,
    target: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, bytes]:
    """One request through a lease's socket (or to a loopback URL); status and body."""
    if isinstance(lease_or_url, Lease):
        assert lease_or_url.bridge is not None
        connection: http.client.HTTPConnection = UnixHTTPConnection(lease_or_url.bridge.socket)
        token = lease_or_url.token
    else:
        host, port = lease_or_url.removeprefix("http://").split(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=30)
        token = ""
    sent = {"x-api-key": token, "content-type": "application/json", **(headers or {})}
    payload = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    try:
        connection.request(method, target, payload, sent)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


@pytest.fixture
def provider() -> Iterator[ScriptedProvider]:
    with ScriptedProvider(ProviderScript.from_yaml(SCRIPT, source="inline")) as running:
        yield running


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    made = Recorder(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
    yield made
    made.close()


@pytest.fixture
def proxy(provider: ScriptedProvider) -> Iterator[KeyProxy]:
    prices = ModelPrices(3.0, 3.75, 0.30, 15.0)
    with KeyProxy(provider.base_url, REAL_KEY, model=MODEL, prices=prices) as running:
        yield running


@pytest.fixture
def lease(proxy: KeyProxy) -> Iterator[Lease]:
    with proxy.lease("task-arm-run0") as made:
        yield made


def test_a_lease_serves_its_cell_on_a_private_socket_with_its_own_token(
    proxy: KeyProxy, lease: Lease
) -> None:
    """The cell's token opens its socket only; the socket file is 0600 in a 0700 directory."""
    assert lease.bridge is not None
    assert os.stat(lease.bridge.socket).st_mode & 0o777 == 0o600
    assert os.stat(os.path.dirname(lease.bridge.socket)).st_mode & 0o777 == 0o700
    assert send(lease, "POST", "/v1/messages", ask("Task meter", model=MODEL))[0] == 200
    with proxy.lease("other-cell") as other:
        assert other.token != lease.token
        assert (
            send(other, "POST", "/v1/messages", ask("hi", model=MODEL), {"x-api-key": lease.token})[0] == 403
        )
    wrong = {"x-api-key": proxy.dummy_token}  # the proxy's own token does not open a cell's socket
    assert send(lease, "POST", "/v1/messages", ask("hi", model=MODEL), wrong)[0] == 403
    assert (
        send(proxy.base_url, "POST", "/v1/messages", ask("hi", model=MODEL), {"x-api-key": lease.token})[0]
        == 403
    )


def test_closing_a_lease_removes_its_socket_and_directory(proxy: KeyProxy) -> None:
    made = proxy.lease("c")
    assert made.bridge is not None
    path = made.bridge.socket
    made.close()
    made.close()  # idempotent
    assert not os.path.exists(os.path.dirname(path))


def test_stopping_the_proxy_closes_every_lease(provider: ScriptedProvider) -> None:
    with KeyProxy(provider.base_url, REAL_KEY) as running:
        made = running.lease("c")
    assert made.bridge is not None
    assert not os.path.exists(made.bridge.socket)


@pytest.mark.parametrize(
    ("method", "target", "status", "kind"),
    [
        ("GET", "/v1/models", 404, "route"),
        ("POST", "/v1/messages/batches", 404, "route"),
        ("POST", "/v1/files", 404, "route"),
        ("POST", "/v1/complete", 404, "route"),
        ("DELETE", "/v1/messages", 405, "route"),
        ("GET", "/v1/messages", 405, "route"),
        ("POST", "/v1/messages/../models", 400, "path"),
        ("POST", "/v1/./messages", 400, "path"),
        ("POST", "//v1/messages", 400, "path"),
        ("POST", "/v1//messages", 400, "path"),
        ("POST", "/v1/%6dessages", 400, "path"),
        ("POST", "/v1/messages%2f..%2fmodels", 400, "path"),
        ("POST", "/v1/messages;x", 400, "path"),
        ("POST", "/v1/messages?beta=false", 400, "query"),
        ("POST", "/v1/messages?beta=true&x=1", 400, "query"),
        ("POST", "/v1/responses", 404, "route"),
    ],
)
def test_only_the_agent_protocols_routes_reach_the_upstream(
    recorder: Recorder, method: str, target: str, status: int, kind: str
) -> None:
    """Any other method, path, encoding or query is refused, recorded in the meter, never forwarded."""
    with KeyProxy(recorder.base_url, REAL_KEY, model=MODEL) as running, running.lease("c") as cell:
        got, body = send(cell, method, target, ask("hi", model=MODEL))
        assert send(cell, "POST", "/v1/messages?beta=true", ask("hi", model=MODEL))[0] == 200  # control
        meter = cell.meter(settle_s=5)
    assert got == status
    assert json.loads(body)["type"] == "error"
    assert [(r.status, r.kind) for r in meter.refusals] == [(status, kind)]
    assert len(recorder.heads) == 1
    assert recorder.heads[0].startswith("POST /v1/messages?beta=true ")


def test_another_model_is_refused_with_a_403_the_meter_records(recorder: Recorder) -> None:
    with KeyProxy(recorder.base_url, REAL_KEY, model=MODEL) as running, running.lease("c") as cell:
        status, body = send(cell, "POST", "/v1/messages", ask("hi", model="claude-opus-4-1"))
        count = send(cell, "POST", "/v1/messages/count_tokens", {"model": "claude-opus-4-1", "messages": []})
        assert send(cell, "POST", "/v1/messages", ask("hi", model=MODEL))[0] == 200  # control
        meter = cell.meter(settle_s=5)
    assert (status, count[0]) == (403, 403)
    assert "claude-opus-4-1 is not the pinned model claude-test" in json.loads(body)["error"]["message"]
    assert [r.kind for r in meter.refusals] == ["model", "model"]
    assert meter.refusals[0].detail == "model claude-opus-4-1 is not the pinned model claude-test"
    assert len(recorder.heads) == 1


@pytest.mark.parametrize(
    "extra",
    [
        {"tools": [{"type": "web_search_20250305", "name": "web_search"}]},
        {"tools": [{"type": "web_fetch_20250910", "name": "web_fetch"}]},
        {"tools": [{"type": "code_execution_20250522", "name": "code_execution"}]},
        {"mcp_servers": [{"type": "url", "url": "https://example.invalid/mcp", "name": "x"}]},
        {"container": "container_123"},
    ],
    ids=["web-search", "web-fetch", "code-execution", "mcp-servers", "container"],
)
def test_server_side_tools_that_reach_the_network_are_refused(
    recorder: Recorder, extra: dict[str, Any]
) -> None:
    with KeyProxy(recorder.base_url, REAL_KEY, model=MODEL) as running, running.lease("c") as cell:
        status, _ = send(cell, "POST", "/v1/messages", ask("hi", model=MODEL, **extra))
        custom = {"tools": [{"name": "Bash", "description": "x", "input_schema": {"type": "object"}}]}
        assert send(cell, "POST", "/v1/messages", ask("hi", model=MODEL, **custom))[0] == 200  # control
        meter = cell.meter(settle_s=5)
    assert status == 403
    assert [r.kind for r in meter.refusals] == ["server-tool"]
    assert len(recorder.heads) == 1


def test_only_allow_listed_headers_are_forwarded(recorder: Recorder) -> None:
    sent = {
        "anthropic-version": "2023-06-01",
        "anthropic-beta": "interleaved-thinking-2025-05-14",
        "x-stainless-os": "Linux",
        "user-agent": "claude-cli/2.1",
        "x-evil": "exfiltrate",
        "cookie": "session=1",
        "x-forwarded-for": "10.0.0.1",
        "anthropic-organization-id": "org",
    }
    with KeyProxy(recorder.base_url, REAL_KEY, model=MODEL) as running, running.lease("c") as cell:
        assert send(cell, "POST", "/v1/messages", ask("hi", model=MODEL), sent)[0] == 200
    names = {line.split(":", 1)[0].lower() for line in recorder.heads[0].split("\r\n")[1:]}
    assert {"anthropic-version", "anthropic-beta", "x-stainless-os", "user-agent", "x-api-key"} <= names
    assert names.isdisjoint({"x-evil", "cookie", "x-forwarded-for", "anthropic-organization-id"})
    assert recorder.header(0, "x-api-key") == [REAL_KEY]


def test_a_body_over_the_limit_is_refused_before_it_is_read(recorder: Recorder) -> None:
    with KeyProxy(recorder.base_url, REAL_KEY) as running, running.lease("c") as cell:
        assert cell.bridge is not None
        with socket.socket(socket.AF_UNIX) as raw:
            raw.connect(cell.bridge.socket)
            head = f"POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: {cell.token}\r\n"
            head += f"Content-Length: {10**9}\r\n\r\n"
            raw.sendall(head.encode())
            reply = raw.recv(4096)
        meter = cell.meter(settle_s=5)
    assert reply.startswith(b"HTTP/1.1 413")
    assert [r.kind for r in meter.refusals] == ["body"]
    assert recorder.heads == []


def test_an_idle_connection_is_closed(provider: ScriptedProvider) -> None:
    with KeyProxy(provider.base_url, REAL_KEY, idle_timeout_s=0.3) as running, running.lease("c") as cell:
        assert cell.bridge is not None
        with socket.socket(socket.AF_UNIX) as raw:
            raw.settimeout(10)
            raw.connect(cell.bridge.socket)
            started = time.monotonic()
            assert raw.recv(1) == b""  # closed by the proxy, not by our 10 s timeout
            assert time.monotonic() - started < 8


def test_a_cells_connections_are_capped_and_other_cells_keep_working(provider: ScriptedProvider) -> None:
    """500 idle connections from one cell: past the cap each is closed at accept; another cell is served."""
    with KeyProxy(provider.base_url, REAL_KEY, max_connections=8) as running:
        with running.lease("greedy") as greedy, running.lease("other") as other:
            assert greedy.bridge is not None
            held = []
            for _ in range(500):
                raw = socket.socket(socket.AF_UNIX)
                raw.connect(greedy.bridge.socket)  # blocking: waits while the backlog is full
                held.append(raw)
            time.sleep(0.5)
            closed = 0
            for raw in held:
                raw.setblocking(False)
                try:
                    closed += raw.recv(1) == b""
                except BlockingIOError:
                    pass
            assert send(other, "POST", "/v1/messages", ask("Task meter"))[0] == 200
            meter = greedy.meter(settle_s=5)
            for raw in held:
                raw.close()
    assert closed == 500 - 8
    assert meter.refused == 500 - 8
    assert {r.kind for r in meter.refusals} == {"connections"}


@pytest.mark.parametrize("stream", [True, False], ids=["sse", "json"])
def test_the_usage_the_upstream_reported_is_metered_per_cell(proxy: KeyProxy, stream: bool) -> None:
    with proxy.lease("one") as one, proxy.lease("two") as two:
        assert (
            send(one, "POST", "/v1/messages?beta=true", ask("Task meter", model=MODEL, stream=stream))[0]
            == 200
        )
        assert send(one, "POST", "/v1/messages/count_tokens", {"model": MODEL, "messages": []})[0] == 200
        assert send(two, "POST", "/v1/messages", ask("hi", model=MODEL, stream=stream))[0] == 200
        first, second = one.meter(settle_s=5), two.meter(settle_s=5)
    assert first.requests == 2  # count_tokens is forwarded but carries no usage
    assert first.usage == Usage(1200, 7, 44000, 80)
    assert first.incomplete == 0
    assert second.usage == Usage(3, None, None, 2)
    expected = (1200 * 3.0 + 7 * 3.75 + 44000 * 0.30 + 80 * 15.0 + 3 * 3.0 + 2 * 15.0) / 1e6
    assert proxy.spend().spent_usd == pytest.approx(expected, abs=1e-6)


def test_a_reply_cut_short_is_counted_incomplete_and_an_error_reply_is_not(
    proxy: KeyProxy, lease: Lease
) -> None:
    with pytest.raises(http.client.IncompleteRead):
        send(lease, "POST", "/v1/messages", ask("Task cut", model=MODEL, stream=True))
    assert send(lease, "POST", "/v1/messages", ask("Task 529", model=MODEL))[0] == 529
    assert send(lease, "POST", "/v1/messages", ask("Task bare", model=MODEL, stream=True))[0] == 200
    meter = lease.meter(settle_s=5)
    assert (meter.requests, meter.incomplete) == (3, 1)
    assert meter.usage == Usage()  # the cut reply reported none before its cut
    assert (meter.upstream_failures, meter.last_failure_status) == (1, 529)  # the provider's fault, named


def test_once_the_budget_is_spent_new_requests_are_refused(provider: ScriptedProvider) -> None:
    prices = ModelPrices(3.0, 3.75, 0.30, 15.0)
    with KeyProxy(provider.base_url, REAL_KEY, model=MODEL, prices=prices, budget_usd=0.01) as running:
        with running.lease("c") as cell:
            assert send(cell, "POST", "/v1/messages", ask("Task meter", model=MODEL))[0] == 200  # $0.018
            status, body = send(cell, "POST", "/v1/messages", ask("Task meter", model=MODEL))
            meter = cell.meter(settle_s=5)
        spend = running.spend()
    assert status == 403
    assert "--max-cost budget is spent" in json.loads(body)["error"]["message"]
    assert meter.requests == 1
    assert [r.kind for r in meter.refusals] == ["budget"]
    assert spend.reached
    assert spend.spent_usd == pytest.approx(0.018026, abs=1e-6)


def test_a_budget_for_an_unpriced_model_is_refused_up_front(provider: ScriptedProvider) -> None:
    with pytest.raises(InputError, match="no prices are known for model 'my-model'"):
        KeyProxy(provider.base_url, REAL_KEY, model="my-model", budget_usd=1.0)


def test_openai_responses_is_one_route_away(provider: ScriptedProvider) -> None:
    """Off by default (404); with OPENAI_RESPONSES_ROUTE the stream is forwarded and its usage metered."""
    body = {"model": MODEL, "input": "Task meter", "stream": True}
    routes = (*ANTHROPIC_ROUTES, OPENAI_RESPONSES_ROUTE)
    with (
        KeyProxy(provider.base_url, REAL_KEY, model=MODEL, routes=routes) as running,
        running.lease("c") as cell,
    ):
        bearer = {"x-api-key": "", "authorization": f"Bearer {cell.token}"}
        headers = {k: v for k, v in bearer.items() if v}
        connection = UnixHTTPConnection(cell.bridge.socket if cell.bridge else "")
        connection.request(
            "POST",
            "/v1/responses",
            json.dumps(body).encode(),
            {**headers, "content-type": "application/json"},
        )
        response = connection.getresponse()
        data = response.read()
        connection.close()
        meter = cell.meter(settle_s=5)
    assert response.status == 200
    assert b"response.completed" in data
    assert meter.usage == Usage(1200, 7, 44000, 80)


#: The tool kinds the real Codex CLI 0.171.0 sends (its first request of a session).
CODEX_TOOLS = [
    {"type": "function", "name": "exec_command", "parameters": {"type": "object"}},
    {"type": "custom", "name": "apply_patch"},
    {"type": "tool_search"},
]


@pytest.mark.parametrize(
    "tool",
    [
        {"type": "web_search"},
        {"type": "web_search_preview"},
        {"type": "file_search", "vector_store_ids": ["vs_1"]},
        {"type": "code_interpreter", "container": {"type": "auto"}},
        {"type": "computer_use_preview", "display_width": 1, "display_height": 1, "environment": "linux"},
        {"type": "image_generation"},
        {"type": "mcp", "server_label": "x", "server_url": "https://example.invalid/mcp"},
    ],
    ids=lambda tool: tool["type"],
)
def test_responses_server_side_tools_are_refused_and_codexs_own_tools_are_forwarded(
    recorder: Recorder, tool: dict[str, Any]
) -> None:
    routes = (*ANTHROPIC_ROUTES, OPENAI_RESPONSES_ROUTE)
    with (
        KeyProxy(recorder.base_url, REAL_KEY, model=MODEL, routes=routes) as running,
        running.lease("c") as cell,
    ):
        hosted = {"model": MODEL, "input": "hi", "tools": [*CODEX_TOOLS, tool]}
        status, _ = send(cell, "POST", "/v1/responses", hosted)
        own = {"model": MODEL, "input": "hi", "tools": CODEX_TOOLS}
        assert send(cell, "POST", "/v1/responses", own)[0] == 200  # control: Codex's own tools pass
        meter = cell.meter(settle_s=5)
    assert status == 403
    assert [r.kind for r in meter.refusals] == ["server-tool"]
    assert len(recorder.heads) == 1


def test_a_lease_puts_its_socket_in_the_cells_scratch_directory_when_the_path_fits(
    proxy: KeyProxy, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Under the cell's own directory (nothing shared in /tmp); a scratch too deep for a socket path
    falls back to the temporary directory, and the lease still serves."""
    import tempfile

    short = tempfile.mkdtemp(prefix="c-", dir="/tmp")  # noqa: S108 - a short path on purpose
    deep = tmp_path_factory.mktemp("d" * 60) / ("e" * 60)
    deep.mkdir()
    try:
        with proxy.lease("c", scratch=short) as inside, proxy.lease("d", scratch=str(deep)) as outside:
            assert inside.bridge is not None
            assert outside.bridge is not None
            assert os.path.dirname(os.path.dirname(inside.bridge.socket)) == short
            assert not outside.bridge.socket.startswith(str(deep))
            for lease in (inside, outside):
                assert send(lease, "POST", "/v1/messages", ask("Task meter", model=MODEL))[0] == 200
        assert os.listdir(short) == []  # the lease removed its directory
    finally:
        os.rmdir(short)
