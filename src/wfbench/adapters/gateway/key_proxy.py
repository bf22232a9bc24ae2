"""A key-injecting reverse proxy: the real API key never enters the sandbox, and usage is metered at the wire.

Every cell gets a **lease** (:meth:`KeyProxy.lease`): its own UNIX socket (the host end of a
bridge, :mod:`wfbench.adapters.sandbox.net_bridge`, which the sandbox presents on the cell's own
loopback), its own random dummy token, a connection cap and a :class:`WireMeter`. The socket
attributes every request to its cell; the token must match it too. A request presenting the
cell's token (``x-api-key`` or ``Authorization: Bearer``) on an allowed route
(:mod:`wfbench.adapters.gateway.rules`: ``POST /v1/messages`` and ``/v1/messages/count_tokens``
by default, ``POST /v1/responses`` when enabled; normalized paths, the pinned model only, no
server-side tools, allow-listed headers) is forwarded upstream with the real key instead; any
other is refused (401 without a token, 403 with another, 400/404/405/413 for the request itself,
403 for another model or once the budget is spent) and recorded in the cell's meter, never
forwarded. The proxy also listens on ``127.0.0.1`` (:attr:`base_url`, :attr:`dummy_token`) for
tools and tests that talk to it directly; no cell is given that token.

**Wire metering**: the usage the upstream reported in each reply of a metered route is read as
the reply streams past (:mod:`wfbench.adapters.gateway.wire_usage`) and added to the cell's meter; with
the pinned model's prices it is the sweep's metered spend (:meth:`KeyProxy.spend`), which a
budget (``--max-cost``) caps: each request reserves its worst case before it goes upstream
(:mod:`wfbench.adapters.gateway.budget`), so the spend passes the budget by at most one
request's worst case; once reached, new requests are refused.

Bodies stream back unbuffered (SSE events reach the agent as they arrive) with the upstream's
framing (length, chunks or close-delimited); a reply the upstream cut short is cut short for the
agent too. Request bodies are read whole first (at most 32 MiB) to check the model. Upstream
errors (429, 529, ...) pass through with their bodies. A connection silent for
``idle_timeout_s`` is closed; past ``max_connections`` per cell a new connection is closed at
accept, so one cell cannot exhaust the harness's file descriptors or threads.

What the proxy changes besides the key: hop-by-hop and non-allow-listed headers are dropped,
``Host`` names the upstream and ``Accept-Encoding`` is ``identity`` so that every response byte
can be scrubbed: the real key, should the upstream ever echo it, is replaced by a mask of the
same length (``[REDACTED]***``) in headers and bodies before the agent sees it. A key split
across two events is not caught; the model never receives the key (it travels in a header only).

The key is never logged, never put in an argv, never in an error message. Refusals and
upstream failures are logged (structlog, ``wfbench.key_proxy``) by kind, method and path only.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import secrets as random_tokens
import socket
import socketserver
import sys
import threading
import time
import urllib.parse
from http.server import ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import attrs
import structlog

from wfbench.adapters.gateway.budget import SpendLedger
from wfbench.adapters.gateway.handler import ProxyHandler, ProxyServer
from wfbench.adapters.gateway.price_table import builtin_prices
from wfbench.adapters.gateway.rules import ANTHROPIC_ROUTES, Refused, Route, check_body
from wfbench.adapters.sandbox.net_bridge import free_port, socket_path
from wfbench.domain.errors import InputError, SandboxError, WfbenchError
from wfbench.domain.metering.evidence import Spend
from wfbench.domain.metering.prices import ModelPrices, PriceTable
from wfbench.domain.metering.requests import BodyRefusal, output_cap
from wfbench.domain.metering.wire import WireMeter, WireRefusal
from wfbench.domain.ports import BudgetLedger
from wfbench.domain.redaction import REDACTED, redact_text
from wfbench.domain.session.records import Usage
from wfbench.domain.workspace.sandbox import Bridge

JOIN_TIMEOUT_S = 10.0
UPSTREAM_TIMEOUT_S = 600.0
IDLE_TIMEOUT_S = 300.0
MAX_CONNECTIONS_PER_CELL = 16
TOKEN_PREFIX = "wfbench-proxy-"  # noqa: S105 - a prefix, not a credential
__all__ = ["KeyProxy", "Lease", "Scrubber"]


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


class Lease:
    """One cell's way to the model: a UNIX socket, a dummy token and a meter. Close it when the cell ends.

    :attr:`bridge` goes into the session's ``SandboxPolicy.bridges``; the agent gets
    ``bridge.url`` as its base URL and :attr:`token` as its API key. :meth:`meter` is a snapshot
    of what the proxy saw of this cell so far.
    """

    def __init__(
        self, proxy: KeyProxy, label: str, *, bridge: Bridge | None, model: str | None = None
    ) -> None:
        self.proxy = proxy
        self.label = label
        #: The model every request must name (the proxy's pinned model unless the cell's arm pins its own).
        self.model = model or proxy.model
        #: The prices of :attr:`model` (``None``: unpriced, its cost stays unknown).
        self.prices = proxy.prices if model in (None, proxy.model) else proxy.price_table.prices_for(model)
        self.token = TOKEN_PREFIX + random_tokens.token_hex(24)
        #: Names the cell to a model gateway behind the proxy (not a secret: it opens nothing).
        self.cell_id = random_tokens.token_hex(12)
        #: The cell's meter at the native upstream, behind a model gateway (None: this is the wire).
        self.native: Lease | None = None
        self.bridge = bridge
        self._lock = threading.Lock()
        self._settled = threading.Condition(self._lock)
        self._inflight = 0
        self._meter = WireMeter()
        self._server: _CellServer | None = None
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"Lease({self.label!r}, bridge={self.bridge!r})"

    def meter(self, *, settle_s: float = 0.0) -> WireMeter:
        """What the proxy saw of this cell so far.

        ``settle_s`` waits (at most that long) until no request of the cell is in flight: the
        agent may have read a reply's last byte a moment before the proxy recorded its usage.
        """
        with self._settled:
            self._settled.wait_for(lambda: self._inflight == 0, timeout=settle_s)
            return self._meter

    def begin(self) -> None:
        """A request of this cell started (its outcome is recorded before :meth:`end`)."""
        with self._lock:
            self._inflight += 1

    def end(self) -> None:
        """A request of this cell is done."""
        with self._settled:
            self._inflight -= 1
            self._settled.notify_all()

    def record(
        self,
        usage: Usage | None,
        *,
        metered: bool,
        complete: bool = True,
        by_upstream: bool = False,
        release: float = 0.0,
        failed_status: int | None = None,
    ) -> None:
        """One forwarded request: its reply's usage (``complete`` False: cut short, ``by_upstream``: by
        the upstream while the agent read on), or an unmetered one (``failed_status``: a provider
        fault the upstream answered with); ``release`` is its reservation."""
        with self._lock:
            if metered:
                self._meter = self._meter.plus_reply(usage, complete=complete, by_upstream=by_upstream)
            elif failed_status is not None:
                self._meter = self._meter.plus_failure(failed_status)
            else:
                self._meter = self._meter.plus_unmetered()
        self.proxy.ledger.settle(usage, self.prices, release=release, billed=metered, complete=complete)

    def refuse(self, refusal: WireRefusal) -> None:
        """One refused request (or connection)."""
        with self._lock:
            self._meter = self._meter.plus_refusal(refusal)

    def serve(self) -> Lease:
        """Bind the lease's socket and serve it in a background thread; returns self."""
        assert self.bridge is not None
        try:
            self._server = _CellServer(self, self.bridge.socket)
        except OSError as exc:
            raise SandboxError(f"the key proxy cannot listen on {self.bridge.socket}: {exc}") from None
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            daemon=True,
            name=f"key-proxy-{self.label}"[:60],
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving, cut open exchanges, remove the socket and its directory (idempotent)."""
        server, self._server = self._server, None
        self.proxy.forget(self)
        if self.native is not None:
            self.native.proxy.forget_attributed(self.cell_id)
        if server is None:
            return
        server.shutdown()
        server.server_close()
        server.close_all(JOIN_TIMEOUT_S)
        if self._thread is not None:
            self._thread.join(JOIN_TIMEOUT_S)
        if self.bridge is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.bridge.socket)
            with contextlib.suppress(OSError):
                os.rmdir(os.path.dirname(self.bridge.socket))

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _ServerMixin:
    """Daemon handler threads and open sockets, tracked so a stop can wake and join them."""

    daemon_threads = True
    block_on_close = False
    request_queue_size = 128
    proxy: KeyProxy
    lease: Lease

    def _init_tracking(self) -> None:
        self.lock = threading.Lock()
        self.sockets: set[socket.socket] = set()
        self.handlers: list[threading.Thread] = []
        self.connections = 0
        self.stopping = threading.Event()

    def process_request(self, request: Any, client_address: Any) -> None:
        """Serve the connection in a daemon thread; past the connection cap, close it at once."""
        with self.lock:
            full = self.connections >= self.proxy.max_connections
            if not full:
                self.connections += 1
                serve = self.process_request_thread  # type: ignore[attr-defined]  # from ThreadingMixIn
                thread = threading.Thread(target=serve, args=(request, client_address))
                thread.daemon = True
                self.handlers = [handler for handler in self.handlers if handler.is_alive()]
                self.handlers.append(thread)
                self.sockets.add(request)
        if full:
            detail = f"more than {self.proxy.max_connections} connections at once"
            self.lease.refuse(WireRefusal(503, "connections", detail))
            self.proxy.count(refused=True)
            with contextlib.suppress(OSError):
                request.close()
            return
        thread.start()

    def shutdown_request(self, request: Any) -> None:
        """Forget the connection, then close it."""
        with self.lock:
            if request in self.sockets:
                self.sockets.discard(request)
                self.connections -= 1
        super().shutdown_request(request)  # type: ignore[misc]

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A hung-up client or a socket closed by stop() is no traceback (anything else is)."""
        if not isinstance(sys.exc_info()[1], OSError | http.client.HTTPException):
            super().handle_error(request, client_address)  # type: ignore[misc]

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


