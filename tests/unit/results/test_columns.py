"""Columns: values packed as doubles only while exact, unknown when not a number."""

from __future__ import annotations

import math

from wfbench.domain.results.columns import Columns


def test_records_are_read_back_per_field_in_order() -> None:
    columns = Columns(3)
    columns.append([1, 2.5, 3])
    columns.append([4, 0.25, 6])

    assert columns.count == 2
    assert columns.values(0) == [1, 4]
    assert columns.values(1) == [2.5, 0.25]
    assert columns.values(2) == [3, 6]


def test_a_null_a_boolean_or_a_string_makes_only_its_field_unknown() -> None:
    columns = Columns(4)
    columns.append([1, 2, 3, 4])
    columns.append([None, True, "x", 5])

    assert [columns.values(i) for i in range(3)] == [None, None, None]
    assert columns.values(3) == [4, 5]


def test_an_integer_beyond_a_doubles_exact_range_keeps_every_value_exact() -> None:
    """2**53 + 1 is not a double: the records move to plain objects, earlier ones intact."""
    columns = Columns(2)
    columns.append([2**52, 0.5])
    columns.append([2**53 + 1, None])
    columns.append([7, 1.5])

    values = columns.values(0)
    assert values == [2**52, 2**53 + 1, 7]
    assert values is not None
    assert isinstance(values[1], int)
    assert columns.values(1) is None
    assert columns.count == 3


def test_packed_values_are_doubles_and_plain_values_keep_their_type() -> None:
    packed = Columns(1)
    packed.append([3])
    assert packed.values(0) == [3.0]

    class Tokens(int):
        pass

    plain = Columns(1)
    plain.append([Tokens(3)])
    values = plain.values(0)
    assert values is not None
    assert type(values[0]) is Tokens


def test_an_empty_column_is_an_empty_list_and_infinity_is_kept_as_a_value() -> None:
    assert Columns(2).values(1) == []
    columns = Columns(1)
    columns.append([math.inf])
    assert columns.values(0) == [math.inf]


def test_a_record_of_plain_numbers_with_one_integer_beyond_2_52_keeps_it_exact() -> None:
    """A record of only ints and floats is packed in one go only when every integer is exact."""
    for record in ([2**53 + 1, 0.5], [0.5, 2**53 + 1], [-(2**53) - 1, 2], [2**60 + 1, -(2**60) - 1]):
        columns = Columns(2)
        columns.append(record)
        assert [columns.values(0), columns.values(1)] == [[record[0]], [record[1]]]
        assert [type(value) for value in record] == [type(columns.values(i)[0]) for i in range(2)]  # type: ignore[index]


def test_a_record_with_an_unknown_value_packs_its_numbers_up_to_2_52_as_doubles() -> None:
    """A null beside floats and integers of up to ±2**52 keeps the group packed (8 bytes a value)."""
    columns = Columns(4)
    columns.append([0.5, None, -(2**52), 2**52])
    columns.append([3, 4, 5, 6])

    assert columns.values(1) is None
    assert columns.entries(1) == [None, 4.0]
    for index, expected in ((0, [0.5, 3.0]), (2, [-(2.0**52), 5.0]), (3, [2.0**52, 6.0])):
        values = columns.values(index)
        assert values == expected
        assert values is not None
        assert {type(value) for value in values} == {float}
