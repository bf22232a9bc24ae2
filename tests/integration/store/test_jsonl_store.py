"""The JSONL store on a real file: whole lines, refusals that name the line, nothing dropped."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.strategies import rows as row_strategy
from wfbench.adapters.store.jsonl_store import (
    JsonlResultStore,
    read_rows,
    write_json_atomic,
    write_text_atomic,
)
from wfbench.domain.errors import InputError
from wfbench.domain.results.rows import ErrorKind, Row


def _row(run: int, **extra: object) -> Row:
    return Row.from_mapping({"task": "t", "arm": "workflow", "run": run, "cost_usd": None, **extra})


def test_rows_round_trip_through_the_file_in_append_order(tmp_path: Path) -> None:
    """What was appended is read back equal, in the same order, one line per row."""
    store = JsonlResultStore(tmp_path / "results.jsonl")
    written = [_row(0, resolved=True, cost_usd=0.5), _row(1, error_kind="session-error"), _row(2)]

    for row in written:
        store.append(row)

    assert store.rows() == tuple(written)
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    assert len(lines) == 3
    assert all(isinstance(json.loads(line), dict) for line in lines)


def test_a_missing_cost_is_written_as_null_not_zero(tmp_path: Path) -> None:
    """Unknown cost stays null on disk."""
    store = JsonlResultStore(tmp_path / "results.jsonl")
    store.append(_row(0))

    line = json.loads((tmp_path / "results.jsonl").read_text())

    assert line["cost_usd"] is None
    assert store.rows()[0].cost_usd is None


def test_unknown_fields_survive_a_read_and_a_rewrite(tmp_path: Path) -> None:
    """Fields wfbench does not model are kept verbatim through the store."""
    path = tmp_path / "results.jsonl"
    raw = {
        "task": "t",
        "arm": "review",
        "run": 0,
        "future_field": {"nested": [1, 2]},
        "sandbox_backend": "bwrap",
    }
    path.write_text(json.dumps(raw) + "\n")

    (row,) = read_rows(path)
    copy = JsonlResultStore(tmp_path / "copy.jsonl")
    copy.append(row)

    reread = json.loads((tmp_path / "copy.jsonl").read_text())
    assert reread["future_field"] == {"nested": [1, 2]}
    assert reread["sandbox_backend"] == "bwrap"


def test_a_torn_last_line_is_refused_with_its_line_number(tmp_path: Path) -> None:
    """A line cut mid-object (a crash during a write) is an error naming the file and the line."""
    path = tmp_path / "results.jsonl"
    store = JsonlResultStore(path)
    store.append(_row(0))
    store.append(_row(1))
    whole = path.read_bytes()
    path.write_bytes(whole + whole.splitlines(keepends=True)[0][:25])

    with pytest.raises(InputError) as caught:
        store.rows()

    assert caught.value.source == str(path)
    assert caught.value.locator == "line 3"
    assert str(path) in str(caught.value)
    assert "line 3" in str(caught.value)


def test_an_invalid_field_in_the_middle_is_refused_naming_line_and_field(tmp_path: Path) -> None:
    """A bad row is never skipped: the error names the line and the field."""
    path = tmp_path / "results.jsonl"
    lines = [
        json.dumps({"task": "t", "arm": "a", "run": 0}),
        json.dumps({"task": "t", "arm": "a", "run": 1, "cost_usd": "free"}),
        json.dumps({"task": "t", "arm": "a", "run": 2}),
    ]
    path.write_text("\n".join(lines) + "\n")

    with pytest.raises(InputError) as caught:
        read_rows(path)

    assert (caught.value.locator, caught.value.field) == ("line 2", "cost_usd")


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"[1, 2]\n", "JSON object"),
        (b'{"task": "t", "arm": "a", "run": 0, "cost_usd": NaN}\n', "NaN"),
        (b'{"task": "t", "arm": "\xff", "run": 0}\n', "UTF-8"),
        (b"not json\n", "invalid JSON"),
    ],
)
def test_lines_that_are_not_rows_are_refused(tmp_path: Path, content: bytes, reason: str) -> None:
    """Arrays, NaN, bad bytes and garbage each raise an InputError on line 1."""
    path = tmp_path / "results.jsonl"
    path.write_bytes(content)

    with pytest.raises(InputError) as caught:
        read_rows(path)

    assert caught.value.locator == "line 1"
    assert reason in caught.value.reason


def test_blank_lines_hold_no_row_and_are_passed_over(tmp_path: Path) -> None:
    """Empty lines between rows are not rows; the rows around them are all read."""
    path = tmp_path / "results.jsonl"
    row = json.dumps({"task": "t", "arm": "a", "run": 0})
    path.write_text(f"{row}\n\n{row}\n")

    assert len(read_rows(path)) == 2


def test_a_last_line_without_newline_that_is_whole_json_is_read(tmp_path: Path) -> None:
    """A complete object missing only its newline is a whole row (e.g. written by hand)."""
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps({"task": "t", "arm": "a", "run": 0}))

    assert read_rows(path)[0].run == 0


def test_appending_after_a_torn_tail_is_refused(tmp_path: Path) -> None:
    """The store never glues a new row onto a torn line."""
    path = tmp_path / "results.jsonl"
    path.write_bytes(b'{"task": "t", "ar')

    with pytest.raises(InputError):
        JsonlResultStore(path).append(_row(0))

    assert path.read_bytes() == b'{"task": "t", "ar'


def test_a_missing_results_file_is_an_input_error(tmp_path: Path) -> None:
    """read_rows names the missing file; the store itself reads an absent file as empty."""
    with pytest.raises(InputError) as caught:
        read_rows(tmp_path / "nope.jsonl")

    assert "nope.jsonl" in str(caught.value)
    assert JsonlResultStore(tmp_path / "nope.jsonl").rows() == ()


def test_atomic_json_writes_replace_the_whole_file_and_leave_no_temp(tmp_path: Path) -> None:
    """write_json_atomic leaves exactly the new document and no temporary file."""
    target = tmp_path / "promotion.json"
    target.write_text("old")

    write_json_atomic(target, {"schema_version": 6, "x": [1.5, None]})

    assert json.loads(target.read_text()) == {"schema_version": 6, "x": [1.5, None]}
    assert os.listdir(tmp_path) == ["promotion.json"]


def test_an_atomic_write_that_fails_leaves_the_old_file_intact(tmp_path: Path) -> None:
    """A value JSON cannot hold aborts the write before the old file is touched."""
    target = tmp_path / "promotion.json"
    target.write_text("old")

    with pytest.raises(ValueError):
        write_json_atomic(target, {"bad": float("nan")})

    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["promotion.json"]


def test_atomic_text_writes_end_up_readable_by_others(tmp_path: Path) -> None:
    """The written report is world-readable like a normally created file."""
    target = tmp_path / "report.md"
    write_text_atomic(target, "# x\n")

    assert target.read_text() == "# x\n"
    assert target.stat().st_mode & 0o044 == 0o044


@settings(max_examples=30, deadline=None)
@given(batch=st.lists(row_strategy(), max_size=8))
def test_any_rows_round_trip_through_a_file(
    tmp_path_factory: pytest.TempPathFactory, batch: list[Row]
) -> None:
    """parse(serialize(rows)) == rows for any valid rows."""
    path = tmp_path_factory.mktemp("store") / "results.jsonl"
    store = JsonlResultStore(path)
    for row in batch:
        store.append(row)

    assert store.rows() == tuple(batch)


def test_every_error_kind_survives_the_file(tmp_path: Path) -> None:
    """Each error kind is written as its reference string and read back."""
    store = JsonlResultStore(tmp_path / "results.jsonl")
    for run, kind in enumerate(ErrorKind):
        store.append(_row(run, error_kind=kind.value))

    assert [row.error_kind for row in store.rows()] == list(ErrorKind)
