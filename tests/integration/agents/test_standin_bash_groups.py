"""The stand-in's Bash tool owns its process group: a timeout or the agent's end kills the whole tree.

Before, the tool's own timeout killed only ``bash``: a child it had started (foreground or
background) lived on after the tool returned "timed out".
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.agents.test_standin_agent import AGENT, FLAGS, agent, call, start, tool_results

__all__ = ["start"]  # the fixture, used by name


def _with(token: str) -> list[int]:
    """Live pids whose command line holds ``token`` (only processes these tests started)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
                status = Path(f"/proc/{entry}/status").read_text()
            except OSError:
                continue
            if token.encode() in cmdline and "\nState:\tZ" not in status:
                found.append(int(entry))
    return found


def _gone(token: str, within_s: float = 5.0) -> list[int]:
    deadline = time.monotonic() + within_s
    while (alive := _with(token)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


@pytest.fixture
def seconds() -> Iterator[str]:
    """A unique sleep length to find the test's sleeps by; any survivor is killed (by pid)."""
    value = f"300.{random.randrange(10**8, 10**9)}"
    yield value
    for pid in _with(value):
        os.kill(pid, signal.SIGKILL)


def test_a_bash_timeout_kills_the_commands_children_too(start, tmp_path, seconds):
    """A 1 s timeout over a foreground and a background sleep: the result says timed out, both are gone."""
    provider = start(call("Bash", command=f"sleep {seconds} & sleep {seconds}", timeout=1000), {"say": "ok"})
    code, events = agent(provider, tmp_path)
    (result,) = tool_results(events)
    assert result["is_error"] is True
    assert "timed out after 1 s" in result["content"]
    assert code == 0
    assert _gone(seconds) == []


def test_a_background_child_of_a_finished_bash_call_does_not_outlive_the_agent(start, tmp_path, seconds):
    """`sleep &` returns at once; the child, in the tool's own group, is ended when the agent exits."""
    provider = start(call("Bash", command=f"sleep {seconds} > /dev/null 2>&1 & echo started"), {"say": "ok"})
    code, events = agent(provider, tmp_path)
    (result,) = tool_results(events)
    assert result == {**result, "is_error": False, "content": "started"}
    assert _gone(seconds) == []


def test_terminating_the_agent_mid_command_kills_the_running_tool_group(start, tmp_path, seconds):
    """SIGTERM to the agent alone (not its group) still ends the Bash child it is waiting for."""
    provider = start(call("Bash", command=f"sleep {seconds}"), {"say": "ok"})
    env = {"PATH": "/usr/bin:/bin", "ANTHROPIC_BASE_URL": provider.base_url, "ANTHROPIC_API_KEY": "k-123456"}
    proc = subprocess.Popen(
        [sys.executable, "-I", "-S", AGENT, *FLAGS],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=tmp_path,
        env=env,
        start_new_session=True,
    )
    try:
        assert proc.stdin is not None
        proc.stdin.write(b"Task: do it")
        proc.stdin.close()
        deadline = time.monotonic() + 20
        while not _with(seconds) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _with(seconds), "the Bash tool never started its sleep"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == -signal.SIGTERM
        assert _gone(seconds) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
