"""Workspaces through real git and the real filesystem: snapshots, copies, churn, patches, oracles."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from wfbench.adapters.repo.oracle_files import capture_oracle, erase_oracle, stage_oracle
from wfbench.adapters.repo.snapshot import build_snapshot, resolve_commit
from wfbench.adapters.repo.workspace import (
    GitWorkspaces,
    capture_patch,
    churn,
    private_copy,
    remove_tree,
    workspace_state,
)
from wfbench.domain.errors import InputError, SandboxError
from wfbench.domain.ports import Workspaces
from wfbench.domain.workspace.oracle import OracleFileSpec, OracleLimits
from wfbench.domain.workspace.rules import Churn, PhaseBoundary, Snapshot, phase_verdict

ENV = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/nonexistent",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, env=ENV, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with history, a secret in an old commit, another branch and a tag."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "old_secret.txt").write_text("SECRET-IN-HISTORY\n")
    git(root, "add", ".")
    git(root, "commit", "-qm", "first: with secret")
    git(root, "tag", "v0")
    git(root, "rm", "-q", "old_secret.txt")
    (root / "app.py").write_text("def f():\n    return 1\n")
    (root / "tool.sh").write_text("#!/bin/sh\necho hi\n")
    (root / "tool.sh").chmod(0o755)
    (root / "link").symlink_to("app.py")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "second: the task commit")
    git(root, "checkout", "-qb", "other")
    (root / "branch_only.txt").write_text("ON-ANOTHER-BRANCH\n")
    git(root, "add", ".")
    git(root, "commit", "-qm", "other branch")
    git(root, "checkout", "-q", "main")
    return root


@pytest.fixture
def snapshot(repo: Path, tmp_path: Path) -> Snapshot:
    return build_snapshot(str(repo), "main", str(tmp_path / "snap"))


def test_git_workspaces_implements_the_port() -> None:
    """The adapter satisfies the Workspaces port (checked by mypy, and here at runtime)."""
    port: Workspaces = GitWorkspaces()
    assert callable(port.build_snapshot)


# --- snapshots ----------------------------------------------------------------------------------


def test_a_snapshot_holds_one_parentless_commit_with_the_task_tree(repo: Path, snapshot: Snapshot) -> None:
    """git log --all shows a single root commit whose tree is the task commit's tree."""
    snap = Path(snapshot.path)
    log = git(snap, "log", "--all", "--format=%H parents=%P").splitlines()
    assert log == [f"{snapshot.commit} parents="]
    assert snapshot.tree == git(repo, "rev-parse", "main^{tree}")
    assert git(snap, "rev-parse", "HEAD^{tree}") == snapshot.tree
    assert snapshot.source_commit == git(repo, "rev-parse", "main")
    assert sorted(p.name for p in snap.iterdir()) == [".git", "app.py", "link", "tool.sh"]
    assert os.access(snap / "tool.sh", os.X_OK)
    assert os.readlink(snap / "link") == "app.py"
    assert git(snap, "status", "--porcelain") == ""


def test_a_snapshot_reveals_no_history_refs_tags_or_reflog(repo: Path, snapshot: Snapshot) -> None:
    """The original commits, the other branch, the tag and the old secret are unrecoverable."""
    snap = Path(snapshot.path)
    assert git(snap, "for-each-ref", "--format=%(refname)") == "refs/heads/main"
    assert not (snap / ".git" / "logs").exists()
    assert not (snap / ".git" / "objects" / "info" / "alternates").exists()
    assert git(snap, "fsck", "--unreachable", "--no-reflogs", "--full") == ""
    for rev in (
        git(repo, "rev-parse", "main"),
        git(repo, "rev-parse", "other"),
        git(repo, "rev-parse", "v0"),
    ):
        probe = subprocess.run(
            ["git", "cat-file", "-e", rev], check=False, cwd=snap, env=ENV, capture_output=True
        )
        assert probe.returncode != 0
    everything = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"],
        check=True,
        cwd=snap,
        env=ENV,
        capture_output=True,
    ).stdout
    assert b"SECRET-IN-HISTORY" not in everything
    assert b"ON-ANOTHER-BRANCH" not in everything
    assert b"first: with secret" not in everything


def test_a_snapshot_is_reproducible(repo: Path, tmp_path: Path, snapshot: Snapshot) -> None:
    """The same tree gives the same snapshot commit (fixed identity and date)."""
    again = build_snapshot(str(repo), "main", str(tmp_path / "snap2"))
    assert again.commit == snapshot.commit


