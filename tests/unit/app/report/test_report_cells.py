"""Packed cells read back exactly as they were added, at a few bytes a cell (#18)."""

from __future__ import annotations

import math
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wfbench.app.report.cells import CellRef, PackedCells

relaxed = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])

_NUMBERS = (
    st.none()
    | st.floats()
    | st.sampled_from([0.0, -0.0, 1e300, 5e-324, math.inf, math.nan])
    | st.integers(0, 10)
)
_KEYS = st.sampled_from([("t1", "wf"), ("t1", "rv"), ("t2", "wf")])


@st.composite
def cells(draw: st.DrawFn) -> tuple[tuple[str, str], CellRef]:
    task, arm = draw(_KEYS)
    cell = CellRef(
        task=task,
        arm=arm,
        run=draw(st.integers(0, 4) | st.integers(0, 2**70)),
        resolved=draw(st.booleans()),
        error_kind=draw(st.none() | st.sampled_from(["session-error", "oracle-failed", "x"])),
        excluded=draw(st.booleans()),
        reused=draw(st.booleans() | st.sampled_from([0, 1])),  # type: ignore[arg-type]
        cost_usd=draw(_NUMBERS),
        cell_wall_s=draw(_NUMBERS),
        quality=draw(_NUMBERS),
    )
    return (task, arm), cell


def _same(left: object, right: object) -> bool:
    """Equal and printed alike: tells -0.0 from 0.0 and 1 from 1.0 (NaN is equal to itself here)."""
    return repr(left) == repr(right)


@relaxed
@given(st.lists(cells(), max_size=30))
def test_every_group_reads_back_its_cells_by_run_and_in_the_order_added(
    added: list[tuple[tuple[str, str], CellRef]],
) -> None:
    """Any value shape: NaN, infinities, -0.0, integers where floats are due, runs past 64 bits."""
    packed = PackedCells()
    for key, cell in added:
        packed.add(key, cell)

    expected = {key: [cell for k, cell in added if k == key] for key, _ in added}
    assert list(packed) == list(expected)
    for key, group in expected.items():
        assert _same(list(packed.in_row_order(key)), group)
        assert _same(packed[key], tuple(sorted(group, key=lambda cell: cell.run)))
    assert _same(packed, {key: tuple(sorted(g, key=lambda c: c.run)) for key, g in expected.items()})
    assert packed.get(("absent", "wf")) is None
    assert list(packed.in_row_order(("absent", "wf"))) == []


def _cell(run: int, **fields: object) -> CellRef:
    values: dict[str, object] = {
        "task": "t",
        "arm": "wf",
        "run": run,
        "resolved": run % 2 == 0,
        "error_kind": None if run % 3 else "oracle-failed",
        "excluded": False,
        "reused": False,
        "cost_usd": 0.25 * run,
        "cell_wall_s": 30.5,
        "quality": None,
    }
    return CellRef(**{**values, **fields})  # type: ignore[arg-type]


def test_a_group_of_cells_costs_a_few_bytes_a_cell_and_shares_its_keys_strings() -> None:
    """Forty bytes a cell or less, against ~270 for a CellRef with its boxed floats."""
    packed = PackedCells()
    key = ("".join(["t", "ask"]), "".join(["w", "f"]))
    for run in range(200):
        packed.add(key, _cell(run))

    group = packed._groups[key]  # noqa: SLF001 - the storage is what is measured
    assert isinstance(group, bytearray)
    assert sys.getsizeof(group) <= 40 * 200
    refs = packed[key]
    assert {id(ref.task) for ref in refs} == {id(key[0])}
    assert {id(ref.arm) for ref in refs} == {id(key[1])}
    assert refs == tuple(_cell(run, task=key[0], arm=key[1]) for run in range(200))


def test_a_cell_a_record_cannot_hold_keeps_its_group_as_cell_objects_and_exact() -> None:
    """A NaN, an integer cost, a 65-bit run: the group keeps CellRef objects from then on."""
    for odd in (_cell(1, cost_usd=math.nan), _cell(1, cost_usd=3), _cell(2**64)):
        packed = PackedCells()
        packed.add(("t", "wf"), _cell(0))
        packed.add(("t", "wf"), odd)
        packed.add(("t", "wf"), _cell(2))

        assert isinstance(packed._groups[("t", "wf")], list)  # noqa: SLF001
        assert _same(list(packed.in_row_order(("t", "wf"))), [_cell(0), odd, _cell(2)])


def test_more_error_kinds_than_a_byte_can_number_still_read_back() -> None:
    """The 256th distinct kind does not fit a record's kind byte: its group keeps objects."""
    packed = PackedCells()
    for index in range(300):
        packed.add((f"t{index}", "wf"), _cell(0, error_kind=f"kind-{index}"))

    assert [packed[(f"t{i}", "wf")][0].error_kind for i in range(300)] == [f"kind-{i}" for i in range(300)]
    assert isinstance(packed._groups[("t299", "wf")], list)  # noqa: SLF001
    assert isinstance(packed._groups[("t0", "wf")], bytearray)  # noqa: SLF001