class _TcpServer(_ServerMixin, ThreadingHTTPServer):
    """The proxy's own loopback listener (the proxy-wide token)."""

    def __init__(self, proxy: KeyProxy, lease: Lease) -> None:
        self.proxy, self.lease = proxy, lease
        self._init_tracking()
        super().__init__(("127.0.0.1", 0), ProxyHandler)


class _CellServer(_ServerMixin, socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """A cell lease's UNIX socket."""

    def __init__(self, lease: Lease, path: str) -> None:
        self.proxy, self.lease = lease.proxy, lease
        self._init_tracking()
        super().__init__(path, ProxyHandler)
        os.chmod(path, 0o600)


def _socket_under(scratch: str | None) -> str:
    """A model socket in a fresh directory under ``scratch``, else (too deep, or none) under the temp dir."""
    if scratch is not None:
        with contextlib.suppress(SandboxError):
            return socket_path("model.sock", parent=scratch)
    return socket_path("model.sock")


if TYPE_CHECKING:  # mypy checks that both listeners fit the handler's typed view of them
    _LISTENERS: tuple[type[ProxyServer], ...] = (_TcpServer, _CellServer)


@attrs.frozen
class CellTagging:
    """How requests name their cell across a model gateway (``docs/gateway.md``).

    The sweep's key proxy (in front of the gateway) sends ``send_header: <cell id>`` with each
    forwarded request, and links each lease to its meter at ``native``, the upstream meter: a
    second key proxy behind the gateway that meters each request in the cell its
    ``read_header`` names. The agent cannot forge it: the front proxy forwards only allow-listed
    headers, and ``x-wfbench-cell`` is none of them.
    """

    send_header: str | None = None
    read_header: str | None = None
    native: KeyProxy | None = None


class KeyProxy:
    """The key proxy of one sweep. Use as a context manager, or start()/stop().

    ``upstream_base_url`` is where requests go (``https://api.anthropic.com``; a path prefix is
    kept); ``secrets_header_value`` is the real key. ``model`` pins the model every request must
    name (``None``: not checked); ``routes`` are the allowed routes; ``prices`` price the metered
    usage (default: the pinned model's in ``price_table``, itself by default the built-in tables,
    :func:`~wfbench.adapters.gateway.price_table.builtin_prices`; an arm's model is priced from it too);
    ``budget_usd`` caps the metered spend; ``names_cells`` tells the upstream each request's cell label
    (the ``x-wfbench-cell-label`` header: only for the sweep's own scripted provider, whose usage
    jitter is seeded per cell — never for a real API). Cells get :meth:`lease`; :attr:`base_url` and
    :attr:`dummy_token` are the proxy's own loopback listener.

    Raises:
        InputError: the upstream URL is not http(s) with a host, or carries credentials, a query
            or a fragment; the key is blank; a budget is set for a model without prices.
    """

    def __init__(
        self,
        upstream_base_url: str,
        secrets_header_value: str,
        *,
        dummy_token: str | None = None,
        timeout_s: float = UPSTREAM_TIMEOUT_S,
        model: str | None = None,
        routes: tuple[Route, ...] = ANTHROPIC_ROUTES,
        prices: ModelPrices | None = None,
        price_table: PriceTable | None = None,
        budget_usd: float | None = None,
        idle_timeout_s: float = IDLE_TIMEOUT_S,
        max_connections: int = MAX_CONNECTIONS_PER_CELL,
        cells: CellTagging | None = None,
        names_cells: bool = False,
        ledger: BudgetLedger | None = None,
    ) -> None:
        parts = urllib.parse.urlsplit(upstream_base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InputError("must be an http(s) URL with a host name", field="--base-url")
        if parts.username or parts.password or parts.query or parts.fragment:
            raise InputError("must not carry credentials, a query or a fragment", field="--base-url")
        if not secrets_header_value.strip():
            raise InputError("the API key is blank", field="API key")
        self._upstream = parts
        self.key = secrets_header_value.strip()
        self.model = model
        self.routes = routes
        self.price_table = builtin_prices() if price_table is None else price_table
        self.prices = prices or self.price_table.prices_for(model)
        if budget_usd is not None and self.prices is None:
            raise InputError(
                f"no prices are known for model {model!r}: the budget cannot be enforced", field="--max-cost"
            )
        self.budget_usd = budget_usd
        self.idle_timeout_s = idle_timeout_s
        self.max_connections = max_connections
        #: Add ``x-wfbench-cell: <lease label>`` upstream: only for the sweep's own scripted provider.
        self.names_cells = names_cells
        self._timeout_s = timeout_s
        self._direct = Lease(self, "direct", bridge=None)
        if dummy_token is not None:
            self._direct.token = dummy_token
        if self.key in (self._direct.token,):
            raise InputError("the dummy token must differ from the key", field="dummy_token")
        self._server: _TcpServer | None = None
        self._thread: threading.Thread | None = None
        self._leases: set[Lease] = set()
        self._lock = threading.Lock()
        #: The sweep's books: this proxy's own, or (``ledger``) one a whole cluster shares.
        self.ledger: BudgetLedger = SpendLedger(budget_usd, self.prices) if ledger is None else ledger
        self._log = structlog.get_logger("wfbench.key_proxy")
        self.forwarded = 0
        self.refused = 0
        self.cells = cells or CellTagging()
        self._attributed: dict[str, Lease] = {}

    def __repr__(self) -> str:
        return f"KeyProxy(upstream={self._upstream.hostname!r}, running={self._server is not None})"

    @property
    def dummy_token(self) -> str:
        """The token of the proxy's own listener (not a secret of the user's: it only opens this proxy)."""
        return self._direct.token

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>`` of the proxy's own listener (after start)."""
        if self._server is None:
            raise RuntimeError("the key proxy is not running")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def upstream_host(self) -> str:
        """The ``Host`` header sent upstream."""
        return self._upstream.netloc

    def start(self) -> KeyProxy:
        """Bind 127.0.0.1 on an ephemeral port and serve in a background thread; returns self.

        Raises:
            WfbenchError: the loopback port cannot be bound.
        """
        if self._server is not None:
            raise RuntimeError("the key proxy is already running")
        try:
            self._server = _TcpServer(self, self._direct)
        except OSError as exc:
            raise WfbenchError(f"the key proxy cannot listen on 127.0.0.1: {exc.strerror or exc}") from None
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, name="key-proxy", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving (every lease too), cut open (even stalled) exchanges, join every thread (bounded)."""
        self.ledger.stop()
        with self._lock:
            leases = list(self._leases)
        for lease in leases:
            lease.close()
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

    def lease(
        self, label: str, *, port: int | None = None, model: str | None = None, scratch: str | None = None
    ) -> Lease:
        """A new cell lease, serving its own socket (close it when the cell ends).

        ``model`` is the model the cell's requests must name (default: the proxy's); the socket
        goes under ``scratch`` (the cell's own directory) when its path fits a UNIX socket, else
        under the temporary directory.

        Raises:
            SandboxError: the socket cannot be created.
            InputError: a budget is set and ``model`` has no prices.
        """
        if (
            self.budget_usd is not None
            and model not in (None, self.model)
            and self.price_table.prices_for(model) is None
        ):
            raise InputError(
                f"no prices are known for model {model!r}: the budget cannot be enforced", field="--max-cost"
            )
        bridge = Bridge(socket=_socket_under(scratch), port=port or free_port())
        lease = Lease(self, label, bridge=bridge, model=model)
        if self.cells.native is not None:  # behind a model gateway: the cell's meter at the upstream too
            lease.native = self.cells.native.attributed_lease(lease.cell_id, label)
        try:
            lease.serve()
        except SandboxError:
            with contextlib.suppress(OSError):
                os.rmdir(os.path.dirname(bridge.socket))
            raise
        with self._lock:
            self._leases.add(lease)
        return lease

    def attributed_lease(self, cell_id: str, label: str) -> Lease:
        """The meter of the requests that name ``cell_id`` in :attr:`CellTagging.read_header` (no socket)."""
        lease = Lease(self, label, bridge=None)
        with self._lock:
            self._attributed[cell_id] = lease
        return lease

    def forget_attributed(self, cell_id: str) -> None:
        """A closed cell's requests are no longer attributed (its meter stays with its lease)."""
        with self._lock:
            self._attributed.pop(cell_id, None)

    def attributed(self, headers: Any, listener: Lease) -> Lease:
        """The lease a request is metered in: the cell its header names, else the listener's own."""
        name = self.cells.read_header
        cell_id = None if name is None else headers.get(name)
        with self._lock:
            return self._attributed.get(cell_id or "", listener)

    def cell_headers(self, lease: Lease) -> list[tuple[str, str]]:
        """The header that names the cell to the model gateway upstream (none without one)."""
        name = self.cells.send_header
        return [] if name is None or lease.bridge is None else [(name, lease.cell_id)]

    def forget(self, lease: Lease) -> None:
        """A closed lease leaves the proxy (its spend stays in :meth:`spend`)."""
        with self._lock:
            self._leases.discard(lease)

    def spend(self) -> Spend:
        """The metered spend of every lease so far, against the budget (:meth:`SpendLedger.spend`)."""
        return self.ledger.spend()

    def check_budget(self) -> None:
        """Refuse a new request once the budget is spent.

        Raises:
            Refused: 403 ``budget``.
        """
        self.ledger.check()

    def reserve(self, route: Route, size: int, body: dict[str, object], prices: ModelPrices | None) -> float:
        """Reserve a metered request's worst-case cost under the budget; the amount (0: nothing reserved).

        Raises:
            Refused: 403 ``field`` (no usable output cap), 403 ``budget`` (see :meth:`SpendLedger.reserve`).
        """
        priced = prices or self.prices
        if self.budget_usd is None or route.meter is None or route.rules is None or priced is None:
            return 0.0
        cap = output_cap(route.rules, body)
        if isinstance(cap, BodyRefusal):
            raise Refused(403, cap.kind, cap.message())
        return self.ledger.reserve(priced.worst_case_usd(size, cap), self._timeout_s)

    def check_body(self, route: Route, body: bytes, model: str | None) -> dict[str, object]:
        """The body rules (:func:`~wfbench.adapters.gateway.rules.check_body`) with the cell's model."""
        return check_body(route, body, model)

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
        return Scrubber(self.key)

    def tokens(self) -> tuple[str, ...]:
        """Every live token (for redaction)."""
        with self._lock:
            return (self._direct.token, *(lease.token for lease in self._leases))

    def note(self, event: str, **fields: Any) -> None:
        """Log one event with every field redacted of the key and every token."""
        secrets = (self.key, *self.tokens())
        clean = {name: redact_text(str(value), secrets) for name, value in fields.items()}
        self._log.warning(event, **clean)

    def count(self, *, refused: bool) -> None:
        """Tally a forwarded or refused request."""
        with self._lock:
            if refused:
                self.refused += 1
            else:
                self.forwarded += 1
