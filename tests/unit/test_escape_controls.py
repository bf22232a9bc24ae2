"""Agent-chosen strings on their way to a terminal or report.md: controls escaped, text kept."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from wfbench.domain.redaction import escape_controls


def test_escape_sequences_bells_and_carriage_returns_are_escaped() -> None:
    assert escape_controls("\x1b]0;PWNED\x07\x1b[2J\rX.txt") == "\\x1b]0;PWNED\\x07\\x1b[2J\\x0dX.txt"


def test_c1_controls_separators_bidi_overrides_and_lone_surrogates_are_escaped() -> None:
    assert escape_controls("a\x85b\u2028c\u202ed\u2066e\udce9") == "a\\x85b\\u2028c\\u202ed\\u2066e\\udce9"


def test_ordinary_text_tabs_and_non_latin_letters_are_kept() -> None:
    text = "résumé\tsnake_case 名前 ⏎ [REDACTED] $1.50"
    assert escape_controls(text) == text


def test_a_newline_is_escaped_so_one_line_stays_one_line() -> None:
    assert escape_controls("a\nb") == "a\\x0ab"


@given(st.text())
def test_the_result_never_holds_a_control_character(text: str) -> None:
    out = escape_controls(text)
    assert not any(ord(c) < 0x20 and c != "\t" or 0x7F <= ord(c) <= 0x9F for c in out)
    assert "\u2028" not in out
    assert "\u202e" not in out
