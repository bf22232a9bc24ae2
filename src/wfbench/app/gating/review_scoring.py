"""Use case: score a review artifact file against a labels file.

The domain parses bytes; this module owns the file-level checks of the reference harness, in its
order and with its messages (never written, unreadable, not a bounded regular non-symlink file,
empty), and names the file in every error.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from wfbench.domain.errors import InputError, ReviewArtifactError
from wfbench.domain.review.scoring import (
    MAX_ARTIFACT_BYTES,
    MSG_EMPTY,
    MSG_NEVER_WRITTEN,
    MSG_NOT_BOUNDED_FILE,
    ReviewScore,
    msg_unreadable,
    parse_labels,
    parse_review_artifact,
    score_review,
)

__all__ = ["read_review_artifact", "score_review_files"]

#: Labels files are harness input; the reference caps each hidden oracle file at 512 KiB.
MAX_LABELS_BYTES = 512 * 1024


def read_review_artifact(path: str | os.PathLike[str]) -> bytes:
    """The artifact's bytes after the reference's file-level checks.

    Raises:
        ReviewArtifactError: the one cause, with ``source`` set to the path.
    """
    source = os.fspath(path)
    try:
        info = os.lstat(source)
    except FileNotFoundError:
        raise ReviewArtifactError(MSG_NEVER_WRITTEN, source=source) from None
    except OSError as exc:
        raise ReviewArtifactError(msg_unreadable(_strerror(exc)), source=source) from None
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_ARTIFACT_BYTES:
        raise ReviewArtifactError(MSG_NOT_BOUNDED_FILE, source=source)
    if info.st_size == 0:
        raise ReviewArtifactError(MSG_EMPTY, source=source)
    try:
        descriptor = os.open(source, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(descriptor, "rb") as handle:
            data = handle.read(MAX_ARTIFACT_BYTES + 1)
    except OSError as exc:
        raise ReviewArtifactError(msg_unreadable(_strerror(exc)), source=source) from None
    if len(data) > MAX_ARTIFACT_BYTES:  # it grew after lstat
        raise ReviewArtifactError(MSG_NOT_BOUNDED_FILE, source=source)
    return data


def score_review_files(
    artifact_path: str | os.PathLike[str], labels_path: str | os.PathLike[str]
) -> ReviewScore:
    """Read, validate and score. Raises :class:`InputError` (a :class:`ReviewArtifactError` for the
    artifact) naming the file and the cause; labels are read first, since they are the harness's
    own input and an error there is not the reviewer's fault."""
    labels_source = os.fspath(labels_path)
    try:
        labels_data = _read_labels(Path(labels_source))
        labels = parse_labels(labels_data)
    except InputError as exc:
        raise exc.located(source=labels_source) from None
    data = read_review_artifact(artifact_path)
    try:
        artifact = parse_review_artifact(data)
    except ReviewArtifactError as exc:
        raise ReviewArtifactError(exc.reason, source=os.fspath(artifact_path)) from None
    return score_review(artifact, labels)


def _read_labels(path: Path) -> bytes:
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_LABELS_BYTES + 1)
    except OSError as exc:
        raise InputError(f"cannot read labels: {_strerror(exc)}") from None
    if len(data) > MAX_LABELS_BYTES:
        raise InputError(f"labels file exceeds {MAX_LABELS_BYTES} bytes")
    return data


def _strerror(exc: OSError) -> str:
    return exc.strerror or str(exc)
