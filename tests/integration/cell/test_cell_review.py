"""grade_review on disk: the artifact copy written beside the results carries no secret."""

from __future__ import annotations

import json
from pathlib import Path

from wfbench.adapters.store.sweep_files import FileSweepDirectory
from wfbench.app.cell.review import LABELS_TARGET, grade_review
from wfbench.domain.workspace.oracle import OracleBundle, OracleFile

KEY = "wfb-planted-0123456789abcdef0123456789abcdef"
LABELS = {
    "schema_version": 1,
    "findings": [
        {
            "id": "l1",
            "severity": "high",
            "path": "app.py",
            "line_start": 2,
            "line_end": 2,
            "category": "correctness",
        }
    ],
}


def _artifact(evidence: str) -> bytes:
    finding = {
        "id": "f1",
        "severity": "high",
        "path": "app.py",
        "line": 2,
        "end_line": 2,
        "category": "correctness",
        "scenario": "s",
        "evidence": evidence,
        "recommendation": "r",
        "blocking": True,
    }
    return json.dumps({"schema_version": 1, "verdict": "request_changes", "findings": [finding]}).encode()


def _grade(tmp_path: Path, evidence: str, secrets: tuple[str, ...]) -> tuple[dict[str, object], str]:
    src = tmp_path / "review-output.json"
    src.write_bytes(_artifact(evidence))
    out = tmp_path / "out"
    out.mkdir()
    oracle = OracleBundle((OracleFile.of(LABELS_TARGET, json.dumps(LABELS).encode()),))
    grade = grade_review(
        str(src), oracle, FileSweepDirectory(str(out)), "cells/r/arm/run-0/review.json", secrets=secrets
    )
    assert grade.evidence_valid
    assert grade.oracle_passed
    copy = out / str(grade.row_fields["review_artifact"])
    return grade.row_fields, copy.read_text()


def test_the_artifact_copy_redacts_the_runs_secrets_and_stays_valid_json(tmp_path: Path) -> None:
    """A finding quoting the key is scored, and the copy under --out holds the marker, not the key."""
    fields, copy = _grade(tmp_path, f"the key is {KEY}", (KEY,))
    assert KEY not in copy
    assert json.loads(copy)["findings"][0]["evidence"] == "the key is [REDACTED]"
    assert fields["review_score"] is not None


def test_without_declared_secrets_the_copy_keeps_the_artifact_text(tmp_path: Path) -> None:
    """Negative control: the scrub is what removes the key (an undeclared value is copied as is)."""
    _, copy = _grade(tmp_path, f"the key is {KEY}", ())
    assert KEY in copy
