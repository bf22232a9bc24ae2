"""Scratch space on any Linux (issue 26): the demo with ``TMPDIR`` on a tmpfs and the corpus on disk.

Fedora, Arch and Debian 13 mount ``/tmp`` as a tmpfs, and docs/performance.md advises a tmpfs
scratch directory. Every cell used to be an ``infra-error``: git wrote a snapshot's temporary
pack in the *source* repository and renamed it across filesystems (EXDEV). The tmpfs here is
mounted by the test in its own directory when it runs as root, else ``/dev/shm``; either way the
test first checks that the scratch directory and the corpus really are on different filesystems.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.demo_run import bwrap_or_skip, rows, wfbench
from wfbench.adapters.repo.snapshot import build_snapshot


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A directory on a tmpfs: one mounted for this test (as root), else a private one in /dev/shm."""
    mounted = tmp_path / "tmpfs"
    mounted.mkdir()
    if (
        os.geteuid() == 0
        and subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=512m", "wfb", str(mounted)], check=False
        ).returncode
        == 0
    ):
        try:
            yield mounted
        finally:
            subprocess.run(["umount", "-l", str(mounted)], check=False)
        return
    if not os.path.isdir("/dev/shm"):
        pytest.skip("neither mount(8) as root nor /dev/shm is available for a tmpfs")
    private = Path(tempfile.mkdtemp(dir="/dev/shm"))
    try:
        yield private
    finally:
        shutil.rmtree(private, ignore_errors=True)


def on_other_filesystem(one: Path, other: Path) -> bool:
    return os.stat(one).st_dev != os.stat(other).st_dev


def test_a_snapshot_builds_into_another_filesystem(tmp_path: Path, tmpfs: Path) -> None:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "a.txt").write_text("hello\n")
    subprocess.run(["git", "-C", str(repo), "add", "a.txt"], check=True)
    ident = ["-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "-C", str(repo), *ident, "commit", "-qm", "one"], check=True)
    assert on_other_filesystem(repo, tmpfs)
    snapshot = build_snapshot(str(repo), "HEAD", str(tmpfs / "snap"))
    assert (tmpfs / "snap" / "a.txt").read_text() == "hello\n"
    assert not (tmpfs / "snap" / ".git" / "objects" / "info" / "alternates").exists()
    fsck = subprocess.run(
        ["git", "-C", snapshot.path, "fsck", "--strict"], capture_output=True, text=True, check=False
    )
    assert fsck.returncode == 0, fsck.stderr


def _outcomes(out: Path) -> dict[tuple[str, str], tuple[object, ...]]:
    """Each first-run cell's outcome, by (task, arm)."""
    return {(r["task"], r["arm"]): (r["resolved"], r.get("error_kind")) for r in rows(out) if r["run"] == 0}


def test_the_demo_runs_with_tmpdir_on_a_tmpfs_and_the_corpus_and_output_on_disk(
    tmp_path: Path, tmpfs: Path, demo_corpus: Path, demo_out, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One run of every task and arm (every cell snapshots the corpus's repository): no infra-error,
    each cell ends as in the session's demo sweep (TMPDIR on the usual filesystem)."""
    bwrap_or_skip()
    scratch = tmpfs / "tmp"
    scratch.mkdir()
    assert on_other_filesystem(demo_corpus.parent, scratch)
    assert on_other_filesystem(tmp_path, scratch)
    monkeypatch.setenv("TMPDIR", str(scratch))
    out = tmp_path / "out"
    done = wfbench("run", str(demo_corpus), "--out", str(out), "--runs", "1", "--workers", "2", timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    written = rows(out)
    assert [r for r in written if r.get("error_kind") == "infra-error"] == []
    assert len(written) == len(_outcomes(out))
    assert _outcomes(out) == _outcomes(demo_out[0])  # every task and arm, each as in the demo
