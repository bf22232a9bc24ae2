"""The live view, through ``python -m wfbench run`` on a pseudo-terminal, and the heartbeat off one.

The demo at ``--runs 1`` with its last cell's session stalled for a few seconds: on a TTY the live
view shows done/running/left, the ETA, the spend so far, per-arm tallies and the running cell with
its phase, and it is redrawn while that session runs (the cell's elapsed time counts up before the
cell ends); cell lines are coloured. Off a TTY, the same sweep prints plain lines and a heartbeat.
"""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import time
from pathlib import Path

from tests.integration.sweep.test_resume_after_cancel import _stalling_script
from tests.support.demo_run import WFBENCH, bwrap_or_skip

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _on_a_pty(argv: list[str], env: dict[str, str], timeout: float = 240) -> tuple[int, str]:
    """Run ``argv`` with stdout and stderr on a pseudo-terminal; (exit code, everything it drew)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    os.close(master)
    return proc.wait(timeout=60), b"".join(chunks).decode("utf-8", "replace")


def test_on_a_tty_one_live_view_is_redrawn_while_a_long_session_runs(tmp_path: Path) -> None:
    bwrap_or_skip()
    script = _stalling_script(tmp_path, stall_s=5)
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "160", "LINES": "50"}
    argv = [*WFBENCH, "run", "--out", str(tmp_path / "out"), "--runs", "1", "--provider-script", str(script)]
    argv += ["--tasks", "fix-median,add-mode,review-pr-*"]  # 8 cells, as the counts below

    code, drawn = _on_a_pty(argv, env)

    text = ANSI.sub("", drawn)
    assert code == 0, text[-3000:]
    assert re.search(r"cells: done \d+/8, running \d+, left \d+, ETA (\d+m\d\ds|n/a), spent \$\d", text)
    assert re.search(r"arms: workflow \d+✓ \d+✗ · baseline", text)
    elapsed = {int(s) for s in re.findall(r"▶ review-pr-42/review/0 {2}review {2}0m0(\d)s", text)}
    assert len(elapsed) >= 3, sorted(elapsed)  # redrawn at least 3 times while the stalled session ran
    assert "✓ [fix-median][workflow][run 0] resolved=True" in text
    assert "\x1b[32m" in drawn or "\x1b[38;5;2m" in drawn or "\x1b[1;32m" in drawn  # green lines
    assert "summary:" in text


def test_off_a_tty_the_lines_are_plain_with_a_heartbeat(tmp_path: Path) -> None:
    bwrap_or_skip()
    script = _stalling_script(tmp_path, stall_s=3)
    env = {**os.environ, "WFBENCH_HEARTBEAT_S": "1"}
    argv = [*WFBENCH, "run", "--out", str(tmp_path / "out"), "--runs", "1", "--provider-script", str(script)]
    argv += ["--tasks", "fix-median,add-mode,review-pr-*"]  # 8 cells, as the counts below

    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=240, check=False)

    assert done.returncode == 0, done.stderr[-2000:]
    assert "\x1b[" not in done.stdout
    assert "[fix-median][workflow][run 0] resolved=True" in done.stdout
    beats = [line for line in done.stdout.splitlines() if line.startswith("heartbeat: ")]
    assert beats
    assert any(re.search(r"running: [\w-]+/\w+/\d \w+ \dm\d\ds", line) for line in beats), beats
