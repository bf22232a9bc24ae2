"""Applying a promoted overlay: where its files go, what they must replace, and how to recover.

Pure decisions for ``wfbench promote apply`` (the file I/O is in
:mod:`wfbench.adapters.repo.skill_transaction`):

* :func:`destinations` maps an overlay's files (``.claude/skills/<skill>/…``) onto the canonical
  skill location and every mirror (``<mirror>/<skill>/…``);
* :func:`base_digests` is the ``target_base_digests`` map a sweep records and an applier
  recomputes: every file of the touched skills at every destination, plus every destination the
  overlay adds (:data:`ABSENT`), each with the sha256 of its incumbent bytes;
* :func:`swap_conflicts` is the compare-and-swap check against those digests;
* :class:`Journal` is the write-ahead record of one transaction and :func:`recovery` /
  :func:`recovery_step` decide, after a crash at any point, how to finish it: forward to all new
  bytes once the commit point is recorded, back to all old bytes before it.
"""

from __future__ import annotations

import enum
import hashlib
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

import attrs

from wfbench.domain.errors import InputError

__all__ = [
    "ABSENT",
    "CANONICAL_SKILLS_DIR",
    "CommitSpec",
    "Direction",
    "Journal",
    "JournalState",
    "Step",
    "SwapEntry",
    "SwapOutcome",
    "base_digests",
    "destinations",
    "recovery",
    "recovery_step",
    "sha256_bytes",
    "skill_roots",
    "swap_conflicts",
]

#: The digest recorded for a destination that does not exist before the apply.
ABSENT = "absent"
#: Where a repository's skills live: ``.claude/skills/<skill>/``.
CANONICAL_SKILLS_DIR = ".claude/skills"
JOURNAL_SCHEMA = 1
_HEX64 = re.compile(r"[0-9a-f]{64}")
_SEGMENT = re.compile(r"[^/\x00]+")


