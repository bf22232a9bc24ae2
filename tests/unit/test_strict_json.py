"""The domain's strict JSON reader agrees with :mod:`json` and refuses what is not strict JSON."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from wfbench.domain.strict_json import MAX_DEPTH, JsonSyntaxError, loads

_DELIBERATE = (
    "Duplicate object key",
    "NaN and Infinity",
    "Number out of range",
    "Number too long",
    "Nesting",
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)

_json_alphabet = st.sampled_from(
    list('{}[],:"\\ \t\n\r0123456789-+.eEtrufalsn/bu')
    + ["true", "null", '"a"', "\\u00e9", "\\ud83d", "\\ude00", "é", "\x01"]
)
json_like_text = st.lists(_json_alphabet, max_size=24).map("".join) | st.text(max_size=16)


def _outcome(parse: object, text: str) -> tuple[object, ...]:
    try:
        return ("ok", parse(text))  # type: ignore[operator]
    except (json.JSONDecodeError, JsonSyntaxError) as exc:
        return ("error", exc.msg, exc.lineno, exc.colno)
    except ValueError:
        return ("refused",)


def _error(text: str) -> JsonSyntaxError:
    with pytest.raises(JsonSyntaxError) as caught:
        loads(text)
    return caught.value


@given(json_values, st.booleans())
def test_anything_json_dumps_writes_is_read_back_equal(value: object, indent: bool) -> None:
    """loads(json.dumps(v)) == v for every JSON-serializable value, compact or indented, ASCII or not."""
    assert loads(json.dumps(value, indent=2 if indent else None, ensure_ascii=indent)) == value


@given(json_like_text)
@example('{"a": 1, "a": 2}')
@example("[NaN]")
@example("1e400")
@example('"\\ud83d\\ude00"')
@example('"\\u00e9')
@example('"\\\\u0041\\\\\\"x"')
@example('"}\t')
@example('["\\"NaN\x01"]')
def test_arbitrary_text_is_read_exactly_as_json_reads_it_or_refused_on_purpose(text: str) -> None:
    """Either both accept with equal values, or both refuse with the same message and position,
    or json accepts what we refuse on purpose (duplicate keys, NaN/Infinity, overflow)."""
    ours, theirs = _outcome(loads, text), _outcome(json.loads, text)
    if ours[0] == "error" and any(reason in str(ours[1]) for reason in _DELIBERATE):
        return
    if ours[0] == "ok" and theirs[0] == "ok":
        assert repr(ours) == repr(theirs)  # repr: -0.0 vs 0 and NaN-free equality
    else:
        assert ours == theirs


@pytest.mark.parametrize(
    ("text", "msg", "line", "column"),
    [
        ("", "Expecting value", 1, 1),
        ("  \n ", "Expecting value", 2, 2),
        ("Here is my review of the changes.", "Expecting value", 1, 1),
        ('{"a": 1 "b": 2}', "Expecting ',' delimiter", 1, 9),
        ("[1 2]", "Expecting ',' delimiter", 1, 4),
        ('{"a" 1}', "Expecting ':' delimiter", 1, 6),
        ("{1: 2}", "Expecting property name enclosed in double quotes", 1, 2),
        ('{"a": 1,}', "Expecting property name enclosed in double quotes", 1, 9),
        ("[1,]", "Expecting value", 1, 4),
        ('{\n  "a": [\n    x]}', "Expecting value", 3, 5),
        ('"abc', "Unterminated string starting at", 1, 1),
        ('"ab\\', "Unterminated string starting at", 1, 1),
        ('"a\x01b"', "Invalid control character at", 1, 3),
        ('"a\\qb"', "Invalid \\escape", 1, 3),
        ('"\\u12x4"', "Invalid \\uXXXX escape", 1, 3),
        ('"\\u00e9', "Invalid \\uXXXX escape", 1, 3),
        ('"\\ud800\\udc00', "Invalid \\uXXXX escape", 1, 9),
        ('"\\ud800\\u12"', "Invalid \\uXXXX escape", 1, 9),
        ('"\\n\\', "Unterminated string starting at", 1, 1),
        ('["ok", "\\t\x1f"]', "Invalid control character at", 1, 11),
        ("[1", "Expecting ',' delimiter", 1, 3),
        ('{"a": 1', "Expecting ',' delimiter", 1, 8),
        ('{"a"', "Expecting ':' delimiter", 1, 5),
        ("nul", "Expecting value", 1, 1),
        ("[tru]", "Expecting value", 1, 2),
        ("fals", "Expecting value", 1, 1),
        ("[1] x", "Extra data", 1, 5),
        ("01", "Extra data", 1, 2),
        ("\ufeff{}", "Unexpected UTF-8 BOM (decode using utf-8-sig)", 1, 1),
    ],
)
def test_each_syntax_error_has_pythons_message_and_position(
    text: str, msg: str, line: int, column: int
) -> None:
    """The message, line and column are those json.JSONDecodeError gives for the same text."""
    error = _error(text)
    assert (error.msg, error.lineno, error.colno) == (msg, line, column)
    with pytest.raises(json.JSONDecodeError) as theirs:
        json.loads(text)
    assert (theirs.value.msg, theirs.value.lineno, theirs.value.colno) == (msg, line, column)
    assert error.pos == theirs.value.pos


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [("x\n", 1, 1), ("\nx", 2, 1), ("\n\nx", 3, 1), ("[\n\n  ]x", 3, 4), ('"a\nb"\n', 1, 3)],
)
def test_lines_and_columns_count_newlines_before_the_error_only(text: str, line: int, column: int) -> None:
    """Newlines at the very start or after the error do not shift the position."""
    error = _error(text)
    assert (error.lineno, error.colno) == (line, column)
    with pytest.raises(json.JSONDecodeError) as theirs:
        json.loads(text)
    assert (theirs.value.lineno, theirs.value.colno) == (line, column)


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", '{"a": -Infinity}'])
def test_nan_and_infinity_are_refused(text: str) -> None:
    """Python's json accepts NaN and Infinity; they are not JSON, so we refuse them."""
    assert _error(text).msg == "Expecting value (NaN and Infinity are not JSON)"


