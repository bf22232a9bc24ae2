"""A key-injecting reverse proxy on loopback: the real API key never enters the sandbox.

The agent CLI is given ``ANTHROPIC_BASE_URL=<proxy>`` and ``ANTHROPIC_API_KEY=<dummy>``, a
random token made for this proxy. Every request that presents the dummy (``x-api-key`` or
``Authorization: Bearer``) is forwarded to the upstream base URL with the same header carrying
the real key instead; a request without it, or with any other value, is refused (401 without,
403 with a wrong one) and never forwarded, so another local process cannot use the proxy as an
open relay. Bodies stream both ways unbuffered (SSE events reach the agent as they arrive);
chunked request bodies are re-chunked upstream; a response keeps the upstream's framing
(length, chunks or close-delimited), and one the upstream cut short is cut short for the agent
too. Upstream errors (429, 529, ...) pass through with their bodies.

What the proxy changes besides the key: hop-by-hop headers are dropped, ``Host`` names the
upstream and ``Accept-Encoding`` is ``identity`` so that every response byte can be scrubbed:
the real key, should the upstream ever echo it, is replaced by a mask of the same length
(``[REDACTED]***``) in headers and bodies before the agent sees it. A key split across two
events is not caught; the model never receives the key (it travels in a header only).

The key is never logged, never put in an argv, never in an error message. Refusals and
upstream failures are logged (structlog, ``wfbench.key_proxy``) by kind, method and path only.
"""

from __future__ import annotations

import contextlib
import hmac
import http.client
import json
import secrets as random_tokens
import socket
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import structlog

from wfbench.domain.errors import InputError, WfbenchError
from wfbench.domain.redaction import REDACTED, redact_text

PIECE = 64 * 1024
JOIN_TIMEOUT_S = 10.0
UPSTREAM_TIMEOUT_S = 600.0
#: Never forwarded in either direction (RFC 9110 §7.6.1), plus what the proxy sets itself.
HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization", "te",
     "trailer", "transfer-encoding", "upgrade", "expect"}
)  # fmt: skip
CREDENTIAL_HEADERS = frozenset({"x-api-key", "authorization"})
__all__ = ["KeyProxy", "Scrubber"]


class Scrubber:
    """Replaces every occurrence of a secret in a byte stream by a same-length mask.

    ``feed`` holds back only a tail that could be the start of the secret, so data that cannot
    hold it (an SSE event ending in a blank line) passes at once; ``finish`` releases the rest.
    """

    def __init__(self, secret: str) -> None:
        self._secret = secret.encode()
        self._mask = (REDACTED + "*" * len(self._secret)).encode()[: len(self._secret)]
        self._held = b""

    def feed(self, data: bytes) -> bytes:
        """The bytes safe to emit now."""
        buffer = (self._held + data).replace(self._secret, self._mask)
        keep = 0
        for size in range(min(len(self._secret) - 1, len(buffer)), 0, -1):
            if buffer.endswith(self._secret[:size]):
                keep = size
                break
        self._held = buffer[len(buffer) - keep :]
        return buffer[: len(buffer) - keep]

    def finish(self) -> bytes:
        """The held tail (the stream ended: it is not the secret)."""
        held, self._held = self._held, b""
        return held

    def text(self, value: str) -> str:
        """A header value with the secret masked."""
        return value.replace(self._secret.decode(), self._mask.decode())


class _Refusal(Exception):
    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message


class _Server(ThreadingHTTPServer):
    """Daemon handler threads and open sockets, tracked so stop() can wake and join them."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, proxy: KeyProxy) -> None:
        self.proxy = proxy
        self.lock = threading.Lock()
        self.sockets: set[socket.socket] = set()
        self.handlers: list[threading.Thread] = []
        self.stopping = threading.Event()
        super().__init__(("127.0.0.1", 0), _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        """Serve the connection in a daemon thread, remembered for :meth:`close_all`."""
        thread = threading.Thread(target=self.process_request_thread, args=(request, client_address))
        thread.daemon = True
        with self.lock:
            self.handlers = [handler for handler in self.handlers if handler.is_alive()]
            self.handlers.append(thread)
            self.sockets.add(request)
        thread.start()

    def shutdown_request(self, request: Any) -> None:
        """Forget the connection, then close it."""
        with self.lock:
            self.sockets.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A hung-up client or a socket closed by stop() is no traceback (anything else is)."""
        if not isinstance(sys.exc_info()[1], OSError | http.client.HTTPException):
            super().handle_error(request, client_address)

    def track(self, sock: socket.socket | None, *, add: bool) -> None:
        """Remember (or forget) an upstream socket so stop() can wake a handler stalled on it."""
        if sock is None:
            return
        with self.lock:
            (self.sockets.add if add else self.sockets.discard)(sock)

    def close_all(self, timeout_s: float) -> None:
        """Shut every client and upstream socket down, then join the handlers (bounded)."""
        self.stopping.set()
        with self.lock:
            sockets, handlers = list(self.sockets), list(self.handlers)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        deadline = time.monotonic() + timeout_s
        for handler in handlers:
            handler.join(max(0.0, deadline - time.monotonic()))


