"""The repository ``wfbench promote apply`` writes to: committed skill bytes, the swap, the commit.

:class:`GitSkillTarget` implements :class:`wfbench.domain.ports.SkillTarget` over a git working
tree. Committed bytes are read from ``HEAD`` with ``git ls-tree``/``git cat-file`` (never from
the working tree); the swap is a :class:`~wfbench.adapters.repo.skill_transaction.SkillTransaction`
journaled in ``<git dir>/wfbench-apply``; the optional commit adds exactly the written paths
(forced: skills are often gitignored) on a new branch or the current one, with hooks, fsmonitor
and signing off. A commit that fails rolls the whole swap back.
"""

from __future__ import annotations

import os
import pwd
import tempfile
from collections.abc import Callable, Mapping, Sequence

from wfbench.adapters.repo.skill_transaction import Recovered, SkillTransaction
from wfbench.adapters.repo.snapshot import checked_git, run_git
from wfbench.domain.errors import InputError, SandboxError
from wfbench.domain.promotion.skill_swap import CommitSpec, SwapOutcome

__all__ = ["STATE_DIR_NAME", "GitSkillTarget"]

STATE_DIR_NAME = "wfbench-apply"
_TRUST = ("-c", "safe.directory=*")
_COMMIT_CONFIG = ("-c", "commit.gpgsign=false", "-c", "core.autocrlf=false")


