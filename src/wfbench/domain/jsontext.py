"""A strict, pure-Python JSON reader for the domain (which may not import :mod:`json`).

:func:`loads` accepts exactly RFC 8259 JSON and agrees with :func:`json.loads` on every document
both accept. Where they fail on the same text, the message, line and column are those
:class:`json.JSONDecodeError` reports (``Expecting value``, ``Expecting ',' delimiter``,
``Unterminated string starting at``...), so an agent reading wfbench's error sees what Python would
have said.

Stricter than :func:`json.loads`, on purpose (each refused with its own message):

- ``NaN``, ``Infinity`` and ``-Infinity`` (not JSON; Python accepts them);
- numbers that overflow a float, such as ``1e400`` (Python turns them into infinity);
- integers longer than 4300 digits (Python raises a plain ``ValueError``);
- duplicate keys in one object (Python silently keeps the last one, so a reviewer could not see
  which value was scored);
- nesting deeper than :data:`MAX_DEPTH` (Python raises ``RecursionError`` near 1000).

A leading byte-order mark is refused with Python's own message.
"""

from __future__ import annotations

import math
import re

__all__ = ["MAX_DEPTH", "JsonSyntaxError", "loads"]

#: Deepest nesting of arrays and objects accepted. Review documents need 3; 64 keeps the recursion
#: far below Python's limit even under a tracer or mutation-testing trampolines.
MAX_DEPTH = 64

_WS = re.compile(r"[ \t\n\r]*")
_WS_CHARS = " \t\n\r"
_NUMBER = re.compile(r"(-?(?:0|[1-9][0-9]*))(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_PLAIN_STRING = re.compile(r'[^"\\\x00-\x1f]*+"')
#: The longest valid string body (escapes included) from a position, checked in one C-level match.
#: Like Python's decoder, a \\uXXXX escape that ends the text is invalid (nothing can close it).
_STRING_BODY = re.compile(r'(?:[^"\\\x00-\x1f]++|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4}(?=.))*+', re.DOTALL)
_UNICODE_ESCAPE = re.compile(
    r"\\u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})|\\u([0-9a-fA-F]{4})"
)
_SIMPLE_ESCAPES = (
    ('\\"', '"'),
    ("\\/", "/"),
    ("\\b", "\b"),
    ("\\f", "\f"),
    ("\\n", "\n"),
    ("\\r", "\r"),
    ("\\t", "\t"),
)
_NON_FINITE = ("NaN", "Infinity", "-Infinity")
_MAX_INT_DIGITS = 4300


class JsonSyntaxError(ValueError):
    """The text is not (strict) JSON. ``msg`` is the cause; ``lineno``/``colno`` are 1-based."""

    def __init__(self, msg: str, lineno: int, colno: int, pos: int = 0) -> None:
        self.msg = msg
        self.lineno = lineno
        self.colno = colno
        self.pos = pos
        super().__init__(f"{msg}: line {lineno} column {colno} (char {pos})")

    @classmethod
    def at(cls, msg: str, text: str, pos: int) -> JsonSyntaxError:
        """The error ``msg`` at character offset ``pos`` of ``text`` (lines split on ``\\n`` only)."""
        lineno = text.count("\n", 0, pos) + 1
        colno = pos - text.rfind("\n", 0, pos)
        return cls(msg, lineno, colno, pos)


