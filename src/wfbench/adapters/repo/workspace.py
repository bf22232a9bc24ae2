"""A cell's private workspace: copy a snapshot, measure what changed, capture the patch, remove it.

Churn and patch never run git with anything the agent controls: git gets a fresh, private, bare
``GIT_DIR`` (our config, no hooks, **no work tree**), an index written from a Python walk of the
workspace (:mod:`wfbench.adapters.repo.capture`: ignore rules not read, nested repositories
and gitlinks never followed, over-limit and special files listed instead of read), and reads
objects from the snapshot template first and, only for a base commit made in the cell (a
candidate overlay), the workspace's own object store once it passed :func:`_own_store`. The
workspace's ``.git/config``, hooks, ``.gitattributes`` and attribute-bound drivers are never
consulted, so a planted ``core.fsmonitor`` or filter cannot run on the host
(reference: sessions_sandbox.md §5.3-5.4).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile
from collections.abc import Iterator, Sequence

from wfbench.adapters.repo import capture, oracle_files
from wfbench.adapters.repo import snapshot as git_snapshot
from wfbench.adapters.repo.capture import CaptureError, Scan
from wfbench.adapters.repo.snapshot import run_git
from wfbench.adapters.sandbox.common import force_remove
from wfbench.adapters.sandbox.process import run_managed
from wfbench.domain.errors import SandboxError
from wfbench.domain.ports import CancelToken
from wfbench.domain.workspace.oracle import OracleBundle, OracleFileSpec, OracleLimits
from wfbench.domain.workspace.rules import (
    COMMIT_RE,
    Churn,
    Patch,
    Snapshot,
    WorkspaceState,
    parse_shortstat,
)

COPY_TIMEOUT_S = 600.0
#: Reference §5.4 limits for a workspace state.
MAX_STATE_ENTRIES = 100_000
MAX_STATE_FILE_BYTES = 1024 * 1024 * 1024
#: Files larger than this are fingerprinted by size, inode and ctime (any write changes the
#: ctime, and no user can set it) instead of read: a sparse terabyte costs nothing to check.
MAX_HASHED_FILE_BYTES = 64 * 1024 * 1024


def private_copy(snapshot: Snapshot, dest: str, *, cancel: CancelToken | None = None) -> str:
    """Copy the snapshot to ``dest`` (reflink when the filesystem allows, else a full copy).

    The copy has its own ``.git`` (objects, refs, index); nothing is shared writable with the
    template or another copy. ``dest`` must not exist; a failed copy leaves nothing behind.

    Raises:
        SandboxError: ``dest`` exists, or the copy failed, timed out or was cancelled.
    """
    if os.path.lexists(dest):
        raise SandboxError(f"workspace destination already exists: {dest}")
    if os.path.islink(snapshot.path) or not os.path.isdir(snapshot.path):
        raise SandboxError(f"snapshot is not a real directory: {snapshot.path}")
    result = run_managed(
        ["/usr/bin/cp", "-a", "--reflink=auto", "--", snapshot.path, dest],
        env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"},
        timeout_s=COPY_TIMEOUT_S,
        cancel=cancel,
    )
    if not result.ok or os.path.lexists(os.path.join(dest, ".git", "objects", "info", "alternates")):
        force_remove(dest)
        tail = result.stderr_tail.decode("utf-8", "replace").strip()[-300:]
        raise SandboxError(f"copying the snapshot to {dest} failed ({result.state}): {tail or result.detail}")
    return dest


def remove_tree(path: str) -> str | None:
    """Remove a workspace (or any tree) even if it was made read-only; the failure reason, else None.

    A cell whose removal fails becomes ``cleanup-failure``; this never raises.
    """
    return force_remove(path)


def _fingerprint(path: str, info: os.stat_result) -> tuple[str, int]:
    mode = stat.S_IMODE(info.st_mode)
    if stat.S_ISDIR(info.st_mode):
        return f"d:{mode:o}", 0
    if stat.S_ISLNK(info.st_mode):
        return f"l:{os.readlink(path)}", 0
    if not stat.S_ISREG(info.st_mode):
        return f"s:{info.st_mode:o}", 0
    if info.st_size > MAX_HASHED_FILE_BYTES:
        return f"f:{mode:o}:{info.st_size}:ino{info.st_ino}:ctime{info.st_ctime_ns}", 0
    digest = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        if (os.fstat(fd).st_dev, os.fstat(fd).st_ino) != (info.st_dev, info.st_ino):
            raise OSError(f"{path} changed while it was read")
        while chunk := os.read(fd, 1024 * 1024):
            digest.update(chunk)
    finally:
        os.close(fd)
    return f"f:{mode:o}:{info.st_size}:{digest.hexdigest()}", info.st_size


def workspace_state(workspace: str, *, exclude: Sequence[str] = (".git",)) -> WorkspaceState:
    """Fingerprints of every entry under ``workspace`` (never following links), minus ``exclude``.

    ``exclude`` names top-level entries left out (the repository's ``.git``). An over-limit or
    unreadable workspace gives a state with ``problem`` set, never an exception.
    """
    entries: dict[str, str] = {}
    hashed = 0
    stack = [""]
    try:
        while stack:
            rel_dir = stack.pop()
            with os.scandir(os.path.join(workspace, rel_dir)) as listing:
                for item in listing:
                    rel = f"{rel_dir}/{item.name}" if rel_dir else item.name
                    if not rel_dir and item.name in exclude:
                        continue
                    info = item.stat(follow_symlinks=False)
                    hashable = stat.S_ISREG(info.st_mode) and info.st_size <= MAX_HASHED_FILE_BYTES
                    if hashable and hashed + info.st_size > MAX_STATE_FILE_BYTES:
                        return WorkspaceState(entries, problem="workspace exceeds the entry or byte limit")
                    entries[rel], size = _fingerprint(item.path, info)
                    hashed += size
                    if stat.S_ISDIR(info.st_mode):
                        stack.append(rel)
                    if len(entries) > MAX_STATE_ENTRIES or hashed > MAX_STATE_FILE_BYTES:
                        return WorkspaceState(entries, problem="workspace exceeds the entry or byte limit")
    except OSError as exc:
        return WorkspaceState(entries, problem=f"unreadable workspace entry: {exc}")
    return WorkspaceState(entries)


def _own_store(workspace: str) -> str:
    """The workspace's own object store, only when it is a plain tree git can read without stalling.

    Needed only when the base commit was made inside the cell (a candidate overlay, a setup
    commit). The agent could have rewritten it: alternates (a way to any host object store), a
    FIFO, a symlink or a device anywhere under it are refused as the agent's doing.

    Raises:
        CaptureError: the store is missing or unsafe.
    """
    store = os.path.join(workspace, ".git", "objects")
    for path in (os.path.join(workspace, ".git"), store):
        if os.path.islink(path) or not os.path.isdir(path):
            raise CaptureError(f"the workspace's {os.path.relpath(path, workspace)} is no longer a directory")
    for name in ("alternates", "http-alternates"):
        if os.path.lexists(os.path.join(store, "info", name)):
            raise CaptureError(f"the workspace's object store has an {name} file (refused)")
    count = 0
    for dirpath, dirnames, filenames in os.walk(store):
        for name in dirnames + filenames:
            count += 1
            mode = os.lstat(os.path.join(dirpath, name)).st_mode
            if count > MAX_STATE_ENTRIES or not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                raise CaptureError(f"the workspace's object store holds an unexpected entry: {name!r}")
    return store


def disk_usage(workspace: str) -> int:
    """Bytes ``workspace`` occupies on disk: allocated blocks of every entry (a sparse file counts
    what it really uses), never following links. An entry that vanishes while counted is skipped.
    """
    total = 0
    stack = [workspace]
    while stack:
        with contextlib.suppress(FileNotFoundError, NotADirectoryError), os.scandir(stack.pop()) as listing:
            for item in listing:
                try:
                    info = item.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                total += info.st_blocks * 512
                if stat.S_ISDIR(info.st_mode):
                    stack.append(item.path)
    return total


def _bare_git_dir(path: str) -> None:
    """What ``git init --bare --template=`` writes, without starting git: HEAD, config, objects, refs."""
    for sub in ("objects/info", "objects/pack", "refs/heads", "refs/tags"):
        os.makedirs(os.path.join(path, sub), 0o700)
    with open(os.path.join(path, "HEAD"), "w", encoding="ascii") as handle:
        handle.write("ref: refs/heads/main\n")
    with open(os.path.join(path, "config"), "w", encoding="ascii") as handle:
        handle.write("[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n")


@contextlib.contextmanager
def _indexed(workspace: str, snapshot: Snapshot, base: str) -> Iterator[tuple[dict[str, str], Scan]]:
    """A private bare GIT_DIR (no work tree) whose index is the workspace as scanned; removed after."""
    if not COMMIT_RE.match(base):
        raise SandboxError(f"base commit is not a commit id: {base!r}")
    scratch = tempfile.mkdtemp(prefix="wfbench-git-")
    try:
        git_dir = os.path.join(scratch, "git")
        _bare_git_dir(git_dir)
        stores = [os.path.join(snapshot.path, ".git", "objects")]
        if base != snapshot.commit:
            stores.append(_own_store(workspace))
        env = {
            "GIT_DIR": git_dir,
            "GIT_INDEX_FILE": os.path.join(scratch, "index"),
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": os.pathsep.join(stores),
        }
        try:
            found = capture.scan(workspace, capture.Limits(), sha256=len(base) == 64)
        except OSError as exc:
            raise CaptureError(f"reading the workspace failed: {exc}") from None
        if base == snapshot.commit:  # the harness's own commit: listed once per snapshot
            base_tree = capture.snapshot_entries(os.path.join(snapshot.path, ".git"), base)
        else:
            base_tree = capture.base_entries(env, base)
        capture.write_index(env, found, base_tree, scratch)
        yield env, found
    finally:
        force_remove(scratch)


def churn(
    workspace: str, snapshot: Snapshot, *, base_commit: str | None = None, exclude: Sequence[str] = ()
) -> Churn:
    """Files, insertions and deletions of ``workspace`` against ``base_commit`` (default: the snapshot's).

    Every file counts, ignored ones too (no ignore rule is read); the paths
    :mod:`~wfbench.adapters.repo.capture` does not read are left out. ``exclude`` names
    paths (literal, relative) left out of the count.

    Raises:
        CaptureError: the workspace could not be captured (the agent's doing).
        SandboxError: git failed.
    """
    base = base_commit or snapshot.commit
    with _indexed(workspace, snapshot, base) as (env, _found):
        spec = ["--", ".", *(f":(exclude,literal){path}" for path in exclude)]
        args = [
            "diff",
            "--cached",
            "--shortstat",
            "--no-ext-diff",
            "--no-textconv",
            "--no-renames",
            base,
            *spec,
        ]
        out = capture.git(args, env, "git diff --shortstat")
    return parse_shortstat(out.decode("utf-8", "replace"))


#: Room for the ``--shortstat`` line that precedes the patch in one ``git diff``'s output.
_STAT_ROOM = 4096


def capture_patch(
    workspace: str,
    snapshot: Snapshot,
    limit_bytes: int,
    *,
    base_commit: str | None = None,
    exclude: Sequence[str] = (),
) -> Patch:
    """The binary diff of ``workspace`` against the base, at most ``limit_bytes`` (``truncated`` past it).

    ``Patch.skipped`` names what was not diffed (over-limit, special, nested repositories);
    ``Patch.churn`` is :func:`churn` of the same index (one ``git diff`` prints the shortstat line
    before the patch), so a cell needs one capture, not two.

    Raises:
        CaptureError: the workspace could not be captured (the agent's doing).
        SandboxError: git failed.
    """
    if limit_bytes <= 0:
        raise ValueError("limit_bytes must be positive")
    base = base_commit or snapshot.commit
    with _indexed(workspace, snapshot, base) as (env, found):
        spec = ["--", ".", *(f":(exclude,literal){path}" for path in exclude)]
        args = ["diff", "--cached", "--shortstat", "--binary", "--no-color", "--no-ext-diff", "--no-textconv"]
        args += ["--no-renames", base, *spec]
        result = run_git(
            [*capture.BOUNDED_GIT, *args],
            env=env,
            stdout_limit=limit_bytes + _STAT_ROOM,
            address_space=capture.GIT_ADDRESS_SPACE,
        )
    if not result.ok:
        tail = result.stderr_tail.decode("utf-8", "replace").strip()[-300:]
        raise SandboxError(f"git diff for the patch failed ({result.state}): {tail or result.detail}")
    stat_line, data = _split_stat(result.stdout)
    truncated = result.stdout_overflow or len(data) > limit_bytes
    counted = parse_shortstat(stat_line.decode("utf-8", "replace"))
    return Patch(data[:limit_bytes], truncated, tuple(found.skipped), churn=counted)


def _split_stat(out: bytes) -> tuple[bytes, bytes]:
    """(the ``--shortstat`` line, the patch) of ``git diff --shortstat --binary`` output."""
    if not out.startswith(b" "):  # no change: no stat line, no patch
        return b"", out
    line, _, rest = out.partition(b"\n")
    return line, rest[1:] if rest.startswith(b"\n") else rest


class GitWorkspaces:
    """The :class:`wfbench.domain.ports.Workspaces` port over git, ``cp`` and the local filesystem."""

    def resolve_commit(self, repo: str, ref: str) -> str:
        """See :func:`wfbench.adapters.repo.snapshot.resolve_commit`."""
        return git_snapshot.resolve_commit(repo, ref)

    def build_snapshot(self, repo: str, ref: str, dest: str, *, commit: str | None = None) -> Snapshot:
        """See :func:`wfbench.adapters.repo.snapshot.build_snapshot`."""
        return git_snapshot.build_snapshot(repo, ref, dest, commit=commit)

    def private_copy(self, snapshot: Snapshot, dest: str, *, cancel: CancelToken | None = None) -> str:
        """See :func:`private_copy`."""
        return private_copy(snapshot, dest, cancel=cancel)

    def remove_tree(self, path: str) -> str | None:
        """See :func:`remove_tree`."""
        return remove_tree(path)

    def state(self, workspace: str) -> WorkspaceState:
        """See :func:`workspace_state`."""
        return workspace_state(workspace)

    def disk_usage(self, workspace: str) -> int:
        """See :func:`disk_usage`."""
        return disk_usage(workspace)

    def ignored(self, snapshot: Snapshot, paths: Sequence[str]) -> frozenset[str]:
        """Which of ``paths`` the snapshot's ignore rules (its ``.gitignore`` files) ignore.

        Asked of the harness-owned snapshot, never of the agent's workspace, so only the base
        commit's rules count; a tracked path is never ignored.
        """
        if not paths:
            return frozenset()
        result = run_git(
            ["-c", "safe.directory=*", "-c", "core.excludesFile=/dev/null", "check-ignore", "--stdin", "-z"],
            cwd=snapshot.path,
            stdin=b"".join(p.encode() + b"\0" for p in paths),
        )
        if result.returncode not in (0, 1):
            tail = result.stderr_tail.decode("utf-8", "replace")[-300:]
            raise SandboxError(f"git check-ignore failed: {tail}")
        return frozenset(p for p in result.stdout.decode("utf-8", "replace").split("\0") if p)

    def churn(self, workspace: str, snapshot: Snapshot, *, base_commit: str | None = None) -> Churn:
        """See :func:`churn`."""
        return churn(workspace, snapshot, base_commit=base_commit)

    def capture_patch(
        self, workspace: str, snapshot: Snapshot, limit_bytes: int, *, base_commit: str | None = None
    ) -> Patch:
        """See :func:`capture_patch`."""
        return capture_patch(workspace, snapshot, limit_bytes, base_commit=base_commit)

    def capture_oracle(
        self,
        corpus_dir: str,
        files: Sequence[OracleFileSpec],
        limits: OracleLimits | None = None,
        *,
        task_id: str = "",
        source: str = "",
    ) -> OracleBundle:
        """See :func:`wfbench.adapters.repo.oracle_files.capture_oracle`."""
        return oracle_files.capture_oracle(corpus_dir, files, limits, task_id=task_id, source=source)

    def stage_oracle(self, bundle: OracleBundle, dest: str) -> str:
        """See :func:`wfbench.adapters.repo.oracle_files.stage_oracle`."""
        return oracle_files.stage_oracle(bundle, dest)

    def erase_oracle(self, bundle: OracleBundle, stage: str) -> bool:
        """See :func:`wfbench.adapters.repo.oracle_files.erase_oracle`."""
        return oracle_files.erase_oracle(bundle, stage)