def sha256_bytes(data: bytes) -> str:
    """Lowercase hex sha256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def _relative(path: str, what: str) -> str:
    """A normalised relative POSIX path (no ``..``, no empty or ``.`` segment), or InputError."""
    parts = path.strip("/").split("/")  # "" splits into one empty part, which the segment rule refuses
    if path.startswith("/") or any(part in (".", "..") or not _SEGMENT.fullmatch(part) for part in parts):
        raise InputError(f"must be a relative path inside the repository: {path!r}", field=what)
    return "/".join(parts)


def _in_skill(overlay_path: str) -> str:
    """``<skill>/<rest>`` of ``.claude/skills/<skill>/<rest>`` (a normalised path), or InputError."""
    prefix = CANONICAL_SKILLS_DIR + "/"
    if not overlay_path.startswith(prefix) or overlay_path.count("/") < 3:
        raise InputError(f"is not under {CANONICAL_SKILLS_DIR}/<skill>/: {overlay_path}", field="overlay")
    return overlay_path[len(prefix) :]


def destinations(
    files: Sequence[tuple[str, bytes]], mirrors: Sequence[str] = (), *, root_files: Collection[str] = ()
) -> tuple[tuple[str, bytes], ...]:
    """Every (destination, new bytes) of an overlay: the canonical path, then each mirror's.

    ``files`` are the overlay's ``(.claude/skills/<skill>/<rest>, bytes)``; a mirror ``M`` holds
    skills as ``M/<skill>/<rest>``. A file named in ``root_files`` (an instruction file such as
    ``AGENTS.md`` at the repository root) is written where it is, and only there. Sorted.

    Raises:
        InputError: a file outside ``.claude/skills/<skill>/`` (and not a root file), a mirror
            that is not a relative path inside the repository, a mirror inside the canonical
            skills directory or repeated, or two destinations that coincide.
    """
    roots = [CANONICAL_SKILLS_DIR]
    for mirror in mirrors:
        root = _relative(mirror, "--mirror")
        if root in roots or any(root.startswith(r + "/") or r.startswith(root + "/") for r in roots):
            raise InputError(f"overlaps another skill location: {mirror}", field="--mirror")
        roots.append(root)
    out: dict[str, bytes] = {}
    expected = 0
    for path, data in files:
        rel = _relative(path, "overlay")
        if rel in root_files and "/" not in rel:
            out[rel] = data
            expected += 1
            continue
        in_skill = _in_skill(rel)
        for root in roots:
            out[f"{root}/{in_skill}"] = data
        expected += len(roots)
    if len(out) != expected:
        raise InputError("two overlay files map to the same destination", field="overlay")
    return tuple(sorted(out.items()))


def skill_roots(skills: Iterable[str], mirrors: Sequence[str] = ()) -> tuple[str, ...]:
    """The directories whose every file is bound: ``<root>/<skill>`` for each root and skill."""
    roots = (CANONICAL_SKILLS_DIR, *(_relative(m, "--mirror") for m in mirrors))
    return tuple(f"{root}/{skill}" for root in roots for skill in sorted(set(skills)))


def base_digests(incumbent: Mapping[str, bytes | None], dests: Iterable[str]) -> dict[str, str]:
    """``target_base_digests``: every incumbent file and every destination → sha256 (or ABSENT).

    ``incumbent`` maps each existing file under the touched skill roots (canonical and mirrors)
    to its bytes (``None``: absent); ``dests`` are the overlay's destinations. Sorted by path.
    """
    paths = set(incumbent) | set(dests)
    return {
        path: ABSENT if incumbent.get(path) is None else sha256_bytes(incumbent[path] or b"")
        for path in sorted(paths)
    }


@attrs.frozen
class SwapEntry:
    """One destination of a transaction: its bytes before (``base``) and after (``new``)."""

    path: str
    base: str
    new: str

    def to_mapping(self) -> dict[str, str]:
        """JSON-ready form (for the journal)."""
        return {"path": self.path, "base": self.base, "new": self.new}


@attrs.frozen
class CommitSpec:
    """Commit the swapped files: on a new ``branch`` (None: the current branch), with ``message``."""

    message: str
    branch: str | None = None


@attrs.frozen
class SwapOutcome:
    """What a swap did: every destination it wrote, and the commit when one was asked for."""

    entries: tuple[SwapEntry, ...]
    commit: str | None = None


def swap_conflicts(expected: Mapping[str, str], current: Mapping[str, str]) -> tuple[str, ...]:
    """Compare-and-swap: every bound path whose current digest is not the recorded base one.

    ``expected`` is ``target_base_digests``; ``current`` maps the same paths to the digest of
    what is there now (:data:`ABSENT` for nothing). One line per conflicting path.
    """
    problems = []
    for path, digest in sorted(expected.items()):
        now = current.get(path)
        if now != digest:
            state = (
                "is absent" if now == ABSENT else "was removed or is unreadable" if now is None else "changed"
            )
            problems.append(f"{path} {state} since the evidence was recorded (compare-and-swap refused)")
    return tuple(problems)


class JournalState(enum.StrEnum):
    """Where a transaction stood when its journal was last written."""

    #: Staging (new bytes and backups) is under way or done; no destination has been replaced.
    PREPARED = "prepared"
    #: The commit point: every destination is to hold its new bytes.
    COMMITTED = "committed"
    #: A failure after the commit point is being undone: every destination back to its base.
    ROLLING_BACK = "rolling-back"


class Direction(enum.StrEnum):
    """How recovery finishes an interrupted transaction."""

    FORWARD = "forward"
    BACK = "back"


class Step(enum.StrEnum):
    """What recovery does to one destination."""

    NOTHING = "nothing"
    #: Move the staged new bytes into place.
    INSTALL_NEW = "install-new"
    #: Move the backup of the base bytes into place.
    RESTORE_BASE = "restore-base"
    #: Remove the destination (its base was absent).
    REMOVE = "remove"
    #: The destination holds neither the base nor the new bytes: someone else wrote it.
    CONFLICT = "conflict"


@attrs.frozen
class Journal:
    """The write-ahead record of one transaction (written atomically before every phase change)."""

    txid: str
    state: JournalState
    entries: tuple[SwapEntry, ...]
    #: Directories the transaction creates (parents first), removed again when it rolls back.
    created_dirs: tuple[str, ...] = ()
    message: str | None = None

    def to_mapping(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "schema": JOURNAL_SCHEMA,
            "txid": self.txid,
            "state": self.state.value,
            "entries": [entry.to_mapping() for entry in self.entries],
            "created_dirs": list(self.created_dirs),
            "message": self.message,
        }

    @classmethod
    def from_mapping(cls, raw: Any) -> Journal:
        """Read what :meth:`to_mapping` wrote.

        Raises:
            InputError: the journal is not one this version wrote (named field).
        """
        if not isinstance(raw, Mapping) or raw.get("schema") != JOURNAL_SCHEMA:
            raise InputError("is not a wfbench apply journal (schema 1)", field="journal")
        txid, state = raw.get("txid"), raw.get("state")
        if not isinstance(txid, str) or not txid or state not in set(JournalState):
            raise InputError("has no transaction id or a bad state", field="journal")
        entries_raw = raw.get("entries")
        dirs = raw.get("created_dirs")
        message = raw.get("message")
        if not isinstance(entries_raw, list) or not isinstance(dirs, list):
            raise InputError("must list entries and created_dirs", field="journal")
        entries = []
        for item in entries_raw:
            if not isinstance(item, Mapping) or not all(
                isinstance(item.get(key), str) for key in ("path", "base", "new")
            ):
                raise InputError("has a malformed entry", field="journal.entries")
            for key in ("base", "new"):
                if item[key] != ABSENT and not _HEX64.fullmatch(item[key]):
                    raise InputError(f"has a malformed {key} digest", field="journal.entries")
            entries.append(SwapEntry(_relative(item["path"], "journal.entries"), item["base"], item["new"]))
        if not all(isinstance(d, str) for d in dirs) or not (message is None or isinstance(message, str)):
            raise InputError("has malformed created_dirs or message", field="journal")
        return cls(
            txid=txid,
            state=JournalState(state),
            entries=tuple(entries),
            created_dirs=tuple(_relative(d, "journal.created_dirs") for d in dirs),
            message=message,
        )


def recovery(journal: Journal) -> Direction:
    """Forward once the commit point was recorded, back before it or while rolling back."""
    return Direction.FORWARD if journal.state is JournalState.COMMITTED else Direction.BACK


def recovery_step(entry: SwapEntry, current: str, direction: Direction) -> Step:
    """What to do with one destination whose current digest is ``current`` (ABSENT: missing).

    Idempotent: a destination already at its target is left alone, so recovery interrupted by
    another crash simply runs again.
    """
    target, other = (entry.new, entry.base) if direction is Direction.FORWARD else (entry.base, entry.new)
    if current == target:
        return Step.NOTHING
    if current != other:
        return Step.CONFLICT
    if target == ABSENT:
        return Step.REMOVE
    return Step.INSTALL_NEW if direction is Direction.FORWARD else Step.RESTORE_BASE
