"""The scripted model provider: a loopback HTTP server that answers like a model API.

It speaks Anthropic Messages (``POST /v1/messages``, streaming SSE and plain JSON, plus
``/v1/messages/count_tokens``), OpenAI Responses (``POST /v1/responses``, streaming and
plain; :mod:`wfbench.adapters.provider.responses`) and the Gemini API
(``POST /v1beta/models/{model}:generateContent``, ``:streamGenerateContent?alt=sse`` and
``:countTokens``; :mod:`wfbench.adapters.provider.gemini`). What it says comes from a
:class:`~wfbench.adapters.provider.script.ProviderScript`.

The reply is chosen from the request alone (the first rule whose ``when`` strings all occur in
the user text; turn i answers a request that already holds i assistant turns), so concurrent
conversations never share state. Every request is recorded (secret headers redacted) for
assertions and can be written as JSON lines. Usage the script leaves out is omitted on the wire.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import socket
import struct
import sys
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from wfbench.adapters.provider import gemini, gemini_read, responses, wire
from wfbench.adapters.provider.records import (
    RecordedRequest,
    ReplySource,
    Selection,
    redact_headers,
    select_turn,
)
from wfbench.adapters.provider.script import EMPTY_END_TURN, ProviderScript, Turn
from wfbench.adapters.provider.wire import Protocol, ReplyContext

MAX_BODY_BYTES = 32 * 1024 * 1024
IDLE_TIMEOUT_S = 120.0
JOIN_TIMEOUT_S = 10.0
MALFORMED_EVENT = 2  # the first content event (after message_start/ping, response.created/in_progress)
__all__ = ["RecordedRequest", "ReplySource", "ScriptedProvider", "Selection", "redact_headers", "select_turn"]


class _Server(ThreadingHTTPServer):
    """Daemon handler threads (a forgotten stop() never blocks exit), tracked so stop() joins them."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self, address: tuple[str, int], provider: ScriptedProvider, family: socket.AddressFamily
    ) -> None:
        self.address_family = family
        self.provider = provider
        self.connections: set[socket.socket] = set()
        self.handlers: list[threading.Thread] = []
        self.connections_lock = threading.Lock()
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        """Handle the connection in a new daemon thread, remembered for :meth:`join_handlers`."""
        thread = threading.Thread(
            target=self.process_request_thread, args=(request, client_address), daemon=True
        )
        with self.connections_lock:
            self.handlers = [handler for handler in self.handlers if handler.is_alive()]
            self.handlers.append(thread)
        thread.start()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up (or a connection shut down by stop()) is not an error worth a traceback."""
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)

    def close_connections(self) -> None:
        """Shut down every open connection so idle keep-alive handlers wake up and end."""
        with self.connections_lock:
            for connection in list(self.connections):
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)

    def join_handlers(self, timeout_s: float) -> None:
        """Join the handler threads (bounded: a handler ends soon after its socket is shut down)."""
        deadline = time.monotonic() + timeout_s
        with self.connections_lock:
            handlers = list(self.handlers)
        for handler in handlers:
            handler.join(max(0.0, deadline - time.monotonic()))


class ScriptedProvider:
    """A loopback model endpoint driven by a script. Use as a context manager, or start()/stop().

    ``host`` must be a loopback address; ``port`` 0 picks an ephemeral port. With ``log_path``,
    each request is also appended to that JSONL file as it arrives. ``keep_requests=False``
    keeps nothing in memory (``requests`` stays empty): a long sweep's memory stays flat.
    """

    def __init__(
        self,
        script: ProviderScript,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        log_path: str | Path | None = None,
        keep_requests: bool = True,
    ) -> None:
        if host != "localhost" and not ipaddress.ip_address(host).is_loopback:
            raise ValueError(f"the scripted provider binds loopback only, not {host!r}")
        self.script = script
        self._address = (host, port)
        self._log_path = None if log_path is None else Path(log_path)
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._counts: dict[str, int] = {}
        self._keep_requests = keep_requests
        self._bursts: dict[int, int] = {}
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.stopping = threading.Event()

    def start(self) -> ScriptedProvider:
        """Bind and serve in a background thread; returns self."""
        if self._server is not None:
            raise RuntimeError("the scripted provider is already running")
        host, port = self._address
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._server = _Server((host, port), self, family)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.1},
            name="scripted-provider",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving: wake stalled replies, close open connections, join every thread."""
        server, self._server = self._server, None
        if server is None:
            return
        self.stopping.set()
        server.shutdown()
        server.server_close()
        server.close_connections()
        server.join_handlers(JOIN_TIMEOUT_S)
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> ScriptedProvider:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound port (after start)."""
        if self._server is None:
            raise RuntimeError("the scripted provider is not running")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>`` (no ``/v1``: Anthropic clients add it; OpenAI clients need it)."""
        host = self._address[0]
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{self.port}"

    @property
    def requests(self) -> tuple[RecordedRequest, ...]:
        """Every request received so far, in arrival order."""
        with self._lock:
            return tuple(self._requests)

    @property
    def unmatched(self) -> tuple[RecordedRequest, ...]:
        """Model calls no rule matched (answered by ``default``)."""
        return tuple(request for request in self.requests if request.unmatched)

    def take_burst(self, rule: int | None) -> Turn | None:
        """The burst error for a request matching ``rule``, while that rule's burst lasts (atomic)."""
        if rule is None:
            return None
        conversation = self.script.conversations[rule]
        if conversation.burst is None:
            return None
        with self._lock:
            used = self._bursts.get(rule, 0)
            if used >= conversation.burst_requests:
                return None
            self._bursts[rule] = used + 1
        return conversation.burst

    def record(self, request: RecordedRequest) -> None:
        """Store a request (and append it to the live log, if any)."""
        with self._lock:
            self._counts[request.source.value] = self._counts.get(request.source.value, 0) + 1
            if self._keep_requests:
                self._requests.append(request)
            if self._log_path is not None:
                with self._log_path.open("a", encoding="utf-8") as log:
                    log.write(json.dumps(request.to_mapping(), sort_keys=True) + "\n")

    def reply_counts(self) -> dict[str, int]:
        """How many requests each reply source answered (``scripted``, ``default``…), kept in any mode."""
        with self._lock:
            return dict(self._counts)

    def write_log(self, path: str | Path) -> Path:
        """Write every recorded request as one JSON line each; returns the path."""
        target = Path(path)
        lines = [json.dumps(request.to_mapping(), sort_keys=True) + "\n" for request in self.requests]
        target.write_text("".join(lines), encoding="utf-8")
        return target


