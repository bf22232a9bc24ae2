"""Bridges: one host service reachable from a sandbox that has its own network namespace — and nothing else.

Every sandboxed command runs with ``--unshare-net``: its network is a private loopback. A
*bridge* (:class:`wfbench.domain.workspace.sandbox.Bridge`) adds exactly one way out: a host
UNIX stream socket, bind-mounted into the sandbox, which a forwarder inside the sandbox presents
as ``http://127.0.0.1:<port>`` on that private loopback. No host listener, no abstract UNIX
socket (those live in the host's network namespace), no other cell, no DNS is reachable; the
program only needs a base URL. The mechanism is agent-agnostic: it carries any byte stream
(Anthropic Messages, OpenAI Responses, a package index).

API, host side (whoever owns the service):

* :func:`socket_path` — a fresh private (0700) directory with a short path and the socket path
  in it (UNIX socket paths are limited to 107 bytes: under a deep ``$TMPDIR`` the directory goes
  to ``/tmp``, ``/var/tmp`` or ``/dev/shm`` instead).
* :func:`free_port` — a port number for the bridge. Inside bwrap any number works (the namespace
  is private); under ``host-unsafe`` the forwarder binds it on the host's loopback, so it should
  be free there too.
* Serve the socket yourself (the key proxy's cell lease does: ``KeyProxy.lease()``), or wrap an
  existing loopback TCP service with :class:`TcpBridge` (a connection cap and an idle timeout
  included), then put ``Bridge(socket=<path>, port=<port>)`` in ``SandboxPolicy.bridges`` and
  give the program ``bridge.url``.

API, sandbox side (the sandbox backends): :func:`forwarder_argv` wraps a command with the
forwarder (:mod:`wfbench.adapters.sandbox.bridge_forwarder`, a standalone script run by the sandbox's
Python) and :func:`socket_target` names where a bridge's socket is mounted. Under bwrap the
forwarder is the sandbox's PID 1, started non-dumpable (:mod:`wfbench.adapters.sandbox.nondumpable`),
and holds none of the harness's pipes once the program has started.

Example (a registry proxy on the host's loopback, port 3141, for an environment build)::

    with TcpBridge(("127.0.0.1", 3141)) as bridge:
        policy = SandboxPolicy(..., bridges=(bridge.bridge,),
                               env={"PIP_INDEX_URL": bridge.bridge.url + "/simple"})
        sandbox.run(["pip", "install", "-r", "requirements.txt"], policy=policy)
"""

from __future__ import annotations

import contextlib
import os
import selectors
import socket
import tempfile
import threading
from collections.abc import Callable, Sequence

from wfbench.domain.errors import SandboxError
from wfbench.domain.workspace.sandbox import Bridge

#: The forwarder script as the sandbox sees it.
FORWARDER_TARGET = "/opt/wfbench/bridge_forwarder.py"
#: Where bridge sockets appear inside the sandbox.
SOCKET_DIR_TARGET = "/run/wfbench"
#: UNIX socket paths longer than this cannot be bound (``sun_path`` is 108 bytes with its NUL).
MAX_SOCKET_PATH = 107
DEFAULT_MAX_CONNECTIONS = 16
DEFAULT_IDLE_TIMEOUT_S = 300.0
_PIECE = 64 * 1024

__all__ = [
    "FORWARDER_TARGET",
    "TcpBridge",
    "forwarder_argv",
    "forwarder_source",
    "free_port",
    "socket_path",
    "socket_target",
]


def forwarder_source() -> str:
    """The host path of the forwarder script (mounted read-only at :data:`FORWARDER_TARGET`)."""
    from wfbench.adapters.sandbox import bridge_forwarder

    return os.path.realpath(bridge_forwarder.__file__)


def socket_target(bridge: Bridge) -> str:
    """Where ``bridge``'s socket is mounted inside the sandbox."""
    return f"{SOCKET_DIR_TARGET}/bridge-{bridge.port}.sock"


