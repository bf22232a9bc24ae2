"""A task snapshot shipped to another machine: a git bundle out, the same snapshot rebuilt in.

A distributed sweep builds each snapshot once, on the driver (:mod:`wfbench.adapters.repo.snapshot`),
and ships it to the nodes as a git bundle of its single commit (``docs/distributed.md``). A node
rebuilds it once per commit into its own cache and checks that it holds exactly the commit and
tree the driver bound: the snapshot commit is deterministic (fixed identity and date), so the
rebuilt snapshot is the same snapshot, and every row records the same digests as a local run.

Bundling only packs the objects of the snapshot's one commit, so what the driver sends is what
the agent could see in its workspace anyway: no history, no oracle bytes.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Callable, Iterator

import attrs

from wfbench.adapters.repo.snapshot import SNAPSHOT_BRANCH, checked_git
from wfbench.adapters.sandbox.common import force_remove
from wfbench.domain.errors import SandboxError
from wfbench.domain.workspace.rules import Snapshot


def bundle_snapshot(snapshot: Snapshot) -> bytes:
    """The git bundle of ``snapshot``'s branch (its one commit and that commit's objects).

    Raises:
        SandboxError: git could not write the bundle.
    """
    with tempfile.TemporaryDirectory(prefix="wfbench-bundle-") as scratch:
        path = os.path.join(os.path.abspath(scratch), "snapshot.bundle")
        checked_git(
            ["bundle", "create", "--quiet", path, SNAPSHOT_BRANCH], "bundling the snapshot", cwd=snapshot.path
        )
        with open(path, "rb") as handle:
            return handle.read()


def materialize_snapshot(fetch: Callable[[], bytes], like: Snapshot, cache_dir: str) -> Snapshot:
    """``like`` rebuilt under ``cache_dir`` from the bundle ``fetch()`` returns (called only to build).

    A commit is built once per cache: later calls reuse it without fetching the bundle again.

    Concurrent callers on one machine (several cells of a node) build it once: a file lock per
    commit serializes them, and the snapshot is published by a rename only when complete.

    Raises:
        SandboxError: the bundle does not hold ``like.commit`` with ``like.tree``, or git failed.
    """
    cache_dir = os.path.abspath(cache_dir)
    os.makedirs(cache_dir, mode=0o700, exist_ok=True)
    dest = os.path.join(cache_dir, like.commit)
    ready = f"{dest}.ready"  # beside the snapshot: a workspace copy must hold nothing a local one does not
    with _locked(f"{dest}.lock"):
        if not os.path.isfile(ready):
            force_remove(dest)
            _rebuild(fetch(), like, cache_dir, dest)
            with open(ready, "w", encoding="utf-8") as handle:
                handle.write(like.commit + "\n")
    return attrs.evolve(like, path=dest)


def _rebuild(bundle: bytes, like: Snapshot, cache_dir: str, dest: str) -> None:
    building = tempfile.mkdtemp(prefix=f".{like.commit[:12]}-", dir=cache_dir)
    try:
        fmt = "sha256" if len(like.commit) == 64 else "sha1"
        repo = os.path.join(building, "repo")
        checked_git(["init", "--quiet", "--template=", f"--object-format={fmt}", repo], "git init")
        checked_git(["config", "core.logAllRefUpdates", "false"], "git config", cwd=repo)
        path = os.path.join(building, "snapshot.bundle")
        with open(path, "wb") as handle:
            handle.write(bundle)
        checked_git(["bundle", "unbundle", path], "unbundling the snapshot", cwd=repo)
        os.unlink(path)
        checked_git(["update-ref", SNAPSHOT_BRANCH, like.commit], "setting the branch", cwd=repo)
        checked_git(["symbolic-ref", "HEAD", SNAPSHOT_BRANCH], "setting HEAD", cwd=repo)
        checked_git(["read-tree", "--reset", "-u", like.commit], "checking out the snapshot", cwd=repo)
        tree = checked_git(["rev-parse", "--verify", "HEAD^{tree}"], "reading the tree", cwd=repo)
        parents = checked_git(["rev-list", "--parents", "-n", "1", "HEAD"], "reading the commit", cwd=repo)
        if tree != like.tree or parents != like.commit:
            raise SandboxError(
                f"the shipped snapshot holds {parents[:40]!r} with tree {tree[:12]} "
                f"(the driver bound {like.commit[:12]} with tree {like.tree[:12]})"
            )
        os.rename(repo, dest)
    finally:
        force_remove(building)


@contextlib.contextmanager
def _locked(path: str) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
