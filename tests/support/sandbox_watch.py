"""Watching a sweep's sandboxes from the host, for hostile end-to-end tests.

The watcher runs as the harness's user on the host, which may read every process's argv and
environment. It finds each agent sandbox (a process whose argv holds ``stream-json``), reads the
cell's model endpoint and token from its environment and, when asked, *leaks* them into the
cell's workspace (``.leak``: ``URL TOKEN``). Tests use the leak to play the worst case — a tool
that somehow holds the cell's token — and to hand a tool a marker that the watcher has seen the
sandbox (so no positive control depends on how long a session lasts).

Other sweeps run on the same machine at the same time (other tests, other developers' runs): the
watcher only ever looks at — and only ever writes into — sandboxes *descended from the test's own
process* (the ``wfbench run`` subprocesses it started and their children, by the parent links in
``/proc/<pid>/stat``), and with ``under`` only workspaces below that directory. A sandbox of
anyone else's is neither recorded nor touched.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import attrs

AGENT_MARK = b"stream-json"
TOKEN_PREFIX = b"ANTHROPIC_API_KEY=wfbench-proxy-"
#: The shell snippet a scripted Bash tool runs first: wait (at most 30 s) for the leak, read it.
WAIT_FOR_LEAK = (
    "for i in $(seq 300); do [ -s .leak ] && break; sleep 0.1; done;"
    " read URL TOKEN < .leak; rm -f .leak; export URL TOKEN;"
)


@attrs.define
class SandboxWatch:
    """What the watcher saw: agent environments, argv hits of a secret, leaks written."""

    secret: bytes
    leak: bool
    #: The process whose descendants are watched (the test's own), and an optional workspace root.
    ancestor: int = attrs.field(factory=os.getpid)
    under: str | None = None
    agent_environs: list[bytes] = attrs.field(factory=list)
    cmdline_hits: list[str] = attrs.field(factory=list)
    leaked_to: set[str] = attrs.field(factory=set)
    stop: threading.Event = attrs.field(factory=threading.Event)


def workspace_of(cmdline: bytes) -> str | None:
    """The host path bwrap binds at /workspace, from its argv."""
    args = cmdline.split(b"\0")
    for index in range(1, len(args)):
        if args[index] == b"/workspace" and args[index - 1] not in (b"--chdir",):
            return args[index - 1].decode()
    return None


def _variable(environ: bytes, name: bytes) -> str | None:
    for entry in environ.split(b"\0"):
        if entry.startswith(name + b"="):
            return entry[len(name) + 1 :].decode()
    return None


def parent_of(pid: int) -> int | None:
    """The parent pid in ``/proc/<pid>/stat`` (None: gone or unreadable)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ')'.
    fields = stat[stat.rfind(b")") + 2 :].split()
    return int(fields[1]) if len(fields) > 1 else None


def descends_from(pid: int, ancestor: int) -> bool:
    """Whether ``ancestor`` is ``pid`` or one of its ancestors (by the parent links)."""
    seen: set[int] = set()
    current: int | None = pid
    while current is not None and current > 1 and current not in seen:
        if current == ancestor:
            return True
        seen.add(current)
        current = parent_of(current)
    return False


def _ours(watch: SandboxWatch, pid: int, workspace: str | None) -> bool:
    if not descends_from(pid, watch.ancestor):
        return False
    if watch.under is None:
        return True
    root = os.path.realpath(watch.under)
    return workspace is not None and os.path.realpath(workspace).startswith(root + os.sep)


def _scan(watch: SandboxWatch) -> None:
    while not watch.stop.wait(0.05):
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
                if watch.secret and watch.secret in cmdline:  # a secret in anyone's argv is a leak
                    watch.cmdline_hits.append(entry)
                if AGENT_MARK not in cmdline:
                    continue
                workspace = workspace_of(cmdline)
                if not _ours(watch, int(entry), workspace):
                    continue  # another test's or another user's sweep: never read, never written
                environ = Path(f"/proc/{entry}/environ").read_bytes()
                watch.agent_environs.append(environ)
                url, token = (
                    _variable(environ, b"ANTHROPIC_BASE_URL"),
                    _variable(environ, b"ANTHROPIC_API_KEY"),
                )
                if watch.leak and workspace and url and token and workspace not in watch.leaked_to:
                    partial = Path(workspace, ".leak.partial")
                    partial.write_text(f"{url} {token}\n")
                    partial.rename(Path(workspace, ".leak"))
                    watch.leaked_to.add(workspace)
            except OSError:
                continue


@contextmanager
def watching(secret: str = "", *, leak: bool = False, under: str | None = None) -> Iterator[SandboxWatch]:
    """Watch this process's descendant sandboxes until the block ends (see the module docstring)."""
    watch = SandboxWatch(secret.encode(), leak, under=under)
    thread = threading.Thread(target=_scan, args=(watch,), daemon=True)
    thread.start()
    try:
        yield watch
    finally:
        watch.stop.set()
        thread.join(30)