def test_a_ref_that_does_not_resolve_fails_as_input_before_anything_is_built(
    repo: Path, tmp_path: Path
) -> None:
    """A bad ref is an InputError naming the ref, and no snapshot directory is created."""
    dest = tmp_path / "never"
    with pytest.raises(InputError, match="no-such-branch") as caught:
        build_snapshot(str(repo), "no-such-branch", str(dest))
    assert caught.value.field == "ref"
    assert "task-7" in caught.value.located(locator="task-7").message
    assert not dest.exists()
    with pytest.raises(InputError, match="not a git repository"):
        resolve_commit(str(tmp_path), "main")
    with pytest.raises(InputError):
        resolve_commit(str(repo), "--output=/tmp/x")


# --- private copies and removal -----------------------------------------------------------------


def test_private_copies_share_nothing_writable(snapshot: Snapshot, tmp_path: Path) -> None:
    """A change, a commit or a branch in one copy is invisible in the template and the other copy."""
    one = Path(private_copy(snapshot, str(tmp_path / "one")))
    two = Path(private_copy(snapshot, str(tmp_path / "two")))
    (one / "app.py").write_text("changed\n")
    git(one, "checkout", "-qb", "agent-branch")
    git(one, "commit", "-qam", "agent commit")
    assert (two / "app.py").read_text() == "def f():\n    return 1\n"
    assert (Path(snapshot.path) / "app.py").read_text() == "def f():\n    return 1\n"
    for other in (two, Path(snapshot.path)):
        assert "agent-branch" not in git(other, "branch", "--list")
    objects = [p for p in (one / ".git" / "objects").rglob("*") if p.is_file()]
    assert all(p.stat().st_nlink == 1 for p in objects)


def test_a_copy_refuses_an_existing_destination(snapshot: Snapshot, tmp_path: Path) -> None:
    """A copy never writes into something that already exists."""
    (tmp_path / "taken").mkdir()
    with pytest.raises(SandboxError, match="already exists"):
        private_copy(snapshot, str(tmp_path / "taken"))


def test_removal_succeeds_even_after_the_agent_made_everything_read_only(
    snapshot: Snapshot, tmp_path: Path
) -> None:
    """chmod -R a-w (and a 000 directory) do not stop the cell's cleanup."""
    ws = Path(private_copy(snapshot, str(tmp_path / "ws")))
    (ws / "locked").mkdir()
    (ws / "locked" / "f").write_text("x")
    (ws / "locked").chmod(0)
    subprocess.run(["chmod", "-R", "a-w", str(ws)], check=True)
    assert remove_tree(str(ws)) is None
    assert not ws.exists()


def test_a_removal_that_cannot_happen_is_reported_not_raised(tmp_path: Path) -> None:
    """A failure comes back as a reason (the row becomes cleanup-failure); a missing tree is fine."""
    assert remove_tree(str(tmp_path / "absent")) is None
    busy = tmp_path / "mnt"
    busy.mkdir()
    reason = remove_tree("/proc/self")
    assert reason is not None
    assert remove_tree(str(busy)) is None


# --- churn and patch ----------------------------------------------------------------------------


def test_churn_counts_changed_and_untracked_files(snapshot: Snapshot, tmp_path: Path) -> None:
    """An edited file and a new untracked file both count; an untouched copy has zero churn."""
    ws = Path(private_copy(snapshot, str(tmp_path / "ws")))
    assert churn(str(ws), snapshot) == Churn(0, 0, 0)
    (ws / "app.py").write_text("def f():\n    return 2\n")
    (ws / "new.py").write_text("a\nb\nc\n")
    (ws / "tool.sh").unlink()
    assert churn(str(ws), snapshot) == Churn(files=3, insertions=4, deletions=3)


def test_churn_and_patch_ignore_the_agents_git_config_and_hooks(snapshot: Snapshot, tmp_path: Path) -> None:
    """A planted fsmonitor, clean filter or hook in the workspace's .git never runs on the host."""
    ws = Path(private_copy(snapshot, str(tmp_path / "ws")))
    pwned = tmp_path / "PWNED"
    with (ws / ".git" / "config").open("a") as cfg:
        cfg.write(
            f'[core]\n\tfsmonitor = touch {pwned}-fsmonitor\n[filter "x"]\n\tclean = touch {pwned}-filter\n'
        )
    (ws / ".gitattributes").write_text("* filter=x\n")
    (ws / "app.py").write_text("changed\n")
    patch = capture_patch(str(ws), snapshot, 100_000)
    churn(str(ws), snapshot)
    assert not list(tmp_path.glob("PWNED*"))
    assert b"+changed" in patch.data


