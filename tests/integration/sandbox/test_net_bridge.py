"""The bridge's parts on their own: the host end (TcpBridge), the forwarder script, ELF interpreters.

The sandbox-level behaviour (a bridge under bwrap and host-unsafe, isolation, non-dumpable
programs) is in tests/contract/test_sandbox_bridges.py.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import require_or_skip
from wfbench.adapters.sandbox import bridge_forwarder
from wfbench.adapters.sandbox.launch import compiled_forwarder
from wfbench.adapters.sandbox.net_bridge import TcpBridge, forwarder_source, socket_path
from wfbench.adapters.sandbox.nondumpable import elf_interpreter, exec_only_copy
from wfbench.domain.errors import SandboxError

PY = os.path.realpath(sys.executable)


@pytest.fixture
def echo() -> Iterator[tuple[str, int]]:
    """A TCP echo server on loopback (one thread per connection)."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def one(conn: socket.socket) -> None:
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data)

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            threading.Thread(target=one, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()
    stop.set()
    thread.join(2)
    server.close()


def unix(path: str) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(5)
    sock.connect(path)
    return sock


def test_a_tcp_bridge_relays_bytes_both_ways_and_cleans_up(echo: tuple[str, int]) -> None:
    with TcpBridge(echo) as bridge:
        path = bridge.bridge.socket
        with unix(path) as conn:
            payload = os.urandom(300_000)
            conn.sendall(payload)
            conn.shutdown(socket.SHUT_WR)
            received = b""
            while data := conn.recv(65536):
                received += data
        assert received == payload
    assert not os.path.exists(path)
    assert not os.path.exists(os.path.dirname(path))


def test_a_tcp_bridge_caps_concurrent_connections(echo: tuple[str, int]) -> None:
    """Past ``max_connections`` a new connection is closed at once; the held ones keep working."""
    with TcpBridge(echo, max_connections=2) as bridge:
        held = [unix(bridge.bridge.socket) for _ in range(2)]
        for conn in held:
            conn.sendall(b"ping")
            assert conn.recv(4) == b"ping"
        with unix(bridge.bridge.socket) as extra:
            assert extra.recv(4) == b""  # closed by the bridge
        assert bridge.refused == 1
        for conn in held:
            conn.close()


def test_a_tcp_bridge_closes_an_idle_connection(echo: tuple[str, int]) -> None:
    with TcpBridge(echo, idle_timeout_s=0.3) as bridge, unix(bridge.bridge.socket) as conn:
        conn.sendall(b"x")
        assert conn.recv(1) == b"x"
        started = time.monotonic()
        assert conn.recv(1) == b""  # nothing moved for 0.3 s: cut
        assert time.monotonic() - started < 4.5


def test_a_socket_path_that_would_be_too_long_is_refused(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 90)
    deep.mkdir()
    with pytest.raises(SandboxError, match="too long"):
        socket_path(parent=str(deep))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--bridge", "80"], "needs PORT and SOCKET"),
        (["--bridge", "0", "/s", "--", "x"], "out of range"),
        (["--bridge", "80", "/s", "x"], "expected --"),
        (["--"], "expected --"),
    ],
)
def test_the_forwarder_refuses_a_malformed_command_line(argv: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        bridge_forwarder.parse(argv)


def test_the_forwarder_parses_bridges_then_the_program() -> None:
    parsed = bridge_forwarder.parse(["--bridge", "80", "/a", "--bridge", "81", "/b", "--", "prog", "--x"])
    assert parsed == ([(80, "/a"), (81, "/b")], ["prog", "--x"])


def _compiled() -> list[str]:
    found = compiled_forwarder(os.environ)
    if found is None:
        require_or_skip(
            "WFBENCH_REQUIRE_BRIDGE", "the compiled forwarder is not built (scripts/install-tools)"
        )
    assert found is not None
    return [found]


#: Both forwarders keep one contract: the Python script and the compiled one install-tools builds.
FORWARDERS = pytest.mark.parametrize(
    "forwarder",
    [lambda: [PY, "-I", "-S", forwarder_source()], _compiled],
    ids=["python", "compiled"],
)


@FORWARDERS
def test_a_forwarder_setup_failure_is_one_line_and_status_125(forwarder) -> None:
    """A program that cannot start: ``wfbench-bridge: ...`` on stderr, exit 125."""
    done = subprocess.run([*forwarder(), "--", "/nonexistent/program"], capture_output=True, check=False)
    assert done.returncode == 125
    assert done.stderr.startswith(b"wfbench-bridge: ")


@FORWARDERS
def test_the_forwarder_relays_a_loopback_port_to_a_unix_socket(echo: tuple[str, int], forwarder) -> None:
    """On the host (as host-unsafe runs it): the program reaches the UNIX socket through 127.0.0.1:<port>."""
    with TcpBridge(echo) as bridge:
        port = bridge.bridge.port
        code = (
            f"import socket; s = socket.create_connection(('127.0.0.1', {port})); s.sendall(b'through');"
            " print(s.recv(7).decode())"
        )
        done = subprocess.run(
            [*forwarder(), "--bridge", str(port), bridge.bridge.socket, "--", PY, "-c", code],
            capture_output=True,
            check=False,
            timeout=30,
        )
    assert done.returncode == 0, done
    assert done.stdout.strip() == b"through"


@FORWARDERS
def test_the_forwarder_reports_a_signal_as_128_plus_its_number(forwarder) -> None:
    code = "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"
    done = subprocess.run([*forwarder(), "--", PY, "-c", code], capture_output=True, check=False, timeout=30)
    assert done.returncode == 128 + 15


def test_elf_interpreters_are_read_from_program_headers(tmp_path: Path) -> None:
    """This Python and /bin/sh name a loader; a text file, a truncated header or nothing name none."""
    loader = elf_interpreter(PY)
    assert loader is not None
    assert os.path.isfile(loader)
    assert elf_interpreter("/bin/sh") == loader
    text = tmp_path / "script.sh"
    text.write_text("#!/bin/sh\n")
    assert elf_interpreter(str(text)) is None
    truncated = tmp_path / "truncated"
    truncated.write_bytes(Path(PY).read_bytes()[:40])
    assert elf_interpreter(str(truncated)) is None
    assert elf_interpreter(str(tmp_path / "missing")) is None


def test_an_exec_only_copy_has_mode_0111_and_the_same_bytes(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.write_bytes(b"\x7fELF" + os.urandom(1000))
    copy = exec_only_copy(str(source), str(tmp_path / "copy"))
    assert os.stat(copy).st_mode & 0o777 == 0o111
    os.chmod(copy, 0o400)
    assert Path(copy).read_bytes() == source.read_bytes()


def test_under_a_deep_tmpdir_the_socket_goes_to_a_short_private_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A deep $TMPDIR (a pytest tmp_path, a CI workspace) must not make every bridge fail."""
    deep = tmp_path / ("d" * 90)
    deep.mkdir()
    monkeypatch.setenv("TMPDIR", str(deep))
    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    assert tempfile.gettempdir() == str(deep)
    path = socket_path("model.sock")
    try:
        assert len(path.encode()) <= 107
        assert not path.startswith(str(deep))
        directory = os.path.dirname(path)
        assert os.stat(directory).st_mode & 0o777 == 0o700
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
            server.bind(path)  # it really binds
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
        os.rmdir(os.path.dirname(path))


def test_a_short_tmpdir_is_used_as_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    short = Path(tempfile.mkdtemp(prefix="wfb-t-", dir="/tmp"))
    monkeypatch.setenv("TMPDIR", str(short))
    monkeypatch.setattr(tempfile, "tempdir", None)
    try:
        path = socket_path()
        assert path.startswith(str(short) + "/wfb-")
        os.rmdir(os.path.dirname(path))
    finally:
        short.rmdir()
