"""Measurement health of an arm: did this sweep produce evidence we can read at all?

Health is not quality. A wrong answer (``oracle-failed``, a review scored 0) is a valid
negative measurement and leaves an arm healthy; an arm is unhealthy when its *fresh* attempts
failed to execute (``session-error``, ``infra-error``, ``cleanup-failure``, ``cancelled``) or
produced evidence that cannot be trusted (``review-evidence-invalid``, ``evidence-unverified``,
``skill-not-invoked``, any row with ``review_evidence_valid`` false or a missing transcript).

Reused rows (carried forward from a prior sweep) are never fresh attempts: they say nothing
about whether *this* sweep can measure, so an arm with only reused rows is ``UNKNOWN``
(``docs/concepts.md``, "Health").
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

import attrs

from wfbench.domain.results.rows import EVIDENCE_FAILURE_KINDS, EXECUTION_FAILURE_KINDS, Row

__all__ = [
    "ArmHealth",
    "HealthCounters",
    "HealthStatus",
    "HealthTally",
    "classify_health",
    "classify_sweep_health",
    "count_health",
    "is_evidence_failure",
    "is_execution_failure",
    "unusable_arms",
]


class HealthStatus(enum.StrEnum):
    """The health of one arm's measurements in one sweep."""

    #: No fresh attempt ran: nothing observed (for example every row was reused).
    UNKNOWN = "UNKNOWN"
    #: Every fresh attempt executed and produced trustworthy evidence.
    OBSERVED_OK = "OBSERVED_OK"
    #: Some fresh attempts failed, but at least one is admissible: reported, not fatal.
    DEGRADED = "DEGRADED"
    #: Every fresh attempt failed to execute or to produce evidence: the sweep exits 1.
    UNUSABLE = "UNUSABLE"


def is_execution_failure(row: Row) -> bool:
    """True when the harness or the session could not execute the cell."""
    return row.error_kind in EXECUTION_FAILURE_KINDS


def is_evidence_failure(row: Row) -> bool:
    """True when the cell ran but its evidence cannot be trusted (missing transcript included)."""
    return (
        row.error_kind in EVIDENCE_FAILURE_KINDS
        or row.review_evidence_valid is False
        or row.transcript_missing
    )


@attrs.frozen
class HealthCounters:
    """Health counts over a set of rows; only fresh (not reused) rows are counted as attempts.

    ``admissible`` counts fresh rows that failed neither way; a row that failed both ways
    appears in both failure counters but is subtracted from ``admissible`` once.
    """

    fresh_attempts: int = 0
    reused: int = 0
    admissible: int = 0
    execution_failures: int = 0
    evidence_failures: int = 0
    #: Human-readable causes, e.g. ``"2/3 fresh attempt(s) failed to execute (session-error×2)"``.
    reasons: tuple[str, ...] = ()

    @property
    def failed(self) -> int:
        """Fresh rows that failed in at least one way."""
        return self.fresh_attempts - self.admissible

    @property
    def status(self) -> HealthStatus:
        """UNKNOWN without fresh attempts; UNUSABLE when none is admissible; DEGRADED on any failure."""
        if self.fresh_attempts == 0:
            return HealthStatus.UNKNOWN
        if self.admissible == 0:
            return HealthStatus.UNUSABLE
        if self.failed > 0:
            return HealthStatus.DEGRADED
        return HealthStatus.OBSERVED_OK


def _evidence_cause(row: Row) -> str:
    """The label an evidence failure is reported under."""
    if row.error_kind in EVIDENCE_FAILURE_KINDS:
        return str(row.error_kind)
    if row.review_evidence_valid is False:
        return "review-evidence-invalid"
    return "transcript-missing"


def _breakdown(causes: Counter[str]) -> str:
    return ", ".join(f"{cause}×{count}" for cause, count in sorted(causes.items()))


