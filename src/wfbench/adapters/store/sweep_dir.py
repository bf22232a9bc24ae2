"""A sweep directory, read-only, for ``wfbench view`` and ``wfbench compare``.

Everything a page shows comes from here, and nothing here raises on a damaged sweep: a torn or
invalid ``results.jsonl`` line is reported as a :class:`LineProblem` and skipped (the pages say
so), and an artifact a row names comes back as an :class:`Artifact` whose ``state`` says what was
found — ``ok``, ``missing``, ``unsafe`` (an absolute path, ``..``, a symlink on the way, not a
regular file), ``too-large`` (only the first ``limit`` bytes are returned) or ``unreadable``.
Reads never leave the directory and never follow a symlink (every component is ``lstat``-ed and
the file is opened with ``O_NOFOLLOW``).

Rows are streamed line by line (:meth:`SweepDirectory.scan`), each with the byte offset of its
line, so a server can read one row back later (:meth:`SweepDirectory.row_at`) without holding
the rows in memory.
"""

from __future__ import annotations

import fcntl
import json
import os
import stat
from collections.abc import Iterator
from typing import Any

import attrs

from wfbench.adapters.store.atomic import write_bytes_atomic
from wfbench.domain.errors import InputError
from wfbench.domain.results.jsonl import parse_row_line
from wfbench.domain.results.rows import Row
from wfbench.domain.sweep.live import SweepState

__all__ = ["Artifact", "LineProblem", "StaticTree", "SweepDirectory"]

RESULTS_NAME = "results.jsonl"
MAX_JSON_BYTES = 64 * 1024 * 1024
LOCK_NAME = ".wfbench.lock"  # adapters/store/claim.LOCK_NAME (claim imports the sandbox adapters)
LOG_NAME = "wfbench.log"
#: How much of ``wfbench.log`` is searched for the ``sweep_plan`` event (it comes first).
PLAN_SEARCH_BYTES = 256 * 1024


@attrs.frozen
class Artifact:
    """One file of the sweep as found: its bytes (possibly cut at the limit) and what was wrong."""

    path: str
    state: str
    data: bytes = b""
    size: int | None = None
    detail: str | None = None

    @property
    def ok(self) -> bool:
        """True when the whole file was read."""
        return self.state == "ok"

    @property
    def readable(self) -> bool:
        """True when some bytes came back (``ok`` or ``too-large``)."""
        return self.state in ("ok", "too-large")

    def text(self) -> str:
        """The bytes as text (invalid UTF-8 replaced)."""
        return self.data.decode("utf-8", "replace")


@attrs.frozen
class LineProblem:
    """A ``results.jsonl`` line that is not a row (torn, not JSON, an invalid field)."""

    line: int
    reason: str