def forwarder_argv(
    python: Sequence[str],
    script: str | None,
    bridges: Sequence[Bridge],
    argv: Sequence[str],
    *,
    socket_of: Callable[[Bridge], str],
) -> list[str]:
    """``[*python, script, --bridge PORT SOCKET..., --, *argv]`` (no ``script`` for the compiled forwarder).

    ``socket_of`` maps a bridge to the socket path the forwarder connects to (the mounted
    target under bwrap, the host path under host-unsafe).

    Raises:
        SandboxError: two bridges share a port.
    """
    ports = [bridge.port for bridge in bridges]
    if len(set(ports)) != len(ports):
        raise SandboxError(f"two bridges on the same port: {sorted(ports)}")
    args = [*python, *([] if script is None else [script])]
    for bridge in bridges:
        args += ["--bridge", str(bridge.port), socket_of(bridge)]
    return [*args, "--", *argv]


#: Where a socket directory goes when ``$TMPDIR`` is too deep for a UNIX socket path (in order).
#: Only ever used through ``mkdtemp`` (a fresh directory, random name, mode 0700).
SHORT_ROOTS = ("/tmp", "/var/tmp", "/dev/shm")  # noqa: S108 - parents of private mkdtemp directories


def socket_dir_prefix(pid: int | None = None) -> str:
    """A socket directory's name prefix, ``wfb-<pid>-n<PID namespace inode>-``: its creator's pid and
    the namespace that pid means something in, so that a later run can remove the directories a
    killed process left (:mod:`wfbench.adapters.sandbox.stale_sockets`) and never judge a pid of another
    namespace (``wfb-<pid>-u-`` when the namespace cannot be read: such a directory is never removed)."""
    namespace = pid_namespace()
    middle = "u-" if namespace is None else f"n{namespace}-"
    return f"wfb-{os.getpid() if pid is None else pid}-{middle}"


