"""Arm health: execution vs evidence failures over fresh rows (promotion.md §5.5, §8.8;
scheduler_tasks.md §5.3; review_scoring.md §4.4)."""

from __future__ import annotations

import pytest

from wfbench.domain.results.health import (
    ArmHealth,
    HealthCounters,
    HealthStatus,
    classify_health,
    classify_sweep_health,
    count_health,
    is_evidence_failure,
    is_execution_failure,
    unusable_arms,
)
from wfbench.domain.results.rows import EVIDENCE_FAILURE_KINDS, EXECUTION_FAILURE_KINDS, ErrorKind, Row


def row(run: int, kind: ErrorKind | None = None, *, arm: str = "review", **fields: object) -> Row:
    """A row of ``arm`` with ``kind`` (resolved when there is no kind)."""
    return Row(task="t", arm=arm, run=run, ok=kind is None, resolved=kind is None, error_kind=kind, **fields)  # type: ignore[arg-type]


def status(rows: list[Row]) -> HealthStatus:
    """The health status of the ``review`` arm over ``rows``."""
    return classify_health(rows, "review").status


# --- §8.8 acceptance examples --------------------------------------------------------------


def test_an_arm_that_only_scored_wrong_answers_is_observed_ok() -> None:
    """§8.8: all oracle-failed (scored but wrong, even F1 0) is OBSERVED_OK, not unhealthy."""
    rows = [row(i, ErrorKind.ORACLE_FAILED, review={"review_weighted_f1": 0.0}) for i in range(3)]

    assert status(rows) is HealthStatus.OBSERVED_OK
    assert classify_health(rows, "review").reasons == ()


def test_an_arm_whose_every_review_was_invalid_is_unusable() -> None:
    """§8.8: all review-evidence-invalid → UNUSABLE (fatal); a single such cell is enough."""
    rows = [row(i, ErrorKind.REVIEW_EVIDENCE_INVALID) for i in range(3)]
    assert status(rows) is HealthStatus.UNUSABLE
    assert classify_health(rows, "review").fatal

    single = classify_health([row(0, ErrorKind.REVIEW_EVIDENCE_INVALID)], "review")
    assert single.status is HealthStatus.UNUSABLE
    assert single.fatal


def test_one_admissible_row_and_two_execution_failures_is_degraded() -> None:
    """§8.8: 1 admissible + 2 execution failures → DEGRADED, not fatal."""
    health = classify_health(
        [row(0), row(1, ErrorKind.SESSION_ERROR), row(2, ErrorKind.INFRA_ERROR)], "review"
    )

    assert health.status is HealthStatus.DEGRADED
    assert not health.fatal
    assert health.counters.execution_failures == 2
    assert health.counters.admissible == 1


def test_a_row_that_failed_both_ways_is_subtracted_once() -> None:
    """§8.8: session-error with invalid review evidence is subtracted once: admissible 1 of 2."""
    counters = count_health([row(0), row(1, ErrorKind.SESSION_ERROR, review_evidence_valid=False)])

    assert counters.fresh_attempts == 2
    assert counters.admissible == 1
    assert (counters.execution_failures, counters.evidence_failures) == (1, 1)
    assert counters.failed == 1
    assert counters.status is HealthStatus.DEGRADED


def test_an_arm_with_only_reused_rows_is_unknown() -> None:
    """§8.8: reused rows are never fresh attempts → UNKNOWN."""
    health = classify_health([row(0, reused=True), row(1, reused=True)], "review")

    assert health.status is HealthStatus.UNKNOWN
    assert health.counters.fresh_attempts == 0
    assert health.counters.reused == 2
    assert health.reasons == ("no fresh attempts (2 reused row(s) only)",)


def test_reused_rows_do_not_rescue_a_failing_fresh_attempt() -> None:
    """§8.8: 2 reused + 1 fresh session-error → UNUSABLE."""
    rows = [row(0, reused=True), row(1, reused=True), row(2, ErrorKind.SESSION_ERROR)]

    assert status(rows) is HealthStatus.UNUSABLE


# --- rules ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(EXECUTION_FAILURE_KINDS))
def test_each_execution_failure_kind_makes_a_lone_row_unusable(kind: ErrorKind) -> None:
    """session-error, infra-error, cleanup-failure and cancelled are execution failures."""
    assert is_execution_failure(row(0, kind))
    assert not is_evidence_failure(row(0, kind))
    assert status([row(0, kind)]) is HealthStatus.UNUSABLE


@pytest.mark.parametrize("kind", sorted(EVIDENCE_FAILURE_KINDS))
def test_each_evidence_failure_kind_makes_a_lone_row_unusable(kind: ErrorKind) -> None:
    """review-evidence-invalid, evidence-unverified and skill-not-invoked are evidence failures."""
    assert is_evidence_failure(row(0, kind))
    assert not is_execution_failure(row(0, kind))
    assert status([row(0, kind)]) is HealthStatus.UNUSABLE


