"""Rows from the bytes of a ``results.jsonl`` file (pure): one JSON object per line.

Reading the file is the caller's job (the JSONL store, or ``Path(p).read_bytes()`` in another
tool); decoding is here so every reader refuses the same things with the same message, naming
the source, the line and the field. :func:`parse_row_lines` decodes lines as they come (an open
binary file is an iterable of lines), so a reader never has to hold the whole file or every row.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from wfbench.domain.errors import InputError
from wfbench.domain.results.rows import Row

__all__ = ["parse_row_line", "parse_row_lines", "parse_rows"]


def parse_rows(data: bytes, *, source: str = "results.jsonl") -> tuple[Row, ...]:
    """Every row of a ``results.jsonl`` document, in order; blank lines are skipped.

    Raises:
        InputError: a line is torn, not JSON, not an object, or has an invalid field (names
            ``source``, the line and the field).
    """
    return tuple(parse_row_lines(data.split(b"\n"), source=source))


def parse_row_lines(lines: Iterable[bytes], *, source: str = "results.jsonl") -> Iterator[Row]:
    """The rows of ``lines`` (numbered from 1, with or without their ``\\n``), one at a time.

    Raises:
        InputError: as :func:`parse_rows`, when the bad line is reached (rows before it have
            been yielded; a caller that must write nothing on bad input writes after the end).
    """
    for number, line in enumerate(lines, start=1):
        # Decode without the line end, so JSON error positions read as in ``data.split(b"\n")``.
        row = parse_row_line(line[:-1] if line.endswith(b"\n") else line, source=source, number=number)
        if row is not None:
            yield row


def parse_row_line(line: bytes, *, source: str, number: int) -> Row | None:
    """One line of a ``results.jsonl`` document as a row (None for a blank line). Raises InputError."""
    if not line.strip():
        return None
    locator = f"line {number}"
    try:
        value: Any = _decode(line.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError("is not valid UTF-8", source=source, locator=locator) from None
    except ValueError as exc:
        raise InputError(f"torn or invalid JSON: {exc}", source=source, locator=locator) from None
    except RecursionError:
        raise InputError("invalid JSON: nested too deeply", source=source, locator=locator) from None
    if not isinstance(value, dict):
        raise InputError("a row must be a JSON object", source=source, locator=locator)
    try:
        return Row.from_mapping(value)
    except InputError as exc:
        raise exc.located(source=source, locator=locator) from None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


#: One decoder for every line: ``json.loads`` with a hook builds a new one per call (a tenth of
#: the decoding time of a million-row file). ``decode`` is what ``json.loads`` calls, same errors.
_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)


def _decode(text: str) -> Any:
    if text.startswith("\ufeff"):  # json.loads's own check, which ``JSONDecoder.decode`` lacks
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    return _DECODER.decode(text)
