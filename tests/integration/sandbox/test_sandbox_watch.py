"""The shared sandbox watcher touches only the test's own sandboxes (no bwrap needed).

A fake "agent sandbox" is a sleeping process whose argv looks like one (``WS /workspace
stream-json``) and whose environment holds a model endpoint and token. Orphaned (double-forked,
re-parented away from this test, as another test's or another user's sweep would be) the watcher
neither records its environment nor writes a ``.leak`` into its workspace; started as this test's
child (the positive control) it does both.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.support.sandbox_watch import descends_from, parent_of, watching

SLEEPER = "import time; time.sleep(20)"
ENV = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "ANTHROPIC_API_KEY": "wfbench-proxy-fake"}


def _argv(workspace: Path) -> list[str]:
    return [sys.executable, "-c", SLEEPER, str(workspace), "/workspace", "stream-json"]


def _orphan(workspace: Path) -> int:
    """Start the fake sandbox double-forked (its parent exits): returns its pid.

    The sandbox's output goes to /dev/null: holding the launcher's stdout pipe, it would keep
    ``subprocess.run`` waiting until it exits (20 s), and the test would watch a dead process.
    """
    launcher = (
        "import os, subprocess, sys; "
        f"p = subprocess.Popen({_argv(workspace)!r}, start_new_session=True, "
        "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); print(p.pid)"
    )
    env = {**os.environ, **ENV}
    command = [sys.executable, "-c", launcher]
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
    return int(done.stdout.strip())


def _running(pid: int) -> bool:
    """Whether ``pid`` exists and has not exited (a zombie's state in ``/proc/<pid>/stat`` is Z)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


def _wait_for(predicate, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def test_parent_links_follow_this_process_tree() -> None:
    child = subprocess.Popen([sys.executable, "-c", SLEEPER])
    try:
        assert parent_of(child.pid) == os.getpid()
        assert descends_from(child.pid, os.getpid())
        assert not descends_from(os.getppid(), os.getpid())  # the parent is no descendant
    finally:
        child.kill()
        child.wait()


def test_a_foreign_sandbox_is_neither_read_nor_written(tmp_path: Path) -> None:
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    theirs.mkdir()
    ours.mkdir()
    foreign = _orphan(theirs)
    child = subprocess.Popen(_argv(ours), env={**os.environ, **ENV})
    try:
        assert _running(foreign)  # not a zombie: the negative control watches a live sandbox
        assert not descends_from(foreign, os.getpid())
        with watching(leak=True) as seen:
            # Positive control: our own child gets its leak; by then the foreign one was scanned too.
            assert _wait_for((ours / ".leak").exists), seen
            time.sleep(0.3)
        assert (ours / ".leak").read_text() == "http://127.0.0.1:9 wfbench-proxy-fake\n"
        assert not (theirs / ".leak").exists()
        assert not (theirs / ".leak.partial").exists()
        assert seen.leaked_to == {str(ours)}
        assert len(set(seen.agent_environs)) == 1
    finally:
        child.kill()
        child.wait()
        os.kill(foreign, 9)


def test_under_narrows_to_one_workspace_root(tmp_path: Path) -> None:
    inside, outside = tmp_path / "root" / "ws", tmp_path / "elsewhere"
    inside.mkdir(parents=True)
    outside.mkdir()
    children = [subprocess.Popen(_argv(ws), env={**os.environ, **ENV}) for ws in (inside, outside)]
    try:
        with watching(leak=True, under=str(tmp_path / "root")) as seen:
            assert _wait_for((inside / ".leak").exists), seen
            time.sleep(0.3)
        assert not (outside / ".leak").exists()
        assert seen.leaked_to == {str(inside)}
    finally:
        for child in children:
            child.kill()
            child.wait()
