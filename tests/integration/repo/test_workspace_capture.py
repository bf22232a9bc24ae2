"""Churn and patch over a workspace an agent prepared to hide from, stall or steer the harness's git.

Real git, real files (issue 10 §4, §5): ignore rules are not read, gitlinks and nested
repositories are never followed, FIFOs and sparse or giant files are listed instead of read.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.integration.repo.test_workspace import ENV, git
from wfbench.adapters.repo.capture import MAX_DIFF_FILE_BYTES, CaptureError
from wfbench.adapters.repo.snapshot import build_snapshot
from wfbench.adapters.repo.workspace import capture_patch, churn, private_copy
from wfbench.domain.workspace.rules import Churn, Snapshot


@pytest.fixture
def snapshot(tmp_path: Path) -> Snapshot:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "app.py").write_text("def f():\n    return 1\n")
    (root / "assets").mkdir()
    (root / "assets" / "big.bin").write_bytes(b"\0" * (MAX_DIFF_FILE_BYTES + 1))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "task")
    return build_snapshot(str(root), "main", str(tmp_path / "snap"))


@pytest.fixture
def ws(snapshot: Snapshot, tmp_path: Path) -> Path:
    return Path(private_copy(snapshot, str(tmp_path / "ws")))


def _paths(patch: bytes) -> set[str]:
    return {
        line.split(" b/", 1)[1]
        for line in patch.decode("utf-8", "replace").splitlines()
        if line.startswith("diff --git ")
    }


def test_ignored_files_are_in_the_patch_and_in_churn(snapshot: Snapshot, ws: Path) -> None:
    """A pytest.py hidden by a self-ignoring .gitignore, info/exclude and core.excludesFile: all captured."""
    (ws / "pytest.py").write_text("import sys; sys.exit(0)\n")
    (ws / ".gitignore").write_text("pytest.py\n.gitignore\n")
    (ws / "excluded.txt").write_text("x\n")
    (ws / ".git" / "info").mkdir(exist_ok=True)
    (ws / ".git" / "info" / "exclude").write_text("excluded.txt\n")
    (ws / "global.txt").write_text("g\n")
    (ws / ".git" / "config").open("a").write(f"[core]\n\texcludesFile = {ws}/.git/global-ignore\n")
    (ws / ".git" / "global-ignore").write_text("global.txt\n")
    patch = capture_patch(str(ws), snapshot, 1_000_000)
    assert {"pytest.py", ".gitignore", "excluded.txt", "global.txt"} <= _paths(patch.data)
    assert churn(str(ws), snapshot).files == 4


def test_the_patch_carries_the_churn_of_the_same_capture_and_starts_at_its_first_diff(
    snapshot: Snapshot, ws: Path
) -> None:
    """One git diff gives both: the shortstat line is split off, the patch is what git apply reads."""
    (ws / "app.py").write_text("def f():\n    return 2\n\n\ndef g():\n    return 3\n")
    (ws / "new.txt").write_text("a\nb\n")
    (ws / "blob.bin").write_bytes(b"\0\1\2")
    patch = capture_patch(str(ws), snapshot, 1_000_000)
    assert patch.churn == churn(str(ws), snapshot)
    assert patch.churn is not None
    assert patch.churn.files == 3
    assert patch.data.startswith(b"diff --git a/app.py b/app.py\n")
    cut = capture_patch(str(ws), snapshot, 40)
    assert (cut.truncated, len(cut.data), cut.churn) == (True, 40, patch.churn)
    (ws / "app.py").write_text("def f():\n    return 1\n")
    for path in ("new.txt", "blob.bin"):
        (ws / path).unlink()
    unchanged = capture_patch(str(ws), snapshot, 1_000_000)
    assert (unchanged.data, unchanged.truncated, unchanged.churn) == (b"", False, Churn(0, 0, 0))


def test_the_control_git_add_hides_the_ignored_file(ws: Path) -> None:
    """Positive control: plain `git add --all` in the workspace would have left pytest.py out."""
    (ws / "pytest.py").write_text("import sys; sys.exit(0)\n")
    (ws / ".gitignore").write_text("pytest.py\n.gitignore\n")
    git(ws, "add", "--all")
    assert "pytest.py" not in git(ws, "diff", "--cached", "--name-only")


def _host_repo(tmp_path: Path) -> tuple[Path, str]:
    host = tmp_path / "host-repo"
    host.mkdir()
    git(host, "init", "-q", "-b", "main")
    (host / "secret.txt").write_text("HOST-SECRET\n")
    git(host, "add", "-A")
    git(host, "commit", "-qm", "host")
    return host, git(host, "rev-parse", "HEAD")


def test_a_gitlink_to_a_host_repository_is_never_followed(
    snapshot: Snapshot, ws: Path, tmp_path: Path
) -> None:
    """`sub/.git` saying `gitdir: <host repo>/.git`: the host HEAD is in no patch; the rest of sub is."""
    host, head = _host_repo(tmp_path)
    (ws / "sub").mkdir()
    (ws / "sub" / ".git").write_text(f"gitdir: {host}/.git\n")
    (ws / "sub" / "mine.txt").write_text("mine\n")
    (ws / "nested").mkdir()
    git(ws / "nested", "init", "-q")
    patch = capture_patch(str(ws), snapshot, 1_000_000)
    assert head.encode() not in patch.data
    assert b"Subproject commit" not in patch.data
    assert "sub/mine.txt" in _paths(patch.data)
    skipped = {s.path: s.reason for s in patch.skipped}
    assert "nested repository" in skipped["sub/.git"]
    assert "nested repository" in skipped["nested/.git"]
    # positive control: git's own add follows the gitlink and records the host's HEAD
    git(ws, "add", "sub")
    assert head in git(ws, "ls-files", "-s", "sub")


def test_a_fifo_in_a_gitlinked_repository_or_the_tree_does_not_stall_the_harness(
    snapshot: Snapshot, ws: Path, tmp_path: Path
) -> None:
    """A gitdir whose packed-refs is a FIFO, and a FIFO in the tree: listed, captured at once."""
    fake = tmp_path / "fake-gitdir"
    (fake / "refs").mkdir(parents=True)
    (fake / "objects").mkdir()
    (fake / "HEAD").write_text("ref: refs/heads/main\n")
    os.mkfifo(fake / "packed-refs")
    (ws / "sub").mkdir()
    (ws / "sub" / ".git").write_text(f"gitdir: {fake}\n")
    os.mkfifo(ws / "pipe")
    started = time.monotonic()
    patch = capture_patch(str(ws), snapshot, 1_000_000)
    churn(str(ws), snapshot)
    assert time.monotonic() - started < 60
    reasons = {s.path: s.reason for s in patch.skipped}
    assert "FIFO" in reasons["pipe"]
    assert "sub/.git" in reasons


def test_a_sparse_giant_file_is_listed_by_name_and_size_not_read(snapshot: Snapshot, ws: Path) -> None:
    """A 3 GB sparse file (0 bytes on disk): named with its size; the capture stays small and quick."""
    with open(ws / "sparse.bin", "wb") as handle:
        handle.truncate(3 * 1024**3)
    (ws / "small.txt").write_text("kept\n")
    patch = capture_patch(str(ws), snapshot, 1_000_000)
    sizes = {s.path: s.size for s in patch.skipped}
    assert sizes["sparse.bin"] == 3 * 1024**3
    assert "small.txt" in _paths(patch.data)
    assert "sparse.bin" not in _paths(patch.data)


def test_an_unchanged_over_limit_base_file_is_neither_deleted_nor_changed(
    snapshot: Snapshot, ws: Path
) -> None:
    """The base's own big file keeps its base entry: listed, but the patch shows no change to it."""
    patch = capture_patch(str(ws), snapshot, 1_000_000)
    assert patch.data == b""
    assert [s.path for s in patch.skipped] == ["assets/big.bin"]
    assert churn(str(ws), snapshot).files == 0


