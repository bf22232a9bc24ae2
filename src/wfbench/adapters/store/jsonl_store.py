"""The JSONL result store: one row per line, appended whole, flushed and fsynced.

``results.jsonl`` is readable by ``jq`` and by the reference harness's tools: each line is one
JSON object with the reference's field names (see :class:`wfbench.domain.results.rows.Row`). Reading
refuses a torn or invalid line with an :class:`InputError` naming the file, the line and the
field; a row is never skipped silently. Fields wfbench does not model are kept verbatim.
:meth:`JsonlResultStore.iter_rows` and :func:`iter_rows` read line by line, so a million-row
file is never in memory at once (``wfbench gate`` and ``report`` summarize it as it streams).

Also here: :func:`write_json_atomic` and :func:`write_text_atomic`, which replace a file in one
rename so a reader never sees it half-written.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from wfbench.adapters.store.atomic import write_bytes_atomic
from wfbench.adapters.store.json_indent import dumps_indented
from wfbench.domain.errors import STORAGE_ERRNOS, InputError, SweepStorageError
from wfbench.domain.results.jsonl import parse_row_lines
from wfbench.domain.results.rows import Row

if TYPE_CHECKING:
    import cattrs

__all__ = ["JsonlResultStore", "iter_rows", "read_rows", "write_json_atomic", "write_text_atomic"]


def make_converter() -> cattrs.Converter:
    """A cattrs converter that (un)structures rows through their named constructors.

    Imported here, not at module level: reading rows (``wfbench gate``) never needs cattrs.
    """
    import cattrs

    converter = cattrs.Converter()
    converter.register_unstructure_hook(Row, Row.to_mapping)
    converter.register_structure_hook(Row, lambda raw, _cls: Row.from_mapping(raw))
    return converter


class JsonlResultStore:
    """The :class:`~wfbench.domain.ports.ResultStore` port over one ``results.jsonl`` file."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._converter: cattrs.Converter | None = None

    def append(self, row: Row) -> None:
        """Append ``row`` as one line with a single write, then flush and fsync.

        Raises:
            InputError: the file ends in a torn line (appending would glue a row onto it).
            SweepStorageError: the disk refuses writes (full, quota, read-only, I/O error); rows
                already written are intact.
            OSError: the row could not be written otherwise; rows already written are intact.
        """
        if self._converter is None:
            self._converter = make_converter()
        data = encode_row(row, self._converter)
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            if exc.errno in STORAGE_ERRNOS:
                raise SweepStorageError.of(exc, path=str(self.path)) from exc
            raise
        try:
            self._refuse_torn_tail(fd)
            start = os.fstat(fd).st_size
            try:
                written = os.write(fd, data)
                while written < len(data):  # only on a short write (e.g. a signal); finish the line
                    written += os.write(fd, data[written:])
                os.fsync(fd)
            except OSError as exc:
                # A full disk can take part of the line: cut it off so no torn row is left behind.
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, start)
                if exc.errno in STORAGE_ERRNOS:
                    raise SweepStorageError.of(exc, path=str(self.path)) from exc
                raise
        finally:
            os.close(fd)

    def rows(self) -> tuple[Row, ...]:
        """Every row in the order appended (empty when the file does not exist yet).

        Raises:
            InputError: a line is torn, not JSON, not an object, or has an invalid field.
        """
        return tuple(self.iter_rows())

    def iter_rows(self) -> Iterator[Row]:
        """The rows in the order appended, read and decoded one line at a time.

        Raises:
            InputError: when a torn or invalid line is reached (the rows before it were yielded).
        """
        if not self.path.exists():
            return iter(())
        return _stream(self.path)

    def _refuse_torn_tail(self, fd: int) -> None:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            raise InputError(
                "the last line is torn (no newline at its end); refusing to append after it",
                source=str(self.path),
            )


def encode_row(row: Row, converter: cattrs.Converter | None = None) -> bytes:
    """One row as a JSON line (UTF-8, newline-terminated, no NaN or infinity)."""
    mapping = (converter or make_converter()).unstructure(row)
    return (json.dumps(mapping, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


def read_rows(path: str | os.PathLike[str]) -> tuple[Row, ...]:
    """Every row of a ``results.jsonl`` file.

    Raises:
        InputError: the file is missing or unreadable, or a line is torn or invalid.
    """
    return tuple(iter_rows(path))


def iter_rows(path: str | os.PathLike[str]) -> Iterator[Row]:
    """The rows of a ``results.jsonl`` file, read line by line (see :func:`read_rows`)."""
    source = Path(path)
    if not source.is_file():
        raise InputError("no such results file", source=str(source))
    return _stream(source)


#: Read size of the line reader: large enough that a million-row file costs few system calls.
_READ_BUFFER = 1 << 20


def _stream(path: Path) -> Iterator[Row]:
    try:
        handle = path.open("rb", buffering=_READ_BUFFER)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", source=str(path)) from None
    return _lines_as_rows(handle, path)


def _lines_as_rows(handle: BinaryIO, path: Path) -> Iterator[Row]:
    with handle:
        try:
            yield from parse_row_lines(handle, source=str(path))
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror or exc}", source=str(path)) from None


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Replace ``path`` with ``text`` (UTF-8, ``\\n`` line ends) atomically."""
    write_bytes_atomic(path, text.encode("utf-8"))


def write_json_atomic(path: str | os.PathLike[str], obj: Any) -> str:
    """Write ``obj`` as indented JSON (no NaN), replacing ``path`` atomically; the text written."""
    text = dumps_indented(obj) + "\n"
    write_text_atomic(path, text)
    return text
