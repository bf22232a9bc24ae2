"""An allow-listing HTTP CONNECT proxy on loopback: environment builds reach package registries only.

A build runs with its own network namespace (no route anywhere); its only way out is a bridge
(:mod:`wfbench.adapters.sandbox.net_bridge`) to this proxy, named in ``HTTPS_PROXY``. The proxy accepts
``CONNECT host:443`` for the registries in :data:`REGISTRIES` (PyPI, the npm registry, Debian's
archives) and answers anything else — another host, another port, a plain request — with ``403``
**before** resolving or connecting, so a build sends traffic to no other address. Tunnels are
opaque (TLS end to end between the build's client and the registry).

Written by hand because the standard library has no CONNECT proxy and the job is small: parse one
request head (bounded), check it, splice two sockets.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterable

#: Hosts a build may reach (port 443 only).
REGISTRIES = frozenset(
    {"pypi.org", "files.pythonhosted.org", "registry.npmjs.org", "deb.debian.org", "security.debian.org"}
)
HEAD_LIMIT = 8192
CONNECT_TIMEOUT_S = 30.0
IDLE_TIMEOUT_S = 300.0
_PIECE = 64 * 1024


class RegistryProxy:
    """The proxy; use as a context manager. :attr:`address` is its loopback ``(host, port)``.

    ``allowed`` are ``host`` (port 443) or ``host:port`` entries; ``connect`` opens the upstream
    connection (tests pass a recorder). :attr:`refused` lists every refused target, in order.
    """

    def __init__(
        self,
        allowed: Iterable[str] = REGISTRIES,
        *,
        connect: Callable[[tuple[str, int]], socket.socket] | None = None,
    ) -> None:
        self._allowed = frozenset(a if ":" in a else f"{a}:443" for a in allowed)
        self._connect = connect or _open_upstream
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.address: tuple[str, int] = self._listener.getsockname()
        self.refused: list[str] = []
        self.tunnels: list[str] = []
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="registry-proxy", daemon=True)

    def __enter__(self) -> RegistryProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop accepting and close every tunnel."""
        self._closed.set()
        with contextlib.suppress(OSError):  # wakes the blocked accept() at once: close() alone does
            self._listener.shutdown(socket.SHUT_RDWR)  # not, and every build waited the join's 5 s
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            for sock in list(self._open):
                with contextlib.suppress(OSError):
                    sock.close()
        self._thread.join(timeout=5)

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        self._track(client)
        upstream: socket.socket | None = None
        try:
            client.settimeout(IDLE_TIMEOUT_S)
            head = _read_head(client)
            target = _connect_target(head)
            if target is None or target not in self._allowed:
                with self._lock:
                    self.refused.append(target or head.split(b"\r\n", 1)[0].decode("latin-1")[:200])
                client.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            host, _, port = target.rpartition(":")
            upstream = self._connect((host, int(port)))
            self._track(upstream)
            with self._lock:
                self.tunnels.append(target)
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            _splice(client, upstream)
        except OSError:
            return
        finally:
            for sock in (client, upstream):
                if sock is not None:
                    with contextlib.suppress(OSError):
                        sock.close()
                    with self._lock:
                        self._open.discard(sock)

    def _track(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.add(sock)


def _open_upstream(target: tuple[str, int]) -> socket.socket:
    return socket.create_connection(target, timeout=CONNECT_TIMEOUT_S)


def _read_head(client: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = client.recv(1024)
        if not chunk:
            break
        data += chunk
        if len(data) > HEAD_LIMIT:
            break
    return data


def _connect_target(head: bytes) -> str | None:
    """``host:port`` of a ``CONNECT host:port HTTP/1.x`` request head, lower-cased; else None."""
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    parts = line.split(" ")
    if len(parts) != 3 or parts[0] != "CONNECT" or not parts[2].startswith("HTTP/1."):
        return None
    host, sep, port = parts[1].rpartition(":")
    if not sep or not port.isdigit() or not host or "/" in host or "@" in host:
        return None
    return f"{host.lower().strip('[]')}:{int(port)}"


def _splice(a: socket.socket, b: socket.socket) -> None:
    """Relay both directions until either side closes (or stays idle past the timeout)."""

    def pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while chunk := src.recv(_PIECE):
                dst.sendall(chunk)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)

    b.settimeout(IDLE_TIMEOUT_S)
    other = threading.Thread(target=pump, args=(b, a), daemon=True)
    other.start()
    pump(a, b)
    other.join(timeout=IDLE_TIMEOUT_S)