def test_the_patch_is_cut_exactly_at_its_limit(snapshot: Snapshot, tmp_path: Path) -> None:
    """A huge diff yields exactly limit bytes and the truncated flag; a small one is whole."""
    ws = Path(private_copy(snapshot, str(tmp_path / "ws")))
    (ws / "big.txt").write_text("line\n" * 50_000)
    cut = capture_patch(str(ws), snapshot, 300_000)
    assert len(cut.data) == 300_000
    assert cut.truncated
    whole = capture_patch(str(ws), snapshot, 10_000_000)
    assert not whole.truncated
    assert whole.data.startswith(cut.data)
    assert b"+++ b/big.txt" in whole.data


def test_the_patch_includes_binary_and_untracked_files(snapshot: Snapshot, tmp_path: Path) -> None:
    """Binary content is in the patch as a git binary diff."""
    ws = Path(private_copy(snapshot, str(tmp_path / "ws")))
    (ws / "blob.bin").write_bytes(bytes(range(256)))
    patch = capture_patch(str(ws), snapshot, 1_000_000)
    assert b"GIT binary patch" in patch.data
    assert b"blob.bin" in patch.data


def test_churn_can_be_measured_against_a_commit_made_in_the_cell(snapshot: Snapshot, tmp_path: Path) -> None:
    """A base committed inside the workspace (a candidate overlay) is found in its own objects."""
    ws = Path(private_copy(snapshot, str(tmp_path / "ws")))
    (ws / "overlay.md").write_text("skill\n")
    git(ws, "add", "overlay.md")
    git(ws, "commit", "-qm", "overlay")
    head = git(ws, "rev-parse", "HEAD")
    assert churn(str(ws), snapshot, base_commit=head) == Churn(0, 0, 0)
    (ws / "app.py").write_text("x\n")
    assert churn(str(ws), snapshot, base_commit=head).files == 1


# --- phase boundaries ---------------------------------------------------------------------------


def test_a_review_phase_that_touched_a_file_is_caught_on_disk(snapshot: Snapshot, tmp_path: Path) -> None:
    """Before/after states of a real tree: a same-size edit and a mode change are both seen."""
    ws = Path(private_copy(snapshot, str(tmp_path / "ws")))
    before = workspace_state(str(ws))
    assert phase_verdict(before, workspace_state(str(ws)), PhaseBoundary.READ_ONLY).ok
    (ws / "app.py").write_text("def f():\n    return 9\n")
    (ws / "tool.sh").chmod(0o644)
    verdict = phase_verdict(before, workspace_state(str(ws)), PhaseBoundary.READ_ONLY)
    assert not verdict.ok
    assert "app.py (modified)" in verdict.reasons[0]
    assert "tool.sh (modified)" in verdict.reasons[0]


def test_a_plan_phase_may_add_only_its_plan_document(snapshot: Snapshot, tmp_path: Path) -> None:
    """A new docs/plans/x.md passes; also editing source is refused with the path named."""
    ws = Path(private_copy(snapshot, str(tmp_path / "ws")))
    before = workspace_state(str(ws))
    (ws / "docs" / "plans").mkdir(parents=True)
    (ws / "docs" / "plans" / "plan.md").write_text("# plan\n")
    ok = phase_verdict(before, workspace_state(str(ws)), PhaseBoundary.PLAN_DOCUMENT)
    assert ok.ok
    assert ok.plan_document == "docs/plans/plan.md"
    (ws / "app.py").write_text("sneaky\n")
    bad = phase_verdict(before, workspace_state(str(ws)), PhaseBoundary.PLAN_DOCUMENT)
    assert bad.reasons == ("phase changed unauthorized workspace path(s): app.py (modified)",)


def test_a_symlinked_plan_document_is_refused(snapshot: Snapshot, tmp_path: Path) -> None:
    """The plan must be a regular file, not a link to something else."""
    ws = Path(private_copy(snapshot, str(tmp_path / "ws")))
    before = workspace_state(str(ws))
    (ws / "docs" / "plans").mkdir(parents=True)
    (ws / "docs" / "plans" / "plan.md").symlink_to("/etc/passwd")
    verdict = phase_verdict(before, workspace_state(str(ws)), PhaseBoundary.PLAN_DOCUMENT)
    assert any("not a regular file" in r for r in verdict.reasons)


# --- hidden oracle ------------------------------------------------------------------------------


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    (root / "oracles").mkdir(parents=True)
    (root / "oracles" / "test_hidden.py").write_text("def test_x():\n    assert True\n")
    (root / "oracles" / "conf.py").write_text("# conf\n")
    return root


