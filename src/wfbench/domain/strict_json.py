"""Strict JSON for the domain: the standard library's decoder with hooks that refuse what JSON is not.

:func:`loads` is :func:`json.loads` (its C scanner, its messages and positions) plus, each refused
with its own message at the exact place it occurs:

- ``NaN``, ``Infinity`` and ``-Infinity`` (not JSON; Python accepts them);
- numbers that overflow a float, such as ``1e400`` (Python turns them into infinity);
- integers longer than Python's integer-string limit, 4300 digits by default (Python raises a
  plain ``ValueError``);
- duplicate keys in one object (Python silently keeps the last one, so a reviewer could not see
  which value was scored);
- nesting deeper than :data:`MAX_DEPTH` (Python raises ``RecursionError`` near 1000);
- a text longer than the caller's limit, checked before anything is decoded.

The hooks only learn *that* a document is refused; where is found by :func:`_first_refused`, a token scan
that runs on error paths alone (the document is known to be well-formed JSON up to the refused
token, or up to where the decoder stopped, so a scan of string, bracket and number tokens is
unambiguous; it stops at a string the decoder stopped inside).
"""

from __future__ import annotations

import json
import math
import re
import sys

__all__ = ["MAX_DEPTH", "MAX_TEXT_CHARS", "JsonSyntaxError", "loads"]

#: Deepest nesting of arrays and objects accepted. Review documents need 3.
MAX_DEPTH = 64
#: Default limit on the text's length (characters), checked before decoding.
MAX_TEXT_CHARS = 16 * 1024 * 1024
_NON_FINITE = "Expecting value (NaN and Infinity are not JSON)"
_TOKEN = re.compile(
    r'"(?:[^"\\]|\\.)*"(?P<colon>[ \t\n\r]*:)?|(?P<unclosed>")|(?P<bracket>[\[\]{}])'
    r"|(?P<constant>-?Infinity|NaN)|(?P<number>-?(?:0|[1-9][0-9]*)(?P<fraction>\.[0-9]+)?(?P<exponent>[eE][-+]?[0-9]+)?)",
    re.DOTALL,
)


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


class _Refused(Exception):
    """Raised by a hook: the document is well-formed but not strict JSON (located afterwards)."""


def _refuse(_: object) -> object:
    raise _Refused


def _pairs(pairs: list[tuple[str, object]]) -> dict[str, object]:
    members = dict(pairs)
    if len(members) != len(pairs):
        raise _Refused
    return members


def _float(literal: str) -> float:
    value = float(literal)
    if math.isinf(value):
        raise _Refused
    return value


#: Integers keep the C scanner's fast path: one too long for ``int()`` raises ``ValueError``.
_DECODER = json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_refuse, parse_float=_float)


def loads(text: str, *, max_chars: int = MAX_TEXT_CHARS) -> object:
    """Decode one strict JSON document. Raises :class:`JsonSyntaxError` for anything else."""
    if len(text) > max_chars:
        raise JsonSyntaxError.at(f"Document longer than {max_chars} characters", text, max_chars)
    if text.startswith("\ufeff"):  # json.loads's own check (JSONDecoder.decode lacks it)
        raise JsonSyntaxError.at("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        # A duplicate key is only seen when its object closes: one before the syntax error comes first.
        syntax = JsonSyntaxError(exc.msg, exc.lineno, exc.colno, exc.pos)
        raise _first_refused(text, exc.pos) or syntax from None
    except (_Refused, RecursionError, ValueError):
        raise _located(text) from None
    if _might_nest_deeper(text) and _depth(value) > MAX_DEPTH:
        raise _located(text)
    return value


def _might_nest_deeper(text: str) -> bool:
    """False when the text has too few brackets to nest deeper than :data:`MAX_DEPTH`."""
    return text.count("[") + text.count("{") > MAX_DEPTH


def _depth(value: object) -> int:
    """Nesting depth of a decoded value (a scalar is 0), visiting containers only, without recursion."""
    deepest = 0
    stack: list[tuple[dict[str, object] | list[object], int]] = (
        [(value, 1)] if isinstance(value, dict | list) else []
    )
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return deepest


def _located(text: str) -> JsonSyntaxError:
    error = _first_refused(text, len(text))
    assert error is not None  # a hook refused, so some token of the text is refused
    return error


def _first_refused(text: str, end: int) -> JsonSyntaxError | None:
    """The first refused token before ``end`` (the decoder read that far), as an error at its place."""
    keys: list[set[str]] = []  # the keys seen in each open container (arrays never add any)
    for token in _TOKEN.finditer(text[:end]):
        pos = token.start()
        if token.group("unclosed"):  # a string the decoder stopped inside: the rest is its content
            break
        bracket = token.group("bracket")
        if bracket in ("[", "{"):
            if len(keys) == MAX_DEPTH:
                return JsonSyntaxError.at(f"Nesting deeper than {MAX_DEPTH} levels", text, pos)
            keys.append(set())
        elif bracket:
            keys.pop()
        elif token.group("constant"):
            return JsonSyntaxError.at(_NON_FINITE, text, pos)
        elif token.group("number"):
            problem = _number_problem(token)
            if problem:
                return JsonSyntaxError.at(problem, text, pos)
        elif token.group("colon") is not None:
            key = json.loads(token.group(0)[: -len(token.group("colon"))])
            if key in keys[-1]:
                return JsonSyntaxError.at(f"Duplicate object key {_shown(key)}", text, pos)
            keys[-1].add(key)
    return None


def _number_problem(token: re.Match[str]) -> str | None:
    literal = token.group("number")
    if token.group("fraction") or token.group("exponent"):
        return "Number out of range" if math.isinf(float(literal)) else None
    limit = sys.get_int_max_str_digits()  # what made int() refuse it (0: no limit)
    return "Number too long" if limit and len(literal.lstrip("-")) > limit else None


def _shown(key: str) -> str:
    """A key as it appears in an error: quoted, escaped, at most 40 characters."""
    shown = repr(key[:40])
    return shown if len(key) <= 40 else shown[:-1] + "...'"
