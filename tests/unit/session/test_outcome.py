"""Cell outcome classification and folding a cell's sessions (sessions_sandbox.md §1.8, §2;
review_scoring.md §4.2; promotion.md §3.0)."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.strategies import session_records
from wfbench.domain.results.rows import USAGE_FIELDS, ErrorKind
from wfbench.domain.session.outcome import CellOutcome, classify_outcome, sum_sessions
from wfbench.domain.session.records import SessionRecord, Usage


def outcome(**overrides: object) -> CellOutcome:
    """classify_outcome on a cell where everything passed, with ``overrides`` applied."""
    fields: dict[str, object] = {
        "ok": True,
        "error_kind": None,
        "authored_tests_passed": True,
        "oracle_passed": True,
    }
    fields.update(overrides)
    return classify_outcome(**fields)  # type: ignore[arg-type]


# --- classify_outcome -----------------------------------------------------------------------


def test_a_cell_resolves_when_the_session_verify_and_oracle_all_pass() -> None:
    """resolved = ok ∧ authored tests passed ∧ oracle passed, with no error kind."""
    assert outcome() == CellOutcome(resolved=True, error_kind=None)


def test_failed_authored_tests_are_verify_failed() -> None:
    """Authored verify failed and no kind yet → verify-failed, unresolved."""
    assert outcome(authored_tests_passed=False) == CellOutcome(False, ErrorKind.VERIFY_FAILED)


def test_verify_that_did_not_run_counts_as_failed() -> None:
    """authored_tests_passed None (verify never ran) does not resolve: verify-failed."""
    assert outcome(authored_tests_passed=None) == CellOutcome(False, ErrorKind.VERIFY_FAILED)


def test_a_failed_oracle_is_oracle_failed() -> None:
    """Verify passed, hidden oracle failed → oracle-failed."""
    assert outcome(oracle_passed=False) == CellOutcome(False, ErrorKind.ORACLE_FAILED)


def test_no_oracle_snapshot_is_oracle_unavailable() -> None:
    """oracle_passed None means no snapshot → oracle-unavailable, never resolved."""
    assert outcome(oracle_passed=None) == CellOutcome(False, ErrorKind.ORACLE_UNAVAILABLE)


def test_verify_failed_takes_precedence_over_the_oracle() -> None:
    """Verify is checked first: both failing → verify-failed."""
    assert outcome(authored_tests_passed=False, oracle_passed=False).error_kind is ErrorKind.VERIFY_FAILED
    assert outcome(authored_tests_passed=False, oracle_passed=None).error_kind is ErrorKind.VERIFY_FAILED


@pytest.mark.parametrize(
    "kind",
    [
        ErrorKind.SESSION_ERROR,
        ErrorKind.SKILL_NOT_INVOKED,
        ErrorKind.PLAN_EVIDENCE_INVALID,
        ErrorKind.CANCELLED,
    ],
)
def test_an_existing_error_kind_is_kept_over_the_cell_level_kinds(kind: ErrorKind) -> None:
    """verify-failed / oracle-* are assigned only when the sessions left no kind."""
    result = outcome(ok=False, error_kind=kind, authored_tests_passed=False, oracle_passed=None)

    assert result == CellOutcome(False, kind)


def test_an_unparseable_review_is_review_evidence_invalid_before_verify() -> None:
    """review_scoring.md §4.2: review-evidence-invalid comes after session kinds, before verify-failed."""
    result = outcome(review_evidence_valid=False, authored_tests_passed=False, oracle_passed=False)
    assert result == CellOutcome(False, ErrorKind.REVIEW_EVIDENCE_INVALID)

    kept = outcome(ok=False, error_kind=ErrorKind.SESSION_ERROR, review_evidence_valid=False)
    assert kept.error_kind is ErrorKind.SESSION_ERROR


def test_invalid_review_evidence_never_resolves() -> None:
    """Even with every check passing, invalid review evidence is not a resolution."""
    assert outcome(review_evidence_valid=False).resolved is False
    assert outcome(review_evidence_valid=True).resolved is True


def test_a_wrong_but_valid_review_is_a_measured_negative() -> None:
    """A well-formed wrong review is oracle-failed with valid evidence (not an evidence failure)."""
    assert outcome(review_evidence_valid=True, oracle_passed=False) == CellOutcome(
        False, ErrorKind.ORACLE_FAILED
    )


def test_a_session_that_was_not_ok_never_resolves() -> None:
    """ok false with every check passing does not resolve (the kind stays as given)."""
    assert outcome(ok=False) == CellOutcome(False, None)


def test_a_resolved_looking_cell_with_an_error_kind_does_not_resolve() -> None:
    """Our addition: an incoherent ok=True with a kind already set is not resolved; the kind is kept."""
    result = outcome(error_kind=ErrorKind.IMPLEMENTATION_EVIDENCE_INVALID)

    assert result == CellOutcome(False, ErrorKind.IMPLEMENTATION_EVIDENCE_INVALID)


def test_a_cell_that_changed_nothing_is_no_work_produced() -> None:
    """An implementation arm that would resolve with an unchanged diff → no-work-produced."""
    assert outcome(work_produced=False) == CellOutcome(False, ErrorKind.NO_WORK_PRODUCED)


def test_no_work_produced_does_not_mask_an_earlier_failure() -> None:
    """An unchanged diff on a cell that failed the oracle stays oracle-failed."""
    assert outcome(work_produced=False, oracle_passed=False).error_kind is ErrorKind.ORACLE_FAILED
    assert outcome(work_produced=False, ok=False) == CellOutcome(False, None)


# --- sum_sessions -----------------------------------------------------------------------


def session(**overrides: object) -> SessionRecord:
    """A measured, ok session record with ``overrides`` applied."""
    base = SessionRecord(
        ok=True,
        error_kind=None,
        error_detail=None,
        usage=Usage(10, 20, 30, 40),
        cost_usd=0.1,
        num_turns=3,
        duration_s=1.25,
        session_id="s1",
        skill_invoked=True,
    )
    return attrs.evolve(base, **overrides)


def test_sessions_sum_usage_cost_turns_and_duration() -> None:
    """Usage and turns add up; cost rounds to 4 places and duration to 1."""
    total = sum_sessions(
        [
            session(cost_usd=0.12344, duration_s=1.25, session_id="a"),
            session(cost_usd=0.00003, duration_s=1.17, usage=Usage(1, 2, 3, 4), num_turns=2, session_id="b"),
        ]
    )

    assert total.usage == Usage(11, 22, 33, 44)
    assert total.cost_usd == 0.1235
    assert total.duration_s == 2.4
    assert total.num_turns == 5
    assert total.session_ids == ("a", "b")
    assert total.ok is True
    assert total.error_kind is None


@pytest.mark.parametrize("field", USAGE_FIELDS)
def test_an_unreported_usage_field_stays_unknown_in_the_sum(field: str) -> None:
    """One session without a usage field makes that field None; the other fields still add up."""
    partial = attrs.evolve(Usage(1, 1, 1, 1), **{field: None})
    total = sum_sessions([session(), session(usage=partial)])

    assert getattr(total.usage, field) is None
    for other, base in zip(USAGE_FIELDS, (10, 20, 30, 40), strict=True):
        if other != field:
            assert getattr(total.usage, other) == base + 1, other


@pytest.mark.parametrize("field", ["cost_usd", "duration_s", "num_turns"])
def test_an_unmeasured_cost_duration_or_turn_count_stays_unknown(field: str) -> None:
    """cost None if any session's cost is None (never 0); likewise duration and turns."""
    total = sum_sessions([session(), session(**{field: None})])

    assert getattr(total, field) is None


