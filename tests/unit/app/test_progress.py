"""Sweep progress: the plain per-cell lines and the rich bar on a (fake) terminal."""

from __future__ import annotations

import io
import re

from wfbench.app.progress import BarProgress, LineProgress, cell_line, detail_line
from wfbench.domain.results.rows import Row


def _row(run: int, **fields: object) -> Row:
    base = {"task": "t", "arm": "a", "run": run, "ok": True, "resolved": True, "input_tokens": 10,
            "output_tokens": 5, "cost_usd": 0.01, "duration_s": 1.5}  # fmt: skip
    return Row.from_mapping({**base, **fields})


def test_a_finished_cell_line_shows_every_measure_and_n_a_where_unmeasured():
    """Resolved, quality, tokens, cost, duration and kind; unknown values print n/a, never 0."""
    assert cell_line(_row(0)) == (
        "[t][a][run 0] resolved=True quality=n/a in=10 out=5 cost=$0.0100 took=1.5s error_kind=none"
    )
    unknown = _row(
        1, input_tokens=None, cost_usd=None, duration_s=None, resolved=False, error_kind="session-error"
    )
    assert "in=n/a out=5 cost=$n/a took=n/as error_kind=session-error" in cell_line(unknown)
    infra = _row(2, error_kind="infra-error", cost_usd=0.0, duration_s=0.0)
    assert "cost=$n/a took=n/as" in cell_line(infra)


def test_the_failure_detail_is_redacted_single_line_and_bounded():
    """Secrets are masked, newlines become ⏎, and long details are cut with the count."""
    row = _row(0, error_kind="verify-failed", error_detail="key sk-secret-123\nboom " + "x" * 2000)
    line = detail_line(row, ["sk-secret-123"])
    assert line is not None
    assert "sk-secret-123" not in line
    assert " ⏎ boom" in line
    assert re.search(r"…\[truncated \d+ chars\]$", line)
    assert detail_line(_row(1)) is None


def test_plain_progress_prints_one_line_per_finished_cell():
    """Not a TTY: a start line, then one line per cell (plus its detail when it failed)."""
    stream = io.StringIO()
    progress = LineProgress(stream)
    progress.start(2)
    progress.cell_started("t/a/0")
    progress.cell_done(_row(0))
    failed = _row(1, error_kind="oracle-failed", resolved=False, error_detail="hidden oracle failed")
    progress.cell_done(failed)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "running 2 cell(s)"
    assert [line.split(" ")[0] for line in lines[1:]] == ["[t][a][run", "[t][a][run", "[t][a][run"]
    assert lines[-1].endswith("detail: hidden oracle failed")


def test_on_a_terminal_the_bar_shows_cells_done_running_left_and_elapsed_time():
    """A forced-terminal console draws the bar with done/total, running, left and an elapsed clock."""
    stream = io.StringIO()
    progress = BarProgress(stream, force_terminal=True)
    progress.start(5)
    for run in range(3):
        progress.cell_started(f"t/a/{run}")
    progress.cell_done(_row(0))
    progress._bar.refresh()
    progress.close()
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", stream.getvalue())
    assert "1/5 done" in text
    assert "running 2" in text
    assert "left 2" in text
    assert re.search(r"elapsed \d+:\d\d:\d\d", text)
    assert "[t][a][run 0] resolved=True" in text
