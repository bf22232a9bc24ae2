# ruff: noqa: E501 - one case per line
"""The prior-sweep adapter behind `--reuse-results`: which directories it accepts, and the
all-or-nothing, drift-checked copy of a reused row's artifacts."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from wfbench.adapters.store.prior_results import PriorResultsDir
from wfbench.domain.errors import InputError


@pytest.fixture
def prior(tmp_path: Path) -> Path:
    root = tmp_path / "prior"
    (root / "transcripts").mkdir(parents=True)
    (root / "results.jsonl").write_text("")
    (root / "transcripts" / "a.jsonl").write_bytes(b"event-1\n")
    (root / "r.review.json").write_text("{}")
    return root


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_a_directory_is_refused_when_it_is_the_output_or_has_no_regular_results(prior, tmp_path):
    """Its own --out, a directory without results.jsonl, and a symlinked results.jsonl are usage errors."""
    with pytest.raises(InputError, match="must not be the sweep's own --out directory"):
        PriorResultsDir.open(str(prior), out_dir=str(prior))
    with pytest.raises(InputError, match="holds no regular results.jsonl"):
        PriorResultsDir.open(str(tmp_path), out_dir=str(tmp_path / "out"))
    linked = tmp_path / "linked"
    linked.mkdir()
    os.symlink(prior / "results.jsonl", linked / "results.jsonl")
    with pytest.raises(InputError, match="holds no regular results.jsonl"):
        PriorResultsDir.open(str(linked), out_dir=str(tmp_path / "out"))
    assert PriorResultsDir.open(str(prior), out_dir=str(tmp_path / "out")).rows() == ()


def test_checked_artifacts_are_copied_and_a_missing_optional_one_is_skipped(prior, tmp_path):
    """Transcripts (size and sha256 re-checked) land at their destination path; an absent patch is fine."""
    dest = tmp_path / "out"
    dest.mkdir()
    PriorResultsDir(str(prior)).copy_artifacts(
        [
            ("transcripts/a.jsonl", "cells/t/a/run-0/transcripts/a.jsonl", _sha(b"event-1\n"), 8, True),
            ("r.review.json", "r.review.json", None, None, True),
            ("r.patch", "cells/t/a/run-0/patch.diff", None, None, False),
        ],
        str(dest),
    )
    assert (dest / "cells/t/a/run-0/transcripts/a.jsonl").read_bytes() == b"event-1\n"
    assert (dest / "r.review.json").read_text() == "{}"
    assert not (dest / "cells/t/a/run-0/patch.diff").exists()


def test_the_first_present_source_of_a_destination_is_copied(prior, tmp_path):
    """Several candidate sources for one destination (new layout, then legacy): the first present wins."""
    (prior / "cells/t/a/run-0").mkdir(parents=True)
    (prior / "cells/t/a/run-0/patch.diff").write_text("new")
    (prior / "t-a-run0.patch").write_text("legacy")
    dest = tmp_path / "out"
    refs = [
        ("missing.patch", "cells/t/a/run-0/patch.diff", None, None, False),
        ("t-a-run0.patch", "cells/t/a/run-0/patch.diff", None, None, False),
        ("cells/t/a/run-0/patch.diff", "cells/t/a/run-0/patch.diff", None, None, False),
    ]
    PriorResultsDir(str(prior)).copy_artifacts(refs, str(dest))
    assert (dest / "cells/t/a/run-0/patch.diff").read_text() == "legacy"
    PriorResultsDir(str(prior)).copy_artifacts(refs[::-1], str(dest))
    assert (dest / "cells/t/a/run-0/patch.diff").read_text() == "new"


@pytest.mark.parametrize(
    ("entry", "error"),
    [
        (
            ("transcripts/a.jsonl", "transcripts/a.jsonl", _sha(b"event-1\n"), 9, True),
            "drifted: 8 bytes, 9 recorded",
        ),
        (
            ("transcripts/a.jsonl", "transcripts/a.jsonl", _sha(b"other"), 8, True),
            "drifted: its sha256 differs",
        ),
        (("transcripts/missing.jsonl", "transcripts/missing.jsonl", None, None, True), "missing"),
        (("../escape", "escape", None, None, True), "unsafe artifact path"),
        (("/etc/passwd", "passwd", None, None, True), "unsafe artifact path"),
        (("transcripts/a.jsonl", "../escape", None, None, True), "unsafe artifact path"),
        (("transcripts/a.jsonl", "/tmp/escape", None, None, True), "unsafe artifact path"),
    ],
)
def test_a_drifted_missing_or_unsafe_artifact_fails_the_whole_copy_and_leaves_nothing(
    prior, tmp_path, entry, error
):
    """The review artifact staged first is not left behind when a later artifact fails."""
    dest = tmp_path / "out"
    dest.mkdir()
    with pytest.raises((ValueError, OSError), match=error):
        PriorResultsDir(str(prior)).copy_artifacts(
            [("r.review.json", "r.review.json", None, None, True), entry], str(dest)
        )
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file()) == []


def test_an_artifact_reached_through_a_symlink_is_refused(prior, tmp_path):
    """A symlink in the prior directory (to a host file or out of the directory) is never followed."""
    os.symlink("/etc/hostname", prior / "link.review.json")
    os.symlink("/etc", prior / "etc")
    dest = tmp_path / "out"
    dest.mkdir()
    with pytest.raises(ValueError, match="not a regular file"):
        PriorResultsDir(str(prior)).copy_artifacts(
            [("link.review.json", "x.review.json", None, None, True)], str(dest)
        )
    with pytest.raises(ValueError, match="leaves"):
        PriorResultsDir(str(prior)).copy_artifacts(
            [("etc/hostname", "hostname", None, None, True)], str(dest)
        )