class HealthTally:
    """Health counts accumulated one row at a time (mutable; :meth:`counters` freezes them).

    :func:`count_health` is a tally over an iterable; streaming readers keep one tally per
    (task, arm) and :meth:`merge` them per arm, so no row has to stay in memory.
    """

    __slots__ = ("admissible", "evidence", "execution", "fresh", "reused")

    def __init__(self) -> None:
        self.fresh = 0
        self.reused = 0
        self.admissible = 0
        self.execution: Counter[str] = Counter()
        self.evidence: Counter[str] = Counter()

    def add(self, row: Row) -> None:
        """Count one row."""
        if row.reused:
            self.reused += 1
            return
        self.fresh += 1
        failed_execution = is_execution_failure(row)
        failed_evidence = is_evidence_failure(row)
        if failed_execution:
            self.execution[str(row.error_kind)] += 1
        if failed_evidence:
            self.evidence[_evidence_cause(row)] += 1
        if not (failed_execution or failed_evidence):
            self.admissible += 1

    def merge(self, other: HealthTally) -> None:
        """Add ``other``'s counts to this tally."""
        self.fresh += other.fresh
        self.reused += other.reused
        self.admissible += other.admissible
        self.execution.update(other.execution)
        self.evidence.update(other.evidence)

    def counters(self) -> HealthCounters:
        """The counts so far, with their reasons."""
        fresh, reused, execution, evidence = self.fresh, self.reused, self.execution, self.evidence
        n_exec, n_evid = execution.total(), evidence.total()
        reasons: list[str] = []
        if fresh == 0:
            reasons.append("no fresh attempts" + (f" ({reused} reused row(s) only)" if reused else ""))
        if n_exec:
            reasons.append(f"{n_exec}/{fresh} fresh attempt(s) failed to execute ({_breakdown(execution)})")
        if n_evid:
            reasons.append(
                f"{n_evid}/{fresh} fresh attempt(s) produced untrustworthy evidence ({_breakdown(evidence)})"
            )
        return HealthCounters(
            fresh_attempts=fresh,
            reused=reused,
            admissible=self.admissible,
            execution_failures=n_exec,
            evidence_failures=n_evid,
            reasons=tuple(reasons),
        )


def count_health(rows: Iterable[Row]) -> HealthCounters:
    """Count fresh attempts, admissible rows and both kinds of failure over ``rows``."""
    tally = HealthTally()
    for row in rows:
        tally.add(row)
    return tally.counters()


@attrs.frozen
class ArmHealth:
    """The health verdict for one arm of a sweep: status, the reasons behind it, the counters."""

    arm: str
    status: HealthStatus
    counters: HealthCounters

    @property
    def reasons(self) -> tuple[str, ...]:
        """Why the arm has this status (empty when ``OBSERVED_OK``)."""
        return self.counters.reasons

    @property
    def fatal(self) -> bool:
        """True when the sweep must exit 1 because of this arm."""
        return self.status is HealthStatus.UNUSABLE


def classify_health(rows: Iterable[Row], arm: str) -> ArmHealth:
    """Classify one arm's health over every task of the sweep (rows of other arms are ignored)."""
    counters = count_health(row for row in rows if row.arm == arm)
    return ArmHealth(arm=arm, status=counters.status, counters=counters)


def classify_sweep_health(rows: Iterable[Row], arms_checked: Sequence[str]) -> Mapping[str, ArmHealth]:
    """Health of each arm in ``arms_checked`` (in that order); an arm without rows is UNKNOWN.

    Which arms are checked is the caller's choice (the reference checks its incumbents and
    ``review``/``ce_review``; baselines and candidates are not checked there).
    """
    by_arm: dict[str, list[Row]] = {arm: [] for arm in arms_checked}
    for row in rows:
        if row.arm in by_arm:
            by_arm[row.arm].append(row)
    return {arm: classify_health(arm_rows, arm) for arm, arm_rows in by_arm.items()}


def unusable_arms(health: Mapping[str, ArmHealth]) -> tuple[str, ...]:
    """The arms whose health makes the sweep fail (exit 1), in the mapping's order."""
    return tuple(arm for arm, verdict in health.items() if verdict.fatal)
