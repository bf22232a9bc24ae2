"""``Row.from_mapping``'s fast path (a plain dict of plain types) equals its general path.

The general path is reached by passing the same fields as a read-only mapping proxy (not a
``dict``, so the fast path is skipped). Generated mappings mix valid values with every shape the
general path refuses or treats specially (booleans for counts, negative and huge integers, NaN,
infinity, subclasses, unknown error kinds, review values of every kind), so a field the fast
path accepted wrongly, or refused with another message, fails here.
"""

from __future__ import annotations

import math
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wfbench.domain.errors import InputError
from wfbench.domain.results import rows as rows_module
from wfbench.domain.results.rows import ErrorKind, Row


class _Text(str):
    """A ``str`` subclass (the general path accepts it; the fast path must not misread it)."""


class _Count(int):
    """An ``int`` subclass."""


_ODD_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1,
    2**53,
    2**53 + 1,
    2**64,
    10**400,
    0.0,
    -0.0,
    1.5,
    -1.5,
    math.nan,
    math.inf,
    -math.inf,
    1e308,
    "",
    "x",
    "session-error",
    "nope",
    [],
    {},
    [1],
    _Text("t"),
    _Count(3),
]
_ODD = st.sampled_from(_ODD_VALUES)
_TEXT = st.sampled_from(["t1", "t2", "baseline", "candidate_workflow", "é"])
_COUNT = st.one_of(st.none(), st.integers(min_value=0, max_value=10**6))
_NUMBER = st.one_of(st.none(), st.floats(min_value=0, max_value=1e6), st.integers(0, 10**6), st.just(-0.0))
_FLAG = st.booleans()
_OPTIONAL_FLAG = st.one_of(st.booleans(), st.none())
_KIND = st.one_of(st.none(), st.sampled_from([kind.value for kind in ErrorKind]))
_REVIEW = st.one_of(
    st.none(), st.booleans(), st.floats(allow_nan=False, allow_infinity=False), st.integers(-(2**53), 2**53)
)
_ANY = st.one_of(_REVIEW, _TEXT, st.just([]), st.just({"a": 1}))

#: Each field's valid values (``task``, ``arm`` and ``run`` are required; others may be absent).
_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "task": _TEXT,
    "arm": _TEXT,
    "run": st.integers(0, 5),
    "class": st.one_of(st.none(), _TEXT),
    "ok": _FLAG,
    "resolved": _FLAG,
    "error_kind": _KIND,
    "cost_usd": _NUMBER,
    "duration_s": _NUMBER,
    "num_turns": _COUNT,
    "authored_tests_passed": _OPTIONAL_FLAG,
    "oracle_passed": _OPTIONAL_FLAG,
    "skill_invoked": _OPTIONAL_FLAG,
    "transcript_missing": _FLAG,
    "review_evidence_valid": _OPTIONAL_FLAG,
    "reused": _FLAG,
    "input_tokens": _COUNT,
    "cache_creation_input_tokens": _COUNT,
    "cache_read_input_tokens": _COUNT,
    "output_tokens": _COUNT,
    "diff_files": _COUNT,
    "diff_insertions": _COUNT,
    "diff_deletions": _COUNT,
    "review_weighted_f1": _REVIEW,
    "review_precision": _REVIEW,
    "review_verdict_correct": _REVIEW,
    "review_score": _ANY,
    "review_artifact": _ANY,
    "review_evidence_detail": _ANY,
    "model": _ANY,
    "recorded_at": _ANY,
    "evidence_diagnostics": st.just([]),
    "zz_other": _ANY,
}
_REQUIRED = ("task", "arm", "run")


@st.composite
def mappings(draw: st.DrawFn) -> dict[str, Any]:
    """A row mapping in any key order: valid fields, some absent, and now and then an odd value."""
    names = draw(st.permutations(list(_FIELDS)))
    odd = draw(st.sets(st.sampled_from(names), max_size=2)) if draw(st.booleans()) else set()
    out: dict[str, Any] = {}
    for name in names:
        if name in odd:
            out[name] = draw(_ODD)
        elif name in _REQUIRED or draw(st.integers(0, 4)):
            out[name] = draw(_FIELDS[name])
    return out


def _outcome(raw: Any) -> tuple[str, Any]:
    try:
        row = Row.from_mapping(raw)
    except InputError as exc:
        return "refused", (str(exc), exc.field)
    return "row", (row, [type(v) for v in row.to_mapping().values()], list(row.extra), list(row.review))


@settings(max_examples=300)
@given(mappings())
def test_the_fast_path_builds_the_row_the_general_path_builds_or_refuses_alike(raw: dict[str, Any]) -> None:
    fast, general = _outcome(raw), _outcome(MappingProxyType(raw))

    assert fast == general


_PLAIN: dict[str, Any] = {
    "task": "t1",
    "arm": "review",
    "run": 2,
    "class": "bugfix",
    "ok": True,
    "resolved": False,
    "error_kind": "oracle-failed",
    "cost_usd": 1.25,
    "duration_s": 30,
    "num_turns": 3,
    "authored_tests_passed": True,
    "oracle_passed": False,
    "skill_invoked": None,
    "transcript_missing": False,
    "review_evidence_valid": True,
    "reused": False,
    "input_tokens": 10,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 5,
    "output_tokens": 7,
    "diff_files": 1,
    "diff_insertions": 2,
    "diff_deletions": 0,
    "review_weighted_f1": 0.5,
    "review_precision": 1,
    "review_verdict_correct": True,
    "review_score": {"tp": 1},
    "review_artifact": "review.json",
    "review_evidence_detail": None,
    "model": "m",
    "evidence_diagnostics": [],
}


