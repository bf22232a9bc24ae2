"""The build's registry proxy over real loopback sockets: an allow-listed CONNECT is tunnelled byte for
byte; any other host, port or request is refused with 403 before anything is resolved or connected."""

from __future__ import annotations

import socket
import threading

from wfbench.adapters.gateway.registry_proxy import REGISTRIES, RegistryProxy


def echo_server() -> tuple[socket.socket, int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            while data := conn.recv(1024):
                conn.sendall(b"echo:" + data)

    threading.Thread(target=serve, daemon=True).start()
    return server, server.getsockname()[1]


def ask(proxy: RegistryProxy, head: bytes) -> tuple[bytes, socket.socket]:
    client = socket.create_connection(proxy.address, timeout=10)
    client.sendall(head)
    return client.recv(4096), client


def test_an_allowed_connect_is_tunnelled_both_ways():
    server, port = echo_server()
    with server, RegistryProxy([f"127.0.0.1:{port}"]) as proxy:
        reply, client = ask(proxy, f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        with client:
            assert reply.startswith(b"HTTP/1.1 200")
            client.sendall(b"ping")
            assert client.recv(1024) == b"echo:ping"
        assert proxy.tunnels == [f"127.0.0.1:{port}"]


def test_other_hosts_ports_and_plain_requests_are_refused_without_connecting():
    opened: list[tuple[str, int]] = []

    def connect(target: tuple[str, int]) -> socket.socket:
        opened.append(target)
        raise OSError("must not be called")

    heads = [
        b"CONNECT example.com:443 HTTP/1.1\r\n\r\n",
        b"CONNECT pypi.org:80 HTTP/1.1\r\n\r\n",
        b"CONNECT pypi.org.evil.test:443 HTTP/1.1\r\n\r\n",
        b"GET http://pypi.org/simple/ HTTP/1.1\r\nHost: pypi.org\r\n\r\n",
        b"CONNECT user@pypi.org:443 HTTP/1.1\r\n\r\n",
    ]
    with RegistryProxy(connect=connect) as proxy:
        for head in heads:
            reply, client = ask(proxy, head)
            client.close()
            assert reply.startswith(b"HTTP/1.1 403"), head
    assert opened == []
    assert len(proxy.refused) == len(heads)


def test_the_default_allow_list_is_the_package_registries():
    assert {"pypi.org", "files.pythonhosted.org", "registry.npmjs.org"} <= REGISTRIES


def test_closing_the_proxy_ends_its_accept_thread_at_once():
    """close() wakes the blocked accept() (closing the socket alone does not): a build never waits on it."""
    proxy = RegistryProxy()
    with proxy:
        pass
    assert not proxy._thread.is_alive()  # close() joins with a 5 s timeout: alive here means it timed out
