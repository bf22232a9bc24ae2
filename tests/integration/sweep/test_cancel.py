"""Ctrl-C through ``python -m wfbench run`` (real sweeps under bwrap): spend kept, calm output, force-quit.

* A cell whose session finished before the interruption (its verify is still running) keeps the
  session's usage, cost, id and transcript in its ``cancelled`` row, and the summary's spend counts it.
* After one SIGINT the terminal says the sweep was cancelled and how to resume it, never that an
  arm is UNUSABLE or that resolution regressed; the exit code is 130.
* A second SIGINT force-quits: the process is gone within 15 s, so is every process it started
  (a verify that ignores SIGTERM included), and every row written is whole.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from tests.support.sweep_kit import (
    WFBENCH,
    base_files,
    bwrap_or_skip,
    impl_task,
    make_repo,
    processes_with,
    rule,
    turn,
    write,
    write_corpus,
)

FORCE_QUIT_LIMIT_S = 15.0


@pytest.fixture(autouse=True)
def _bwrap() -> None:
    bwrap_or_skip()


def _corpus(root: Path, verify: str) -> Path:
    make_repo(root, base_files())
    tasks = [impl_task("t1", verify=verify)]
    script = {"conversations": [rule("t1", turn(write("notes.txt", "done\n")), turn(say="done"))]}
    return write_corpus(root, tasks, script)


def _start(corpus: Path, out: Path, tmp: Path, *extra: str) -> subprocess.Popen[str]:
    # CI refuses --sandbox host-unsafe (a test of its own pins that); this one opts in on purpose.
    env = {**{k: v for k, v in os.environ.items() if k != "CI"}, "TMPDIR": str(tmp)}
    argv = [*WFBENCH, "run", str(corpus), "--out", str(out), "--arms", "baseline", "--workers", "1", *extra]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _wait_for(predicate: object, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise AssertionError("timed out waiting")


def _rows(out: Path) -> list[dict[str, object]]:
    path = out / "results.jsonl"
    return (
        [json.loads(line) for line in path.read_text().split("\n") if line.strip()] if path.exists() else []
    )


def test_a_cancelled_cell_keeps_the_session_it_paid_for_and_the_output_stays_calm(tmp_path: Path) -> None:
    token = f"{uuid.uuid4().int % 10**6}.{uuid.uuid4().int % 10**4}"
    corpus = _corpus(tmp_path / "corpus", verify=f"sleep {token}")
    out = tmp_path / "out"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    proc = _start(corpus, out, scratch)
    _wait_for(lambda: processes_with(f"sleep {token}"))  # the session is over; verify runs

    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)

    assert proc.returncode == 130, stdout[-2000:] + stderr[-2000:]
    (row,) = _rows(out)
    assert row["error_kind"] == "cancelled"
    assert isinstance(row["cost_usd"], float)
    assert row["cost_usd"] > 0
    assert (row["input_tokens"], row["output_tokens"]) == (200, 40)
    assert len(row["session_ids"]) == 1
    (session,) = row["session_measurements"]
    assert (session["phase"], session["ok"], session["cost_usd"]) == ("work", True, row["cost_usd"])
    assert row["transcript_artifacts"]
    assert (out / row["transcript_artifacts"][0]["path"]).is_file()
    assert f"spent: ${row['cost_usd']:.4f}" in stdout
    assert f"interrupted after 0/1 cells; resume with: wfbench run --resume {out}" in stdout
    assert "[measurement-health] not assessed: the sweep was cancelled" in stdout
    assert "UNUSABLE" not in stdout + stderr
    assert "regressed" not in stdout + stderr
    assert "press Ctrl-C again to force-quit" in stderr


def _force_quit(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen[str], str, float, str]:
    """Start a sweep whose verify ignores SIGTERM, SIGINT it twice: (process, stderr, exit seconds, token)."""
    token = f"{uuid.uuid4().int % 10**6}.{uuid.uuid4().int % 10**4}"
    corpus = _corpus(tmp_path / "corpus", verify=f"trap '' TERM INT; sleep {token}; sleep {token}")
    out = tmp_path / "out"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    proc = _start(corpus, out, scratch, *extra)
    _wait_for(lambda: processes_with(f"sleep {token}"))

    proc.send_signal(signal.SIGINT)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    started = time.monotonic()
    _, stderr = proc.communicate(timeout=FORCE_QUIT_LIMIT_S)
    exited_s = time.monotonic() - started
    deadline = started + FORCE_QUIT_LIMIT_S
    while processes_with(token) and time.monotonic() < deadline:
        time.sleep(0.1)
    raw = (out / "results.jsonl").read_bytes() if (out / "results.jsonl").exists() else b""
    assert raw == b"" or raw.endswith(b"\n")
    _rows(out)  # every line parses
    return proc, stderr, exited_s, token


def test_a_second_sigint_kills_a_command_that_ignores_sigterm_at_once(tmp_path: Path) -> None:
    """host-unsafe: the verify's process group ignores SIGTERM, so a graceful stop would wait out the
    5 s grace period; the second SIGINT SIGKILLs it and exits at once."""
    proc, stderr, exited_s, token = _force_quit(tmp_path, "--sandbox", "host-unsafe")

    assert proc.returncode == 130, stderr[-2000:]
    assert "again: force-quit" in stderr
    assert f"resume with: wfbench run --resume {tmp_path / 'out'}" in stderr
    assert exited_s < 4.0  # well under the 5 s SIGTERM grace a graceful stop would wait
    assert processes_with(token) == []


def test_a_second_sigint_leaves_no_process_of_a_bwrap_sweep_within_15_s(tmp_path: Path) -> None:
    """bwrap: whether the graceful stop or the force-quit wins, every process is gone within 15 s."""
    proc, stderr, exited_s, token = _force_quit(tmp_path)

    assert proc.returncode == 130, stderr[-2000:]
    assert exited_s < FORCE_QUIT_LIMIT_S
    assert processes_with(token) == []