def test_invalid_review_evidence_without_a_kind_is_an_evidence_failure() -> None:
    """review_evidence_valid false counts even when error_kind is empty."""
    counters = count_health([row(0, review_evidence_valid=False)])

    assert counters.evidence_failures == 1
    assert counters.status is HealthStatus.UNUSABLE
    assert counters.reasons == (
        "1/1 fresh attempt(s) produced untrustworthy evidence (review-evidence-invalid×1)",
    )


def test_a_missing_transcript_is_an_evidence_failure_even_on_a_resolved_row() -> None:
    """transcript_missing true makes the row inadmissible for health (it stays valid for the gate)."""
    counters = count_health([row(0, transcript_missing=True), row(1)])

    assert counters.evidence_failures == 1
    assert counters.status is HealthStatus.DEGRADED
    assert counters.reasons == (
        "1/2 fresh attempt(s) produced untrustworthy evidence (transcript-missing×1)",
    )


@pytest.mark.parametrize(
    "kind",
    [
        ErrorKind.VERIFY_FAILED,
        ErrorKind.ORACLE_FAILED,
        ErrorKind.ORACLE_UNAVAILABLE,
        ErrorKind.PLAN_EVIDENCE_INVALID,
        ErrorKind.IMPLEMENTATION_EVIDENCE_INVALID,
        ErrorKind.NO_WORK_PRODUCED,
    ],
)
def test_measured_outcomes_are_not_health_failures(kind: ErrorKind) -> None:
    """Kinds outside both failure sets leave the row admissible."""
    assert not is_execution_failure(row(0, kind))
    assert not is_evidence_failure(row(0, kind))
    assert status([row(0, kind)]) is HealthStatus.OBSERVED_OK


def test_failures_of_reused_rows_are_not_counted() -> None:
    """Health speaks for this sweep: a reused failed row adds to no counter but ``reused``."""
    counters = count_health([row(0, ErrorKind.SESSION_ERROR, reused=True, transcript_missing=True), row(1)])

    assert counters == HealthCounters(fresh_attempts=1, reused=1, admissible=1)
    assert counters.status is HealthStatus.OBSERVED_OK


def test_reasons_break_failures_down_by_cause() -> None:
    """Reasons name the counts and the causes, sorted, for execution and evidence separately."""
    counters = count_health(
        [
            row(0),
            row(1, ErrorKind.SESSION_ERROR),
            row(2, ErrorKind.SESSION_ERROR),
            row(3, ErrorKind.CANCELLED),
            row(4, ErrorKind.SKILL_NOT_INVOKED, transcript_missing=True),
            row(5, ErrorKind.SKILL_NOT_INVOKED),
        ]
    )

    assert counters.reasons == (
        "3/6 fresh attempt(s) failed to execute (cancelled×1, session-error×2)",
        "2/6 fresh attempt(s) produced untrustworthy evidence (skill-not-invoked×2)",
    )
    assert (counters.execution_failures, counters.evidence_failures) == (3, 2)


def test_no_rows_at_all_is_unknown_without_a_reused_note() -> None:
    """An arm that never ran is UNKNOWN with the plain reason."""
    health = classify_health([], "review")

    assert health == ArmHealth("review", HealthStatus.UNKNOWN, HealthCounters(reasons=("no fresh attempts",)))


def test_classify_health_reads_only_the_named_arm() -> None:
    """Rows of other arms do not affect an arm's health."""
    rows = [row(0, arm="review"), row(1, ErrorKind.SESSION_ERROR, arm="workflow")]

    assert classify_health(rows, "review").status is HealthStatus.OBSERVED_OK
    assert classify_health(rows, "workflow").status is HealthStatus.UNUSABLE


def test_sweep_health_covers_exactly_the_checked_arms_in_order() -> None:
    """Checked arms without rows are UNKNOWN; unchecked arms (baselines, candidates) are not reported."""
    rows = [
        row(0, arm="workflow"),
        row(1, ErrorKind.INFRA_ERROR, arm="review"),
        row(2, ErrorKind.INFRA_ERROR, arm="baseline"),
    ]

    health = classify_sweep_health(rows, ("workflow", "review", "ce_review"))

    assert list(health) == ["workflow", "review", "ce_review"]
    assert health["workflow"].status is HealthStatus.OBSERVED_OK
    assert health["review"].status is HealthStatus.UNUSABLE
    assert health["ce_review"].status is HealthStatus.UNKNOWN
    assert health["review"].arm == "review"
    assert health["review"].counters.fresh_attempts == 1
    assert unusable_arms(health) == ("review",)


def test_a_healthy_sweep_has_no_unusable_arm() -> None:
    """unusable_arms is empty when no checked arm is UNUSABLE (degraded is not fatal)."""
    health = classify_sweep_health([row(0), row(1, ErrorKind.SESSION_ERROR)], ("review",))

    assert health["review"].status is HealthStatus.DEGRADED
    assert unusable_arms(health) == ()
