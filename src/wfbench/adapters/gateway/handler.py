"""One agent connection to the key proxy: check the request, forward it, relay and meter the reply.

Used by :mod:`wfbench.adapters.gateway.key_proxy` for both kinds of listener (a cell lease's UNIX socket
and the proxy's own loopback port). Order of the checks, each refusal answered with an
Anthropic-shaped error and recorded in the cell's meter: the token (401/403, before anything
else is looked at), the route and the normalized path (400/404/405), the sweep's budget (403),
the body (413 past the limit, 400 not strict JSON, 403 another model, a duplicate key or content
the allow-lists do not cover), then the request's worst-case cost is reserved (403 ``budget``
when the spend reached the budget; it waits while only open reservations fill it) and released
when the reply is recorded. Then the body goes upstream with a ``Content-Length`` (a chunked
upload is read whole first), and the reply is relayed as the upstream framed it while a
:class:`~wfbench.adapters.gateway.wire_usage.UsageReader` reads its usage.

Metering is about the upstream's reply, not about whether the agent stayed to read it all: an
agent that read a reply's last event (``message_stop``, ``response.completed``) may hang up
before the proxy has read the upstream's tail (the terminating chunk). The proxy then stops
writing and reads that tail alone (at most :data:`TAIL_BYTES`; a stalled tail is cut when the
cell's lease closes), so a reply the upstream sent whole is metered whole. An agent that hangs
up before the last event leaves the reply cut (the upstream connection is closed at once; the
usage so far is a lower bound, counted incomplete), as does an upstream that cut its reply short
(counted as the upstream's cut too: a provider fault, not the agent's).
The reply is recorded in the cell's meter before the agent can see its end (its last event, or
the last piece of a plain reply, is held until the upstream's body ended), so the agent's next
request checks the budget against a spend that holds it, and an agent that read its replies
leaves nothing for the cell's meter to wait for.
"""

from __future__ import annotations

import hmac
import http.client
import json
import socket
import threading
from collections.abc import Iterator
from email.message import Message
from http.server import BaseHTTPRequestHandler
from typing import Any, Protocol

from wfbench.adapters.gateway.rules import MAX_BODY_BYTES, Refused, Route, forwarded_headers, route_for
from wfbench.adapters.gateway.wire_usage import UsageReader
from wfbench.domain.metering.prices import ModelPrices
from wfbench.domain.metering.wire import WireRefusal, is_provider_fault
from wfbench.domain.ports import BudgetLedger
from wfbench.domain.session.records import Usage

PIECE = 64 * 1024
#: After the agent hung up past a reply's last event, the most of the upstream's tail read alone.
TAIL_BYTES = 64 * 1024
#: Never forwarded in either direction (RFC 9110 §7.6.1), plus what the proxy sets itself.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "expect",
    }
)
CREDENTIAL_HEADERS = frozenset({"x-api-key", "authorization", "x-goog-api-key"})
#: Credential headers that carry the key itself (not ``Bearer <key>``).
RAW_KEY_HEADERS = frozenset({"x-api-key", "x-goog-api-key"})


class ResponseScrubber(Protocol):
    """Masks the real key in one response (``key_proxy.Scrubber``)."""

    def feed(self, data: bytes) -> bytes:
        """The bytes safe to emit now."""
        ...

    def finish(self) -> bytes:
        """The held tail, at the stream's end."""
        ...

    def text(self, value: str) -> str:
        """A header value with the key masked."""
        ...


class CellLease(Protocol):
    """What a connection needs of the lease it serves (``key_proxy.Lease``)."""

    @property
    def token(self) -> str: ...
    @property
    def label(self) -> str: ...
    @property
    def model(self) -> str | None: ...
    @property
    def prices(self) -> ModelPrices | None: ...
    def begin(self) -> None: ...
    def end(self) -> None: ...
    def record(
        self,
        usage: Usage | None,
        *,
        metered: bool,
        complete: bool = True,
        by_upstream: bool = False,
        release: float = 0.0,
        failed_status: int | None = None,
    ) -> None: ...
    def refuse(self, refusal: WireRefusal) -> None: ...


class ProxyCore(Protocol):
    """What a connection needs of the proxy (``key_proxy.KeyProxy``)."""

    @property
    def key(self) -> str: ...
    @property
    def routes(self) -> tuple[Route, ...]: ...
    @property
    def idle_timeout_s(self) -> float: ...
    @property
    def upstream_host(self) -> str: ...
    @property
    def names_cells(self) -> bool: ...
    def check_budget(self) -> None: ...
    @property
    def ledger(self) -> BudgetLedger: ...
    def check_body(self, route: Route, body: bytes, model: str | None) -> dict[str, object]: ...
    def reserve(
        self, route: Route, size: int, body: dict[str, object], prices: ModelPrices | None
    ) -> float: ...
    def connect(self) -> http.client.HTTPConnection: ...
    def upstream_path(self, path: str) -> str: ...
    def scrubber(self) -> ResponseScrubber: ...
    def note(self, event: str, **fields: Any) -> None: ...
    def count(self, *, refused: bool) -> None: ...
    def attributed(self, headers: Message, listener: Any) -> CellLease: ...
    def cell_headers(self, lease: Any) -> list[tuple[str, str]]: ...


