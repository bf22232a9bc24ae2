"""The `wfbench run` / `doctor` / `tasks check` command line, as a subprocess."""

from __future__ import annotations

import subprocess
import sys

WFBENCH = [sys.executable, "-m", "wfbench"]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*WFBENCH, *args], capture_output=True, text=True, timeout=120, check=False)


def test_workers_outside_one_to_sixty_four_are_refused_before_anything_runs(tmp_path):
    """--workers 0 and 65 are usage errors (exit 2) and create no output directory."""
    for value in ("0", "65"):
        done = cli("run", "--workers", value, "--out", str(tmp_path / value))
        assert done.returncode == 2, done.stderr
        assert not (tmp_path / value).exists()


def test_a_negative_outage_streak_is_refused(tmp_path):
    """--outage-streak below 0 would trip at once in the reference; here it is a usage error."""
    done = cli("run", "--outage-streak", "-1", "--out", str(tmp_path / "o"))
    assert done.returncode == 2


def test_a_missing_corpus_names_the_file_and_exits_2(tmp_path):
    """A corpus path that does not exist is one message naming it, exit 2."""
    missing = tmp_path / "nope.yaml"
    done = cli("tasks", "check", str(missing))
    assert done.returncode == 2
    assert f"{missing}: corpus file does not exist" in done.stderr


def test_doctor_reports_bwrap_claude_node_and_python():
    """`wfbench doctor` prints one line for each capability it checks."""
    done = cli("doctor")
    assert done.returncode == 0, done.stderr
    for prefix in ("bwrap:", "claude:", "node:", "python:"):
        assert prefix in done.stdout
