"""Every cell of a sweep, packed: what the report links to, at 34 bytes a cell instead of ~270.

The report links every number to the cells behind it, so its model keeps one small record per
row: run, status, cost, real wall time, review quality. At a million rows, one
:class:`~wfbench.app.report.model.CellRef` object per row (with its boxed floats and the lists
holding them) was a quarter of ``wfbench report``'s memory. :class:`PackedCells` keeps each
(task, arm)'s cells as fixed-size binary records in one ``bytearray`` and makes the
``CellRef`` values only when a page asks for a group (:meth:`PackedCells.__getitem__`), so the
model's memory is bounded by a few bytes per cell.

A record holds exactly what the ``CellRef`` held: floats as IEEE doubles (so ``-0.0`` and every
finite value survive), unknowns as NaN. A group whose cell carries anything a record could not
give back as it was (a NaN, an integer cost, a run beyond 64 bits, a non-boolean flag) keeps
``CellRef`` objects instead, so what is read back always equals what was added.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterator, Mapping

import attrs

__all__ = ["CellRef", "PackedCells"]

#: run, cost_usd, cell_wall_s, quality (NaN: unknown), error kind (0: none, else its index + 1), flags.
_RECORD = struct.Struct("<qdddBB")
_RESOLVED, _EXCLUDED, _REUSED = 1, 2, 4
_NAN = math.nan
_MAX_KINDS = 255
_RUN_LIMIT = 2**63

Key = tuple[str, str]


@attrs.frozen
class CellRef:
    """One cell, small: what a link to it shows."""

    task: str
    arm: str
    run: int
    resolved: bool
    error_kind: str | None
    excluded: bool
    reused: bool
    cost_usd: float | None
    cell_wall_s: float | None
    quality: float | None = None

    @property
    def status(self) -> str:
        """``resolved``, the error kind, or ``unresolved``."""
        if self.resolved:
            return "resolved"
        return self.error_kind or "unresolved"


def _packable(value: float | None) -> bool:
    return value is None or (type(value) is float and not math.isnan(value))


class PackedCells(Mapping[Key, tuple[CellRef, ...]]):
    """``(task, arm)`` → that group's cells by run (a stable sort: equal runs in the order added).

    Fill it with :meth:`add` (the cell's ``task`` and ``arm`` are the key's strings, shared by
    every cell of the group); read it as a mapping. :meth:`in_row_order` gives a group's cells
    in the order they were added.
    """

    __slots__ = ("_groups", "_kind_codes", "_kinds")

    def __init__(self) -> None:
        self._groups: dict[Key, bytearray | list[CellRef]] = {}
        self._kinds: list[str] = []
        self._kind_codes: dict[str, int] = {}

    def add(self, key: Key, cell: CellRef) -> None:
        """Append ``cell`` to the group ``key`` (``cell.task`` and ``cell.arm`` are the key's)."""
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = bytearray()
        if isinstance(group, bytearray):
            record = self._record(cell)
            if record is not None:
                group += record
                return
            group = self._groups[key] = list(self._unpack(key, group))
        group.append(cell)

    def _record(self, cell: CellRef) -> bytes | None:
        run, resolved, excluded, reused = cell.run, cell.resolved, cell.excluded, cell.reused
        cost, wall, quality = cell.cost_usd, cell.cell_wall_s, cell.quality
        fits = (
            type(run) is int
            and 0 <= run < _RUN_LIMIT
            and type(resolved) is bool
            and type(excluded) is bool
            and type(reused) is bool
            and _packable(cost)
            and _packable(wall)
            and _packable(quality)
        )
        code = self._code(cell.error_kind) if fits else None
        if code is None:
            return None
        return _RECORD.pack(
            run,
            _NAN if cost is None else cost,
            _NAN if wall is None else wall,
            _NAN if quality is None else quality,
            code,
            _RESOLVED * resolved | _EXCLUDED * excluded | _REUSED * reused,
        )

    def _code(self, kind: str | None) -> int | None:
        if kind is None:
            return 0
        if type(kind) is not str:
            return None
        code = self._kind_codes.get(kind)
        if code is None:
            if len(self._kinds) == _MAX_KINDS:
                return None
            self._kinds.append(kind)
            code = self._kind_codes[kind] = len(self._kinds)
        return code

    def _unpack(self, key: Key, data: bytearray) -> Iterator[CellRef]:
        task, arm = key
        kinds = self._kinds
        for run, cost, wall, quality, code, flags in _RECORD.iter_unpack(data):
            yield CellRef(
                task=task,
                arm=arm,
                run=run,
                resolved=bool(flags & _RESOLVED),
                error_kind=kinds[code - 1] if code else None,
                excluded=bool(flags & _EXCLUDED),
                reused=bool(flags & _REUSED),
                cost_usd=None if math.isnan(cost) else cost,
                cell_wall_s=None if math.isnan(wall) else wall,
                quality=None if math.isnan(quality) else quality,
            )

    def in_row_order(self, key: Key) -> Iterator[CellRef]:
        """The cells of ``key`` in the order they were added (none when the group has no cell)."""
        group = self._groups.get(key)
        if group is None:
            return iter(())
        return iter(group) if isinstance(group, list) else self._unpack(key, group)

    def __getitem__(self, key: Key) -> tuple[CellRef, ...]:
        if key not in self._groups:
            raise KeyError(key)
        return tuple(sorted(self.in_row_order(key), key=lambda cell: cell.run))

    def __iter__(self) -> Iterator[Key]:
        return iter(self._groups)

    def __len__(self) -> int:
        return len(self._groups)

    def __repr__(self) -> str:
        return repr(dict(self.items()))