def test_a_genuine_zero_cost_stays_zero() -> None:
    """0.0 is a measurement, not an unknown."""
    assert sum_sessions([session(cost_usd=0.0), session(cost_usd=0.0)]).cost_usd == 0.0


def test_the_first_error_kind_and_detail_win_and_ok_needs_every_session() -> None:
    """error_kind and error_detail are the first non-null in session order; ok = all ok."""
    total = sum_sessions(
        [
            session(),
            session(ok=False, error_kind=ErrorKind.SKILL_NOT_INVOKED, error_detail=""),
            session(ok=False, error_kind=ErrorKind.SESSION_ERROR, error_detail="boom"),
        ]
    )

    assert total.ok is False
    assert total.error_kind is ErrorKind.SKILL_NOT_INVOKED
    assert total.error_detail == "boom"


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ((True, True), True),
        ((True, False), False),
        ((False, None), False),
        ((None, False), False),
        ((True, None), None),
        ((None, None), None),
        ((True,), True),
    ],
)
def test_skill_invoked_is_false_first_then_unknown_then_true(
    values: tuple[bool | None, ...], expected: bool | None
) -> None:
    """Any False → False; else any unknown → None; else True (sessions_sandbox.md §2).

    Difference: a SessionRecord cannot tell a session that expected no skill from an
    unverifiable one (both None), so (True, None) stays None where the reference could say True.
    """
    assert sum_sessions([session(skill_invoked=v) for v in values]).skill_invoked is expected


def test_transcripts_diagnostics_and_tool_counts_are_unions() -> None:
    """transcript_missing/truncated = any; diagnostics flattened in order; tool counts added."""
    total = sum_sessions(
        [
            session(evidence_diagnostics=("a",), tool_use_counts={"Read": 2, "Bash": 1}),
            session(
                transcript_missing=True,
                transcript_truncated=True,
                evidence_diagnostics=("b", "c"),
                tool_use_counts={"Read": 1},
                session_id=None,
            ),
        ]
    )

    assert total.transcript_missing is True
    assert total.transcript_truncated is True
    assert total.evidence_diagnostics == ("a", "b", "c")
    assert total.tool_use_counts == {"Bash": 1, "Read": 3}
    assert list(total.tool_use_counts) == ["Bash", "Read"]
    assert total.session_ids == ("s1",)


def test_one_session_is_its_own_sum() -> None:
    """A single record folds to itself, field by field."""
    total = sum_sessions([session()])

    assert (total.usage, total.cost_usd, total.duration_s, total.num_turns) == (
        Usage(10, 20, 30, 40),
        0.1,
        1.2,
        3,
    )
    assert (total.transcript_missing, total.transcript_truncated) == (False, False)
    assert total.skill_invoked is True


def test_summing_no_sessions_is_refused() -> None:
    """A cell with no session has no sum: ValueError, not an all-true empty fold."""
    with pytest.raises(ValueError, match="^sum_sessions needs at least one session record$"):
        sum_sessions([])


@given(st.lists(session_records(), min_size=1, max_size=5))
def test_unknown_stays_unknown_in_any_session_sum(records: list[SessionRecord]) -> None:
    """Property: a summed field is None exactly when some session did not report it."""
    total = sum_sessions(records)

    for field in USAGE_FIELDS:
        unknown = any(getattr(r.usage, field) is None for r in records)
        assert (getattr(total.usage, field) is None) is unknown
    for field in ("cost_usd", "duration_s", "num_turns"):
        unknown = any(getattr(r, field) is None for r in records)
        assert (getattr(total, field) is None) is unknown
    assert total.ok is all(r.ok for r in records)
