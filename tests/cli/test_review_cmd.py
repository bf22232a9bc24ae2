"""``wfbench review score`` run as a real subprocess on files: JSON out, one-line errors, exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from wfbench.app.gating.review_scoring import read_review_artifact, score_review_files
from wfbench.domain.errors import InputError, ReviewArtifactError

FINDING = {
    "id": "f1",
    "severity": "high",
    "path": "src/sum.js",
    "line": 1,
    "end_line": 1,
    "category": "correctness",
    "scenario": "sum(2, 1) returns 1.",
    "evidence": "return a - b",
    "recommendation": "Use a + b.",
    "blocking": True,
}
LABELS = {
    "schema_version": 1,
    "findings": [
        {
            "id": "f1",
            "severity": "high",
            "path": "src/sum.js",
            "line_start": 1,
            "line_end": 1,
            "category": "correctness",
        }
    ],
}


def artifact(verdict: str = "request_changes", **overrides: Any) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "verdict": verdict,
        "findings": [{**FINDING, **overrides}] if verdict != "approve" else [],
    }


def write(path: Path, content: object) -> Path:
    path.write_bytes(content if isinstance(content, bytes) else json.dumps(content).encode())
    return path


def wfbench(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "wfbench", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def labels(tmp_path: Path) -> Path:
    return write(tmp_path / "review-labels.json", LABELS)


def test_a_correct_review_prints_its_score_as_json(tmp_path: Path, labels: Path) -> None:
    """Exit 0; stdout is the score dict with the reference's keys."""
    result = wfbench("review", "score", write(tmp_path / "review-output.json", artifact()), labels)
    assert (result.returncode, result.stderr) == (0, "")
    score = json.loads(result.stdout)
    assert (score["true_positives"], score["false_positives"], score["false_negatives"], score["f1"]) == (
        1,
        0,
        0,
        1.0,
    )
    assert score["verdict_correct"] is True
    assert len(score) == 17


def test_a_finding_in_the_wrong_place_is_a_valid_score_not_an_error(tmp_path: Path, labels: Path) -> None:
    """Negative control: (0, 1, 1) and f1 0.0, exit 0 — a wrong answer is a measurement."""
    result = wfbench(
        "review",
        "score",
        write(tmp_path / "a.json", artifact(path="src/WRONG.js", line=99, end_line=99)),
        labels,
    )
    score = json.loads(result.stdout)
    assert (score["true_positives"], score["false_positives"], score["false_negatives"], score["f1"]) == (
        0,
        1,
        1,
        0.0,
    )


def test_approving_defective_code_prints_null_precision(tmp_path: Path, labels: Path) -> None:
    """Negative control: precision is JSON null (undefined), verdict incorrect."""
    score = json.loads(
        wfbench("review", "score", write(tmp_path / "a.json", artifact("approve")), labels).stdout
    )
    assert (score["precision"], score["verdict_correct"], score["false_negatives"]) == (None, False, 1)


@pytest.mark.parametrize(
    ("content", "cause"),
    [
        (b"Here is my review of the changes.", "review output is not valid JSON: Expecting value at line 1"),
        (b"", "review output is empty"),
        (b'{"verdict": "\xff\xfe"}', "review output is not valid UTF-8"),
        (json.dumps(artifact(line=0)).encode(), "findings[0].line must be a positive integer"),
        (
            json.dumps(artifact("approve") | {"findings": [FINDING]}).encode(),
            "approve verdict cannot contain findings",
        ),
        (b" " * 262_145, "review output must be a bounded regular non-symlink file"),
    ],
    ids=["prose", "empty", "not-utf8", "bad-line", "approve-with-findings", "too-big"],
)
def test_a_malformed_artifact_exits_2_with_one_line_naming_the_file_and_the_cause(
    tmp_path: Path, labels: Path, content: bytes, cause: str
) -> None:
    """Exit 2, nothing on stdout, one stderr line: wfbench: error: <file>: <cause>."""
    path = write(tmp_path / "review-output.json", content)
    result = wfbench("review", "score", path, labels)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == f"wfbench: error: {path}: {cause}\n"


def test_a_symlinked_artifact_is_refused_even_when_its_target_is_valid(tmp_path: Path, labels: Path) -> None:
    """The file-level check uses lstat: a symlink is never followed."""
    link = tmp_path / "review-output.json"
    link.symlink_to(write(tmp_path / "real.json", artifact()))
    result = wfbench("review", "score", link, labels)
    assert result.returncode == 2
    assert (
        result.stderr == f"wfbench: error: {link}: review output must be a bounded regular non-symlink file\n"
    )


def test_a_missing_artifact_was_never_written(tmp_path: Path, labels: Path) -> None:
    """P5: a missing file is 'never written', not an OS error."""
    result = wfbench("review", "score", tmp_path / "absent.json", labels)
    assert (result.returncode, result.stderr) == (
        2,
        f"wfbench: error: {tmp_path / 'absent.json'}: review output was never written\n",
    )


def test_a_directory_is_not_a_regular_file(tmp_path: Path, labels: Path) -> None:
    """A directory where the artifact should be is refused with the bounded-file message."""
    result = wfbench("review", "score", tmp_path, labels)
    assert result.stderr.endswith(": review output must be a bounded regular non-symlink file\n")


def test_malformed_labels_exit_2_naming_the_labels_file_and_field(tmp_path: Path) -> None:
    """A harness input error names the labels file and the field, not the artifact."""
    bad = write(
        tmp_path / "labels.json",
        {"schema_version": 1, "findings": [{**LABELS["findings"][0], "line_end": 0}]},
    )  # type: ignore[dict-item]
    result = wfbench("review", "score", write(tmp_path / "a.json", artifact()), bad)
    assert (result.returncode, result.stderr) == (
        2,
        f"wfbench: error: {bad}: findings[0].line_end: must be a positive integer\n",
    )


def test_the_use_case_returns_the_score_and_raises_located_errors(tmp_path: Path, labels: Path) -> None:
    """score_review_files is what the command calls; its errors carry the file as source."""
    assert score_review_files(write(tmp_path / "a.json", artifact()), labels).true_positives == 1
    with pytest.raises(ReviewArtifactError) as caught:
        score_review_files(write(tmp_path / "b.json", b"[]"), labels)
    assert (caught.value.source, caught.value.reason) == (
        str(tmp_path / "b.json"),
        "review output requires exactly schema_version, verdict, and findings",
    )
    with pytest.raises(InputError, match="cannot read labels"):
        score_review_files(tmp_path / "a.json", tmp_path / "no-labels.json")


def test_an_artifact_under_a_file_is_unreadable_not_missing(tmp_path: Path) -> None:
    """lstat failing with another OS error than 'not found' names that error."""
    parent = write(tmp_path / "plain", b"x")
    with pytest.raises(ReviewArtifactError, match="review output is unreadable: Not a directory"):
        read_review_artifact(parent / "review-output.json")
