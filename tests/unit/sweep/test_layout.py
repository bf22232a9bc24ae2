"""The sweep directory's per-cell layout: paths of a cell's files, in the current and the legacy layout."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wfbench.domain.sweep import layout


def test_a_cells_files_live_under_cells_task_arm_run():
    """cells/<task>/<arm>/run-<i>/ holds the patch, the review artifact and the transcripts."""
    assert layout.cell_dir("fix-median", "workflow", 2) == "cells/fix-median/workflow/run-2"
    assert layout.cell_file("t", "a", 0, layout.PATCH_NAME) == "cells/t/a/run-0/patch.diff"
    assert layout.cell_file("t", "a", 0, layout.REVIEW_NAME) == "cells/t/a/run-0/review.json"
    assert layout.cell_file("t", "a", 0, "transcripts/index.json") == "cells/t/a/run-0/transcripts/index.json"


def test_the_legacy_flat_names_are_the_label_prefixed_ones():
    """Before cells/, a cell's files were <task>-<arm>-run<i>.patch / .review.json in the sweep root."""
    assert layout.legacy_label("fix median", "wf", 1) == "fix_median-wf-run1"
    assert layout.legacy_patch_path("t", "a", 0) == "t-a-run0.patch"
    assert layout.legacy_review_path("t", "a", 0) == "t-a-run0.review.json"


@pytest.mark.parametrize(
    ("text", "segment"),
    [
        ("ok-1.2_x", "ok-1.2_x"),
        ("a/b", "a_b"),
        ("..", "_.."),
        (".", "_."),
        ("", "_"),
        (".hidden", "_.hidden"),
    ],
)
def test_a_foreign_task_or_arm_name_becomes_one_safe_segment(text, segment):
    """Slashes and other characters become _, and no segment is empty or starts with a dot."""
    assert layout.path_segment(text) == segment


@given(st.text(max_size=300), st.text(max_size=80), st.integers(min_value=0, max_value=10**6))
def test_every_cell_directory_is_four_safe_segments_under_cells(task, arm, run):
    """Whatever the row says, its directory cannot climb out of cells/ or collide with a parent."""
    parts = layout.cell_dir(task, arm, run).split("/")
    assert len(parts) == 4
    assert parts[0] == "cells"
    assert all(part and not part.startswith(".") and len(part) <= 129 for part in parts)
    assert layout.is_cell_artifact_path(layout.cell_file(task, arm, run, "patch.diff"), task, arm, run)


@pytest.mark.parametrize(
    ("path", "ok", "transcript"),
    [
        ("cells/t/a/run-0/patch.diff", True, False),
        ("cells/t/a/run-0/review.json", True, False),
        ("cells/t/a/run-0/transcripts/work-s1.jsonl", True, True),
        ("transcripts/t-a-run0-work-s1.jsonl", True, True),
        ("t-a-run0.review.json", True, False),
        ("t-a-run0.patch", True, False),
        ("cells/t/a/run-1/patch.diff", False, False),
        ("cells/t/b/run-0/transcripts/x.jsonl", False, False),
        ("cells/t/a/run-0/other/x.jsonl", False, False),
        ("cells/t/a/run-0/transcripts/../../x", False, False),
        ("cells/t/a/run-0/.hidden", False, False),
        ("t-b-run0.review.json", False, False),
        ("/etc/passwd", False, False),
        ("", False, False),
        ("elsewhere/x.jsonl", False, False),
        ("transcripts/" + "x" * 201, False, False),
    ],
)
def test_only_the_cells_own_files_are_accepted(path, ok, transcript):
    """A row may name files of its own cell (either layout), never another cell's or a path that climbs."""
    assert layout.is_cell_artifact_path(path, "t", "a", 0) is ok
    assert layout.is_cell_artifact_path(path, "t", "a", 0, transcript=True) is (ok and transcript)


def test_patch_candidates_prefer_the_rows_own_path_then_the_cell_directory_then_legacy():
    """A patch_artifact naming the cell's file comes first; a foreign one is ignored."""
    own, legacy = "cells/t/a/run-0/patch.diff", "t-a-run0.patch"
    assert layout.patch_candidates("t", "a", 0) == (own, legacy)
    assert layout.patch_candidates("t", "a", 0, "t-a-run0.patch") == (legacy, own)
    assert layout.patch_candidates("t", "a", 0, "cells/x/a/run-0/patch.diff") == (own, legacy)
    assert layout.patch_candidates("t", "a", 0, 7) == (own, legacy)