class ProxyServer(Protocol):
    """The listener a connection came in on (``key_proxy._ServerMixin``).

    Typed here, so this module never imports key_proxy (which imports it).
    """

    @property
    def proxy(self) -> ProxyCore: ...
    @property
    def lease(self) -> CellLease: ...
    @property
    def stopping(self) -> threading.Event: ...
    def track(self, sock: socket.socket | None, *, add: bool) -> None: ...


#: Names the cell (its label) a request came from, for the sweep's own scripted provider only
#: (``KeyProxy(names_cells=True)``; read by ``adapters/provider/jitter.py``). Not the model
#: gateway's ``x-wfbench-cell``, a random id per lease: the jitter needs a name stable across runs.
LABEL_HEADER = "x-wfbench-cell-label"


def bearer(value: str) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` value, else None."""
    scheme, _, token = value.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


def error_body(kind: str, message: str) -> bytes:
    """An Anthropic-shaped error body."""
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()


def admit(headers: Message, token: str) -> list[tuple[str, str]]:
    """The credential headers presented, if every one of them carries ``token``.

    Raises:
        Refused: no credential header (401), or one that is not the token (403).
    """
    presented = [(name.lower(), value.strip()) for name, value in headers.items()]
    credentials = [(name, value) for name, value in presented if name in CREDENTIAL_HEADERS]
    if not credentials:
        raise Refused(401, "auth", "wfbench key proxy: no API key presented")
    for name, value in credentials:
        shown = value if name in RAW_KEY_HEADERS else bearer(value)
        if shown is None or not hmac.compare_digest(shown.encode(), token.encode()):
            raise Refused(403, "auth", "wfbench key proxy: this key is not accepted here")
    return credentials


_KIND_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    413: "request_too_large",
}


class ProxyHandler(BaseHTTPRequestHandler):
    """One agent connection (keep-alive): each request is checked, forwarded, relayed and metered."""

    protocol_version = "HTTP/1.1"
    server: ProxyServer  # type: ignore[assignment]  # both servers of key_proxy mix _ServerMixin in
    #: The provider-fault status (429, 5xx) of the reply being relayed, if it is one.
    _failed: int | None = None

    def setup(self) -> None:
        """The connection's idle timeout is the proxy's (a silent client is cut)."""
        super().setup()
        self.connection.settimeout(self.server.proxy.idle_timeout_s)

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: the access log is not wanted (and must never hold a header)."""

    def do_POST(self) -> None:
        """Forward (every method goes through here)."""
        self._forward()

    do_GET = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = do_POST

    def _forward(self) -> None:
        # the cell a request is metered in: its listener's, or (behind a gateway) the one it names
        self._cell = lease = self.server.proxy.attributed(self.headers, self.server.lease)
        lease.begin()
        try:
            self._checked_forward()
        finally:
            lease.end()

    def _checked_forward(self) -> None:
        proxy, lease = self.server.proxy, self._cell
        self._body_read = False
        self._agent_gone = False
        self._reserved = 0.0
        # The target as sent: http.server collapses a leading "//" in self.path; nothing is collapsed here.
        parts = self.requestline.split()
        self.path = parts[1] if len(parts) == 3 else self.path
        path = self.path.split("?", 1)[0]
        try:
            credentials = admit(self.headers, self.server.lease.token)
            route = route_for(self.command, self.path, proxy.routes)
            proxy.check_budget()
            body = self._read_body()
            parsed = proxy.check_body(route, body, lease.model)
            self._reserved = proxy.reserve(route, len(body), parsed, lease.prices)
        except Refused as refusal:
            self._refuse(lease, refusal, path)
            return
        try:
            self._forward_checked(route, credentials, body, path)
        finally:  # a reservation never outlives its request (a no-op once the reply was recorded)
            if self._reserved:
                proxy.ledger.settle(None, None, release=self._take_reserved(), billed=False, complete=True)

    def _take_reserved(self) -> float:
        reserved, self._reserved = self._reserved, 0.0
        return reserved

    def _forward_checked(
        self, route: Route, credentials: list[tuple[str, str]], body: bytes, path: str
    ) -> None:
        proxy, lease = self.server.proxy, self._cell
        headers = self._upstream_headers(route, credentials, len(body))
        upstream = proxy.connect()
        try:
            try:
                response = self._send_upstream(upstream, headers, body)
            except (OSError, http.client.HTTPException) as exc:
                name = type(exc).__name__
                proxy.note("key_proxy.upstream_error", error=name, method=self.command, path=path)
                lease.record(None, metered=False, release=self._take_reserved())
                self.close_connection = True
                status, kind = (504, "timeout_error") if isinstance(exc, TimeoutError) else (502, "api_error")
                self._reply(status, error_body(kind, f"wfbench key proxy: upstream {name}"))
                return
            proxy.count(refused=False)
            usage_reader = None
            if route.meter is not None and 200 <= response.status < 300:
                streaming = "text/event-stream" in (response.getheader("content-type") or "")
                usage_reader = UsageReader(route.meter, streaming=streaming)
            self._metered = False
            self._failed = response.status if is_provider_fault(response.status) else None
            try:
                self._relay(response, usage_reader)
            finally:  # recorded even when the agent hung up mid-reply (a no-op once recorded)
                self._meter(usage_reader, whole=False)
        finally:
            self.server.track(upstream.sock, add=False)
            upstream.close()

    def _meter(self, usage: UsageReader | None, *, whole: bool, agent_read_on: bool = False) -> None:
        """Record the reply in the cell's meter, once (``whole``: the upstream's body arrived whole).

        ``agent_read_on``: the agent was still reading when the body ended, so a reply that is not
        complete was cut or garbled by the upstream (a provider fault), not by the agent.
        """
        if self._metered:
            return
        self._metered = True
        lease = self._cell
        if usage is None:
            lease.record(None, metered=False, release=self._take_reserved(), failed_status=self._failed)
        else:
            seen, complete = usage.finish(cut=not whole)
            release = self._take_reserved()
            lease.record(seen, metered=True, complete=complete, by_upstream=agent_read_on, release=release)

    def _refuse(self, lease: CellLease, refusal: Refused, path: str) -> None:
        proxy = self.server.proxy
        proxy.count(refused=True)
        lease.refuse(WireRefusal(refusal.status, refusal.kind, refusal.message))
        proxy.note(
            "key_proxy.refused", kind=refusal.kind, method=self.command, path=path, status=refusal.status
        )
        if not self._body_read:
            self._drain()  # so the agent can read the refusal instead of a broken pipe
        self.close_connection = True  # a body must never be parsed as a request
        kind = _KIND_TYPES.get(refusal.status, "permission_error")
        message = (
            refusal.message
            if refusal.message.startswith("wfbench")
            else f"wfbench key proxy: {refusal.message}"
        )
        self._reply(refusal.status, error_body(kind, message))

    def _drain(self) -> None:
        """Read and drop the request body (at most the body limit; silently stop on an error)."""
        try:
            for _ in (
                self._read_chunked()
                if "chunked" in self.headers.get("transfer-encoding", "").lower()
                else (self._read_length(min(int(self.headers.get("content-length") or 0), MAX_BODY_BYTES)))
            ):
                pass
        except (Refused, OSError, ValueError):
            pass

    def _upstream_headers(
        self, route: Route, credentials: list[tuple[str, str]], length: int
    ) -> list[tuple[str, str]]:
        proxy = self.server.proxy
        presented = [(name.lower(), value.strip()) for name, value in self.headers.items()]
        out = [(name, value) for name, value in forwarded_headers(route, presented) if name not in HOP_BY_HOP]
        for name in dict.fromkeys(name for name, _ in credentials):
            out.append((name, proxy.key if name in RAW_KEY_HEADERS else f"Bearer {proxy.key}"))
        if proxy.names_cells:  # the sweep's own scripted provider: its usage jitter is seeded per cell
            out.append((LABEL_HEADER, self.server.lease.label))
        return [
            ("host", proxy.upstream_host),
            *out,
            *proxy.cell_headers(self.server.lease),
            ("accept-encoding", "identity"),
            ("content-length", str(length)),
        ]

    def _read_body(self) -> bytes:
        self._body_read = True
        chunked = "chunked" in self.headers.get("transfer-encoding", "").lower()
        try:
            length = int(self.headers.get("content-length") or 0) if not chunked else 0
        except ValueError:
            raise Refused(400, "body", "Content-Length is not a number") from None
        if length > MAX_BODY_BYTES:
            raise Refused(413, "body", f"the request body is over {MAX_BODY_BYTES} bytes")
        pieces = self._read_chunked() if chunked else self._read_length(length)
        body = bytearray()
        for piece in pieces:
            body += piece
            if len(body) > MAX_BODY_BYTES:
                raise Refused(413, "body", f"the request body is over {MAX_BODY_BYTES} bytes")
        return bytes(body)

    def _send_upstream(
        self, upstream: http.client.HTTPConnection, headers: list[tuple[str, str]], body: bytes
    ) -> http.client.HTTPResponse:
        upstream.connect()
        self.server.track(upstream.sock, add=True)
        if self.server.stopping.is_set():  # checked after track(): stop() either sees the socket or this
            raise ConnectionAbortedError("the proxy is stopping")
        target = self.server.proxy.upstream_path(self.path)
        upstream.putrequest(self.command, target, skip_host=True, skip_accept_encoding=True)
        for name, value in headers:
            upstream.putheader(name, value)
        upstream.endheaders()
        if body:
            upstream.send(body)
        return upstream.getresponse()

    def _read_length(self, length: int) -> Iterator[bytes]:
        while length > 0:
            piece = self.rfile.read(min(PIECE, length))
            if not piece:
                raise Refused(400, "body", "the agent closed the request body early")
            length -= len(piece)
            yield piece

    def _read_chunked(self) -> Iterator[bytes]:
        while True:
            line = self.rfile.readline(1024)
            try:
                size = int(line.split(b";", 1)[0].strip() or b"x", 16)
            except ValueError:
                raise Refused(400, "body", "malformed chunked request body") from None
            if size == 0:
                while self.rfile.readline(8192) not in (b"\r\n", b"\n", b""):
                    pass  # trailers are dropped
                return
            yield from self._read_length(size)
            self.rfile.readline(8)  # the CRLF after the chunk

    def _relay(self, response: http.client.HTTPResponse, usage: UsageReader | None) -> bool:
        """The upstream's status, headers and body, framed as the upstream framed it; False if cut short.

        A length stays a length, chunks stay chunks, a close-delimited body stays close-delimited;
        a body the upstream cut short is cut short for the agent too (the connection closes
        before the promised length or without the last chunk), so a truncated reply never
        looks complete and never leaves the agent waiting.
        """
        scrub = self.server.proxy.scrubber()
        self.send_response_only(response.status, response.reason)
        for name, value in response.getheaders():
            if name.lower() not in HOP_BY_HOP | {"content-length"}:
                self.send_header(name, scrub.text(value))
        bodiless = self.command == "HEAD" or response.status in (204, 304) or 100 <= response.status < 200
        length = response.getheader("content-length")
        chunked = bool(response.chunked) and not bodiless and self.request_version != "HTTP/1.0"
        if length is not None:
            self.send_header("Content-Length", length)
        elif chunked:
            self.send_header("Transfer-Encoding", "chunked")
        elif not bodiless:
            self.close_connection = True  # close-delimited: the end of the body is the end of the connection
        if bodiless:
            self._meter(usage, whole=True)
        self.end_headers()
        if bodiless:
            return True
        if not self._pump(response, scrub, usage, chunked=chunked):
            self.close_connection = True
            return False
        if chunked:
            self._send(b"0\r\n\r\n")
        return True

    def _pump(
        self,
        response: http.client.HTTPResponse,
        scrub: ResponseScrubber,
        usage: UsageReader | None,
        *,
        chunked: bool,
    ) -> bool:
        """Copy the body piece by piece as it arrives (usage read on the way); False when cut short.

        True means the upstream's body arrived whole, whether or not the agent stayed for all of
        it (see the module docstring: past the last event, the tail is read alone). The reply is
        metered before the agent can see its end: the piece that may be the last (any piece of a
        plain reply, a stream's pieces from its last event on) is held until the next one arrives,
        so an agent's next request (and the cell's meter) always finds this reply recorded.
        """
        tail = 0  # bytes read after the agent hung up
        held = b""  # a piece that may be the reply's end, written once the reply is metered
        whole = False
        try:
            while piece := response.read1(PIECE):
                if usage is not None:
                    usage.feed(piece)
                if self._agent_gone:
                    tail += len(piece)
                elif usage is not None and (not usage.streaming or usage.ended):
                    self._write(held, chunked=chunked)
                    held = scrub.feed(piece)
                else:
                    self._write(scrub.feed(piece), chunked=chunked)
                if self._agent_gone and (usage is None or not usage.ended or tail > TAIL_BYTES):
                    break  # hung up mid-reply (or nothing to meter): stop, so the upstream stops too
            else:
                whole = not response.length  # False: EOF before the promised Content-Length
        except (OSError, http.client.HTTPException):  # reset, timeout, a chunked body cut mid-way
            pass
        self._meter(usage, whole=whole, agent_read_on=not self._agent_gone)
        self._write(held + (scrub.finish() if whole else b""), chunked=chunked)
        return whole

    def _write(self, data: bytes, *, chunked: bool) -> None:
        if data:
            self._send(b"%x\r\n%b\r\n" % (len(data), data) if chunked else data)

    def _send(self, data: bytes) -> None:
        """Write to the agent; once that fails (the agent hung up), nothing more is written to it."""
        if self._agent_gone:
            return
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except OSError:
            self._agent_gone = True
            self.close_connection = True

    def _reply(self, status: int, body: bytes) -> None:
        self.send_response_only(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()
