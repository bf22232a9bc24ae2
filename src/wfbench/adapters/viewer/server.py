"""The loopback HTTP server behind ``wfbench view`` (standard library ``http.server``).

It serves whatever a render function returns for a path, ``GET`` and ``HEAD`` only, and binds
to a loopback address only (``127.0.0.0/8`` or ``::1``): anything else is refused before a
socket opens. A request whose ``Host`` header names another host is answered 421, so a web page
elsewhere cannot read the sweep through DNS rebinding. Every response carries the pages' strict
Content-Security-Policy, ``nosniff``, ``no-referrer`` and ``no-store``; raw artifacts are
``text/plain`` and sandboxed, so an agent-written file can never run as a page.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from wfbench.domain.errors import InputError

__all__ = ["RenderResult", "ViewServer", "check_loopback"]


class RenderResult(Protocol):
    """What the render function returns (``app/report/site.Response``)."""

    @property
    def status(self) -> int: ...
    @property
    def content_type(self) -> str: ...
    @property
    def body(self) -> bytes: ...


def check_loopback(host: str) -> str:
    """``host`` when it is a loopback address (``localhost`` means 127.0.0.1).

    Raises:
        InputError: any other address (the viewer never listens beyond this machine).
    """
    address = "127.0.0.1" if host == "localhost" else host
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        raise InputError(f"{host!r} is not an IP address; use a loopback address", field="--host") from None
    if not ip.is_loopback:
        raise InputError(f"{host} is not a loopback address (127.0.0.0/8 or ::1)", field="--host")
    return address


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    render: Callable[[str], RenderResult]
    csp: str


class _Server6(_Server):
    address_family = socket.AF_INET6


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self._answer(body=True)

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def _host_ok(self) -> bool:
        """The ``Host`` header names a loopback IP address or ``localhost`` (no other name)."""
        host = (self.headers.get("Host") or "").strip()
        if host.startswith("["):
            host = host[1 : host.find("]")] if "]" in host else ""
        elif host.count(":") == 1:
            host = host.split(":", 1)[0]
        if host == "localhost":
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False

    def _answer(self, *, body: bool) -> None:
        if not self._host_ok():
            self._send(421, "text/plain; charset=utf-8", b"misdirected request\n", body)
            return
        result = self.server.render(self.path)
        self._send(result.status, result.content_type, result.body, body)

    def _send(self, status: int, content_type: str, data: bytes, body: bool) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        policy = self.server.csp if content_type.startswith("text/html") else "sandbox; default-src 'none'"
        self.send_header("Content-Security-Policy", policy)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if body:
            self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the viewer prints its URL once, not a line per request."""


class ViewServer:
    """A running loopback server (``url``, ``close()``), serving ``render(path)``."""

    def __init__(self, render: Callable[[str], RenderResult], *, host: str, port: int, csp: str) -> None:
        address = check_loopback(host)
        self._server = (_Server6 if ":" in address else _Server)((address, port), _Handler)
        self._server.render = render
        self._server.csp = csp
        bound_host, bound_port = str(self._server.server_address[0]), int(self._server.server_address[1])
        shown = f"[{bound_host}]" if ":" in bound_host else bound_host
        self.url = f"http://{shown}:{bound_port}/"
        self._thread: threading.Thread | None = None

    def serve_forever(self) -> None:
        """Serve until :meth:`close` (or KeyboardInterrupt) in this thread."""
        self._server.serve_forever(poll_interval=0.2)

    def start(self) -> None:
        """Serve in a background thread."""
        self._thread = threading.Thread(target=self.serve_forever, name="wfbench-view", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop serving and release the port."""
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
        self._server.server_close()
