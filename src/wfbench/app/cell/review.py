"""Grade a review cell: read the artifact the agent wrote, score it against the hidden labels.

An unusable artifact (never written, not a bounded regular file, malformed) is *invalid
evidence* (``review-evidence-invalid``), never a score of zero. A well-formed but wrong review
is a valid negative: ``oracle_passed`` is false and the score is kept.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from typing import Any

import attrs

from wfbench.domain.errors import InputError
from wfbench.domain.ports import SweepDirectory
from wfbench.domain.redaction import redact_text
from wfbench.domain.workspace.oracle import OracleBundle

MAX_ARTIFACT_BYTES = 256 * 1024
LABELS_TARGET = "review-labels.json"


@attrs.frozen
class ReviewGrade:
    """What a review cell's artifact earned."""

    evidence_valid: bool
    oracle_passed: bool
    oracle_output: str
    row_fields: dict[str, Any]


def read_artifact(path: str) -> bytes:
    """The artifact's bytes, with the reference's file-level checks (no symlinks, ≤ 256 KiB).

    Raises:
        InputError: with the one cause (never written, not a bounded regular file, empty, unreadable).
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise InputError("review output was never written") from None
    except OSError as exc:
        raise InputError(f"review output is unreadable: {exc.strerror}") from None
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_ARTIFACT_BYTES:
        raise InputError("review output must be a bounded regular non-symlink file")
    if info.st_size == 0:
        raise InputError("review output is empty")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as handle:
            return handle.read(MAX_ARTIFACT_BYTES + 1)[:MAX_ARTIFACT_BYTES]
    except OSError as exc:
        raise InputError(f"review output is unreadable: {exc.strerror}") from None


def grade_review(
    path: str, oracle: OracleBundle, directory: SweepDirectory, name: str, secrets: Iterable[str] = ()
) -> ReviewGrade:
    """Score the artifact at ``path`` against the labels in ``oracle``; copy it to ``name``.

    ``name`` is the copy's path in the sweep ``directory`` (the cell's ``review.json``), written
    durably through the port like every other artifact of the cell. The copy is
    the artifact with ``secrets`` (and credential-shaped tokens) redacted; the score is taken
    from the artifact as written.
    """
    from wfbench.domain.review.scoring import (
        parse_labels,
        parse_review_artifact,
        review_oracle_passed,
        score_review,
    )

    labels = next((f.data for f in oracle.files if f.target == LABELS_TARGET), None)
    if labels is None:
        return ReviewGrade(False, False, "hidden oracle snapshot unavailable", {"review_score": None})
    try:
        data = read_artifact(path)
        artifact = parse_review_artifact(data)
        parsed = parse_labels(labels)
        score = score_review(artifact, parsed)
    except InputError as exc:
        fields: dict[str, Any] = {"review_score": None, "review_evidence_detail": exc.reason}
        return ReviewGrade(False, False, "review artifact unusable", fields)
    scrubbed = redact_text(data.decode("utf-8", "replace"), tuple(secrets))
    directory.write(name, scrubbed.encode("utf-8"))
    passed = review_oracle_passed(score)
    matching = {
        "pairs": [{"finding": finding, "label": label} for finding, label in score.pairs],
        "labels": [label.to_mapping() for label in parsed.labels],
    }
    fields = {
        **score.row_fields(),
        "review_score": score.to_mapping(),
        "review_artifact": name,
        "label_matching": matching,
    }
    text = "hidden review labels matched" if passed else "hidden review labels not fully matched"
    return ReviewGrade(True, passed, text, fields)