def test_every_odd_value_in_every_field_gives_what_the_general_path_gives() -> None:
    assert _outcome(_PLAIN)[0] == "row"
    for field in _PLAIN:
        for value in _ODD_VALUES:
            raw = {**_PLAIN, field: value}
            assert _outcome(raw) == _outcome(MappingProxyType(raw)), (field, value)
        absent = {key: value for key, value in _PLAIN.items() if key != field}
        assert _outcome(absent) == _outcome(MappingProxyType(absent)), field


def test_a_plain_row_takes_the_fast_path_and_equals_the_general_one() -> None:
    raw = {
        "task": "t1",
        "arm": "baseline",
        "run": 0,
        "class": "bugfix",
        "ok": True,
        "resolved": True,
        "error_kind": None,
        "cost_usd": 1,
        "duration_s": 2.5,
        "num_turns": 3,
        "input_tokens": 10,
        "review_weighted_f1": 0.5,
        "review_score": {"tp": 1},
        "model": "m",
        "reused": False,
    }

    row = Row.from_mapping(raw)

    assert row == Row.from_mapping(MappingProxyType(raw))
    assert row.cost_usd == 1.0
    assert type(row.cost_usd) is float
    assert row.review == {"review_weighted_f1": 0.5}
    assert list(row.extra) == ["review_score", "model"]


def test_a_nan_cost_is_refused_by_the_fast_reader_with_the_general_message() -> None:
    raw = {"task": "t1", "arm": "baseline", "run": 0, "cost_usd": math.nan}

    assert _outcome(raw) == (
        "refused",
        ("cost_usd: must be a finite non-negative number or null", "cost_usd"),
    )


# --- which rows the fast path takes -------------------------------------------------------------
# A million-row gate reads its rows at the fast path's speed only if every plain row takes it:
# with the general path made to fail, each plain value at its bounds must still read (and read as
# the general path reads it), and each layout's key split is worked out once, in a bounded cache.

_BASE: dict[str, Any] = {"task": "t1", "arm": "baseline", "run": 1}
_OPTIONAL = ("authored_tests_passed", "oracle_passed", "skill_invoked", "review_evidence_valid")
_PLAIN_VALUES: list[tuple[str, Any]] = [
    ("run", 0),
    ("class", None),
    ("class", "bugfix"),
    *[("error_kind", kind.value) for kind in ErrorKind],
    ("error_kind", None),
    *[(name, flag) for name in ("ok", "resolved", "transcript_missing", "reused") for flag in (True, False)],
    *[(name, flag) for name in _OPTIONAL for flag in (True, False, None)],
    *[
        (name, count)
        for name in ("num_turns", "input_tokens", "output_tokens", "diff_files", "diff_deletions")
        for count in (0, 1, 10**6, None)
    ],
    *[
        (name, number)
        for name in ("cost_usd", "duration_s")
        for number in (0.0, 0.5, 1e308, 0, 3, 2**53, None)
    ],
    *[
        ("review_precision", value)
        for value in (None, True, False, 0.0, 0.25, -1.5, 1e308, 0, -(2**53), 2**53)
    ],
]


def _general_path_refused(*_: object, **__: object) -> str:
    raise AssertionError("a plain row took the general path")


@pytest.mark.parametrize(("field", "value"), _PLAIN_VALUES)
def test_every_plain_value_at_its_bounds_takes_the_fast_path(
    field: str, value: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = {**_BASE, field: value}
    expected = Row.from_mapping(MappingProxyType(raw))
    monkeypatch.setattr(rows_module, "_text", _general_path_refused)

    row = Row.from_mapping(raw)

    assert row == expected
    assert [type(v) for v in row.to_mapping().values()] == [type(v) for v in expected.to_mapping().values()]


def test_a_row_of_only_the_required_fields_takes_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rows_module, "_text", _general_path_refused)

    assert Row.from_mapping(dict(_BASE)) == Row(task="t1", arm="baseline", run=1)


def test_each_key_layout_is_split_once_and_at_most_64_layouts_are_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The cache bounds memory on a file whose every line orders its keys differently."""
    monkeypatch.setattr(rows_module, "_LAYOUTS", {})
    splits: list[str] = []
    original = rows_module._is_review_metric

    def counted(key: str) -> bool:
        splits.append(key)
        return original(key)

    monkeypatch.setattr(rows_module, "_is_review_metric", counted)
    raw = {**_BASE, "review_f1": 0.5, "model": "m"}
    first = Row.from_mapping(raw)
    calls = len(splits)
    assert calls > 0
    assert Row.from_mapping(dict(raw)) == first
    assert len(splits) == calls  # the second row of that layout reuses its split

    layouts = [{**_BASE, f"extra_{index}": index, "review_f1": 0.5} for index in range(70)]
    for raw in layouts:
        assert Row.from_mapping(raw) == Row.from_mapping(MappingProxyType(raw))
    assert len(rows_module._LAYOUTS) == 64
    assert tuple(layouts[62]) in rows_module._LAYOUTS  # the 63rd new layout (64th in all) is kept
    assert tuple(layouts[63]) not in rows_module._LAYOUTS
