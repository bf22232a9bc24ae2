"""Shared test configuration: Hypothesis profiles and the skip-or-require rule for real parts."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Every test runs with TMPDIR in the session's own directory; a wfbench temp dir a test leaves
# there fails the session (tests/support/tmp_guard.py).
from tests.support.tmp_guard import _note_new_temp_entries, session_tmp  # noqa: F401 - fixtures

# Profiles are registered at module level (Hypothesis deprecates registering inside overrides).
# `ci` extends the built-in one Hypothesis loads itself when CI is set.
settings.register_profile("ci", settings.get_profile("ci"), max_examples=200)
settings.register_profile("dev", max_examples=25)
settings.register_profile(
    "mutmut",
    max_examples=10,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


# A child process that imports wfbench runs on the interpreter running the tests (the project
# venv's ``python``, which reads its ``pyvenv.cfg``), never on ``os.path.realpath(sys.executable)``:
# that is the *base* interpreter, which on a fresh machine has neither wfbench nor its dependencies
# (issue 23). Commands that need only the standard library (inside a sandbox, say) may use the base.
HARNESS_PYTHON = sys.executable


def harness_pythonpath() -> str:
    """``PYTHONPATH`` that makes wfbench and its dependencies importable by *another* interpreter
    (a base interpreter, or a venv made for a test): the source tree and this venv's site-packages,
    named explicitly instead of relying on whatever the base interpreter happens to have installed."""
    src = Path(__file__).resolve().parents[1] / "src"
    sites = dict.fromkeys(sysconfig.get_path(key) for key in ("purelib", "platlib"))
    return os.pathsep.join([str(src), *sites])


def require_or_skip(env_var: str, reason: str) -> None:
    """Skip with ``reason`` locally; fail instead when ``env_var`` is 1 (CI requires the part)."""
    if os.environ.get(env_var) == "1":
        pytest.fail(f"{reason} (required because {env_var}=1)")
    pytest.skip(reason)


def claude_binary() -> str | None:
    """The real Claude Code CLI: $WFBENCH_CLAUDE_BIN, the project's cache install, or PATH."""
    candidates = [
        os.environ.get("WFBENCH_CLAUDE_BIN", ""),
        os.path.expanduser("~/.cache/wfbench/claude/node_modules/.bin/claude"),
        shutil.which("claude") or "",
    ]
    for path in candidates:
        if path and os.access(path, os.X_OK):
            return path
    return None


def codex_binary() -> str | None:
    """The real Codex CLI: $WFBENCH_CODEX_BIN, the project's cache install, or PATH."""
    candidates = [
        os.environ.get("WFBENCH_CODEX_BIN", ""),
        os.path.expanduser("~/.cache/wfbench/codex/node_modules/.bin/codex"),
        shutil.which("codex") or "",
    ]
    for path in candidates:
        if path and os.access(path, os.X_OK):
            return path
    return None


def gemini_binary() -> str | None:
    """The real Gemini CLI: $WFBENCH_GEMINI_BIN, the project's cache install, or PATH."""
    candidates = [
        os.environ.get("WFBENCH_GEMINI_BIN", ""),
        os.path.expanduser("~/.cache/wfbench/gemini/node_modules/.bin/gemini"),
        shutil.which("gemini") or "",
    ]
    for path in candidates:
        if path and os.access(path, os.X_OK):
            return path
    return None


def opencode_binary() -> str | None:
    """The real OpenCode CLI: $WFBENCH_OPENCODE_BIN, the project's cache install, or PATH."""
    candidates = [
        os.environ.get("WFBENCH_OPENCODE_BIN", ""),
        os.path.expanduser("~/.cache/wfbench/opencode/node_modules/.bin/opencode"),
        shutil.which("opencode") or "",
    ]
    for path in candidates:
        if path and os.access(path, os.X_OK):
            return path
    return None


@pytest.fixture
def sigint_handled() -> Iterator[None]:
    """Python's own SIGINT handler for the test: ``interrupt_main`` does nothing while SIGINT is ignored.

    A job started in the background by a non-interactive shell inherits SIGINT ignored, and then
    a simulated Ctrl-C (``_thread.interrupt_main``, what ``ray.cancel`` delivers in a task
    thread) never reaches the main thread. A terminal's foreground job, or a Ray worker, has the
    handler; the test process may not.
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