class SweepDirectory:
    """The files of one sweep directory (``results.jsonl``, the reports' inputs, each cell's artifacts)."""

    def __init__(self, path: str) -> None:
        self.path = os.path.realpath(path)

    @classmethod
    def open(cls, path: str) -> SweepDirectory:
        """The sweep at ``path``.

        Raises:
            InputError: not a directory, or it holds no regular ``results.jsonl``.
        """
        if not os.path.isdir(path):
            raise InputError("is not a sweep directory", source=path)
        results = os.path.join(path, RESULTS_NAME)
        try:
            mode = os.lstat(results).st_mode
        except OSError:
            mode = 0
        if not stat.S_ISREG(mode):
            raise InputError(f"holds no regular {RESULTS_NAME}", source=path)
        return cls(path)

    @property
    def results_path(self) -> str:
        """The sweep's ``results.jsonl``."""
        return os.path.join(self.path, RESULTS_NAME)

    def scan(self, problems: list[LineProblem] | None = None) -> Iterator[tuple[int, Row]]:
        """Every row with the byte offset of its line, in file order; bad lines go to ``problems``."""
        with open(self.results_path, "rb") as handle:
            offset = 0
            for number, line in enumerate(handle, start=1):
                start, offset = offset, offset + len(line)
                row = self._parse(line, number, problems, torn=not line.endswith(b"\n"))
                if row is not None:
                    yield start, row

    def rows(self, problems: list[LineProblem] | None = None) -> Iterator[Row]:
        """Every row in file order (bad lines go to ``problems``)."""
        return (row for _, row in self.scan(problems))

    def row_at(self, offset: int) -> dict[str, Any] | None:
        """The raw JSON object of the line starting at ``offset`` (None when it is no longer a row)."""
        try:
            with open(self.results_path, "rb") as handle:
                handle.seek(offset)
                line = handle.readline(MAX_JSON_BYTES)
            value = json.loads(line)
        except (OSError, ValueError):
            return None
        return value if isinstance(value, dict) else None

    def follow(self, start: int) -> Iterator[tuple[int, dict[str, Any]]]:
        """The raw rows of the complete lines from byte ``start``, each with the offset past its line.

        A torn last line (a row being written) is left for the next call; a line that is not a
        JSON object is skipped. Nothing is validated beyond that: the index only counts.
        """
        try:
            handle = open(self.results_path, "rb")  # noqa: SIM115 - a missing file yields nothing
        except OSError:
            return
        with handle:
            handle.seek(start)
            offset = start
            for line in handle:
                if not line.endswith(b"\n"):
                    return
                offset += len(line)
                try:
                    value = json.loads(line)
                except ValueError:
                    continue
                if isinstance(value, dict):
                    yield offset, value

    def state(self) -> SweepState:
        """The sweep now: the size of ``results.jsonl``, whether its lock is held, whether it is judged."""
        try:
            size = os.stat(self.results_path).st_size
        except OSError:
            size = 0
        try:
            judged_ns = os.stat(os.path.join(self.path, "promotion.json")).st_mtime_ns
        except OSError:
            judged_ns = 0
        running = _locked(os.path.join(self.path, LOCK_NAME))
        return SweepState(
            size=size,
            running=running,
            judged=judged_ns > 0,
            planned=self._planned() if running else None,
            judged_ns=judged_ns,
        )

    def _planned(self) -> int | None:
        """The cell count of the last ``sweep_plan`` event in the head of ``wfbench.log``."""
        artifact = self.artifact(LOG_NAME, limit=PLAN_SEARCH_BYTES)
        planned = None
        for line in artifact.data.splitlines():
            if b'"sweep_plan"' not in line:
                continue
            try:
                value = json.loads(line).get("planned")
            except (ValueError, AttributeError):
                continue
            planned = value if isinstance(value, int) and not isinstance(value, bool) else planned
        return planned

    def json_file(self, name: str) -> tuple[Any, str]:
        """A JSON document of the sweep root (``promotion.json``, ``manifest.json``) and its state.

        The state is ``ok``, ``missing``, ``unsafe``, ``too-large``, ``unreadable`` or ``invalid``
        (not JSON); the value is ``None`` unless the state is ``ok``.
        """
        artifact = self.artifact(name, limit=MAX_JSON_BYTES)
        if not artifact.ok:
            return None, artifact.state
        try:
            return json.loads(artifact.data), "ok"
        except ValueError:
            return None, "invalid"

    def artifact(self, rel: str, *, limit: int) -> Artifact:
        """The file ``rel`` (relative to the sweep), at most ``limit`` bytes of it, never through a link."""
        unsafe = _unsafe_reason(rel)
        if unsafe is not None:
            return Artifact(rel, "unsafe", detail=unsafe)
        path = self.path
        parts = rel.split("/")
        for index, part in enumerate(parts):
            path = os.path.join(path, part)
            try:
                mode = os.lstat(path).st_mode
            except FileNotFoundError:
                return Artifact(rel, "missing")
            except OSError as exc:
                return Artifact(rel, "unreadable", detail=exc.strerror)
            last = index == len(parts) - 1
            if stat.S_ISLNK(mode):
                return Artifact(rel, "unsafe", detail="a symlink is on the way")
            if not last and not stat.S_ISDIR(mode):
                return Artifact(rel, "missing")
            if last and not stat.S_ISREG(mode):
                return Artifact(rel, "unsafe", detail="not a regular file")
        return _read(rel, path, limit)

    def exists(self, rel: str) -> bool:
        """True when ``rel`` is a regular file of the sweep (reached without a symlink)."""
        return self.artifact(rel, limit=0).state in ("ok", "too-large")

    def _parse(
        self, line: bytes, number: int, problems: list[LineProblem] | None, *, torn: bool
    ) -> Row | None:
        try:
            row = parse_row_line(line, source=RESULTS_NAME, number=number)
        except InputError as exc:
            if problems is not None:
                reason = "torn (no line end) — " + exc.reason if torn else exc.reason
                where = f"{exc.field}: " if exc.field else ""
                problems.append(LineProblem(number, where + reason))
            return None
        if row is not None and torn and problems is not None:
            problems.append(
                LineProblem(number, "the last line has no line end (the sweep may still be running)")
            )
        return row


def _locked(path: str) -> bool:
    """True when another process holds an exclusive lock on ``path`` (a running sweep's claim).

    Probed with a shared, non-blocking lock taken and dropped at once; a missing file is no lock.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def _unsafe_reason(rel: str) -> str | None:
    if not rel or rel.startswith("/") or "\x00" in rel or "\\" in rel:
        return "not a relative path"
    if any(part in ("", ".", "..") for part in rel.split("/")):
        return "climbs out of the sweep"
    return None


def _read(rel: str, path: str, limit: int) -> Artifact:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        return Artifact(rel, "unreadable", detail=exc.strerror)
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        data = handle.read(limit) if limit > 0 else b""
    state = "too-large" if size > limit else "ok"
    return Artifact(rel, state, data, size)


class StaticTree:
    """Writes the pages of ``wfbench view --static`` under one directory (each file replaced whole).

    Each page lands through :func:`~wfbench.adapters.store.atomic.write_bytes_atomic`, so a reader
    never sees half a page and two exports never share a temporary.
    """

    def __init__(self, root: str) -> None:
        self.root = os.path.abspath(root)
        self._made: set[str] = set()

    def write(self, rel: str, data: bytes) -> None:
        """Write ``data`` to ``root/rel`` (``rel`` relative, no ``..``)."""
        if _unsafe_reason(rel) is not None:
            raise ValueError(f"unsafe page path {rel!r}")
        path = os.path.join(self.root, rel)
        parent = os.path.dirname(path)
        if parent not in self._made:
            os.makedirs(parent, exist_ok=True)
            self._made.add(parent)
        write_bytes_atomic(path, data)
