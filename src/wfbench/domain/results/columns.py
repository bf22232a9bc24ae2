"""Compact storage for the numeric values a median needs, filled one record at a time.

A median needs every value of its group, so a streaming aggregation still keeps one number per
row and field — but not the row. :class:`Columns` keeps records of ``width`` values packed as
doubles in one ``array('d')`` (8 bytes a value, against ~36 for a boxed Python number in a
list) while every value fits a double exactly: floats, and integers within ±2**52, whose
pairwise sums (the even median) are exact too. The first value that does not (a larger integer,
a subclass of ``int``/``float``) moves the records to a plain list of the original objects, so a
reduction over a column always sees the values :func:`sorted` and ``+`` would have seen on the
rows themselves. A value that is not a number (``None``, a boolean, anything else) marks its
column unknown, as ``aggregation._reduce`` does.

The standard library has no such structure (``statistics`` takes a whole sequence; NumPy would
be a heavy dependency of the pure domain for one array type), hence this module.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["Columns"]

#: Integers in this range, and their pairwise sums, are exact as doubles.
_EXACT_INT = 2**52
_PLAIN = frozenset({int, float})


class Columns:
    """Records of ``width`` numeric fields each; ``values(i)`` is field ``i`` over every record."""

    __slots__ = ("_packed", "_plain", "_unknown", "_width", "count")

    def __init__(self, width: int) -> None:
        self._width = width
        self._packed: array[float] | None = array("d")
        self._plain: list[Any] | None = None
        self._unknown = [False] * width
        self.count = 0

    def append(self, values: Sequence[Any]) -> None:
        """Add one record of ``width`` values (the caller keeps the field order)."""
        if self._packed is not None and not self._pack(values):
            self._unpack()
        if self._plain is not None:
            for index, value in enumerate(values):
                if not _is_number(type(value)):
                    self._unknown[index] = True
            self._plain.extend(values)
        self.count += 1

    def values(self, index: int) -> list[Any] | None:
        """Field ``index`` over every record, in record order; ``None`` when any is not a number."""
        if self._unknown[index]:
            return None
        if self._packed is not None:
            return self._packed[index :: self._width].tolist()
        assert self._plain is not None
        return self._plain[index :: self._width]

    def reduced(self, reduce: Callable[[list[Any]], Any]) -> list[Any]:
        """``reduce(values(i))`` for every field ``i`` (``None`` where ``values(i)`` is ``None`` or empty).

        One copy of the records for all fields (a group of a few runs has far more fields than
        records, and ``gate`` builds one per task and arm): the same values, in the same order,
        as :meth:`values` gives field by field.
        """
        width, unknown = self._width, self._unknown
        if not self.count:
            return [None] * width
        records = self._packed.tolist() if self._packed is not None else self._plain
        assert records is not None
        return [None if unknown[i] else reduce(records[i::width]) for i in range(width)]

    def entries(self, index: int) -> list[Any]:
        """Field ``index`` of every record, unknown or not: a value that was not a number is
        ``None`` in packed storage (NaN marks it there) and itself in plain storage."""
        if self._packed is not None:
            return [None if math.isnan(value) else value for value in self._packed[index :: self._width]]
        assert self._plain is not None
        return self._plain[index :: self._width]

    def _pack(self, values: Sequence[Any]) -> bool:
        """Append ``values`` as doubles; False (nothing appended) when one would not be exact."""
        packed = self._packed
        assert packed is not None
        kinds = set(map(type, values))
        if kinds <= _PLAIN and (
            int not in kinds or (min(values) >= -_EXACT_INT and max(values) <= _EXACT_INT)
        ):
            packed.extend(values)  # the common record: floats and small ints only, all exact
            return True
        start = len(packed)
        for index, value in enumerate(values):
            kind = type(value)
            if kind is float or (kind is int and -_EXACT_INT <= value <= _EXACT_INT):
                packed.append(value)
            elif _is_number(kind):  # an integer beyond 2**52, or a subclass of int or float
                del packed[start:]
                return False
            else:
                self._unknown[index] = True
                packed.append(math.nan)
        return True

    def _unpack(self) -> None:
        """Switch to plain storage, keeping the records so far (their values were exact)."""
        assert self._packed is not None
        self._plain = self._packed.tolist()
        self._packed = None


def _is_number(kind: type) -> bool:
    return issubclass(kind, int | float) and not issubclass(kind, bool)
