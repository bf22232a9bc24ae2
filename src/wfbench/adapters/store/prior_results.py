"""A prior sweep's output directory, for ``--reuse-results DIR`` (the app's ``PriorResults``).

:meth:`PriorResultsDir.open` refuses a directory that is the sweep's own output or that holds
no regular ``results.jsonl``. :meth:`PriorResultsDir.copy_artifacts` copies the files a reused
row names, all or nothing: every source must be a regular file inside the directory (never
through a symlink), and a transcript's recorded size and sha256 are re-checked on the bytes
actually copied, so an artifact that drifted since it was recorded is refused and nothing is
left behind (the cell then runs as a paid cell).
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Sequence

from wfbench.adapters.store.atomic import write_bytes_atomic
from wfbench.adapters.store.jsonl_store import JsonlResultStore
from wfbench.domain.errors import InputError
from wfbench.domain.results.rows import Row

__all__ = ["PriorResultsDir"]

RESULTS_NAME = "results.jsonl"
MAX_ARTIFACT_BYTES = 64 * 1024 * 1024
_CHUNK = 1 << 16


class PriorResultsDir:
    """The rows and artifacts of one prior sweep directory."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._rows: tuple[Row, ...] | None = None

    @classmethod
    def open(cls, path: str, *, out_dir: str) -> PriorResultsDir:
        """Validate ``path`` against the sweep's ``out_dir``.

        Raises:
            InputError: it is the output directory, or has no regular ``results.jsonl``.
        """
        real = os.path.realpath(path)
        if real == os.path.realpath(out_dir):
            raise InputError(
                "must not be the sweep's own --out directory", source=path, field="--reuse-results"
            )
        results = os.path.join(real, RESULTS_NAME)
        try:
            mode = os.lstat(results).st_mode
        except OSError:
            mode = 0
        if not stat.S_ISREG(mode):
            raise InputError(f"holds no regular {RESULTS_NAME}", source=path, field="--reuse-results")
        return cls(real)

    def rows(self) -> tuple[Row, ...]:
        """Every row of the prior ``results.jsonl`` (read once).

        Raises:
            InputError: a torn or invalid line (file, line and field named).
        """
        if self._rows is None:
            self._rows = JsonlResultStore(os.path.join(self.path, RESULTS_NAME)).rows()
        return self._rows

    def copy_artifacts(
        self, artifacts: Sequence[tuple[str, str, str | None, int | None, bool]], dest_dir: str
    ) -> None:
        """Copy ``(source, destination, sha256, size, required)`` entries, each one durably.

        Every source is checked (size, sha256) before any destination is replaced, so a drifted
        artifact changes nothing; each copy then lands whole (``adapters/store/atomic.py``).

        ``source`` is relative to this directory, ``destination`` to ``dest_dir`` (the two differ
        when a legacy flat layout is relocated into ``cells/``). An absent optional source is
        skipped; when several sources name one destination, the first present one is copied.

        Raises:
            ValueError: an unsafe path, a drifted size or sha256.
            OSError: a required file is missing or unreadable, or a copy failed.
        """
        staged: list[tuple[str, str, str, str | None, int | None]] = []
        done: set[str] = set()
        for rel, dest, sha256, size, required in artifacts:
            _check_relative(dest)
            if dest in done:
                continue
            source = self._source(rel)
            if source is None:
                if required:
                    raise FileNotFoundError(f"{rel} is missing from {self.path}")
                continue
            done.add(dest)
            _read_checked(source, rel, sha256, size)  # every file checked before any is replaced
            staged.append((source, rel, os.path.join(dest_dir, dest), sha256, size))
        for source, rel, target, sha256, size in staged:
            os.makedirs(os.path.dirname(target), mode=0o700, exist_ok=True)
            write_bytes_atomic(target, _read_checked(source, rel, sha256, size))

    def _source(self, rel: str) -> str | None:
        """The file ``rel`` names inside the directory, or ``None`` when absent (ValueError when unsafe)."""
        norm = _check_relative(rel)
        path = os.path.join(self.path, norm)
        parent = os.path.realpath(os.path.dirname(path))
        if parent != self.path and not parent.startswith(self.path + os.sep):
            raise ValueError(f"artifact path {rel!r} leaves {self.path}")
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            return None
        if not stat.S_ISREG(mode):
            raise ValueError(f"artifact {rel!r} is not a regular file")
        return path


def _check_relative(rel: str) -> str:
    """``rel`` normalized; ValueError when it is absolute, empty or climbs out of its root."""
    norm = os.path.normpath(rel)
    if os.path.isabs(rel) or norm.startswith("..") or "\x00" in rel or norm in (".", ""):
        raise ValueError(f"unsafe artifact path {rel!r}")
    return norm


def _read_checked(source: str, rel: str, sha256: str | None, size: int | None) -> bytes:
    """The bytes of ``source`` when they are the recorded ones (ValueError: too big or drifted)."""
    digest = hashlib.sha256()
    chunks: list[bytes] = []
    read = 0
    fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as reader:
        while chunk := reader.read(_CHUNK):
            read += len(chunk)
            if read > MAX_ARTIFACT_BYTES:
                raise ValueError(f"artifact {rel} exceeds {MAX_ARTIFACT_BYTES} bytes")
            digest.update(chunk)
            chunks.append(chunk)
    if size is not None and read != size:
        raise ValueError(f"artifact {rel} drifted: {read} bytes, {size} recorded")
    if sha256 is not None and digest.hexdigest() != sha256:
        raise ValueError(f"artifact {rel} drifted: its sha256 differs from the recorded one")
    return b"".join(chunks)
