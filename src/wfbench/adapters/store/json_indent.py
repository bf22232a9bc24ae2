"""Indented JSON text, byte for byte what ``json.dumps(obj, indent=2, ensure_ascii=False)`` writes.

Why not ``json.dumps`` itself: CPython 3.11's C encoder only runs without ``indent``; with it,
``json`` falls back to a pure-Python generator chain that costs about four times the C encoder.
``promotion.json`` of a million-row sweep is ~300 MB of indented JSON (both arms' aggregates for
every task of every decision), so that fallback alone takes a large share of ``wfbench gate``.
This encoder walks dicts and lists with plain loops (no generator per token) and hands every
string to the standard library's C string encoder, every number to ``repr`` as ``json`` does:
about twice as fast (measured: 0.36-0.46 s against 0.77-0.90 s on a 6 MB ``promotion.json``).
A dict or list of scalars only (the leaves: most of the bytes, one per task and arm) goes to the
C encoder whole: without ``indent`` it runs in C, and an item separator of ``",\n"`` plus the
leaf's indentation makes its items exactly the indented ones (issue 33: ``gate --json`` over
4,000 tasks spent most of its encoding in this walk).

Anything it does not handle exactly as ``json`` would — a non-string key, a subclass of a JSON
type, a non-finite float, an unknown object — makes it fall back to ``json.dumps`` for the whole
document, so the output (or the error) is always the standard library's.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring
from typing import Any

__all__ = ["dumps_indented"]

_INDENT = "  "
_MAX_DEPTH = 200


class _Fallback(Exception):
    """The value needs the standard library's full encoder."""


def dumps_indented(obj: Any) -> str:
    """``json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False)``, faster on plain data.

    Raises:
        ValueError: a float is NaN or infinite (as ``json.dumps`` raises it).
        TypeError: a value is not JSON serializable (as ``json.dumps`` raises it).
    """
    parts: list[str] = []
    try:
        _encode(obj, parts, 0)
    except _Fallback:
        return json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False)
    return "".join(parts)


_SCALARS = frozenset({str, int, float, bool, type(None)})
_CONTAINERS = frozenset({dict, list, tuple})
#: The fewest items a leaf goes to the C encoder with.
_LEAF_MIN = 4
#: Per depth: the C encoder whose items are separated as ``json.dumps(indent=2)`` separates them there.
_LEAF_ENCODERS: dict[int, Any] = {}


def _leaf(value: dict[Any, Any] | list[Any] | tuple[Any, ...], depth: int) -> str | None:
    """A dict or list of plain scalars and empty containers only (and string keys), encoded at
    ``depth``; else ``None``. (``json`` writes an empty dict or list as ``{}``/``[]`` indented or not.)"""
    if len(value) < _LEAF_MIN:  # a small one costs less to walk than to hand over
        return None
    scalars, empties = _SCALARS, _CONTAINERS
    if type(value) is dict:
        for key in value:
            if type(key) is not str:
                return None
        items: Any = value.values()
    else:
        items = value
    for item in items:
        kind = type(item)
        if kind not in scalars and (kind not in empties or item):
            return None
    encode = _LEAF_ENCODERS.get(depth)
    if encode is None:
        separators = (",\n" + _INDENT * (depth + 1), ": ")
        encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=separators)
        encode = _LEAF_ENCODERS[depth] = encoder.encode
    try:
        text: str = encode(value)
    except ValueError:  # NaN or infinity: the standard library raises it
        raise _Fallback from None
    return text[0] + "\n" + _INDENT * (depth + 1) + text[1:-1] + "\n" + _INDENT * depth + text[-1]


def _scalar(value: Any) -> str:
    kind = type(value)
    if kind is str:
        return encode_basestring(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if kind is int:
        return int.__repr__(value)
    if kind is float and value - value == 0.0:  # finite (NaN and ±inf give NaN here)
        return float.__repr__(value)
    raise _Fallback


def _encode(value: Any, parts: list[str], depth: int) -> None:
    kind = type(value)
    if kind is dict:
        _encode_dict(value, parts, depth)
    elif kind is list or kind is tuple:
        _encode_list(value, parts, depth)
    else:
        parts.append(_scalar(value))


def _encode_dict(value: dict[Any, Any], parts: list[str], depth: int) -> None:
    if not value:
        parts.append("{}")
        return
    if depth >= _MAX_DEPTH:
        raise _Fallback
    leaf = _leaf(value, depth)
    if leaf is not None:
        parts.append(leaf)
        return
    inner = "\n" + _INDENT * (depth + 1)
    separator = "," + inner
    parts.append("{" + inner)
    first = True
    for key, item in value.items():
        if type(key) is not str:
            raise _Fallback
        if not first:
            parts.append(separator)
        first = False
        kind = type(item)
        if kind is dict or kind is list or kind is tuple:
            parts.append(encode_basestring(key) + ": ")
            _encode(item, parts, depth + 1)
        else:
            parts.append(encode_basestring(key) + ": " + _scalar(item))
    parts.append("\n" + _INDENT * depth + "}")


def _encode_list(value: list[Any] | tuple[Any, ...], parts: list[str], depth: int) -> None:
    if not value:
        parts.append("[]")
        return
    if depth >= _MAX_DEPTH:
        raise _Fallback
    leaf = _leaf(value, depth)
    if leaf is not None:
        parts.append(leaf)
        return
    inner = "\n" + _INDENT * (depth + 1)
    separator = "," + inner
    parts.append("[" + inner)
    first = True
    for item in value:
        if not first:
            parts.append(separator)
        first = False
        kind = type(item)
        if kind is dict or kind is list or kind is tuple:
            _encode(item, parts, depth + 1)
        else:
            parts.append(_scalar(item))
    parts.append("\n" + _INDENT * depth + "]")
