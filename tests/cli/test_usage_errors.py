"""Command-line usage errors are one ``wfbench: error:`` line with exit code 2, never a box or a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _wfbench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "wfbench", *args], capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (("bogus",), "No such command 'bogus'"),
        (("run", "--workers", "65"), "--workers"),
        (("run", "--outage-streak", "x"), "--outage-streak"),
        (("review", "score"), "Missing argument"),
        (("gate",), "Missing argument"),
    ],
    ids=[
        "unknown-command",
        "workers-out-of-range",
        "non-integer-streak",
        "missing-artifact",
        "missing-results",
    ],
)
def test_a_usage_error_is_one_line_naming_the_option(args: tuple[str, ...], names: str) -> None:
    """The message names the command and the offending option or argument, on one line."""
    done = _wfbench(*args)

    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("wfbench: error: ")
    assert names in lines[0]
    assert "Traceback" not in done.stderr


def test_help_still_exits_zero() -> None:
    """--help is not an error: it prints the usage and exits 0."""
    done = _wfbench("--help")

    assert done.returncode == 0
    assert "Usage" in done.stdout
