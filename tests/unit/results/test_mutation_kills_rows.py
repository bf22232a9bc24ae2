"""Result rows pinned field by field (kills surviving mutants of wfbench.domain.results.rows)."""

from __future__ import annotations

from typing import Any

import pytest

from wfbench.domain.errors import InputError
from wfbench.domain.results.rows import ErrorKind, Row

FULL: dict[str, Any] = {
    "task": "t1",
    "arm": "workflow",
    "run": 2,
    "class": "bug-fix",
    "ok": True,
    "resolved": True,
    "error_kind": "oracle-failed",
    "input_tokens": 11,
    "cache_creation_input_tokens": 12,
    "cache_read_input_tokens": 13,
    "output_tokens": 14,
    "cost_usd": 0.5,
    "duration_s": 3.0,
    "num_turns": 7,
    "authored_tests_passed": True,
    "oracle_passed": False,
    "skill_invoked": True,
    "transcript_missing": True,
    "review_evidence_valid": False,
    "review_precision": 0.25,
    "review_clean_pass": None,
    "diff_files": 1,
    "diff_insertions": 2,
    "diff_deletions": 3,
    "reused": True,
    "sandbox_backend": "bwrap",
}


def test_every_field_of_a_full_row_is_read_and_written_back_unchanged():
    """A row with every field set to a non-default value maps back to the same mapping."""
    row = Row.from_mapping(FULL)
    assert row.to_mapping() == FULL
    assert (row.task_class, row.num_turns, row.error_kind) == ("bug-fix", 7, ErrorKind.ORACLE_FAILED)
    assert (row.authored_tests_passed, row.oracle_passed, row.skill_invoked) == (True, False, True)
    assert (row.ok, row.resolved, row.transcript_missing, row.reused) == (True, True, True, True)
    assert row.review == {"review_precision": 0.25, "review_clean_pass": None}
    assert row.extra == {"sandbox_backend": "bwrap"}


def test_usage_reads_each_usage_field_by_name():
    """Row.usage(name) is the named token count (None when unknown)."""
    row = Row.from_mapping(FULL)
    assert [row.usage(n) for n in ("input_tokens", "output_tokens")] == [11, 14]
    assert Row.from_mapping({"task": "t", "arm": "a", "run": 0}).usage("input_tokens") is None


def test_a_minimal_row_takes_false_for_flags_and_none_for_everything_unknown():
    """Absent flags are false; absent measurements, verdicts and the class are unknown (None)."""
    row = Row.from_mapping({"task": "t", "arm": "a", "run": 0})
    assert (row.ok, row.resolved, row.transcript_missing, row.reused) == (False, False, False, False)
    assert (row.task_class, row.num_turns, row.oracle_passed, row.skill_invoked) == (None, None, None, None)
    assert row.to_mapping()["error_kind"] is None


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"task": ""}, "task", "task: must be a non-empty string"),
        ({"class": 5}, "class", "class: must be a string or null"),
        ({"ok": "yes"}, "ok", "ok: must be true or false"),
        ({"oracle_passed": "x"}, "oracle_passed", "oracle_passed: must be true, false or null"),
        ({"run": -1}, "run", "run: must be a non-negative integer"),
        ({"run": None}, "run", "run: must be a non-negative integer"),
        ({"num_turns": -1}, "num_turns", "num_turns: must be a non-negative integer or null"),
        ({"cost_usd": -1}, "cost_usd", "cost_usd: must be a finite non-negative number or null"),
        ({"error_kind": "bogus"}, "error_kind", "error_kind: unknown error kind 'bogus'"),
        (
            {"review_precision": "x"},
            "review_precision",
            "review_precision: must be a number, a boolean or null",
        ),
    ],
)
def test_each_bad_field_gets_its_exact_message_naming_the_field(
    change: dict[str, Any], field: str, message: str
):
    """One message per cause, with the field name first (what the user sees after the file and line)."""
    with pytest.raises(InputError) as caught:
        Row.from_mapping({**FULL, **change})
    assert (caught.value.field, caught.value.message) == (field, message)


def test_a_row_without_a_run_is_refused_as_required():
    """``run`` is required (a cell has a run number); its absence is not read as unknown."""
    with pytest.raises(InputError) as caught:
        Row.from_mapping({"task": "t", "arm": "a"})
    assert caught.value.message == "run: is required"


def test_a_row_that_is_not_a_mapping_is_refused_with_the_reason():
    """A JSON array (or any non-object) is not a row."""
    with pytest.raises(InputError) as caught:
        Row.from_mapping([1, 2])  # type: ignore[arg-type]
    assert (caught.value.field, caught.value.reason) == ("", "a row must be a JSON object")


@pytest.mark.parametrize("value", [None, True, 0, 0.5])
def test_a_review_metric_may_be_null_a_boolean_or_a_number(value: object):
    """Null, booleans and finite numbers are kept as the review metric's value."""
    row = Row.from_mapping({"task": "t", "arm": "a", "run": 0, "review_recall": value})
    assert row.review == {"review_recall": value}
