"""``parse_rows`` decodes a ``results.jsonl`` document line by line and names source, line and field."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.strategies import rows as row_strategy
from wfbench.domain.errors import InputError
from wfbench.domain.results.jsonl import parse_row_line, parse_rows
from wfbench.domain.results.rows import Row

ROW = {"task": "t1", "arm": "baseline", "run": 0}


def line(mapping: object) -> bytes:
    return json.dumps(mapping).encode() + b"\n"


def refusal(data: bytes, **kwargs: str) -> InputError:
    with pytest.raises(InputError) as caught:
        parse_rows(data, **kwargs)
    return caught.value


@given(st.lists(row_strategy(), max_size=6))
def test_rows_written_one_per_line_are_read_back_equal_and_in_order(rows: list[Row]) -> None:
    data = b"".join(line(row.to_mapping()) for row in rows)
    assert parse_rows(data) == tuple(rows)


def test_blank_and_whitespace_lines_are_skipped_but_still_counted() -> None:
    data = b"\n" + line(ROW) + b"   \n\t\n" + line({**ROW, "run": 1})
    assert [row.run for row in parse_rows(data)] == [0, 1]
    error = refusal(b"\n \n" + b'{"task": "t1"}\n')
    assert (error.source, error.locator) == ("results.jsonl", "line 3")


def test_a_blank_line_is_no_row() -> None:
    assert parse_row_line(b"  \r", source="x", number=1) is None
    assert parse_row_line(b"", source="x", number=1) is None


def test_the_default_source_is_results_jsonl_and_a_given_one_is_named() -> None:
    assert refusal(b"{").message.startswith("results.jsonl: line 1: ")
    assert refusal(b"{", source="old/results.jsonl").message.startswith("old/results.jsonl: line 1: ")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\xff\n", "r.jsonl: line 1: is not valid UTF-8"),
        (b'{"task": ', "r.jsonl: line 1: torn or invalid JSON: Expecting value: line 1 column 10 (char 9)"),
        (b'{"run": NaN}', "r.jsonl: line 1: torn or invalid JSON: NaN is not a JSON number"),
        (b'{"run": -Infinity}', "r.jsonl: line 1: torn or invalid JSON: -Infinity is not a JSON number"),
        (b"[1, 2]", "r.jsonl: line 1: a row must be a JSON object"),
        (b'"row"', "r.jsonl: line 1: a row must be a JSON object"),
        (b"[" * 100_000 + b"]" * 100_000, "r.jsonl: line 1: invalid JSON: nested too deeply"),
        (b'{"task": "t1", "arm": "a", "run": "0"}', "r.jsonl: line 1: run: must be a non-negative integer"),
    ],
)
def test_each_bad_line_has_one_message_naming_source_line_and_field(data: bytes, message: str) -> None:
    expected = message.replace("line 1", "line 2", 1)  # after one good row
    assert refusal(line(ROW) + data + b"\n", source="r.jsonl").message == expected


def test_the_field_of_a_bad_row_is_kept_on_the_error() -> None:
    error = refusal(line({**ROW, "run": -1}))
    assert (error.source, error.locator, error.field) == ("results.jsonl", "line 1", "run")


def _as_json_loads_reads_it(data: bytes) -> tuple[str, object]:
    """What the line reader said before it kept one decoder: ``json.loads`` with the same hook."""

    def refuse(name: str) -> object:
        raise ValueError(f"{name} is not a JSON number")

    try:
        value = json.loads(data.decode("utf-8"), parse_constant=refuse)
    except UnicodeDecodeError:
        return "error", "is not valid UTF-8"
    except ValueError as exc:
        return "error", f"torn or invalid JSON: {exc}"
    except RecursionError:
        return "error", "invalid JSON: nested too deeply"
    if not isinstance(value, dict):
        return "error", "a row must be a JSON object"
    try:
        return "row", Row.from_mapping(value)
    except InputError as exc:
        return "error", exc.reason


def _as_the_reader_reads_it(data: bytes) -> tuple[str, object]:
    try:
        return "row", parse_row_line(data, source="r.jsonl", number=1)
    except InputError as exc:
        return "error", exc.reason


_PIECES = st.sampled_from(
    [
        b'{"task": "t1", "arm": "a", "run": 0',
        b"}",
        b", ",
        b'"x": ',
        b"NaN",
        b"Infinity",
        b"-Infinity",
        b"1e400",
        b"\xef\xbb\xbf",
        b"\xff",
        b'"\\ud800"',
        b"[",
        b"]",
        b"{",
        b'"run": 1',
        b"null",
        b" ",
    ]
)


@given(st.lists(_PIECES, min_size=1, max_size=8).map(b"".join))
def test_the_one_decoder_reads_every_line_as_json_loads_did(data: bytes) -> None:
    if not data.strip():
        return
    assert _as_the_reader_reads_it(data) == _as_json_loads_reads_it(data)


def test_a_byte_order_mark_is_refused_as_json_loads_refuses_it() -> None:
    data = b"\xef\xbb\xbf" + line(ROW).strip()

    assert _as_the_reader_reads_it(data) == (
        "error",
        "torn or invalid JSON: Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)",
    )
