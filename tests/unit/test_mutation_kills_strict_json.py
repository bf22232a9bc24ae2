"""JsonSyntaxError's public constructor pinned (kills a surviving mutant of wfbench.domain.strict_json)."""

from __future__ import annotations

from wfbench.domain.strict_json import JsonSyntaxError


def test_a_syntax_error_built_without_an_offset_is_at_offset_0():
    """The public constructor's default position is the start of the text."""
    error = JsonSyntaxError("Expecting value", 1, 1)
    assert (error.lineno, error.colno, error.pos) == (1, 1, 0)


def test_at_counts_lines_and_columns_from_the_start_of_the_text():
    """Line and column are 1-based and only ``\\n`` splits lines."""
    error = JsonSyntaxError.at("Extra data", "ab\ncd\r\nef", 9)
    assert (error.lineno, error.colno, error.pos) == (3, 3, 9)