def test_a_float_that_overflows_is_refused_instead_of_becoming_infinity() -> None:
    """1e400 would be inf in Python; a score must never read an infinite number."""
    error = _error('{"line": 1e400}')
    assert (error.msg, error.colno) == ("Number out of range", 10)


def test_an_integer_beyond_pythons_digit_limit_is_a_syntax_error() -> None:
    """json raises a bare ValueError for 4301 digits; we raise our own error with a position."""
    assert _error("[" + "9" * 4301 + "]").msg == "Number too long"
    assert loads("9" * 4300) == int("9" * 4300)


def test_a_repeated_key_is_refused_with_its_own_message() -> None:
    """json keeps the last value silently; we name the repeated key and where it is."""
    error = _error('{"verdict": "approve",\n "verdict": "comment"}')
    assert (error.msg, error.lineno, error.colno) == ("Duplicate object key 'verdict'", 2, 2)


@pytest.mark.parametrize(
    ("length", "shown"), [(40, "k" * 40), (41, "k" * 40 + "..."), (50, "k" * 40 + "...")]
)
def test_a_long_repeated_key_is_shortened_in_the_message(length: int, shown: str) -> None:
    """The message quotes at most 40 characters of the key."""
    key = "k" * length
    assert _error(f'{{"{key}": 1, "{key}": 2}}').msg == f"Duplicate object key '{shown}'"


def test_nesting_is_accepted_up_to_the_limit_and_refused_beyond_it() -> None:
    """MAX_DEPTH levels parse; one more is a syntax error, not a RecursionError."""
    assert loads("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    assert _error("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)).msg.startswith("Nesting deeper than")
    assert _error("[" * (MAX_DEPTH + 1)).colno == MAX_DEPTH + 1
    deep_object = _error('{"a":' * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1))
    assert (deep_object.msg, deep_object.colno) == (
        f"Nesting deeper than {MAX_DEPTH} levels",
        5 * MAX_DEPTH + 1,
    )


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('"\\"\\\\\\/\\b\\f\\n\\r\\t"', '"\\/\b\f\n\r\t'),
        ('"\\\\u0041"', "\\u0041"),
        ('"\\\\\\u0041"', "\\A"),
        ('"\\u005c\\u005cn"', "\\\\n"),
        ('"\\ud83d\\ude00"', "\U0001f600"),
        ('"\\ud800\\u0041"', "\ud800A"),
        ('"\\udc00"', "\udc00"),
        ('"\\ud800\\ud83d\\ude00"', "\ud800\U0001f600"),
        ('"\\u0000"', "\x00"),
        ('"a\\u0000\\\\b"', "a\x00\\b"),
        ("-0", 0),
        ("-0.5e-3", -0.0005),
        ("1E2", 100.0),
        (" [ true , false , null ] ", [True, False, None]),
        ('{"a": {"b": []}, "c": {}}', {"a": {"b": []}, "c": {}}),
    ],
)
def test_escapes_numbers_and_literals_decode_like_json(text: str, value: object) -> None:
    """Escapes (including escaped backslashes before u), surrogates, numbers and literals."""
    assert loads(text) == value == json.loads(text)