class GitSkillTarget:
    """A git working tree whose skill files are swapped in one transaction."""

    def __init__(self, root: str, *, on_step: Callable[[str], None] | None = None) -> None:
        if not os.path.isdir(root):
            raise InputError("is not a directory", field="--target", source=root)
        top = run_git([*_TRUST, "rev-parse", "--show-toplevel"], cwd=root)
        if not top.ok:
            raise InputError("is not a git working tree", field="--target", source=root)
        self.root = os.path.realpath(top.stdout.decode().strip())
        if os.path.realpath(root) != self.root:
            raise InputError(
                f"must be the top of its working tree ({self.root})", field="--target", source=root
            )
        git_dir = checked_git(
            [*_TRUST, "rev-parse", "--absolute-git-dir"], "finding the git directory", cwd=self.root
        )
        self.transaction = SkillTransaction(self.root, os.path.join(git_dir, STATE_DIR_NAME), on_step=on_step)

    # --- SkillTarget -------------------------------------------------------------------

    def committed(self, roots: Sequence[str], paths: Sequence[str]) -> dict[str, bytes | None]:
        """HEAD's bytes of every file under ``roots`` and of each of ``paths`` (None: not in HEAD)."""
        head = run_git([*_TRUST, "rev-parse", "--verify", "--quiet", "HEAD^{commit}"], cwd=self.root)
        if not head.ok:
            raise InputError(
                "has no commit at HEAD (nothing is committed to compare against)", field="--target"
            )
        listed = checked_git(
            [*_TRUST, "ls-tree", "-r", "-z", "--full-tree", "HEAD", "--", *roots, *paths],
            "listing HEAD's skill files",
            cwd=self.root,
        )
        found: dict[str, str] = {}
        for record in filter(None, listed.split("\0")):
            meta, _, path = record.partition("\t")
            mode, kind, obj = meta.split()
            if kind != "blob" or mode == "120000":
                raise InputError(
                    f"is committed as a {'symlink' if mode == '120000' else kind}, not a file", field=path
                )
            found[path] = obj
        out: dict[str, bytes | None] = dict.fromkeys(paths)
        for path, obj in sorted(found.items()):
            result = run_git([*_TRUST, "cat-file", "blob", obj], cwd=self.root)
            if not result.ok:
                raise SandboxError(
                    f"reading {path} at HEAD failed: {result.stderr_tail.decode('utf-8', 'replace')}"
                )
            out[path] = result.stdout
        return out

    def current(self, paths: Sequence[str]) -> dict[str, str]:
        """The digest of what each path holds in the working tree now (``absent`` when missing)."""
        return self.transaction.current_digests(paths)

    def recover(self) -> Recovered | None:
        """Finish a transaction a crash interrupted (None when there was none)."""
        return self.transaction.recover()

    def branch(self) -> str | None:
        """The branch ``HEAD`` is on (None: detached)."""
        head = run_git([*_TRUST, "symbolic-ref", "--quiet", "--short", "HEAD"], cwd=self.root)
        return head.stdout.decode("utf-8", "replace").strip() if head.ok else None

    def applied_at_head(self, evidence_sha256: str) -> tuple[str, tuple[str, ...]] | None:
        """``HEAD``'s id and listed files when it is the commit of an apply of this evidence, else None.

        An apply's commit message names the evidence's sha256 and lists the files it wrote
        (:func:`wfbench.app.promotion.apply.commit_message`).
        """
        log = run_git([*_TRUST, "log", "-1", "--format=%H%n%B"], cwd=self.root)
        if not log.ok:
            return None
        commit, _newline, message = log.stdout.decode("utf-8", "replace").partition("\n")
        if f"\nEvidence: sha256:{evidence_sha256} " not in message:
            return None
        listed = message.split("\nFiles:\n", 1)[1].split("\n\n", 1)[0] if "\nFiles:\n" in message else ""
        return commit.strip(), tuple(line.strip() for line in listed.splitlines() if line.strip())

    def swap(
        self,
        writes: Sequence[tuple[str, bytes]],
        expected: Mapping[str, str],
        *,
        message: str,
        commit: CommitSpec | None = None,
    ) -> SwapOutcome:
        """Write ``writes`` in one transaction against ``expected``; commit them if asked.

        Raises:
            InputError: a bad branch name, an existing branch, a detached HEAD for ``--commit``.
            SwapConflict, TransactionError: see :meth:`SkillTransaction.apply`.
        """
        if commit is not None:
            self._check_commit(commit)
        made: list[str] = []

        def after_install() -> None:
            if commit is not None:
                made.append(self._commit(commit, [path for path, _ in writes]))

        entries = self.transaction.apply(writes, expected, message=message, after_install=after_install)
        return SwapOutcome(entries=tuple(entries), commit=made[0] if made else None)

    def commit_written(self, commit: CommitSpec, paths: Sequence[str]) -> str:
        """Commit ``paths`` as the working tree holds them (files an apply wrote but never committed).

        This finishes an apply that a crash stopped between its files and git's commit, so an
        existing ``commit.branch`` is recognised as that apply's own unfinished work, and finished,
        when it points at

        * ``HEAD``'s commit, the one the branch would be created from (it holds nothing of anyone
          else's), while another branch is checked out: the commit is made on it, and it is
          checked out; or
        * exactly the commit this apply makes (``HEAD`` as its only parent, ``HEAD``'s tree with
          ``paths`` as the working tree holds them, ``commit.message``): the crash came after the
          branch was created and before ``HEAD`` moved, so it is only checked out.

        Any other existing branch holds someone else's commits and is refused, with nothing changed.

        Raises:
            InputError: a bad branch name, a branch holding other commits, a detached HEAD
                without a branch.
        """
        if commit.branch is None:
            self._check_commit(commit)
            return self._commit(commit, paths)
        self._check_branch_name(commit.branch)
        tip = self._branch_tip(commit.branch)
        if tip is None:
            return self._commit(commit, paths)
        head = self._git("rev-parse", "--verify", "HEAD^{commit}")
        if tip == head:
            if self.branch() == commit.branch:  # a new branch was asked for, not the one checked out
                raise InputError(
                    f"branch {commit.branch} already exists and is checked out", field="--branch"
                )
            return self._commit(commit, paths, branch_from=head)
        tree, entries = self._tree_with(head, paths)
        if self._commit_fields(tip) != (tree, (head,), commit.message):
            raise InputError(
                f"branch {commit.branch} already exists and holds commits this apply did not make",
                field="--branch",
            )
        self._git("update-index", "--add", "--index-info", stdin="\n".join(entries) + "\n")
        self._git("symbolic-ref", "HEAD", f"refs/heads/{commit.branch}")
        return tip

    # --- committing ----------------------------------------------------------------------

    def _check_commit(self, commit: CommitSpec) -> None:
        if commit.branch is None:
            branch = run_git([*_TRUST, "symbolic-ref", "--quiet", "--short", "HEAD"], cwd=self.root)
            if not branch.ok:
                raise InputError("HEAD is detached; name a new branch with --branch", field="--commit")
            return
        self._check_branch_name(commit.branch)
        if self._branch_tip(commit.branch) is not None:
            raise InputError(f"branch {commit.branch} already exists", field="--branch")

    def _check_branch_name(self, branch: str) -> None:
        valid = run_git(["check-ref-format", "--branch", branch], cwd=self.root)
        if not valid.ok:
            raise InputError(f"{branch!r} is not a valid branch name", field="--branch")

    def _branch_tip(self, branch: str) -> str | None:
        """The commit ``refs/heads/<branch>`` points at (None: no such branch)."""
        tip = run_git(
            [*_TRUST, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}^{{commit}}"], cwd=self.root
        )
        if tip.ok:
            return tip.stdout.decode().strip()
        exists = run_git([*_TRUST, "show-ref", "--verify", "--quiet", f"refs/heads/{branch}"], cwd=self.root)
        if exists.ok:  # a ref that is not a commit (or cannot be read) is nobody's unfinished apply
            raise InputError(f"branch {branch} already exists", field="--branch")
        return None

    def _commit_fields(self, commit: str) -> tuple[str, tuple[str, ...], str]:
        """A commit's tree, parents and message (as ``git cat-file commit`` stores them)."""
        raw = self._git_bytes("cat-file", "commit", commit).decode("utf-8", "replace")
        header, _blank, message = raw.partition("\n\n")
        lines = header.splitlines()
        tree = next((line[5:] for line in lines if line.startswith("tree ")), "")
        parents = tuple(line[7:] for line in lines if line.startswith("parent "))
        return tree, parents, message

    def _tree_with(self, head: str, paths: Sequence[str]) -> tuple[str, list[str]]:
        """The tree of ``head`` with ``paths`` as the working tree holds them, and their index entries.

        Built in a private index, so the user's index is untouched; the blobs are written.
        """
        git = self._git
        entries = []
        for path in paths:
            mode = "100755" if os.stat(os.path.join(self.root, path)).st_mode & 0o111 else "100644"
            blob = git("hash-object", "-w", f"--path={path}", "--", os.path.join(self.root, path))
            entries.append(f"{mode} {blob}\t{path}")
        with tempfile.TemporaryDirectory(prefix="wfbench-index-") as scratch:
            private = {"GIT_INDEX_FILE": os.path.join(scratch, "index")}
            git("read-tree", head, env=private)
            git("update-index", "--add", "--index-info", env=private, stdin="\n".join(entries) + "\n")
            return git("write-tree", env=private), entries

    def _commit(self, commit: CommitSpec, paths: Sequence[str], *, branch_from: str = "") -> str:
        """Commit exactly ``paths`` as they are in the working tree; the commit id.

        The commit is built beside the user's index (a private index from ``HEAD``), then the
        real index learns the new blobs, then the branch moves (a new one is created — or one at
        ``branch_from``, ``HEAD``'s commit, moved on — and checked out; the current one moves only
        if it still points where it did). A failure undoes the index and ref changes, and the
        caller rolls the files back.
        """
        git = self._git
        head = git("rev-parse", "--verify", "HEAD^{commit}")
        tree, entries = self._tree_with(head, paths)
        made = git(
            *_COMMIT_CONFIG,
            "commit-tree",
            tree,
            "-p",
            head,
            "-F",
            "-",
            env=_identity(self.root),
            stdin=commit.message,
        )
        git("update-index", "--add", "--index-info", stdin="\n".join(entries) + "\n")
        try:
            if commit.branch is None:
                ref = git("symbolic-ref", "--quiet", "HEAD")
                git("update-ref", "-m", "wfbench promote apply", ref, made, head)
            else:
                ref = f"refs/heads/{commit.branch}"
                git("update-ref", "-m", "wfbench promote apply", ref, made, branch_from)
                git("symbolic-ref", "HEAD", ref)
        except BaseException:
            if commit.branch is not None:
                restore = (
                    ["update-ref", ref, branch_from, made] if branch_from else ["update-ref", "-d", ref, made]
                )
                run_git([*_TRUST, *restore], cwd=self.root)
            run_git([*_TRUST, "reset", "--quiet", head, "--", *paths], cwd=self.root)
            raise
        return made

    def _git(self, *args: str, env: Mapping[str, str] | None = None, stdin: str | None = None) -> str:
        return checked_git(
            [*_TRUST, *args],
            f"git {args[0]}",
            cwd=self.root,
            env=env,
            stdin=None if stdin is None else stdin.encode(),
        )

    def _git_bytes(self, *args: str) -> bytes:
        """A git command's stdout as it is (not stripped). Raises SandboxError when not ok."""
        result = run_git([*_TRUST, *args], cwd=self.root)
        if not result.ok:
            tail = result.stderr_tail.decode("utf-8", "replace").strip()[-500:]
            raise SandboxError(f"git {args[0]} failed ({result.state}, exit {result.returncode}): {tail}")
        return result.stdout


def _identity(root: str) -> dict[str, str]:
    """The committer: the user's git identity (repository or global config), else ``wfbench``."""
    names: dict[str, str] = {}
    home = os.environ.get("HOME") or pwd.getpwuid(os.getuid()).pw_dir
    user_config = {"HOME": home, "GIT_CONFIG_GLOBAL": os.path.join(home, ".gitconfig")}
    for key, env_name, fallback in (
        ("user.name", "NAME", "wfbench"),
        ("user.email", "EMAIL", "wfbench@localhost"),
    ):
        probe = run_git([*_TRUST, "config", "--get", key], cwd=root, env=user_config)
        value = probe.stdout.decode("utf-8", "replace").strip() if probe.ok else ""
        names[f"GIT_AUTHOR_{env_name}"] = names[f"GIT_COMMITTER_{env_name}"] = value or fallback
    return names
