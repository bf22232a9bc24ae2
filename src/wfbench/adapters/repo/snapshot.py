"""Sanitized, parentless snapshots of a repository commit, built with git under a controlled env.

:func:`build_snapshot` resolves a ref once, packs exactly the objects of that commit's *tree*
into a fresh repository, and records the tree as a single root commit with a fixed identity and
date. The snapshot never held the original commit, its history, other refs, tags, a reflog or
alternates, so ``git log --all`` and ``git show`` can reveal nothing but that tree
(reference: scheduler_tasks.md §3.4 "Clone sanitization", sessions_sandbox.md §5.1).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from wfbench.adapters.sandbox.common import force_remove
from wfbench.adapters.sandbox.process import run_managed
from wfbench.domain.errors import InputError, SandboxError
from wfbench.domain.workspace.rules import COMMIT_RE, Snapshot
from wfbench.domain.workspace.sandbox import ExecResult

GIT = "/usr/bin/git"
GIT_TIMEOUT_S = 600.0
#: Fixed identity and date of every snapshot commit: the same tree gives the same commit id.
SNAPSHOT_IDENTITY = {
    "GIT_AUTHOR_NAME": "wfbench",
    "GIT_AUTHOR_EMAIL": "wfbench@localhost",
    "GIT_AUTHOR_DATE": "946684800 +0000",
    "GIT_COMMITTER_NAME": "wfbench",
    "GIT_COMMITTER_EMAIL": "wfbench@localhost",
    "GIT_COMMITTER_DATE": "946684800 +0000",
}
SNAPSHOT_MESSAGE = "wfbench snapshot\n"
SNAPSHOT_BRANCH = "refs/heads/main"
#: Config given on every git command line: no fsmonitor hook, no hooks, no pager.
SAFE_CONFIG = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "core.pager=cat")


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """An environment for git that reads no system or user configuration and never prompts."""
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": "/nonexistent",
        "LC_ALL": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_NO_REPLACE_OBJECTS": "1",
    }
    env.update(extra or {})
    return env


#: ``git`` under an address-space limit: ``ulimit -v`` (KiB) in ``/bin/sh``, then ``exec`` (no
#: ``preexec_fn``, so the harness spawns with ``vfork`` instead of a full ``fork``).
_LIMITED = 'ulimit -v "$0" && exec "$@"'


def run_git(
    args: Sequence[str],
    *,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    stdout_limit: int = 8 * 1024 * 1024,
    address_space: int | None = None,
) -> ExecResult:
    """Run ``git <SAFE_CONFIG> args`` as a managed process; the result, whatever it is.

    ``address_space`` (bytes) bounds git's ``RLIMIT_AS`` (a bounded capture).
    """
    argv = [GIT, *SAFE_CONFIG, *args]
    if address_space is not None:
        argv = ["/bin/sh", "-c", _LIMITED, str(address_space // 1024), *argv]
    return run_managed(
        argv,
        env=git_env(env),
        cwd=cwd,
        stdin=stdin,
        timeout_s=GIT_TIMEOUT_S,
        stdout_limit=stdout_limit,
    )


def checked_git(
    args: Sequence[str],
    what: str,
    *,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
) -> str:
    """Run git and return its stripped stdout. Raises SandboxError naming ``what`` when not ok."""
    result = run_git(args, cwd=cwd, env=env, stdin=stdin)
    if not result.ok:
        tail = result.stderr_tail.decode("utf-8", "replace").strip()[-500:]
        raise SandboxError(
            f"{what} failed ({result.state}, exit {result.returncode}): {tail or result.detail}"
        )
    return result.stdout.decode("utf-8", "replace").strip()


def resolve_commit(repo: str, ref: str) -> str:
    """The commit ``ref`` names in ``repo`` (lower-case hex), resolved once.

    Raises:
        InputError: ``repo`` is not a git repository (field ``repo``) or ``ref`` does not name a
            commit (field ``ref``); the caller adds the task id with ``located``.
    """
    if not os.path.isdir(repo):
        raise InputError(f"repository {repo} is not a directory", field="repo")
    probe = run_git(["-c", "safe.directory=*", "rev-parse", "--git-dir"], cwd=repo)
    if not probe.ok:
        raise InputError(f"{repo} is not a git repository", field="repo")
    _require_top_level(repo)
    result = run_git(
        [
            "-c",
            "safe.directory=*",
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            f"{ref}^{{commit}}",
        ],
        cwd=repo,
    )
    commit = result.stdout.decode("ascii", "replace").strip().lower()
    if not result.ok or not COMMIT_RE.match(commit):
        raise InputError(f"ref {ref!r} does not resolve to a commit in {repo}", field="ref")
    return commit


def _require_top_level(repo: str) -> None:
    """``repo`` must be a repository's top level (or a bare repository), never a directory inside one.

    A plain directory inside another repository would bind the *enclosing* repository and snapshot
    its whole tree — the corpus's hidden oracle files included.
    """
    trusted = ["-c", "safe.directory=*"]
    bare = run_git([*trusted, "rev-parse", "--is-bare-repository"], cwd=repo)
    if bare.ok and bare.stdout.strip() == b"true":
        git_dir = run_git([*trusted, "rev-parse", "--absolute-git-dir"], cwd=repo)
        found = git_dir.stdout.decode("utf-8", "replace").strip()
        if os.path.realpath(found) != os.path.realpath(repo):
            raise InputError(f"{repo} is inside the bare repository {found}", field="repo")
        return
    top = run_git([*trusted, "rev-parse", "--show-toplevel"], cwd=repo)
    toplevel = top.stdout.decode("utf-8", "replace").strip()
    if not top.ok or os.path.realpath(toplevel) != os.path.realpath(repo):
        raise InputError(
            f"{repo} is not the top level of a git repository: it is inside"
            f" {toplevel or 'another repository'} (point `repo:` at a repository of its own)",
            field="repo",
        )


def build_snapshot(repo: str, ref: str, dest: str, *, commit: str | None = None) -> Snapshot:
    """Build the sanitized snapshot of ``ref`` (or the already resolved ``commit``) at ``dest``.

    ``dest`` must not exist. On failure nothing is left at ``dest``.

    Raises:
        InputError: the repository or ref is bad (see :func:`resolve_commit`).
        SandboxError: git failed while building, or ``dest`` already exists.
    """
    source = commit or resolve_commit(repo, ref)
    if os.path.lexists(dest):
        raise SandboxError(f"snapshot destination already exists: {dest}")
    try:
        return _build(repo, ref, source, dest)
    except BaseException:
        force_remove(dest)
        raise


def _objects_dir(repo: str) -> str:
    """The absolute object directory of ``repo`` (a worktree's is its main repository's)."""
    found = checked_git(
        ["-c", "safe.directory=*", "rev-parse", "--git-path", "objects"],
        "finding the object directory",
        cwd=repo,
    )
    return os.path.abspath(os.path.join(repo, found))


def _pack_into(objects: str, source_objects: str) -> dict[str, str]:
    """The environment that makes git pack-objects write its temporary pack beside the final one.

    git writes the pack under the *current* repository's object directory, then renames it to
    the destination: across filesystems (a tmpfs ``TMPDIR``, another disk) that rename fails
    with EXDEV. With the snapshot's object directory as git's own and the source's as an
    alternate (read only, for this one command; nothing is written to the snapshot's
    ``info/alternates``), the temporary pack and the final one share a filesystem.
    """
    return {"GIT_OBJECT_DIRECTORY": objects, "GIT_ALTERNATE_OBJECT_DIRECTORIES": source_objects}


def _build(repo: str, ref: str, source: str, dest: str) -> Snapshot:
    trusted = ["-c", "safe.directory=*"]
    tree = checked_git(
        [*trusted, "rev-parse", "--verify", f"{source}^{{tree}}"], "reading the tree", cwd=repo
    )
    object_format = checked_git(
        [*trusted, "rev-parse", "--show-object-format"], "reading the object format", cwd=repo
    )
    checked_git(["init", "--quiet", "--template=", f"--object-format={object_format}", dest], "git init")
    git_dir = os.path.join(dest, ".git")
    checked_git(["config", "core.logAllRefUpdates", "false"], "git config", cwd=dest)
    os.makedirs(os.path.join(git_dir, "objects", "pack"), exist_ok=True)
    names = checked_git([*trusted, "rev-list", "--objects", tree], "listing the tree's objects", cwd=repo)
    objects = os.path.join(os.path.abspath(git_dir), "objects")
    checked_git(
        [*trusted, "pack-objects", "--quiet", os.path.join(objects, "pack", "pack")],
        "packing the tree",
        cwd=repo,
        env=_pack_into(objects, _objects_dir(repo)),
        stdin=(names + "\n").encode(),
    )
    snap_commit = checked_git(
        ["commit-tree", tree],
        "committing the snapshot",
        cwd=dest,
        env=SNAPSHOT_IDENTITY,
        stdin=SNAPSHOT_MESSAGE.encode(),
    )
    checked_git(["symbolic-ref", "HEAD", SNAPSHOT_BRANCH], "setting HEAD", cwd=dest)
    checked_git(["update-ref", SNAPSHOT_BRANCH, snap_commit], "setting the branch", cwd=dest)
    checked_git(["read-tree", "--reset", "-u", snap_commit], "checking out the snapshot", cwd=dest)
    leftovers = ("logs", "ORIG_HEAD", "FETCH_HEAD", "packed-refs", "objects/info/alternates")
    if any(os.path.lexists(os.path.join(git_dir, name)) for name in leftovers):
        raise SandboxError(f"snapshot {dest} has a reflog or alternates after building")
    return Snapshot(repo=repo, ref=ref, source_commit=source, commit=snap_commit, tree=tree, path=dest)