def test_an_own_object_store_with_alternates_is_refused_as_the_agents_doing(
    snapshot: Snapshot, ws: Path, tmp_path: Path
) -> None:
    """For a base made in the cell, alternates or a FIFO in .git/objects: CaptureError, never a stall."""
    git(ws, "commit", "-q", "--allow-empty", "-m", "overlay")
    base = git(ws, "rev-parse", "HEAD")
    host, _ = _host_repo(tmp_path)
    (ws / ".git" / "objects" / "info" / "alternates").write_text(f"{host}/.git/objects\n")
    with pytest.raises(CaptureError, match="alternates"):
        churn(str(ws), snapshot, base_commit=base)
    (ws / ".git" / "objects" / "info" / "alternates").unlink()
    os.mkfifo(ws / ".git" / "objects" / "info" / "packs")
    with pytest.raises(CaptureError, match="unexpected entry"):
        capture_patch(str(ws), snapshot, 1000, base_commit=base)
    (ws / ".git" / "objects" / "info" / "packs").unlink()
    assert churn(str(ws), snapshot, base_commit=base).files == 0  # the control: a clean store works


def test_odd_file_names_are_captured(snapshot: Snapshot, ws: Path) -> None:
    """Names with newlines, quotes, backslashes, ESC and non-UTF-8 bytes; a .GIT directory is listed."""
    names = ["new\nline.txt", 'quo"te.txt', "back\\slash.txt", "esc\x1b[31m.txt"]
    for name in names:
        (ws / name).write_text("x\n")
    with open(os.path.join(os.fsencode(ws), b"latin\xe9.txt"), "wb") as handle:
        handle.write(b"x\n")
    (ws / ".GIT").mkdir()
    (ws / ".GIT" / "x").write_text("x\n")
    patch = capture_patch(str(ws), snapshot, 1_000_000)
    assert churn(str(ws), snapshot).files == 5
    assert ".GIT" in {s.path for s in patch.skipped}


def test_a_capture_of_a_workspace_with_a_blocking_fifo_finishes(snapshot: Snapshot, ws: Path) -> None:
    """Control for the timing claim: the capture runs in a thread and returns while a FIFO waits."""
    os.mkfifo(ws / "blocking")
    done = threading.Event()
    thread = threading.Thread(
        target=lambda: (capture_patch(str(ws), snapshot, 1000), done.set()), daemon=True
    )
    thread.start()
    assert done.wait(60)
    assert subprocess.run(["test", "-p", str(ws / "blocking")], env=ENV, check=False).returncode == 0