def test_a_large_artifact_with_many_escapes_is_read_equal_to_json() -> None:
    """The fast whole-string path and the slow path give the same text on a big document."""
    text = json.dumps(
        {"findings": [{"evidence": 'a\n"b"\\c\té\U0001f600' * 50, "line": i} for i in range(50)]}
    )
    assert loads(text) == json.loads(text)


def test_the_error_string_reads_like_pythons() -> None:
    """str(error) is 'msg: line L column C (char P)', as JSONDecodeError prints it."""
    assert str(_error("[1,\n x]")) == "Expecting value: line 2 column 2 (char 5)"


def test_a_repeated_key_before_a_syntax_error_is_the_error_reported() -> None:
    """The first cause in text order wins, although the decoder only sees the key when its object closes."""
    error = _error('{"a": 1, "a": 2, ')
    assert (error.msg, error.colno) == ("Duplicate object key 'a'", 10)
    assert _error('{"a": 1, "b": 2, ').msg == "Expecting property name enclosed in double quotes"


def test_a_text_over_the_limit_is_refused_before_it_is_decoded() -> None:
    """The size limit is checked first: a long text of garbage gets the length message, not a parse error."""
    error = _error_with("x" * 11, max_chars=10)
    assert (error.msg, error.pos) == ("Document longer than 10 characters", 10)
    assert loads("[" + " " * 8 + "]", max_chars=10) == []


def _error_with(text: str, *, max_chars: int) -> JsonSyntaxError:
    with pytest.raises(JsonSyntaxError) as caught:
        loads(text, max_chars=max_chars)
    return caught.value


def test_a_located_error_counts_only_the_newlines_before_it_including_one_at_the_very_start() -> None:
    """Line and column of a refused token: a newline at offset 0 counts, newlines after the token do not."""
    error = _error('\n{"a": 1, "a": 2}\n\n\n')
    assert (error.lineno, error.colno, error.pos) == (2, 10, 10)
    error = _error("\n\n  [NaN]\n\n")
    assert (error.lineno, error.colno, error.pos) == (3, 4, 5)


def test_exactly_max_depth_levels_pass_even_among_many_brackets() -> None:
    """The depth walk (run for texts of more than MAX_DEPTH brackets) accepts MAX_DEPTH, refuses one more."""
    siblings = ", []" * MAX_DEPTH
    deepest = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert loads(f"[{deepest[1:-1]}{siblings}]") is not None
    too_deep = _error(f"[{deepest}{siblings}]")
    assert (too_deep.msg, too_deep.colno) == (f"Nesting deeper than {MAX_DEPTH} levels", MAX_DEPTH + 1)
    nested_objects = '{"a":' * MAX_DEPTH + "1" + "}" * MAX_DEPTH
    assert loads(f"[{nested_objects[5:-1]}, {siblings[2:]}]") is not None


def test_only_the_overflowing_float_is_out_of_range() -> None:
    """Finite floats before the overflowing one are not the error."""
    error = _error('{"a": 0.5, "b": 2e3, "line": 1e400}')
    assert (error.msg, error.colno) == ("Number out of range", 30)


def test_an_integer_at_the_digit_limit_is_not_the_error() -> None:
    """4300 digits are accepted, so a refused token after them is the one reported."""
    digits = "9" * 4300
    error = _error(f"[{digits}, -{digits}, NaN]")
    assert (error.msg, error.colno) == ("Expecting value (NaN and Infinity are not JSON)", 2 * 4300 + 7)


@pytest.mark.parametrize(("text", "column"), [('"}\t', 3), ('["\\"NaN\x01"]', 8), ('["\\"1e400 ]\x01"]', 12)])
def test_text_inside_a_string_the_decoder_stopped_in_is_not_scanned_for_refused_tokens(
    text: str, column: int
) -> None:
    """A bracket, NaN or key-like text after an unclosed quote is string content: Python's error stands."""
    error = _error(text)
    assert (error.msg, error.colno) == ("Invalid control character at", column)
