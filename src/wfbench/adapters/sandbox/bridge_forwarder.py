#!/usr/bin/env python3
"""The in-sandbox end of a bridge: loopback TCP ports relayed to host UNIX sockets, then the program.

``python3 -I -S bridge_forwarder.py [--bridge PORT SOCKET]... -- PROGRAM [ARG]...``

Run as the sandbox's PID 1 (see :mod:`wfbench.adapters.sandbox.net_bridge`). It binds every
``127.0.0.1:PORT`` in the sandbox's own network namespace (before the program starts, so the
program's first connection never races the listener), starts ``PROGRAM`` with the inherited
stdin, stdout, stderr and environment, then replaces its own stdin/stdout/stderr with
``/dev/null``: from then on this process holds nothing of the harness's pipes. Each accepted
connection is relayed byte for byte, both ways, to the bridge's UNIX socket (a connection that
cannot be relayed is closed). As PID 1 it reaps every orphan; when the program ends the
forwarder exits with its status (128 + N for a signal, as bubblewrap reports it), and the kernel
ends everything left in the namespace. (A timeout or a cancellation kills bwrap, and with it the
whole namespace; under host-unsafe the process group, forwarder and program alike.)

It imports only interpreter built-ins (``_socket``, ``_thread``): the ``socket``
and ``threading`` modules would cost more start-up time than the relaying itself. A setup
failure (a port that cannot be bound, a program that cannot start) is one line on stderr
starting ``wfbench-bridge:`` and exit status 125.
"""

from __future__ import annotations

import _socket
import _thread
import os
import sys

PIECE = 64 * 1024
SETUP_FAILED = 125


def parse(argv: list[str]) -> tuple[list[tuple[int, str]], list[str]]:
    """``([(port, socket path)...], program argv)``; ValueError on a malformed command line."""
    bridges: list[tuple[int, str]] = []
    index = 0
    while index < len(argv) and argv[index] == "--bridge":
        if index + 2 >= len(argv):
            raise ValueError("--bridge needs PORT and SOCKET")
        port = int(argv[index + 1])
        if not 0 < port < 65536:
            raise ValueError(f"port out of range: {port}")
        bridges.append((port, argv[index + 2]))
        index += 3
    if index >= len(argv) or argv[index] != "--" or index + 1 >= len(argv):
        raise ValueError("expected -- PROGRAM [ARG]...")
    return bridges, argv[index + 1 :]


def listen(port: int) -> _socket.socket:
    """A listening socket on ``127.0.0.1:port`` (close-on-exec: the program never inherits it)."""
    sock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    sock.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    return sock


def pump(source: _socket.socket, sink: _socket.socket, finished: _thread.LockType | None) -> None:
    """Copy ``source`` to ``sink`` until EOF or an error, then half-close ``sink``."""
    try:
        while data := source.recv(PIECE):
            sink.sendall(data)
    except OSError:
        pass
    try:  # noqa: SIM105 - contextlib is not imported: start-up time (see the module docstring)
        sink.shutdown(_socket.SHUT_WR)
    except OSError:
        pass
    if finished is not None:
        finished.release()


def relay(client: _socket.socket, path: str) -> None:
    """Relay one accepted connection to the UNIX socket at ``path``; both are closed at the end."""
    upstream = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        upstream.connect(path)
        back = _thread.allocate_lock()
        back.acquire()
        _thread.start_new_thread(pump, (upstream, client, back))
        pump(client, upstream, None)
        back.acquire()
    except (OSError, RuntimeError):
        pass
    finally:
        upstream.close()
        client.close()


def serve(listener: _socket.socket, path: str) -> None:
    """Accept forever; every connection gets its own relay thread."""
    while True:
        try:
            fd, _address = listener._accept()  # type: ignore[attr-defined]  # the C socket's accept
        except OSError:
            continue
        client = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM, 0, fd)
        try:
            client.setsockopt(_socket.IPPROTO_TCP, _socket.TCP_NODELAY, 1)
            _thread.start_new_thread(relay, (client, path))
        except (OSError, RuntimeError):  # no thread left (the pids limit): drop this connection
            client.close()


def drop_stdio() -> None:
    """Point fds 0-2 at /dev/null: the harness's pipes stay with the program only."""
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    if null > 2:
        os.close(null)


def wait_for(pid: int) -> int:
    """Reap every child (PID 1 adopts orphans) until ``pid`` ends; its exit status as a shell reports it."""
    while True:
        try:
            found, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return SETUP_FAILED
        if found == pid:
            code = os.waitstatus_to_exitcode(status)
            return code if code >= 0 else 128 - code


def main(argv: list[str]) -> int:
    """Bind, start the program, relay until it ends."""
    try:
        bridges, program = parse(argv)
        listeners = [(listen(port), path) for port, path in bridges]
        pid = os.posix_spawn(program[0], program, os.environ)
    except (ValueError, OSError) as exc:
        sys.stderr.write(f"wfbench-bridge: {exc}\n")
        sys.stderr.flush()
        return SETUP_FAILED
    drop_stdio()
    for listener, path in listeners:
        _thread.start_new_thread(serve, (listener, path))
    return wait_for(pid)


if __name__ == "__main__":
    os._exit(main(sys.argv[1:]))
