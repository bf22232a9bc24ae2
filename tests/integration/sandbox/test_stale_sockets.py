"""Bridge-socket directories a SIGKILLed process left behind are removed at the next sweep's start.

Real UNIX sockets bound by a real child process that is then SIGKILLed (so nothing of it closes its
bridge); the live owner's directory, a directory holding anything but sockets, and names this
mechanism does not make are negative controls.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from wfbench.adapters.sandbox.net_bridge import socket_dir_prefix, socket_path
from wfbench.adapters.sandbox.stale_sockets import remove_stale_socket_dirs
from wfbench.adapters.store.claim import sweep_scratch

#: A child that makes a bridge socket directory under argv[1], binds its socket, then waits.
CHILD = """
import socket, sys, time
from wfbench.adapters.sandbox.net_bridge import socket_path
path = socket_path("model.sock", parent=sys.argv[1])
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind(path)
server.listen(1)
print(path, flush=True)
time.sleep(300)
"""


def _killed_owner_socket(root: Path) -> Path:
    """A socket directory whose creator was SIGKILLed after binding its socket."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3] / "src")}
    child = subprocess.Popen(  # noqa: S603 - this interpreter, a fixed script
        [sys.executable, "-c", CHILD, str(root)], stdout=subprocess.PIPE, text=True, env=env
    )
    assert child.stdout is not None
    path = Path(child.stdout.readline().strip())
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    child.stdout.close()
    assert path.parent.name.startswith(socket_dir_prefix(child.pid))
    assert path.exists()
    return path


def test_a_killed_process_s_socket_directory_is_removed_and_a_live_one_kept(tmp_path: Path) -> None:
    stale = _killed_owner_socket(tmp_path)
    live_path = socket_path("model.sock", parent=str(tmp_path))  # this process: alive
    live = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    live.bind(live_path)
    try:
        assert remove_stale_socket_dirs([str(tmp_path)]) == (str(stale.parent),)
        assert not stale.parent.exists()
        assert os.path.exists(live_path)
    finally:
        live.close()


def test_a_directory_holding_more_than_sockets_or_named_otherwise_is_left_alone(tmp_path: Path) -> None:
    stale = _killed_owner_socket(tmp_path)
    (stale.parent / "notes.txt").write_text("not a socket\n")
    other = tmp_path / "wfb-abc"  # the old naming, no pid: nothing says its owner is dead
    other.mkdir()
    assert remove_stale_socket_dirs([str(tmp_path)]) == ()
    assert stale.exists()
    assert other.is_dir()


def test_a_sweep_start_removes_the_socket_directories_of_killed_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sweep_scratch looks in the temporary directory (here tmp_path) and the short roots."""
    stale = _killed_owner_socket(tmp_path)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    notes: list[str] = []
    with sweep_scratch(note=notes.append, parent=str(tmp_path)):
        pass
    assert not stale.parent.exists()
    assert notes == []  # removed silently: a socket directory holds no one's data


#: Run in a new PID namespace: make the next pid 100000 (dead on the host: above its pid_max of
#: 32768, or at least not this test's), start a socket owner there, report its path and wait.
NS_OWNER = """
echo 99999 > /proc/sys/kernel/ns_last_pid
{python} -c '{child}' {root}
exit 0
"""
#: Run in a new PID namespace: a directory of a dead owner of this namespace, then the cleanup.
NS_CLEANER = """
import os, socket, sys
from wfbench.adapters.sandbox.net_bridge import socket_dir_prefix
from wfbench.adapters.sandbox.stale_sockets import remove_stale_socket_dirs
dead = os.path.join(sys.argv[1], socket_dir_prefix(pid=99999) + "abc")
os.mkdir(dead, 0o700)
socket.socket(socket.AF_UNIX).bind(os.path.join(dead, "model.sock"))
print(" ".join(remove_stale_socket_dirs([sys.argv[1]])), flush=True)
"""


def _unshare_or_skip() -> list[str]:
    # --kill-child: killing unshare ends the namespace (its init, and so every process in it).
    command = ["unshare", "--pid", "--fork", "--kill-child", "--mount-proc"]
    if os.geteuid() != 0 or subprocess.run([*command, "true"], capture_output=True, check=False).returncode:
        pytest.skip("a new PID namespace needs root and unshare(1)")
    return command


def test_cleanups_in_two_pid_namespaces_sharing_one_root_leave_each_others_live_sockets(
    tmp_path: Path,
) -> None:
    """A live owner in a namespace (pid 100000 there, dead here) and a live one here (a pid the
    namespace cannot see): neither side's cleanup removes the other's; each removes its own dead."""
    unshare = _unshare_or_skip()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    script = (
        NS_OWNER.replace("{python}", sys.executable)
        .replace("{child}", CHILD)
        .replace("{root}", str(tmp_path))
    )
    owner = subprocess.Popen([*unshare, "sh", "-c", script], stdout=subprocess.PIPE, text=True, env=env)  # noqa: S603
    try:
        assert owner.stdout is not None
        theirs = Path(owner.stdout.readline().strip())
        assert theirs.parent.name.startswith("wfb-100000-n")
        mine = _killed_owner_socket(tmp_path)  # a dead owner of this namespace: the positive control
        live_path = socket_path("model.sock", parent=str(tmp_path))
        live = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        live.bind(live_path)
        try:
            assert remove_stale_socket_dirs([str(tmp_path)]) == (str(mine.parent),)
            assert theirs.exists()
            cleaner = subprocess.run(
                [*unshare, sys.executable, "-c", NS_CLEANER, str(tmp_path)],
                capture_output=True,
                text=True,
                env=env,
                check=True,
                timeout=60,
            )
            removed = cleaner.stdout.split()
            assert len(removed) == 1
            assert Path(removed[0]).name.startswith("wfb-99999-n")
            assert os.path.exists(live_path)
            assert theirs.exists()
        finally:
            live.close()
    finally:
        owner.kill()
        owner.wait(timeout=30)