def pid_namespace() -> int | None:
    """The inode of this process's PID namespace (``None``: unreadable)."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return None


def socket_path(name: str = "bridge.sock", *, parent: str | None = None) -> str:
    """A socket path inside a fresh 0700 directory (the caller binds it, then removes the directory).

    The directory goes under ``parent`` when given; otherwise under the temporary directory
    (``$TMPDIR``) or, when that is too deep for a socket path, the first of :data:`SHORT_ROOTS`
    where it fits (the directory is private either way).

    Raises:
        SandboxError: the directory cannot be created or the path would be too long.
    """
    roots = [parent] if parent is not None else _roots()
    too_long = ""
    for root in roots:
        try:
            directory = tempfile.mkdtemp(prefix=socket_dir_prefix(), dir=root)
        except OSError as exc:
            if parent is not None:
                raise SandboxError(f"cannot create a bridge socket directory: {exc}") from exc
            continue
        path = os.path.join(directory, name)
        if len(path.encode()) <= MAX_SOCKET_PATH:
            return path
        os.rmdir(directory)
        too_long = path
    if too_long:
        raise SandboxError(f"bridge socket path is too long for a UNIX socket: {too_long}")
    raise SandboxError(f"cannot create a bridge socket directory under any of {', '.join(roots)}")


def socket_dir_roots() -> list[str]:
    """Where :func:`socket_path` puts a socket directory when no parent is given, in order."""
    return _roots()


def _roots() -> list[str]:
    """The temporary directory, then the short roots that exist (no duplicates)."""
    roots: list[str] = []
    for root in (tempfile.gettempdir(), *SHORT_ROOTS):
        if root not in roots and os.path.isdir(root):
            roots.append(root)
    return roots


def free_port() -> int:
    """A TCP port that is free on the host's loopback right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class TcpBridge:
    """The host end of a bridge to an existing TCP service: a UNIX socket spliced to ``target``.

    At most ``max_connections`` are relayed at once (more are closed at accept); a connection
    with no byte in either direction for ``idle_timeout_s`` is closed. Use as a context manager;
    :attr:`bridge` is what goes into ``SandboxPolicy.bridges``.

    Raises:
        SandboxError: the socket cannot be created.
    """

    def __init__(
        self,
        target: tuple[str, int],
        *,
        port: int | None = None,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S,
    ) -> None:
        self._target = target
        self._max = max_connections
        self._idle_s = idle_timeout_s
        self._path = socket_path()
        self.bridge = Bridge(socket=self._path, port=port or free_port())
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._listener.bind(self._path)
            self._listener.listen(64)
        except OSError as exc:
            self._listener.close()
            os.rmdir(os.path.dirname(self._path))
            raise SandboxError(f"cannot listen on the bridge socket {self._path}: {exc}") from exc
        self._lock = threading.Lock()
        self._clients = 0
        self._active: set[socket.socket] = set()  # every open socket (clients and upstreams), for close()
        self._threads: list[threading.Thread] = []
        self.refused = 0
        self._closed = threading.Event()
        self._acceptor = threading.Thread(target=self._accept, name="tcp-bridge", daemon=True)
        self._acceptor.start()

    def __enter__(self) -> TcpBridge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop accepting, cut every relayed connection, remove the socket and its directory."""
        if self._closed.is_set():
            return
        self._closed.set()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        with self._lock:
            active, threads = list(self._active), list(self._threads)
        for sock in active:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self._acceptor.join(5)
        for thread in threads:
            thread.join(5)
        with contextlib.suppress(OSError):
            os.unlink(self._path)
        with contextlib.suppress(OSError):
            os.rmdir(os.path.dirname(self._path))

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                full = self._clients >= self._max
                if not full:
                    self._clients += 1
                    self._active.add(client)
                    thread = threading.Thread(target=self._relay, args=(client,), daemon=True)
                    self._threads = [t for t in self._threads if t.is_alive()] + [thread]
            if full:
                self.refused += 1
                client.close()
                continue
            thread.start()

    def _relay(self, client: socket.socket) -> None:
        try:
            with socket.create_connection(self._target, timeout=self._idle_s) as upstream:
                with self._lock:
                    self._active.add(upstream)
                try:
                    splice(client, upstream, idle_timeout_s=self._idle_s)
                finally:
                    with self._lock:
                        self._active.discard(upstream)
        except OSError:
            pass
        finally:
            with self._lock:
                self._active.discard(client)
                self._clients -= 1
            client.close()


def splice(one: socket.socket, other: socket.socket, *, idle_timeout_s: float) -> None:
    """Copy bytes both ways until both directions ended, or nothing moved for ``idle_timeout_s``."""
    one.setblocking(False)
    other.setblocking(False)
    peer = {one: other, other: one}
    open_reads = {one, other}
    with selectors.DefaultSelector() as selector:
        for sock in open_reads:
            selector.register(sock, selectors.EVENT_READ)
        while open_reads:
            ready = selector.select(idle_timeout_s)
            if not ready:
                return  # idle
            for key, _ in ready:
                source: socket.socket = key.fileobj  # type: ignore[assignment]
                try:
                    data = source.recv(_PIECE)
                except BlockingIOError:
                    continue
                except OSError:
                    return
                if not data:
                    selector.unregister(source)
                    open_reads.discard(source)
                    with contextlib.suppress(OSError):
                        peer[source].shutdown(socket.SHUT_WR)
                    continue
                if not _send_all(peer[source], data, idle_timeout_s):
                    return


def _send_all(sock: socket.socket, data: bytes, timeout_s: float) -> bool:
    view = memoryview(data)
    with selectors.DefaultSelector() as selector:
        selector.register(sock, selectors.EVENT_WRITE)
        while view:
            try:
                sent = sock.send(view)
            except BlockingIOError:
                if not selector.select(timeout_s):
                    return False
                continue
            except OSError:
                return False
            view = view[sent:]
    return True
