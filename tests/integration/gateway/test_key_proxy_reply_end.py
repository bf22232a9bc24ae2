"""A whole upstream reply is metered whole, and before the agent can see its end.

The flake this guards (issue 10): under load, the stand-in read a reply's ``message_stop`` and
hung up (its session was over) before the proxy had read the upstream's terminating chunk; the
proxy's write of that chunk to the gone agent failed and the whole reply was recorded as cut
short (``wire_incomplete``, the cell ``evidence-unverified``). A neighbour of it: an agent's next
request could pass the ``--max-cost`` check before the proxy had recorded the previous reply.
Here the upstream is paced (its reply split at chosen bytes, with pauses) and the agent, on the
lease's own UNIX socket, hangs up the moment it has the last event. Negative controls: replies
the upstream really cut short, and an agent hanging up before the last event, stay incomplete.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from tests.integration.gateway.test_key_proxy import REAL_KEY, ask
from wfbench.adapters.gateway.key_proxy import KeyProxy, Lease
from wfbench.adapters.gateway.rules import ANTHROPIC_ROUTES, OPENAI_RESPONSES_ROUTE
from wfbench.domain.metering.prices import ModelPrices
from wfbench.domain.session.records import Usage

MODEL = "claude-test"
USAGE = Usage(1200, 7, 44000, 80)
EVENTS = [
    (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": MODEL,
                "content": [],
                "usage": {
                    "input_tokens": 1200,
                    "cache_creation_input_tokens": 7,
                    "cache_read_input_tokens": 44000,
                    "output_tokens": 1,
                },
            },
        },
    ),
    (
        "content_block_start",
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    ),
    (
        "content_block_delta",
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Done."}},
    ),
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    (
        "message_delta",
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 80}},
    ),
    ("message_stop", {"type": "message_stop"}),
]
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
TERMINATOR = b"0\r\n\r\n"


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%b\r\n" % (len(data), data)


def sse(events: list[tuple[str, dict[str, object]]]) -> list[bytes]:
    return [f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events]


def chunked_reply(events: list[tuple[str, dict[str, object]]], *, terminated: bool = True) -> bytes:
    return HEAD + b"".join(chunk(event) for event in sse(events)) + (TERMINATOR if terminated else b"")


#: Where the reply's last event ends: the agent has all it needs once this many bytes arrived.
WHOLE = chunked_reply(EVENTS)
LAST_EVENT_END = len(chunked_reply(EVENTS, terminated=False))


class PacedUpstream:
    """A loopback upstream that sends each planned reply in parts, pausing between them, then closes."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.plans: list[tuple[list[bytes], float]] = []
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}"

    def plan(self, reply: bytes, *splits: int, pause_s: float = 0.0) -> None:
        """The next request's reply, cut at ``splits`` (byte offsets) with ``pause_s`` between parts."""
        bounds = [0, *splits, len(reply)]
        with self.lock:
            self.plans.append(([reply[a:b] for a, b in zip(bounds, bounds[1:], strict=False)], pause_s))

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            with connection:
                connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self._answer(connection)

    def _answer(self, connection: socket.socket) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            piece = connection.recv(65536)
            if not piece:
                return
            data += piece
        head, _, body = data.partition(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        while len(body) < length:
            body += connection.recv(65536)
        with self.lock:
            parts, pause_s = self.plans.pop(0)
        try:
            for number, part in enumerate(parts):
                time.sleep(pause_s if number else 0)
                connection.sendall(part)
            connection.shutdown(socket.SHUT_WR)  # an unterminated body ends here: cut short
        except OSError:
            return
        connection.settimeout(5)
        try:  # the proxy closes its side after reading the reply (or on cutting it)
            while connection.recv(65536):
                pass
        except OSError:
            pass

    def close(self) -> None:
        """Stop accepting and wait for the server thread: a thread still blocked in ``accept`` would
        take a later test's connection once the kernel reuses the listener's descriptor or port."""
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes a blocked accept (EINVAL)
        self.listener.close()
        self.thread.join(timeout=10)
        assert not self.thread.is_alive(), "the paced upstream's thread did not stop"


class Agent:
    """The agent's end of a lease's socket: one streaming request, read up to an event, then hang up."""

    def __init__(self, lease: Lease, path: str = "/v1/messages", request: object = None) -> None:
        assert lease.bridge is not None
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(30)
        self.sock.connect(lease.bridge.socket)
        body = json.dumps(request or ask("Task meter", model=MODEL, stream=True)).encode()
        self.sock.sendall(
            f"POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n".encode()
            + f"content-type: application/json\r\nx-api-key: {lease.token}\r\n".encode()
            + f"content-length: {len(body)}\r\n\r\n".encode()
            + body
        )
        self.received = b""

    def read_until(self, marker: bytes) -> None:
        """Read until ``marker`` arrived (the stand-in stops reading at ``message_stop``)."""
        while marker not in self.received:
            piece = self.sock.recv(65536)
            assert piece, f"the proxy closed before {marker!r}: {self.received[-200:]!r}"
            self.received += piece

    def read_to_close(self) -> None:
        while piece := self.sock.recv(65536):
            self.received += piece

    def hang_up(self) -> None:
        self.sock.close()


@pytest.fixture
def upstream() -> Iterator[PacedUpstream]:
    made = PacedUpstream()
    yield made
    made.close()


@pytest.fixture
def lease(upstream: PacedUpstream) -> Iterator[Lease]:
    prices = ModelPrices(3.0, 3.75, 0.30, 15.0)
    routes = (*ANTHROPIC_ROUTES, OPENAI_RESPONSES_ROUTE)
    with (
        KeyProxy(upstream.base_url, REAL_KEY, model=MODEL, prices=prices, routes=routes) as proxy,
        proxy.lease("cell") as made,
    ):
        yield made


def test_an_agent_hanging_up_after_the_last_event_leaves_the_reply_metered_whole(
    upstream: PacedUpstream, lease: Lease
) -> None:
    """The stand-in's exit: ``message_stop`` read, connection closed; the upstream's tail comes later."""
    upstream.plan(WHOLE, LAST_EVENT_END, pause_s=0.3)
    agent = Agent(lease)
    agent.read_until(b"message_stop")
    agent.hang_up()
    meter = lease.meter(settle_s=10)
    assert (meter.requests, meter.incomplete, meter.cut_upstream, meter.usage) == (1, 0, 0, USAGE)


@pytest.mark.parametrize("stream", [True, False], ids=["sse", "json"])
def test_the_reply_is_metered_before_the_agent_has_its_end(
    upstream: PacedUpstream, lease: Lease, stream: bool
) -> None:
    """The moment the agent has the last event (or the last byte of a plain reply), the meter has the reply.

    So the cell's meter needs no settling for an agent that read its replies, and a next request
    checks the budget against a spend that holds this reply.
    """
    if stream:
        upstream.plan(WHOLE, LAST_EVENT_END, pause_s=0.3)
        end = b"message_stop"
    else:
        body = json.dumps(
            {"type": "message", "content": [], "usage": {"input_tokens": 5, "output_tokens": 6}}
        )
        plain = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%b"
        reply = plain % (len(body), body.encode())
        upstream.plan(reply, len(reply) - 20, len(reply) - 1, pause_s=0.3)
        end = body[-20:].encode()
    agent = Agent(lease)
    agent.read_until(end)
    meter = lease.meter()  # no settling
    agent.hang_up()
    assert (meter.requests, meter.incomplete) == (1, 0)
    assert meter.usage == (USAGE if stream else Usage(5, None, None, 6))


def test_an_agent_hanging_up_while_the_proxy_reads_the_tail_leaves_the_reply_metered_whole(
    upstream: PacedUpstream, lease: Lease
) -> None:
    """Events after the last one (pings), paced: the agent leaves mid-tail, the proxy reads it alone."""
    ping = chunk(b'event: ping\ndata: {"type": "ping"}\n\n')
    reply = WHOLE[:LAST_EVENT_END] + ping * 3 + TERMINATOR
    upstream.plan(reply, *(LAST_EVENT_END + n * len(ping) for n in range(4)), pause_s=0.15)
    agent = Agent(lease)
    agent.read_until(b"message_stop")
    agent.hang_up()
    meter = lease.meter(settle_s=10)
    assert (meter.requests, meter.incomplete, meter.usage) == (1, 0, USAGE)


def test_a_responses_stream_read_to_response_completed_by_an_agent_that_hung_up_is_metered_whole(
    upstream: PacedUpstream, lease: Lease
) -> None:
    """The same race on the OpenAI Responses route (Codex): its last event is ``response.completed``."""
    usage = {"input_tokens": 1300, "output_tokens": 80, "input_tokens_details": {"cached_tokens": 1000}}
    events = [
        ("response.created", {"type": "response.created", "response": {"id": "r1"}}),
        ("response.completed", {"type": "response.completed", "response": {"id": "r1", "usage": usage}}),
    ]
    upstream.plan(chunked_reply(events), len(chunked_reply(events, terminated=False)), pause_s=0.3)
    agent = Agent(lease, "/v1/responses", {"model": MODEL, "input": "Task meter", "stream": True})
    agent.read_until(b"response.completed")
    agent.hang_up()
    meter = lease.meter(settle_s=10)
    assert (meter.requests, meter.incomplete, meter.usage) == (1, 0, Usage(300, None, 1000, 80))


def test_a_reply_split_at_every_byte_is_metered_whole_whenever_the_agent_hangs_up(
    upstream: PacedUpstream, lease: Lease
) -> None:
    """Every split of the upstream's bytes, paced; the agent hangs up as soon as it has the last event."""
    splits = range(1, len(WHOLE))
    for split in splits:
        upstream.plan(WHOLE, split, pause_s=0.002)
        agent = Agent(lease)
        agent.read_until(b"message_stop")
        agent.hang_up()
        lease.meter(settle_s=10)
    meter = lease.meter(settle_s=10)
    assert (meter.requests, meter.incomplete) == (len(splits), 0)
    assert meter.usage == Usage(*(len(splits) * count for count in (1200, 7, 44000, 80)))


def test_an_agent_that_reads_to_the_end_gets_every_byte_and_the_reply_metered_whole(
    upstream: PacedUpstream, lease: Lease
) -> None:
    """The control: the same reply, read to its terminating chunk."""
    upstream.plan(WHOLE, LAST_EVENT_END, pause_s=0.05)
    agent = Agent(lease)
    agent.read_until(TERMINATOR)
    agent.hang_up()
    assert agent.received.endswith(b'message_stop"}\n\n\r\n' + TERMINATOR)
    meter = lease.meter(settle_s=10)
    assert (meter.requests, meter.incomplete, meter.usage) == (1, 0, USAGE)


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param(chunked_reply(EVENTS[:-1], terminated=False), id="no-message-stop"),
        pytest.param(chunked_reply(EVENTS[:-1]), id="terminated-without-message-stop"),
        pytest.param(chunked_reply(EVENTS, terminated=False), id="message-stop-without-terminating-chunk"),
    ],
)
def test_a_reply_the_upstream_really_cut_short_is_still_incomplete(
    upstream: PacedUpstream, lease: Lease, reply: bytes
) -> None:
    """Negative controls: no ``message_stop``, or a chunked body never terminated, is not metered whole."""
    upstream.plan(reply, len(reply) // 2, pause_s=0.01)
    agent = Agent(lease)
    agent.read_to_close()
    agent.hang_up()
    assert agent.received.endswith(reply[-30:])  # the agent got every byte the upstream sent
    meter = lease.meter(settle_s=10)
    assert (meter.requests, meter.incomplete, meter.cut_upstream) == (1, 1, 1)  # the upstream's cut
    assert meter.usage.input_tokens == 1200  # what arrived before the cut, a lower bound


def test_an_agent_hanging_up_before_the_last_event_leaves_the_reply_incomplete(
    upstream: PacedUpstream, lease: Lease
) -> None:
    """The proxy stops reading (so the upstream stops generating) for an agent that left mid-reply."""
    upstream.plan(WHOLE, WHOLE.index(b"content_block_delta"), pause_s=0.3)
    agent = Agent(lease)
    agent.read_until(b"message_start")
    agent.hang_up()
    meter = lease.meter(settle_s=10)
    assert (meter.requests, meter.incomplete, meter.cut_upstream) == (
        1,
        1,
        0,
    )  # the agent's, not the upstream's
    assert meter.usage.input_tokens == 1200
