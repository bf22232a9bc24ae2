"""Workspaces as values: snapshots, churn, patches and the rules of phase boundaries.

Everything here is pure. The adapters (``wfbench.adapters.repo.workspace``) do the git and file
work and hand these functions plain values: a workspace state is a mapping from relative POSIX
path to a fingerprint string, and the checks return reasons instead of raising
(``docs/concepts.md``, "Phase boundaries").
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping

import attrs

#: Commit ids are lower-case hex (SHA-1 or SHA-256 repositories).
COMMIT_RE = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")
#: Longest relative path (in UTF-8 bytes) accepted in a declaration (oracle targets, skill dirs).
MAX_RELATIVE_PATH_BYTES = 240
#: The directory whose direct children are plan documents .
PLAN_DIR = "docs/plans"
PLAN_SUFFIXES = (".md", ".html")
#: Changed paths named in a boundary reason before it is cut with "…".
REASON_PATHS = 8


@attrs.frozen
class Snapshot:
    """A sanitized, parentless copy of one repository commit, built once per sweep.

    ``path`` is the template's host directory (a git work tree whose only commit is ``commit``,
    whose tree is ``tree``, the tree of ``source_commit`` in ``repo``).
    """

    repo: str
    ref: str
    source_commit: str
    commit: str
    tree: str
    path: str


@attrs.frozen
class Churn:
    """How much a workspace changed against its starting commit (untracked files included)."""

    files: int
    insertions: int
    deletions: int


@attrs.frozen
class SkippedPath:
    """A workspace path churn and the patch did not read: named, with its size when it has one.

    ``reason`` says why (over the per-file or total limit, a FIFO or device, a nested
    repository or gitlink that is never followed).
    """

    path: str
    reason: str
    size: int | None = None

    def describe(self) -> str:
        """``big.bin (3221225472 bytes): over the per-file limit of 16777216 bytes``."""
        size = "" if self.size is None else f" ({self.size} bytes)"
        return f"{self.path}{size}: {self.reason}"


@attrs.frozen
class Patch:
    """The workspace's diff against its starting commit, cut at a byte limit.

    ``skipped`` lists the paths that were not diffed (see :class:`SkippedPath`); ``churn`` is the
    churn of the same capture when the adapter measured it in the same pass (None: ask for it).
    """

    data: bytes
    truncated: bool
    skipped: tuple[SkippedPath, ...] = ()
    churn: Churn | None = None


class ChangeKind(enum.StrEnum):
    """How one path differs between two workspace states."""

    ADDED = "added"
    MODIFIED = "modified"
    DELETED = "deleted"


@attrs.frozen
class PathChange:
    """One changed path (relative POSIX path inside the workspace)."""

    path: str
    kind: ChangeKind


class PhaseBoundary(enum.StrEnum):
    """What a phase may change in the workspace (``docs/concepts.md``, "Phase boundaries")."""

    #: Review: nothing.
    READ_ONLY = "read-only"
    #: Planning: exactly one plan document under ``docs/plans`` (and its new parent dirs).
    PLAN_DOCUMENT = "plan-document"
    #: Implementation: anything (the skill fingerprint is checked separately).
    UNRESTRICTED = "unrestricted"


@attrs.frozen
class WorkspaceState:
    """A workspace's files as fingerprints: relative POSIX path -> ``kind:...`` string.

    Kinds are ``d`` (directory), ``f`` (regular file: mode, size, sha256), ``l`` (symlink:
    target) and ``s`` (special). ``problem`` says why the state is incomplete (too many
    entries or bytes, an unreadable entry); an incomplete state never passes a boundary check.
    """

    entries: Mapping[str, str] = attrs.field(factory=dict)
    problem: str | None = None

    def kind(self, path: str) -> str | None:
        """``d``, ``f``, ``l`` or ``s`` for a present path, else None."""
        fingerprint = self.entries.get(path)
        return fingerprint[0] if fingerprint else None


@attrs.frozen
class BoundaryVerdict:
    """Whether a phase stayed inside its boundary; ``reasons`` is empty exactly when it did."""

    reasons: tuple[str, ...] = ()
    #: The plan document a plan phase produced (relative path), when there is exactly one.
    plan_document: str | None = None

    @property
    def ok(self) -> bool:
        """True when the phase changed nothing it was not allowed to."""
        return not self.reasons


def relative_path_problem(path: str) -> str | None:
    """Why ``path`` is not a simple relative POSIX path inside a root, or None when it is.

    Refused: empty, absolute, ``\\`` or NUL, ``.``/``..``/empty components, longer than
    :data:`MAX_RELATIVE_PATH_BYTES` bytes.
    """
    if not path:
        return "path is empty"
    if "\x00" in path or "\\" in path:
        return "path contains NUL or a backslash"
    if path.startswith("/"):
        return "path is absolute"
    if len(path.encode("utf-8", "surrogateescape")) > MAX_RELATIVE_PATH_BYTES:
        return f"path is longer than {MAX_RELATIVE_PATH_BYTES} bytes"
    if any(part in ("", ".", "..") for part in path.split("/")):
        return "path has an empty, '.' or '..' component"
    return None


def is_inside(path: str, root: str) -> bool:
    """True when absolute POSIX ``path`` is ``root`` or below it (lexically, at a component)."""
    root = root.rstrip("/") or "/"
    return path == root or path.startswith(root + "/") or root == "/"


def mount_target_problem(target: str) -> str | None:
    """Why ``target`` cannot be a mount target inside a sandbox, or None.

    A target is an absolute, normalised path other than ``/`` (no ``..``, ``.``, ``//``).
    """
    if not target.startswith("/") or target == "/":
        return "mount target must be an absolute path other than /"
    if "\x00" in target:
        return "mount target contains NUL"
    if any(part in ("", ".", "..") for part in target[1:].split("/")):
        return "mount target must be normalised (no '.', '..' or '//')"
    return None


def diff_states(before: Mapping[str, str], after: Mapping[str, str]) -> tuple[PathChange, ...]:
    """Every path added, modified or deleted between two workspace states, sorted by path."""
    changes = [PathChange(p, ChangeKind.DELETED) for p in before if p not in after]
    for path, print_ in after.items():
        if path not in before:
            changes.append(PathChange(path, ChangeKind.ADDED))
        elif before[path] != print_:
            changes.append(PathChange(path, ChangeKind.MODIFIED))
    return tuple(sorted(changes, key=lambda c: c.path))


def _named(changes: Iterable[PathChange]) -> str:
    listed = [f"{c.path} ({c.kind})" for c in changes]
    head = ", ".join(listed[:REASON_PATHS])
    return head + (", …" if len(listed) > REASON_PATHS else "")


def check_read_only_phase(changes: tuple[PathChange, ...]) -> BoundaryVerdict:
    """A review phase may change nothing in the workspace."""
    if not changes:
        return BoundaryVerdict()
    return BoundaryVerdict((f"phase changed the read-only workspace: {_named(changes)}",))


def is_plan_document(path: str, plan_dir: str = PLAN_DIR) -> bool:
    """True for a direct child of ``plan_dir`` ending in ``.md`` or ``.html``."""
    prefix = plan_dir.rstrip("/") + "/"
    rest = path[len(prefix) :] if path.startswith(prefix) else ""
    return bool(rest) and "/" not in rest and rest.endswith(PLAN_SUFFIXES)


def _is_new_parent(change: PathChange, document: str) -> bool:
    return change.kind is ChangeKind.ADDED and document.startswith(change.path + "/")


def check_plan_phase(
    changes: tuple[PathChange, ...],
    *,
    after_kinds: Mapping[str, str] | None = None,
    plan_dir: str = PLAN_DIR,
) -> BoundaryVerdict:
    """A plan phase may add or change exactly one plan document (and create its parent dirs).

    ``after_kinds`` maps a path to its type after the phase (``"f"`` regular file, ``"d"``,
    ``"l"`` symlink, ``"s"`` special); the document must be a regular file.
    """
    plans = [c for c in changes if c.kind is not ChangeKind.DELETED and is_plan_document(c.path, plan_dir)]
    if len(plans) != 1:
        found = "no" if not plans else f"{len(plans)}"
        return BoundaryVerdict(
            (f"plan phase must produce exactly one plan document under {plan_dir}/, found {found}",)
        )
    document = plans[0].path
    reasons: list[str] = []
    if after_kinds is not None and after_kinds.get(document) != "f":
        reasons.append(f"plan document {document} is not a regular file")
    others = [c for c in changes if c.path != document and not _is_new_parent(c, document)]
    if others:
        reasons.append(f"phase changed unauthorized workspace path(s): {_named(others)}")
    return BoundaryVerdict(tuple(reasons), plan_document=document)


_SHORTSTAT_RE = re.compile(r"(\d+) (file|insertion|deletion)")


def parse_shortstat(text: str) -> Churn:
    """Parse ``git diff --shortstat`` output; an absent count is 0 (git omits zeros)."""
    counts = {"file": 0, "insertion": 0, "deletion": 0}
    for number, word in _SHORTSTAT_RE.findall(text):
        counts[word] = int(number)
    return Churn(counts["file"], counts["insertion"], counts["deletion"])


def phase_verdict(before: WorkspaceState, after: WorkspaceState, boundary: PhaseBoundary) -> BoundaryVerdict:
    """Whether a phase that went from ``before`` to ``after`` stayed inside ``boundary``."""
    if boundary is PhaseBoundary.UNRESTRICTED:
        return BoundaryVerdict()
    problems = tuple(f"workspace state incomplete: {s.problem}" for s in (before, after) if s.problem)
    if problems:
        return BoundaryVerdict(problems)
    changes = diff_states(before.entries, after.entries)
    if boundary is PhaseBoundary.READ_ONLY:
        return check_read_only_phase(changes)
    kinds = {path: after.kind(path) or "" for path in after.entries}
    return check_plan_phase(changes, after_kinds=kinds)