class _Handler(BaseHTTPRequestHandler):
    """One connection: HTTP/1.1 keep-alive; SSE replies use chunked transfer encoding."""

    protocol_version = "HTTP/1.1"
    server: _Server
    timeout = IDLE_TIMEOUT_S

    def setup(self) -> None:
        super().setup()
        with contextlib.suppress(OSError):  # small SSE writes must not wait for delayed ACKs
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.server.connections_lock:
            self.server.connections.add(self.connection)

    def finish(self) -> None:
        with self.server.connections_lock:
            self.server.connections.discard(self.connection)
        with contextlib.suppress(OSError, ValueError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the stdlib's per-request stderr log (requests are recorded instead)."""

    def do_GET(self) -> None:
        """Only POST is served; anything else is a 404 in the Anthropic error shape."""
        self._read_body()
        self._record(None, Protocol.UNKNOWN, ReplySource.NOT_FOUND, None, None)
        self._send_json(HTTPStatus.NOT_FOUND, wire.anthropic_error(404, f"no route for {self.command}"))

    do_PUT = do_DELETE = do_PATCH = do_GET

    def do_POST(self) -> None:
        """Route by path: Messages, count_tokens, Responses; anything else is a 404."""
        raw = self._read_body()
        if raw is None:
            return
        protocol = wire.protocol_for(self.path)
        body = _parse(raw)
        stream = isinstance(body, dict) and body.get("stream") is True
        path_model = None
        if protocol is Protocol.GEMINI:  # the path says model and streaming; the body neither
            path_model, method = gemini_read.model_of_path(self.path) or ("", "")
            stream = method == "streamGenerateContent"
        if protocol is Protocol.UNKNOWN:
            self._record(body, protocol, ReplySource.NOT_FOUND, None, None)
            self._send_json(HTTPStatus.NOT_FOUND, wire.anthropic_error(404, f"no route for {self.path}"))
        elif not isinstance(body, dict) or "_unparsed" in body:
            self._record(body, protocol, ReplySource.BAD_REQUEST, None, None)
            self._send_error(protocol, 400, "the request body is not a JSON object")
        elif protocol is Protocol.ANTHROPIC_COUNT_TOKENS:
            self._record(body, protocol, ReplySource.COUNT_TOKENS, None, None, stream=False)
            self._send_json(HTTPStatus.OK, wire.count_tokens_reply(body))
        elif protocol is Protocol.GEMINI_COUNT_TOKENS:
            self._record(body, protocol, ReplySource.COUNT_TOKENS, None, None, stream=False)
            self._send_json(HTTPStatus.OK, gemini.count_tokens_reply(body))
        else:
            headers = {name.lower(): value for name, value in self.headers.items()}
            selection = select_turn(self.server.provider.script, body, protocol, headers)
            self._record(
                body, protocol, selection.source, selection.rule, selection.turn_index, stream=stream
            )
            turn = self.server.provider.take_burst(selection.rule) or selection.turn
            ctx = ReplyContext.from_request(body, protocol, path_model=path_model)
            self._answer(turn, ctx, protocol, stream)

    # ------------------------------------------------------------------ answering

    def _answer(self, turn: Turn, ctx: ReplyContext, protocol: Protocol, stream: bool) -> None:
        if turn.stall_s and self.server.provider.stopping.wait(turn.stall_s):
            self.close_connection = True
            return
        if turn.reset:
            self._reset()
        elif turn.status is not None:
            self._send_error(protocol, turn.status)
        elif stream:
            self._send_events(_events(turn, ctx, protocol), turn)
        else:
            self._send_json(HTTPStatus.OK, _reply(turn, ctx, protocol), turn=turn)

    def _send_error(self, protocol: Protocol, status: int, message: str = "") -> None:
        if protocol is Protocol.OPENAI_RESPONSES:
            body = responses.openai_error(status, message)
        elif protocol in (Protocol.GEMINI, Protocol.GEMINI_COUNT_TOKENS):
            body = gemini.gemini_error(status, message)
        else:
            body = wire.anthropic_error(status, message)
        self._send_json(status, body)

    def _send_json(self, status: int, body: Any, *, turn: Turn = EMPTY_END_TURN) -> None:
        payload = json.dumps(body).encode("utf-8")
        if turn.malformed:
            payload = payload[: max(1, len(payload) // 2)] + b"<<malformed"
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("request-id", "req_scripted")
        self.end_headers()
        if turn.truncate_after_events is not None:
            payload = payload[: len(payload) // 2]
            self.close_connection = True
        self._write(payload)

    def _send_events(self, events: list[wire.Event], turn: Turn) -> None:
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("request-id", "req_scripted")
        self.end_headers()
        limit = turn.truncate_after_events
        chunks = []
        for number, (name, data) in enumerate(events):
            if limit is not None and number >= limit:
                break
            text = json.dumps(data, separators=(",", ":"))
            if turn.malformed and number == min(MALFORMED_EVENT, len(events) - 1):
                text = text[: len(text) // 2]
            named = f"event: {name}\n" if name else ""  # the Gemini API names no event
            event = f"{named}data: {text}\n\n".encode()
            chunks.append(b"%x\r\n%b\r\n" % (len(event), event))
        if limit is not None and limit < len(events):
            self.close_connection = True  # no terminating chunk: the client sees a cut stream
        else:
            chunks.append(b"0\r\n\r\n")
        self._write(b"".join(chunks))  # one write: every event is a chunk of its own

    def _write(self, data: bytes) -> bool:
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except OSError:
            self.close_connection = True
            return False
        return True

    def _reset(self) -> None:
        """Abort the connection with a TCP RST (SO_LINGER 0), sending nothing."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()

    # ------------------------------------------------------------------ reading and recording

    def _read_body(self) -> bytes | None:
        """The request body (Content-Length or chunked); None after answering 400/413 itself."""
        try:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                return self._read_chunked()
            length = int(self.headers.get("Content-Length") or 0)
            if length < 0:
                raise ValueError("negative Content-Length")
        except ValueError:
            return self._refuse_body(HTTPStatus.BAD_REQUEST, "unreadable request body framing")
        if length > MAX_BODY_BYTES:
            return self._refuse_body(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "request body too large")
        return self.rfile.read(length)

    def _read_chunked(self) -> bytes | None:
        data = bytearray()
        while True:
            line = self.rfile.readline(1024)
            if not line:
                raise ValueError("the chunked body ended early")
            size = int(line.split(b";", 1)[0].strip(), 16)
            if size == 0:
                while self.rfile.readline(1024).strip():  # trailers, then the blank line
                    pass
                return bytes(data)
            if len(data) + size > MAX_BODY_BYTES:
                return self._refuse_body(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "request body too large")
            data += self.rfile.read(size)
            self.rfile.readline(1024)

    def _refuse_body(self, status: HTTPStatus, message: str) -> bytes | None:
        """Answer a request whose body cannot be read, close the connection; returns None."""
        self.close_connection = True
        self._send_json(status, wire.anthropic_error(int(status), message))
        return None

    def _record(
        self,
        body: Any,
        protocol: Protocol,
        source: ReplySource,
        rule: int | None,
        turn: int | None,
        *,
        stream: bool = False,
    ) -> None:
        self.server.provider.record(
            RecordedRequest(
                method=self.command,
                path=self.path,
                headers=redact_headers(list(self.headers.items())),
                body=body,
                protocol=protocol,
                source=source,
                rule=rule,
                turn=turn,
                stream=stream,
            )
        )


def _events(turn: Turn, ctx: ReplyContext, protocol: Protocol) -> list[wire.Event]:
    if protocol is Protocol.ANTHROPIC:
        return wire.anthropic_events(turn, ctx)
    if protocol is Protocol.GEMINI:
        return gemini.gemini_chunks(turn, ctx)
    return responses.openai_events(turn, ctx, created_at=int(time.time()))


def _reply(turn: Turn, ctx: ReplyContext, protocol: Protocol) -> Any:
    if protocol is Protocol.ANTHROPIC:
        return wire.anthropic_message(turn, ctx)
    if protocol is Protocol.GEMINI:
        return gemini.gemini_response(turn, ctx)
    return responses.openai_response(turn, ctx, created_at=int(time.time()))


def _parse(raw: bytes) -> Any:
    if not raw:
        return {}
    text = raw.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except ValueError:
        return {"_unparsed": text}