def loads(text: str) -> object:
    """Parse one JSON document. Raises :class:`JsonSyntaxError` for anything that is not strict JSON."""
    if text.startswith("\ufeff"):
        raise JsonSyntaxError.at("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    reader = _Reader(text)
    value, end = reader.value(_WS.match(text, 0).end(), 0)  # type: ignore[union-attr]
    end = _WS.match(text, end).end()  # type: ignore[union-attr]
    if end != len(text):
        raise JsonSyntaxError.at("Extra data", text, end)
    return value


class _Reader:
    """Recursive descent over one text; every method takes a position and returns (value, end)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def error(self, msg: str, pos: int) -> JsonSyntaxError:
        return JsonSyntaxError.at(msg, self.text, pos)

    def skip(self, pos: int) -> int:
        """The first position at or after ``pos`` that is not JSON whitespace."""
        text = self.text
        if pos < len(text) and text[pos] in _WS_CHARS:
            return _WS.match(text, pos).end()  # type: ignore[union-attr]
        return pos

    def value(self, pos: int, depth: int) -> tuple[object, int]:
        """The value starting exactly at ``pos`` (whitespace already skipped)."""
        text = self.text
        char = text[pos : pos + 1]
        if char == '"':
            return self.string(pos + 1)
        if char == "{":
            return self.object(pos + 1, depth + 1)
        if char == "[":
            return self.array(pos + 1, depth + 1)
        if char == "n" and text.startswith("null", pos):
            return None, pos + 4
        if char == "t" and text.startswith("true", pos):
            return True, pos + 4
        if char == "f" and text.startswith("false", pos):
            return False, pos + 5
        match = _NUMBER.match(text, pos)
        if match is not None:
            return self.number(match), match.end()
        if text.startswith(_NON_FINITE, pos):
            raise self.error("Expecting value (NaN and Infinity are not JSON)", pos)
        raise self.error("Expecting value", pos)

    def number(self, match: re.Match[str]) -> int | float:
        integer, fraction, exponent = match.groups()
        if fraction is None and exponent is None:
            if len(integer) > _MAX_INT_DIGITS:
                raise self.error("Number too long", match.start())
            return int(integer)
        result = float(match.group())
        if math.isinf(result):
            raise self.error("Number out of range", match.start())
        return result

    def string(self, pos: int) -> tuple[str, int]:
        """The string whose opening quote is at ``pos - 1``."""
        text = self.text
        plain = _PLAIN_STRING.match(text, pos)
        if plain is not None:
            end = plain.end()
            return text[pos : end - 1], end
        body = _STRING_BODY.match(text, pos)
        end = body.end()  # type: ignore[union-attr]
        if text[end : end + 1] != '"':
            raise self.string_error(pos - 1, end)
        return _unescape(text[pos:end]), end + 1

    def string_error(self, begin: int, end: int) -> JsonSyntaxError:
        """Why the string opened at ``begin`` stops being valid at ``end`` (Python's message)."""
        char = self.text[end : end + 1]
        if char == "\\":
            escape = self.text[end + 1 : end + 2]
            if escape == "u":
                return self.error("Invalid \\uXXXX escape", end + 1)
            if escape:
                return self.error("Invalid \\escape", end)
        elif char:
            return self.error("Invalid control character at", end)
        return self.error("Unterminated string starting at", begin)

    def array(self, pos: int, depth: int) -> tuple[list[object], int]:
        """The array whose ``[`` is at ``pos - 1``."""
        if depth > MAX_DEPTH:
            raise self.error(f"Nesting deeper than {MAX_DEPTH} levels", pos - 1)
        text = self.text
        items: list[object] = []
        pos = self.skip(pos)
        if text[pos : pos + 1] == "]":
            return items, pos + 1
        while True:
            item, pos = self.value(pos, depth)
            items.append(item)
            pos = self.skip(pos)
            char = text[pos : pos + 1]
            if char == "]":
                return items, pos + 1
            if char != ",":
                raise self.error("Expecting ',' delimiter", pos)
            pos = self.skip(pos + 1)

    def object(self, pos: int, depth: int) -> tuple[dict[str, object], int]:
        """The object whose ``{`` is at ``pos - 1``. A repeated key is an error."""
        if depth > MAX_DEPTH:
            raise self.error(f"Nesting deeper than {MAX_DEPTH} levels", pos - 1)
        text = self.text
        members: dict[str, object] = {}
        pos = self.skip(pos)
        if text[pos : pos + 1] == "}":
            return members, pos + 1
        while True:
            if text[pos : pos + 1] != '"':
                raise self.error("Expecting property name enclosed in double quotes", pos)
            key_pos = pos
            key, pos = self.string(pos + 1)
            if key in members:
                raise self.error(f"Duplicate object key {_shown(key)}", key_pos)
            pos = self.skip(pos)
            if text[pos : pos + 1] != ":":
                raise self.error("Expecting ':' delimiter", pos)
            members[key], pos = self.value(self.skip(pos + 1), depth)
            pos = self.skip(pos)
            char = text[pos : pos + 1]
            if char == "}":
                return members, pos + 1
            if char != ",":
                raise self.error("Expecting ',' delimiter", pos)
            pos = self.skip(pos + 1)


def _unescape(body: str) -> str:
    """Decode the body of a string already known to be valid (every backslash starts an escape).

    Escaped backslashes become NUL first (a raw NUL cannot occur in a valid body), so the other
    escapes can be replaced over the whole body at C speed, left to right as the grammar reads them.
    """
    body = body.replace("\\\\", "\0")
    for escape, char in _SIMPLE_ESCAPES:
        body = body.replace(escape, char)
    if "\\u" not in body:
        return body.replace("\0", "\\")
    pieces = _UNICODE_ESCAPE.split(body)  # text, (high, low, single), text, (high, low, single), ...
    decoded = [
        chr(int(single, 16))
        if single is not None
        else chr(0x10000 + (((int(high, 16) - 0xD800) << 10) | (int(low, 16) - 0xDC00)))
        for high, low, single in zip(pieces[1::4], pieces[2::4], pieces[3::4], strict=True)
    ]
    joined: list[str] = [""] * (len(decoded) * 2 + 1)
    joined[0::2] = [text.replace("\0", "\\") for text in pieces[0::4]]
    joined[1::2] = decoded
    return "".join(joined)


def _shown(key: str) -> str:
    """A key as it appears in an error: quoted, escaped, at most 40 characters."""
    shown = repr(key[:40])
    return shown if len(key) <= 40 else shown[:-1] + "...'"
