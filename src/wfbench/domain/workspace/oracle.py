"""Hidden oracles as values: declared files, their limits, and the in-memory bundle with digests.

The adapter (``wfbench.adapters.oracle_files``) reads the files; this module decides what a
declaration may say and computes the digests (``docs/concepts.md``, "Hidden oracles"). ``H`` is
sha256 over frames, each an 8-byte big-endian length followed by the bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

import attrs

from wfbench.domain.workspace.rules import relative_path_problem


@attrs.frozen
class OracleLimits:
    """Bounds on what a task's oracle may capture (reference defaults: 8 files, 512 KiB, 2 MiB)."""

    max_files: int = 8
    max_file_bytes: int = 512 * 1024
    max_total_bytes: int = 2 * 1024 * 1024


@attrs.frozen
class OracleFileSpec:
    """A declared oracle file: ``source`` relative to the corpus, staged at ``target``."""

    source: str
    target: str


@attrs.frozen
class OracleFile:
    """One captured oracle file: its bytes and their sha256 (hex)."""

    target: str
    data: bytes = attrs.field(repr=False)
    sha256: str

    @classmethod
    def of(cls, target: str, data: bytes) -> OracleFile:
        """Capture ``data`` for ``target`` with its digest."""
        return cls(target, data, hashlib.sha256(data).hexdigest())

    @property
    def size(self) -> int:
        """Length in bytes."""
        return len(self.data)


def _framed(parts: Iterable[bytes]) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()


@attrs.frozen
class OracleBundle:
    """A task's oracle files held in memory, sorted by target."""

    files: tuple[OracleFile, ...]

    @property
    def manifest_digest(self) -> str:
        """H over (target, sha256 hex, decimal size) of every file."""
        parts: list[bytes] = []
        for item in self.files:
            parts += [item.target.encode(), item.sha256.encode(), str(item.size).encode()]
        return _framed(parts)

    def digest(self, command: str = "") -> str:
        """H over the command, then (target, payload) for each file."""
        parts = [command.encode()]
        for item in self.files:
            parts += [item.target.encode(), item.data]
        return _framed(parts)

    @property
    def total_bytes(self) -> int:
        """Bytes over all files."""
        return sum(item.size for item in self.files)


def declaration_problems(
    specs: Sequence[OracleFileSpec], limits: OracleLimits
) -> tuple[tuple[str, str], ...]:
    """(path, reason) for each rule a declaration breaks before any file is read.

    Rules: 1..``max_files`` entries; sources and targets simple relative paths; no target
    under ``.git``; no duplicate sources or targets.
    """
    problems: list[tuple[str, str]] = []
    if not specs:
        problems.append(("", "oracle declares no files"))
    if len(specs) > limits.max_files:
        problems.append(
            ("", f"oracle declares {len(specs)} files, more than the limit of {limits.max_files}")
        )
    seen_sources: set[str] = set()
    seen_targets: set[str] = set()
    for spec in specs:
        for role, path in (("source", spec.source), ("target", spec.target)):
            reason = relative_path_problem(path)
            if reason:
                problems.append((path, f"oracle {role}: {reason}"))
        if spec.target == ".git" or spec.target.startswith(".git/"):
            problems.append((spec.target, "oracle target may not be under .git"))
        if spec.source in seen_sources:
            problems.append((spec.source, "duplicate oracle source"))
        if spec.target in seen_targets:
            problems.append((spec.target, "duplicate oracle target"))
        seen_sources.add(spec.source)
        seen_targets.add(spec.target)
    return tuple(problems)
