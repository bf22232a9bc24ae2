"""Workspace rules pinned exactly (kills surviving mutants of wfbench.domain.workspace.rules)."""

from __future__ import annotations

import pytest

from wfbench.domain.workspace.rules import (
    ChangeKind,
    PathChange,
    WorkspaceState,
    check_plan_phase,
    check_read_only_phase,
    is_inside,
    is_plan_document,
    mount_target_problem,
    relative_path_problem,
)


def test_the_kind_of_a_path_that_is_not_in_the_state_is_none():
    """A missing path has no kind (not an error); a present one has its fingerprint's letter."""
    state = WorkspaceState({"a": "f:644:1:x"})
    assert state.kind("missing") is None
    assert state.kind("a") == "f"


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("", "path is empty"),
        ("a\x00b", "path contains NUL or a backslash"),
        ("a\\b", "path contains NUL or a backslash"),
        ("/etc/passwd", "path is absolute"),
        ("a/../b", "path has an empty, '.' or '..' component"),
        ("a" * 241, "path is longer than 240 bytes"),
        ("a" * 240, None),
    ],
)
def test_each_unsafe_relative_path_gets_its_exact_reason(path: str, reason: str | None):
    """The reason is the documented sentence, so messages naming a field stay stable."""
    assert relative_path_problem(path) == reason


def test_a_root_ending_in_any_character_is_matched_at_a_whole_component():
    """Only trailing slashes are stripped from the root, never other trailing characters."""
    assert is_inside("/dataX/f", "/dataX")
    assert is_inside("/dataX/f", "/dataX/")
    assert not is_inside("/data/f", "/dataX")


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        ("/", "mount target must be an absolute path other than /"),
        ("relative", "mount target must be an absolute path other than /"),
        ("/a\x00b", "mount target contains NUL"),
        ("//x", "mount target must be normalised (no '.', '..' or '//')"),
        ("/a/./b", "mount target must be normalised (no '.', '..' or '//')"),
        ("/a/b", None),
    ],
)
def test_each_bad_mount_target_gets_its_exact_reason(target: str, reason: str | None):
    """A double slash right after the root is refused like any empty component."""
    assert mount_target_problem(target) == reason


def _changes(count: int) -> tuple[PathChange, ...]:
    return tuple(PathChange(f"f{i}", ChangeKind.ADDED) for i in range(count))


def test_a_reason_names_up_to_eight_paths_without_an_ellipsis():
    """Exactly eight changed paths are all named and the list is not marked as cut."""
    (reason,) = check_read_only_phase(_changes(8)).reasons
    assert reason.endswith("f7 (added)")
    (cut,) = check_read_only_phase(_changes(9)).reasons
    assert cut.endswith("f7 (added), …")


def test_a_plan_directory_given_with_a_trailing_slash_or_any_last_letter_works():
    """The plan directory's trailing slash is optional; other trailing characters are kept."""
    assert is_plan_document("docs/plans/p.md", "docs/plans/")
    assert is_plan_document("plansX/p.md", "plansX")
    assert not is_plan_document("plans/p.md", "plansX")


def test_a_path_outside_the_plan_directory_is_never_a_plan_even_if_its_tail_looks_like_one():
    """Only paths that start with the plan directory are considered (not a same-length prefix)."""
    assert not is_plan_document("notaplandirp.md")
    assert not is_plan_document("xdocs/plans/p.md")


def test_a_plan_phase_uses_the_plan_directory_it_is_given():
    """check_plan_phase looks for the document under ``plan_dir``, not the default docs/plans."""
    verdict = check_plan_phase((PathChange("notes/p.md", ChangeKind.ADDED),), plan_dir="notes")
    assert verdict.ok
    assert verdict.plan_document == "notes/p.md"
    default = check_plan_phase((PathChange("notes/p.md", ChangeKind.ADDED),))
    assert not default.ok
