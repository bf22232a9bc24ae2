"""report.md's "no locatable session transcript" note counts rows with transcript_missing true, only.

Successful baseline rows have ``skill_invoked: null`` by design (no skill to check) and
``transcript_missing: false``; they must never be counted. Run through ``wfbench report``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

NOTE = "had no locatable session transcript"


def _row(task: str, arm: str, run: int, **fields: Any) -> dict[str, Any]:
    base = {
        "task": task,
        "arm": arm,
        "run": run,
        "class": "bugfix",
        "ok": True,
        "resolved": True,
        "error_kind": None,
        "input_tokens": 100,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": 50,
        "cost_usd": 0.01,
        "duration_s": 3.0,
        "num_turns": 2,
        "authored_tests_passed": True,
        "oracle_passed": True,
        "skill_invoked": None,
        "transcript_missing": False,
        "review_evidence_valid": None,
    }
    return {**base, **fields}


def _report(tmp_path: Path, rows: list[dict[str, Any]]) -> str:
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    done = subprocess.run(
        [sys.executable, "-m", "wfbench", "report", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return (tmp_path / "report.md").read_text()


def test_successful_baseline_rows_with_skill_invoked_null_add_no_transcript_note(tmp_path: Path) -> None:
    """Three ok baseline rows (skill_invoked null, transcript_missing false): no note."""
    report = _report(tmp_path, [_row("t1", "baseline", run) for run in range(3)])
    assert "| t1 | bugfix | baseline |" in report
    assert NOTE not in report


def test_the_note_counts_exactly_the_rows_whose_transcript_missing_is_true(tmp_path: Path) -> None:
    """Beside ok baseline and workflow rows, two rows with transcript_missing true make the note say 2."""
    rows = [_row("t1", "baseline", run) for run in range(3)]
    rows += [_row("t1", "workflow_direct", run, skill_invoked=True) for run in range(3)]
    rows.append(
        _row(
            "t1", "baseline", 3, ok=False, resolved=False, error_kind="session-error", transcript_missing=True
        )
    )
    rows.append(_row("t1", "workflow_direct", 3, skill_invoked=None, transcript_missing=True))
    report = _report(tmp_path, rows)
    assert f"2 run(s) {NOTE}" in report
