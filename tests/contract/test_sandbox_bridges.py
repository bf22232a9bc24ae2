"""The network contract of every Sandbox backend: its own network namespace, bridges, a non-dumpable program.

Every command has a private loopback and nothing else (bwrap); a bridge presents one host UNIX
socket on that loopback; a program started non-dumpable hides its environment, memory and file
descriptors from every other process of the sandbox. host-unsafe shares the host's network
namespace: those properties are strict xfails there, with the reason. Each probe has a positive
control (the same probe succeeds where it should), so a failing connect proves isolation, not a
broken probe.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.contract.test_sandbox_contract import (  # noqa: F401 - fixtures
    PY,
    backend,
    gap,
    listener,
    policy,
    sandbox,
    workspace,
)
from wfbench.adapters.sandbox.net_bridge import TcpBridge, free_port
from wfbench.domain.errors import SandboxError
from wfbench.domain.ports import Sandbox


def python(code: str) -> list[str]:
    return [PY, "-I", "-c", code]


CONNECT = """
import socket, sys
def attempt(address, family=socket.AF_INET):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect(address)
        return 'REACHED:' + s.recv(2).decode()
    except OSError as exc:
        return 'blocked:' + type(exc).__name__
"""


@pytest.fixture
def bridge(listener: int) -> Iterator[TcpBridge]:  # noqa: F811 - the listener fixture
    """A bridge whose host end is the test's loopback listener (it answers ``hi``)."""
    with TcpBridge(("127.0.0.1", listener)) as made:
        yield made


def test_a_bridge_presents_the_host_socket_on_the_commands_loopback(
    sandbox: Sandbox,  # noqa: F811
    workspace: Path,  # noqa: F811
    bridge: TcpBridge,
) -> None:
    """The command reaches the host service at ``bridge.url`` (127.0.0.1:<port>) and reads its reply."""
    code = CONNECT + f"print(attempt(('127.0.0.1', {bridge.bridge.port})))"
    result = sandbox.run(python(code), policy=policy(workspace, bridges=(bridge.bridge,)))
    assert result.ok, result
    assert result.stdout.strip() == b"REACHED:hi"


def test_beside_a_bridge_no_other_host_listener_is_reachable(
    sandbox: Sandbox,  # noqa: F811
    backend: str,  # noqa: F811
    workspace: Path,  # noqa: F811
    listener: int,  # noqa: F811
    bridge: TcpBridge,
    request: pytest.FixtureRequest,
) -> None:
    """The listener reached directly on its host loopback port is refused; through the bridge it answers."""
    gap(request, backend, "network")
    code = (
        CONNECT + f"print(attempt(('127.0.0.1', {listener})), attempt(('127.0.0.1', {bridge.bridge.port})))"
    )
    result = sandbox.run(python(code), policy=policy(workspace, bridges=(bridge.bridge,)))
    direct, bridged = result.stdout.decode().split()
    assert bridged == "REACHED:hi"  # positive control: the probe works
    assert direct.startswith("blocked:"), direct


@pytest.fixture
def abstract_socket() -> Iterator[str]:
    """A host abstract UNIX socket (no file: reachable from the host's network namespace only)."""
    name = f"wfbench-probe-{uuid.uuid4().hex}"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind("\0" + name)
    server.listen(4)
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                conn.sendall(b"hi")
                conn.close()
            except OSError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield name
    stop.set()
    thread.join(2)
    server.close()