def specs(*pairs: tuple[str, str]) -> list[OracleFileSpec]:
    return [OracleFileSpec(source, target) for source, target in pairs]


def test_oracle_files_are_captured_in_memory_with_digests(corpus: Path) -> None:
    """Bytes and sha256 are held, sorted by target; changing the corpus later changes nothing."""
    bundle = capture_oracle(
        str(corpus), specs(("oracles/test_hidden.py", "t/test_hidden.py"), ("oracles/conf.py", "conf.py"))
    )
    assert [f.target for f in bundle.files] == ["conf.py", "t/test_hidden.py"]
    assert bundle.files[1].data == b"def test_x():\n    assert True\n"
    digest = bundle.digest("pytest")
    (corpus / "oracles" / "test_hidden.py").write_text("changed")
    assert bundle.digest("pytest") == digest
    assert len(bundle.manifest_digest) == 64


@pytest.mark.parametrize(
    ("setup", "source", "message"),
    [
        ("none", "oracles/missing.py", "oracles/missing.py: does not exist"),
        ("symlink", "oracles/link.py", "oracles/link.py: is a symlink"),
        (
            "outside",
            "../outside.py",
            "../outside.py: oracle source: path has an empty, '.' or '..' component",
        ),
        ("dirlink", "escape/secret.py", "escape/secret.py: has a symlinked parent (escape)"),
        ("large", "oracles/big.py", "oracles/big.py: is 600000 bytes, over the per-file limit of 524288"),
        ("dir", "oracles", "oracles: is not a regular file"),
    ],
)
def test_a_bad_oracle_file_is_refused_naming_the_task_and_path(
    corpus: Path, tmp_path: Path, setup: str, source: str, message: str
) -> None:
    """Missing, symlinked, outside-corpus, over-limit and non-file sources are InputErrors."""
    (tmp_path / "outside.py").write_text("secret")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "secret.py").write_text("secret")
    if setup == "symlink":
        (corpus / "oracles" / "link.py").symlink_to(tmp_path / "outside.py")
    if setup == "dirlink":
        (corpus / "escape").symlink_to(tmp_path / "elsewhere")
    if setup == "large":
        (corpus / "oracles" / "big.py").write_bytes(b"x" * 600_000)
    with pytest.raises(InputError) as caught:
        capture_oracle(str(corpus), specs((source, "t.py")), task_id="fix-median", source="tasks.yaml")
    assert caught.value.message == f"tasks.yaml: fix-median: oracle.files: {message}"


def test_too_many_or_too_large_oracle_files_are_refused(corpus: Path) -> None:
    """The count limit and the total byte limit name the task."""
    nine = specs(*[("oracles/conf.py", f"t{i}.py") for i in range(9)])
    with pytest.raises(InputError, match="fix-median: oracle.files: oracle declares 9 files"):
        capture_oracle(str(corpus), nine, task_id="fix-median")
    limits = OracleLimits(max_total_bytes=36)
    two = specs(("oracles/test_hidden.py", "a.py"), ("oracles/conf.py", "b.py"))
    with pytest.raises(InputError, match="oracles/conf.py: oracle files exceed the total limit of 36 bytes"):
        capture_oracle(str(corpus), two, limits, task_id="fix-median")


def test_an_oracle_is_staged_read_only_and_erased_intact(corpus: Path, tmp_path: Path) -> None:
    """The stage is 0500/0400 with exactly the captured bytes; erasing removes it and reports intact."""
    bundle = capture_oracle(str(corpus), specs(("oracles/test_hidden.py", "t/test_hidden.py")))
    stage = Path(stage_oracle(bundle, str(tmp_path / "stage")))
    assert (stage / "t" / "test_hidden.py").read_bytes() == bundle.files[0].data
    assert oct((stage / "t" / "test_hidden.py").stat().st_mode & 0o777) == "0o400"
    assert oct(stage.stat().st_mode & 0o777) == "0o500"
    assert erase_oracle(bundle, str(stage)) is True
    assert not stage.exists()


def test_a_tampered_stage_is_reported(corpus: Path, tmp_path: Path) -> None:
    """If the oracle's files changed while staged, erasing says so (and still removes them)."""
    bundle = capture_oracle(str(corpus), specs(("oracles/conf.py", "conf.py")))
    stage = Path(stage_oracle(bundle, str(tmp_path / "stage")))
    stage.chmod(0o700)
    (stage / "conf.py").chmod(0o600)
    (stage / "conf.py").write_text("# tampered\n")
    assert erase_oracle(bundle, str(stage)) is False
    assert not stage.exists()
