"""dumps_indented writes exactly what json.dumps(indent=2, ensure_ascii=False) writes, or its error."""

from __future__ import annotations

import enum
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wfbench.adapters.store.json_indent import dumps_indented

_scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
)
json_documents = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=40,
)


def _standard(obj: Any) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False)


@given(json_documents)
def test_any_json_document_is_written_as_the_standard_library_writes_it(obj: Any) -> None:
    assert dumps_indented(obj) == _standard(obj)


class Color(enum.IntEnum):
    RED = 1


class Name(str):
    pass


@pytest.mark.parametrize(
    "obj",
    [
        {1: "a", None: [], 2.5: {}},  # non-string keys
        {"k": Color.RED, "n": Name("x")},  # subclasses of JSON types
        [[[[[]]]], {"a": {"b": {"c": [1, "é", "\u2028", "\x00"]}}}],
        {"big": 2**200, "neg": -0.0, "tiny": 5e-324, "e": 1e16},
        [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]],
    ],
)
def test_values_that_need_the_full_encoder_still_match(obj: Any) -> None:
    assert dumps_indented(obj) == _standard(obj)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_a_non_finite_float_raises_what_json_raises(bad: float) -> None:
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        dumps_indented({"x": [1, bad]})


def test_an_unserializable_value_raises_type_error() -> None:
    with pytest.raises(TypeError, match="not JSON serializable"):
        dumps_indented({"x": object()})


def test_a_circular_document_raises_as_json_does() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular reference"):
        dumps_indented({"x": loop})
