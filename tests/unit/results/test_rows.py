"""Rows keep the reference's field names and every unknown field; unknown is never zero."""

from __future__ import annotations

import pytest

from wfbench.domain.errors import InputError
from wfbench.domain.results.rows import ErrorKind, Row


def test_a_row_round_trips_with_unknown_fields_kept() -> None:
    """Fields the domain does not model survive a read/write round trip verbatim."""
    raw = {
        "task": "t",
        "arm": "baseline",
        "run": 1,
        "ok": True,
        "resolved": True,
        "error_kind": None,
        "input_tokens": 10,
        "cost_usd": None,
        "model": "m",
        "review_precision": 0.5,
        "transcript_artifacts": [{"path": "x"}],
    }

    row = Row.from_mapping(raw)

    assert row.extra["model"] == "m"
    assert row.review == {"review_precision": 0.5}
    assert Row.from_mapping(row.to_mapping()) == row


def test_missing_usage_is_none_not_zero() -> None:
    """A usage field that is absent stays None."""
    row = Row.from_mapping({"task": "t", "arm": "a", "run": 0})

    assert row.input_tokens is None
    assert row.cost_usd is None


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("run", -1),
        ("run", "1"),
        ("input_tokens", 1.5),
        ("cost_usd", "free"),
        ("ok", 1),
        ("error_kind", "exploded"),
        ("task", ""),
        ("review_f1", "high"),
    ],
)
def test_a_bad_field_is_refused_and_named(field: str, value: object) -> None:
    """Each malformed field raises an InputError that names it."""
    raw = {"task": "t", "arm": "a", "run": 1, field: value}

    with pytest.raises(InputError) as caught:
        Row.from_mapping(raw)

    assert caught.value.field == field


def test_an_invalid_review_artifact_overrides_the_effective_kind() -> None:
    """review_evidence_valid=false makes the effective kind review-evidence-invalid and excludes the row."""
    row = Row.from_mapping(
        {
            "task": "t",
            "arm": "review",
            "run": 1,
            "error_kind": "skill-not-invoked",
            "review_evidence_valid": False,
        }
    )

    assert row.effective_kind is ErrorKind.REVIEW_EVIDENCE_INVALID
    assert row.excluded