def test_a_host_abstract_socket_is_unreachable(
    sandbox: Sandbox,  # noqa: F811
    backend: str,  # noqa: F811
    workspace: Path,  # noqa: F811
    abstract_socket: str,
    bridge: TcpBridge,
    request: pytest.FixtureRequest,
) -> None:
    """Abstract sockets belong to the network namespace: the host's is invisible (the host reaches it)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as control:
        control.connect("\0" + abstract_socket)
        assert control.recv(2) == b"hi"  # positive control from the host
    gap(request, backend, "network")
    code = CONNECT + f"print(attempt('\\0{abstract_socket}', socket.AF_UNIX))"
    result = sandbox.run(python(code), policy=policy(workspace, bridges=(bridge.bridge,)))
    assert result.stdout.decode().startswith("blocked:"), result


def test_no_name_resolution_and_no_datagram_leaves_the_sandbox(
    sandbox: Sandbox,  # noqa: F811
    backend: str,  # noqa: F811
    workspace: Path,  # noqa: F811
    bridge: TcpBridge,
    request: pytest.FixtureRequest,
) -> None:
    """No resolver named (no /etc/resolv.conf, or docker's emptied one), and a UDP datagram to a host
    loopback port (a resolver's) never arrives."""
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    receiver.settimeout(0.5)
    port = receiver.getsockname()[1]
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as control:
        control.sendto(b"control", ("127.0.0.1", port))
    assert receiver.recvfrom(64)[0] == b"control"  # positive control: the receiver hears a datagram
    gap(request, backend, "network")
    code = (
        "import os, socket\n"
        "named = os.path.exists('/etc/resolv.conf') and 'nameserver' in open('/etc/resolv.conf').read()\n"
        "print('resolv.conf' if named else 'no-resolv')\n"
        "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        f"for _ in range(5): s.sendto(b'probe', ('127.0.0.1', {port}))\n"
    )
    result = sandbox.run(python(code), policy=policy(workspace, bridges=(bridge.bridge,)))
    try:
        heard = receiver.recvfrom(64)[0]
    except TimeoutError:
        heard = b""
    finally:
        receiver.close()
    assert result.ok, result
    assert result.stdout.strip() == b"no-resolv"
    assert heard == b""


def test_two_sandboxes_cannot_reach_each_other(
    sandbox: Sandbox,  # noqa: F811
    backend: str,  # noqa: F811
    workspace: Path,  # noqa: F811
    request: pytest.FixtureRequest,
) -> None:
    """One command listens on its loopback; a concurrent one cannot connect (each reaches its own)."""
    gap(request, backend, "network")
    port = free_port()
    server = (
        "import socket, time\n"
        "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
        f"s.bind(('127.0.0.1', {port})); s.listen(8); s.settimeout(0.2)\n"
        "seen = 0\n"
        f"own = socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"  # positive control
        "deadline = time.monotonic() + 4\n"
        "while time.monotonic() < deadline:\n"
        "    try:\n"
        "        c, _ = s.accept(); seen += 1; c.close()\n"
        "    except OSError:\n"
        "        pass\n"
        "print('accepted', seen)\n"
    )
    client = CONNECT + (
        "import time\nresults = []\n"
        f"for _ in range(10):\n    results.append(attempt(('127.0.0.1', {port}))); time.sleep(0.2)\n"
        "print(' '.join(sorted(set(results))))\n"
    )
    outcome: dict[str, bytes] = {}

    def run(name: str, code: str) -> None:
        outcome[name] = sandbox.run(python(code), policy=policy(workspace)).stdout

    listening = threading.Thread(target=run, args=("server", server))
    listening.start()
    time.sleep(0.5)
    run("client", client)
    listening.join(30)
    assert outcome["server"].split() == [b"accepted", b"1"]  # its own connection only
    assert b"REACHED" not in outcome["client"], outcome["client"]


CHILD_PROBE = """
import os
parent = os.getppid()
for what, mode in (("environ", "rb"), ("mem", "rb"), ("fd/1", "wb")):
    try:
        open(f"/proc/{parent}/{what}", mode).close()
        print(what, "open")
    except OSError as exc:
        print(what, type(exc).__name__)
"""
ENVIRON_PROBE = f"import subprocess, sys\nprint(subprocess.run([sys.executable, '-I', '-c', {CHILD_PROBE!r}],"
ENVIRON_PROBE += " capture_output=True, text=True).stdout)"


@pytest.mark.parametrize("non_dumpable", [True, False])
def test_a_non_dumpable_program_hides_its_environment_memory_and_pipes_from_its_children(
    sandbox: Sandbox,  # noqa: F811
    workspace: Path,  # noqa: F811
    non_dumpable: bool,
) -> None:
    """A child of the program cannot open the program's environ, mem or fd/1; dumpable, it can (control)."""
    result = sandbox.run(
        python(ENVIRON_PROBE),
        policy=policy(workspace, env={"PATH": "/usr/bin:/bin"}, non_dumpable=non_dumpable),
    )
    assert result.ok, result
    lines = result.stdout.decode().split("\n")
    found = dict(line.split() for line in lines if line.strip())
    if non_dumpable:
        assert found == {"environ": "PermissionError", "mem": "PermissionError", "fd/1": "PermissionError"}
    else:
        assert found == {"environ": "open", "mem": "open", "fd/1": "open"}


def test_under_a_bridge_pid_1_holds_none_of_the_harness_pipes(
    sandbox: Sandbox,  # noqa: F811
    backend: str,  # noqa: F811
    workspace: Path,  # noqa: F811
    bridge: TcpBridge,
) -> None:
    """The forwarder is PID 1, not the program, and /proc/1/fd/1 cannot be opened for writing."""
    if backend == "host-unsafe":
        pytest.skip("host-unsafe has no PID namespace: PID 1 is the host's init, not the forwarder")
    code = (
        "import os\nprint(os.getpid())\n"
        "try:\n    open('/proc/1/fd/1', 'wb').write(b'forged\\n'); print('wrote')\n"
        "except OSError as exc:\n    print(type(exc).__name__)\n"
    )
    result = sandbox.run(python(code), policy=policy(workspace, bridges=(bridge.bridge,), non_dumpable=True))
    assert result.ok, result
    pid, outcome = result.stdout.decode().split()
    assert pid != "1"
    assert outcome == "PermissionError"
    assert b"forged" not in result.stdout


def test_a_non_dumpable_start_of_a_script_is_refused(sandbox: Sandbox, workspace: Path) -> None:  # noqa: F811
    """Only a dynamically linked ELF program can be started non-dumpable: anything else fails closed."""
    script = workspace / "tool.sh"
    script.write_text("#!/bin/sh\necho ran\n")
    script.chmod(0o755)
    target = sandbox.workspace_path(policy(workspace)) + "/tool.sh"
    with pytest.raises(SandboxError, match="not a dynamically linked ELF"):
        sandbox.run([target], policy=policy(workspace, non_dumpable=True))


def test_two_bridges_on_one_port_are_refused(sandbox: Sandbox, workspace: Path, bridge: TcpBridge) -> None:  # noqa: F811
    with pytest.raises(SandboxError, match="same port"):
        sandbox.run(["/bin/true"], policy=policy(workspace, bridges=(bridge.bridge, bridge.bridge)))


def test_the_forwarder_passes_the_programs_exit_status_stdin_and_stdout(
    sandbox: Sandbox,  # noqa: F811
    workspace: Path,  # noqa: F811
    bridge: TcpBridge,
) -> None:
    """Behind the forwarder the command still gets its stdin, writes its stdout and sets the exit code."""
    code = "import sys; data = sys.stdin.read(); print(data.upper()); sys.exit(7)"
    result = sandbox.run(python(code), policy=policy(workspace, bridges=(bridge.bridge,)), stdin=b"prompt")
    assert result.returncode == 7
    assert result.stdout.strip() == b"PROMPT"


def test_a_bridge_socket_path_is_private(bridge: TcpBridge) -> None:
    """The socket lives in a fresh 0700 directory."""
    directory = os.path.dirname(bridge.bridge.socket)
    assert os.stat(directory).st_mode & 0o777 == 0o700
