"""Pure rules of workspaces: path rules, state diffs, phase boundaries, shortstat, oracle declarations."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from wfbench.domain.workspace.oracle import (
    OracleBundle,
    OracleFile,
    OracleFileSpec,
    OracleLimits,
    declaration_problems,
)
from wfbench.domain.workspace.rules import (
    ChangeKind,
    Churn,
    PathChange,
    PhaseBoundary,
    WorkspaceState,
    check_plan_phase,
    diff_states,
    is_inside,
    is_plan_document,
    mount_target_problem,
    parse_shortstat,
    phase_verdict,
    relative_path_problem,
)

# --- path rules ---------------------------------------------------------------------------------


def test_simple_relative_paths_are_accepted() -> None:
    """Nested relative paths with ordinary names pass."""
    assert relative_path_problem("a/b/c.py") is None
    assert relative_path_problem(".claude/skills/fix") is None


def test_unsafe_relative_paths_are_refused_with_a_reason() -> None:
    """Empty, absolute, traversal, dot, double-slash, NUL, backslash and over-long paths are refused."""
    for bad in ("", "/etc/passwd", "../x", "a/../b", "./a", "a//b", "a/", "a\x00b", "a\\b", "x" * 241):
        assert relative_path_problem(bad) is not None, bad
    assert relative_path_problem("x" * 240) is None


def test_mount_targets_must_be_normalised_absolute_paths_other_than_root() -> None:
    """A target is absolute, not /, with no '.', '..' or '//'."""
    assert mount_target_problem("/opt/dep") is None
    for bad in ("/", "opt", "/opt/../etc", "/opt//x", "/opt/./x", "/a/\x00"):
        assert mount_target_problem(bad) is not None, bad


def test_is_inside_matches_whole_components_only() -> None:
    """/workspace2 is not inside /workspace; the root contains everything."""
    assert is_inside("/workspace/a", "/workspace")
    assert is_inside("/workspace", "/workspace/")
    assert not is_inside("/workspace2/a", "/workspace")
    assert is_inside("/anything", "/")


# --- state diffs and phase boundaries -----------------------------------------------------------


def test_diff_states_names_added_modified_and_deleted_paths_in_order() -> None:
    """Each changed path appears once with its kind, sorted by path."""
    before = {"a": "f:1", "b": "f:2", "c": "d:755"}
    after = {"a": "f:1", "b": "f:3", "d": "f:4"}
    assert diff_states(before, after) == (
        PathChange("b", ChangeKind.MODIFIED),
        PathChange("c", ChangeKind.DELETED),
        PathChange("d", ChangeKind.ADDED),
    )


@given(st.dictionaries(st.text(min_size=1, max_size=5), st.text(max_size=3), max_size=8))
def test_a_state_never_differs_from_itself(entries: dict[str, str]) -> None:
    """No change is reported between identical states."""
    assert diff_states(entries, dict(entries)) == ()


def test_a_review_phase_that_changed_anything_is_refused() -> None:
    """Any change at all breaks a read-only boundary; no change passes."""
    before = WorkspaceState({"a": "f:1"})
    assert phase_verdict(before, before, PhaseBoundary.READ_ONLY).ok
    verdict = phase_verdict(before, WorkspaceState({"a": "f:1", "b": "f:2"}), PhaseBoundary.READ_ONLY)
    assert verdict.reasons == ("phase changed the read-only workspace: b (added)",)


def test_long_reasons_name_eight_paths_then_an_ellipsis() -> None:
    """A reason stays readable when many paths changed."""
    after = WorkspaceState({f"f{i}": "f:1" for i in range(10)})
    (reason,) = phase_verdict(WorkspaceState(), after, PhaseBoundary.READ_ONLY).reasons
    assert reason.count("(added)") == 8
    assert reason.endswith(", …")


def test_an_incomplete_state_never_passes_a_boundary() -> None:
    """A workspace too large to fingerprint cannot be proven unchanged."""
    state = WorkspaceState({}, problem="workspace exceeds the entry or byte limit")
    verdict = phase_verdict(WorkspaceState(), state, PhaseBoundary.READ_ONLY)
    assert verdict.reasons == ("workspace state incomplete: workspace exceeds the entry or byte limit",)


def test_an_implementation_phase_may_change_anything() -> None:
    """The unrestricted boundary passes whatever changed (the skill fingerprint is checked elsewhere)."""
    assert phase_verdict(WorkspaceState(), WorkspaceState({"x": "f:1"}), PhaseBoundary.UNRESTRICTED).ok
    incomplete = WorkspaceState(problem="too big")
    assert phase_verdict(WorkspaceState(), incomplete, PhaseBoundary.UNRESTRICTED).ok


def test_a_plan_phase_passes_with_one_new_plan_and_its_new_directories() -> None:
    """docs/ and docs/plans/ created along with docs/plans/p.md are allowed."""
    after = WorkspaceState({"docs": "d:755", "docs/plans": "d:755", "docs/plans/p.md": "f:644:1:x"})
    verdict = phase_verdict(WorkspaceState(), after, PhaseBoundary.PLAN_DOCUMENT)
    assert verdict.ok
    assert verdict.plan_document == "docs/plans/p.md"


def test_a_plan_phase_that_changed_an_existing_plan_passes() -> None:
    """Rewriting the one plan document counts as producing it."""
    before = WorkspaceState({"docs/plans/p.md": "f:644:1:a"})
    after = WorkspaceState({"docs/plans/p.md": "f:644:1:b"})
    assert phase_verdict(before, after, PhaseBoundary.PLAN_DOCUMENT).ok


def test_a_plan_phase_without_exactly_one_plan_is_refused() -> None:
    """None, or two plans, or a plan nested below docs/plans, are not one plan document."""
    none = check_plan_phase(())
    assert none.reasons == ("plan phase must produce exactly one plan document under docs/plans/, found no",)
    two = (PathChange("docs/plans/a.md", ChangeKind.ADDED), PathChange("docs/plans/b.html", ChangeKind.ADDED))
    assert "found 2" in check_plan_phase(two).reasons[0]
    nested = (PathChange("docs/plans/x/a.md", ChangeKind.ADDED),)
    assert not check_plan_phase(nested).ok


def test_a_plan_phase_that_also_touched_source_or_deleted_a_file_is_refused() -> None:
    """Anything besides the plan (and its new parents) is named in the reason."""
    changes = (
        PathChange("app.py", ChangeKind.MODIFIED),
        PathChange("docs/plans/p.md", ChangeKind.ADDED),
        PathChange("old.txt", ChangeKind.DELETED),
    )
    verdict = check_plan_phase(changes)
    assert verdict.reasons == (
        "phase changed unauthorized workspace path(s): app.py (modified), old.txt (deleted)",
    )


def test_an_existing_parent_directory_that_changed_is_not_excused() -> None:
    """Only *new* parent directories of the plan are allowed, not a modified one (mode change)."""
    changes = (PathChange("docs", ChangeKind.MODIFIED), PathChange("docs/plans/p.md", ChangeKind.ADDED))
    assert not check_plan_phase(changes).ok


def test_a_plan_document_that_is_a_symlink_is_refused() -> None:
    """The plan must be a regular file in the after-state."""
    after = WorkspaceState({"docs/plans/p.md": "l:/etc/passwd"})
    verdict = phase_verdict(WorkspaceState(), after, PhaseBoundary.PLAN_DOCUMENT)
    assert verdict.reasons == ("plan document docs/plans/p.md is not a regular file",)


def test_plan_documents_are_markdown_or_html_directly_under_the_plan_dir() -> None:
    """Suffix and depth decide."""
    assert is_plan_document("docs/plans/a.md")
    assert is_plan_document("docs/plans/a.html")
    assert not is_plan_document("docs/plans/a.txt")
    assert not is_plan_document("docs/plans/")
    assert not is_plan_document("docs/plans/x/a.md")
    assert not is_plan_document("other/docs/plans/a.md")


# --- shortstat ----------------------------------------------------------------------------------


def test_shortstat_is_parsed_and_absent_counts_are_zero() -> None:
    """git omits zero counts; singular and plural both parse."""
    assert parse_shortstat(" 3 files changed, 4 insertions(+), 1 deletion(-)\n") == Churn(3, 4, 1)
    assert parse_shortstat(" 1 file changed, 2 deletions(-)") == Churn(1, 0, 2)
    assert parse_shortstat("") == Churn(0, 0, 0)


# --- oracle declarations and digests ------------------------------------------------------------


def test_a_valid_oracle_declaration_has_no_problems() -> None:
    """Distinct simple paths within the count limit pass."""
    specs = [OracleFileSpec("oracles/a.py", "a.py"), OracleFileSpec("oracles/b.py", "t/b.py")]
    assert declaration_problems(specs, OracleLimits()) == ()


def test_oracle_declaration_rules_each_name_the_path() -> None:
    """Empty, too many, unsafe paths, .git targets and duplicates are each reported."""
    assert declaration_problems([], OracleLimits()) == (("", "oracle declares no files"),)
    many = [OracleFileSpec(f"s{i}", f"t{i}") for i in range(3)]
    assert declaration_problems(many, OracleLimits(max_files=2))[0][1].startswith("oracle declares 3 files")
    assert declaration_problems([OracleFileSpec("../x", "x")], OracleLimits())[0][0] == "../x"
    assert declaration_problems([OracleFileSpec("x", ".git/hooks/pre-commit")], OracleLimits()) == (
        (".git/hooks/pre-commit", "oracle target may not be under .git"),
    )
    dup = [OracleFileSpec("x", "a"), OracleFileSpec("x", "a")]
    assert [reason for _, reason in declaration_problems(dup, OracleLimits())] == [
        "duplicate oracle source",
        "duplicate oracle target",
    ]


def test_oracle_digests_change_with_any_byte_command_or_target() -> None:
    """The bundle digest covers command, targets and payloads; the manifest covers targets and hashes."""
    base = OracleBundle((OracleFile.of("a.py", b"x"),))
    assert base.digest("cmd") != base.digest("cmd2")
    assert base.digest("cmd") != OracleBundle((OracleFile.of("a.py", b"y"),)).digest("cmd")
    assert base.digest("cmd") != OracleBundle((OracleFile.of("b.py", b"x"),)).digest("cmd")
    assert base.manifest_digest != OracleBundle((OracleFile.of("a.py", b"y"),)).manifest_digest
    assert base.total_bytes == 1
    assert base.files[0].size == 1


def test_digest_frames_make_boundaries_unambiguous() -> None:
    """Moving a byte from one field to the next changes the digest (length-prefixed frames)."""
    one = OracleBundle((OracleFile.of("ab", b"c"),))
    two = OracleBundle((OracleFile.of("a", b"bc"),))
    assert one.digest("") != two.digest("")