class KeyProxy:
    """The loopback proxy of one sweep. Use as a context manager, or start()/stop().

    ``upstream_base_url`` is where requests go (``https://api.anthropic.com``; a path prefix is
    kept); ``secrets_header_value`` is the real key. The agent uses :attr:`base_url` and
    :attr:`dummy_token` (random per proxy unless given).

    Raises:
        InputError: the upstream URL is not http(s) with a host, or carries credentials, a query
            or a fragment; or the key is blank.
    """

    def __init__(
        self,
        upstream_base_url: str,
        secrets_header_value: str,
        *,
        dummy_token: str | None = None,
        timeout_s: float = UPSTREAM_TIMEOUT_S,
    ) -> None:
        parts = urllib.parse.urlsplit(upstream_base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InputError("must be an http(s) URL with a host name", field="--base-url")
        if parts.username or parts.password or parts.query or parts.fragment:
            raise InputError("must not carry credentials, a query or a fragment", field="--base-url")
        if not secrets_header_value.strip():
            raise InputError("the API key is blank", field="API key")
        self._upstream = parts
        self._key = secrets_header_value.strip()
        self._dummy = dummy_token or "wfbench-proxy-" + random_tokens.token_hex(24)
        if self._dummy == self._key:
            raise InputError("the dummy token must differ from the key", field="dummy_token")
        self._timeout_s = timeout_s
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._log = structlog.get_logger("wfbench.key_proxy")
        self.forwarded = 0
        self.refused = 0

    def __repr__(self) -> str:
        return f"KeyProxy(upstream={self._upstream.hostname!r}, running={self._server is not None})"

    @property
    def dummy_token(self) -> str:
        """The token the agent presents (not a secret of the user's: it only opens this proxy)."""
        return self._dummy

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>`` (after start)."""
        if self._server is None:
            raise RuntimeError("the key proxy is not running")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> KeyProxy:
        """Bind 127.0.0.1 on an ephemeral port and serve in a background thread; returns self.

        Raises:
            WfbenchError: the loopback port cannot be bound.
        """
        if self._server is not None:
            raise RuntimeError("the key proxy is already running")
        try:
            self._server = _Server(self)
        except OSError as exc:
            raise WfbenchError(f"the key proxy cannot listen on 127.0.0.1: {exc.strerror or exc}") from None
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, name="key-proxy", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, cut open (even stalled) exchanges and join every thread (bounded)."""
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        server.close_all(JOIN_TIMEOUT_S)
        if self._thread is not None:
            self._thread.join(JOIN_TIMEOUT_S)

    def __enter__(self) -> KeyProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def admit(self, headers: Message) -> list[tuple[str, str]]:
        """The upstream headers for a request carrying the dummy token (real key in its place).

        Raises:
            _Refusal: no credential header (401), or one that is not the dummy token (403).
        """
        presented = [(name.lower(), value.strip()) for name, value in headers.items()]
        credentials = [(name, value) for name, value in presented if name in CREDENTIAL_HEADERS]
        if not credentials:
            raise _Refusal(401, "authentication_error", "wfbench key proxy: no API key presented")
        for name, value in credentials:
            token = value if name == "x-api-key" else _bearer(value)
            if token is None or not hmac.compare_digest(token.encode(), self._dummy.encode()):
                raise _Refusal(403, "permission_error", "wfbench key proxy: this key is not accepted here")
        dropped = HOP_BY_HOP | {"host", "accept-encoding", "content-length"}
        for name, value in presented:
            if name == "connection":
                dropped |= {token.strip().lower() for token in value.split(",")}
        out = [(name, value) for name, value in presented if name not in dropped | CREDENTIAL_HEADERS]
        for name in dict.fromkeys(name for name, _ in credentials):
            out.append((name, self._key if name == "x-api-key" else f"Bearer {self._key}"))
        return [("host", self._upstream.netloc), *out, ("accept-encoding", "identity")]

    def connect(self) -> http.client.HTTPConnection:
        """A fresh connection to the upstream (one per request: nothing stale to retry)."""
        host, port = self._upstream.hostname or "", self._upstream.port
        if self._upstream.scheme == "https":
            return http.client.HTTPSConnection(host, port, timeout=self._timeout_s)
        return http.client.HTTPConnection(host, port, timeout=self._timeout_s)

    def upstream_path(self, path: str) -> str:
        """The request target upstream: the base URL's path prefix, then the agent's path + query."""
        return self._upstream.path.rstrip("/") + path

    def scrubber(self) -> Scrubber:
        """A fresh scrubber for one response."""
        return Scrubber(self._key)

    def note(self, event: str, **fields: Any) -> None:
        """Log one event with every field redacted of the key and the dummy token."""
        clean = {name: redact_text(str(value), (self._key, self._dummy)) for name, value in fields.items()}
        self._log.warning(event, **clean)

    def count(self, *, refused: bool) -> None:
        """Tally a forwarded or refused request."""
        if self._server is not None:
            with self._server.lock:
                if refused:
                    self.refused += 1
                else:
                    self.forwarded += 1


def _bearer(value: str) -> str | None:
    scheme, _, token = value.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


def _error_body(kind: str, message: str) -> bytes:
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()


class _Handler(BaseHTTPRequestHandler):
    """One agent connection (keep-alive): each request is checked, forwarded and relayed."""

    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: the access log is not wanted (and must never hold a header)."""

    def do_POST(self) -> None:
        """Forward (every method goes through here)."""
        self._forward()

    do_GET = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = do_POST

    def _forward(self) -> None:
        proxy = self.server.proxy
        path = self.path.split("?", 1)[0]
        try:
            if not self.path.startswith("/"):
                raise _Refusal(400, "invalid_request_error", "wfbench key proxy: origin-form targets only")
            headers = proxy.admit(self.headers)
        except _Refusal as refusal:
            proxy.count(refused=True)
            proxy.note("key_proxy.refused", kind=refusal.kind, method=self.command, path=path)
            self.close_connection = True  # the unread body must not be parsed as a request
            self._reply(refusal.status, _error_body(refusal.kind, refusal.message))
            return
        upstream = proxy.connect()
        try:
            try:
                response = self._send_upstream(upstream, headers)
            except (OSError, http.client.HTTPException) as exc:
                name = type(exc).__name__
                proxy.note("key_proxy.upstream_error", error=name, method=self.command, path=path)
                self.close_connection = True
                status, kind = (504, "timeout_error") if isinstance(exc, TimeoutError) else (502, "api_error")
                self._reply(status, _error_body(kind, f"wfbench key proxy: upstream {name}"))
                return
            proxy.count(refused=False)
            self._relay(response)
        finally:
            self.server.track(upstream.sock, add=False)
            upstream.close()

    def _send_upstream(
        self, upstream: http.client.HTTPConnection, headers: list[tuple[str, str]]
    ) -> http.client.HTTPResponse:
        upstream.connect()
        self.server.track(upstream.sock, add=True)
        if self.server.stopping.is_set():  # checked after track(): stop() either sees the socket or this
            raise ConnectionAbortedError("the proxy is stopping")
        target = self.server.proxy.upstream_path(self.path)
        upstream.putrequest(self.command, target, skip_host=True, skip_accept_encoding=True)
        for name, value in headers:
            upstream.putheader(name, value)
        chunked = "chunked" in self.headers.get("transfer-encoding", "").lower()
        length = int(self.headers.get("content-length") or 0) if not chunked else 0
        if chunked:
            upstream.putheader("transfer-encoding", "chunked")
        elif length or self.command in ("POST", "PUT", "PATCH"):
            upstream.putheader("content-length", str(length))
        upstream.endheaders()
        for piece in self._read_chunked() if chunked else self._read_length(length):
            upstream.send(b"%x\r\n%b\r\n" % (len(piece), piece) if chunked else piece)
        if chunked:
            upstream.send(b"0\r\n\r\n")
        return upstream.getresponse()

    def _read_length(self, length: int) -> Iterator[bytes]:
        while length > 0:
            piece = self.rfile.read(min(PIECE, length))
            if not piece:
                raise ConnectionResetError("the agent closed the request body early")
            length -= len(piece)
            yield piece

    def _read_chunked(self) -> Iterator[bytes]:
        while True:
            line = self.rfile.readline(1024)
            size = int(line.split(b";", 1)[0].strip() or b"x", 16)
            if size == 0:
                while self.rfile.readline(8192) not in (b"\r\n", b"\n", b""):
                    pass  # trailers are dropped
                return
            yield from self._read_length(size)
            self.rfile.readline(8)  # the CRLF after the chunk

    def _relay(self, response: http.client.HTTPResponse) -> None:
        """The upstream's status, headers and body, framed as the upstream framed it.

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
        self.end_headers()
        if bodiless:
            return
        if not self._pump(response, scrub, chunked=chunked):
            self.close_connection = True
            return
        if chunked:
            self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _pump(self, response: http.client.HTTPResponse, scrub: Scrubber, *, chunked: bool) -> bool:
        """Copy the body piece by piece as it arrives; False when the upstream cut it short."""
        try:
            while piece := response.read1(PIECE):
                self._write(scrub.feed(piece), chunked=chunked)
        except (OSError, http.client.HTTPException):  # reset, timeout, a chunked body cut mid-way
            return False
        if response.length:  # EOF before the promised Content-Length
            return False
        self._write(scrub.finish(), chunked=chunked)
        return True

    def _write(self, data: bytes, *, chunked: bool) -> None:
        if data:
            self.wfile.write(b"%x\r\n%b\r\n" % (len(data), data) if chunked else data)
            self.wfile.flush()

    def _reply(self, status: int, body: bytes) -> None:
        self.send_response_only(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()
