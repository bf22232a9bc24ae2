"""The suite's temp-dir guard (tests/support/tmp_guard.py), run on a small session of its own.

One pytest subprocess with the guard as its only plugin and ``TMPDIR`` in this test's directory:
a test that leaves a ``wfbench-*`` directory fails the session by name, a test that removes its
own passes, and a SIGKILLed child run through ``scratch_env`` leaves nothing. The session's own
directory is gone afterwards, so nothing at all lands in the outer ``TMPDIR``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SESSION = """
import os, signal, subprocess, sys, tempfile

from tests.support.tmp_guard import scratch_env

KILLED = (
    "import os, signal, tempfile; tempfile.mkdtemp(prefix='wfbench-apply-'); "
    "os.kill(os.getpid(), signal.SIGKILL)"
)


def test_leaky():
    tempfile.mkdtemp(prefix="wfbench-leak-")


def test_tidy():
    with tempfile.TemporaryDirectory(prefix="wfbench-tidy-"):
        pass


def test_killed_child_in_a_scratch_tmpdir():
    with scratch_env() as env:
        done = subprocess.run([sys.executable, "-c", KILLED], env=env, check=False)
    assert done.returncode == -signal.SIGKILL
"""


def test_a_leaked_wfbench_temp_dir_fails_the_session_naming_its_test_and_nothing_reaches_tmp(
    tmp_path: Path,
) -> None:
    (tmp_path / "test_session.py").write_text(SESSION)
    outer = tmp_path / "tmp"
    outer.mkdir()
    env = {**os.environ, "TMPDIR": str(outer), "PYTHONPATH": str(ROOT)}

    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider"]
        + ["-p", "tests.support.tmp_guard", "--rootdir", str(tmp_path), str(tmp_path / "test_session.py")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert done.returncode == 1, done.stdout[-3000:]
    assert "3 passed, 1 error" in done.stdout, done.stdout[-3000:]
    assert "tests left temporary directories behind" in done.stdout
    assert "(left by test_session.py::test_leaky)" in done.stdout, done.stdout[-3000:]
    assert "wfbench-tidy" not in done.stdout
    assert "wfbench-apply" not in done.stdout
    assert [p.name for p in outer.iterdir() if not p.name.startswith("pytest-of-")] == []
