"""A cell's outcome: folding its sessions, then classifying resolved and the error kind.

See ``docs/concepts.md``, "A cell's outcome".

``resolved = ok ∧ authored tests passed ∧ hidden oracle passed``. The cell-level kinds
(``verify-failed``, ``oracle-failed``, ``oracle-unavailable``) are assigned only when no
session, evidence, skill or phase error is already set, so the first cause always wins.
Unknown is not zero: a usage, cost, turn count or duration any session did not report makes
the sum ``None``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import attrs

from wfbench.domain.results.rows import USAGE_FIELDS, ErrorKind
from wfbench.domain.session.records import SessionRecord, Usage

__all__ = ["CellOutcome", "SessionSum", "classify_outcome", "sum_sessions"]


@attrs.frozen
class CellOutcome:
    """The verdict on one cell: whether it resolved, and the error kind it carries (if any)."""

    resolved: bool
    error_kind: ErrorKind | None


def classify_outcome(
    *,
    ok: bool,
    error_kind: ErrorKind | None,
    authored_tests_passed: bool | None,
    oracle_passed: bool | None,
    review_evidence_valid: bool | None = None,
    work_produced: bool = True,
) -> CellOutcome:
    """Classify a cell from its folded sessions and its checks.

    ``oracle_passed`` is ``None`` when there was no oracle snapshot; ``authored_tests_passed``
    ``None`` (verify did not run) counts as not passed. ``review_evidence_valid`` is ``False``
    when the review artifact could not be parsed or scored (``None`` for non-review arms).
    ``work_produced`` is ``False`` when an implementation arm left the non-plan diff unchanged.

    Precedence of the error kind: the one already set (session, evidence, skill or phase),
    then ``review-evidence-invalid``, ``verify-failed``, ``oracle-failed`` or
    ``oracle-unavailable``, and finally ``no-work-produced`` for a cell that would otherwise
    resolve. A cell resolves only when nothing went wrong, so a resolved cell never carries a
    kind (the reference formula, plus: an incoherent ``ok`` with a kind already set does not
    resolve).
    """
    kind = error_kind
    if kind is None and review_evidence_valid is False:
        kind = ErrorKind.REVIEW_EVIDENCE_INVALID
    if kind is None and authored_tests_passed is not True:
        kind = ErrorKind.VERIFY_FAILED
    if kind is None and oracle_passed is None:
        kind = ErrorKind.ORACLE_UNAVAILABLE
    if kind is None and oracle_passed is False:
        kind = ErrorKind.ORACLE_FAILED
    passed = ok and authored_tests_passed is True and oracle_passed is True
    if kind is None and passed and not work_produced:
        kind = ErrorKind.NO_WORK_PRODUCED
    return CellOutcome(resolved=passed and kind is None, error_kind=kind)


@attrs.frozen
class SessionSum:
    """The sessions of one cell (e.g. plan then work) folded into one record.

    Every sum is ``None`` when any session's value is ``None``: unknown is never zero.
    """

    ok: bool
    error_kind: ErrorKind | None
    error_detail: str | None
    usage: Usage
    cost_usd: float | None
    duration_s: float | None
    num_turns: int | None
    #: ``False`` if any session shows no invocation, else ``None`` if any is unknown, else ``True``.
    skill_invoked: bool | None
    transcript_missing: bool
    transcript_truncated: bool
    #: Known session ids in session order (a session without an id adds none).
    session_ids: tuple[str, ...]
    evidence_diagnostics: tuple[str, ...]
    tool_use_counts: Mapping[str, int]


def _sum_known(values: Sequence[int | None]) -> int | None:
    if any(value is None for value in values):
        return None
    return sum(value for value in values if value is not None)


def _sum_known_float(values: Sequence[float | None], digits: int) -> float | None:
    if any(value is None for value in values):
        return None
    return round(sum(value for value in values if value is not None), digits)


def _skill_invoked(values: Sequence[bool | None]) -> bool | None:
    """False wins, then unknown, then True.

    The reference ignores sessions that expected no skill; a :class:`SessionRecord` cannot
    tell "not checked" from "unverifiable" (both are ``None``), so any ``None`` keeps the
    sum unknown. That is the conservative reading: it never invents an invocation.
    """
    if False in values:
        return False
    if None in values:
        return None
    return True


def sum_sessions(records: Sequence[SessionRecord]) -> SessionSum:
    """Fold a cell's session records, in session order, into one :class:`SessionSum`.

    Raises ``ValueError`` for an empty sequence: a cell that ran no session has no sum
    (its row is an ``infra-error`` row built elsewhere).
    """
    if not records:
        raise ValueError("sum_sessions needs at least one session record")
    usage = Usage(
        **{name: _sum_known([getattr(record.usage, name) for record in records]) for name in USAGE_FIELDS}
    )
    tools: Counter[str] = Counter()
    for record in records:
        tools.update(record.tool_use_counts)
    return SessionSum(
        ok=all(record.ok for record in records),
        error_kind=next((r.error_kind for r in records if r.error_kind is not None), None),
        error_detail=next((r.error_detail for r in records if r.error_detail), None),
        usage=usage,
        cost_usd=_sum_known_float([record.cost_usd for record in records], 4),
        duration_s=_sum_known_float([record.duration_s for record in records], 1),
        num_turns=_sum_known([record.num_turns for record in records]),
        skill_invoked=_skill_invoked([record.skill_invoked for record in records]),
        transcript_missing=any(record.transcript_missing for record in records),
        transcript_truncated=any(record.transcript_truncated for record in records),
        session_ids=tuple(r.session_id for r in records if r.session_id is not None),
        evidence_diagnostics=tuple(d for record in records for d in record.evidence_diagnostics),
        tool_use_counts=dict(sorted(tools.items())),
    )
