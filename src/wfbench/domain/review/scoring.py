"""Scoring a parsed review against hidden labels: every metric of the reference's score dict.

:func:`score_review` is pure and does not re-check the artifact's coherence rules, so tests may
score combinations the parser refuses. Ratios are rounded to 6 decimals; ``None`` means
"undefined" (no findings, no labels...), never zero. When labels exist, ``f1`` and
``weighted_f1`` are 0.0 for a complete miss, so a silent reviewer fails instead of looking
undefined. Matching is :func:`~wfbench.domain.review.matching.match_findings` (optimal over the
whole assignment; wfbench's deliberate difference from the reference).

This module also re-exports the artifact and label vocabulary, so ``wfbench.domain.review.scoring`` is
the one import a caller needs.
"""

from __future__ import annotations

import math

import attrs

from wfbench.domain.review.artifact import (
    MAX_ARTIFACT_BYTES,
    MAX_FINDINGS,
    MSG_EMPTY,
    MSG_NEVER_WRITTEN,
    MSG_NOT_BOUNDED_FILE,
    MSG_NOT_UTF8,
    Finding,
    ReviewArtifact,
    msg_unreadable,
    parse_review_artifact,
)
from wfbench.domain.review.fields import Category, Severity, Verdict
from wfbench.domain.review.labels import Label, ReviewLabels, parse_labels
from wfbench.domain.review.matching import match_findings

__all__ = [
    "MAX_ARTIFACT_BYTES",
    "MAX_FINDINGS",
    "MSG_EMPTY",
    "MSG_NEVER_WRITTEN",
    "MSG_NOT_BOUNDED_FILE",
    "MSG_NOT_UTF8",
    "SCORE_KEYS",
    "Category",
    "Finding",
    "Label",
    "ReviewArtifact",
    "ReviewLabels",
    "ReviewScore",
    "Severity",
    "Verdict",
    "msg_unreadable",
    "parse_labels",
    "parse_review_artifact",
    "review_oracle_passed",
    "score_review",
]

#: The keys of the score dict, in the reference's order (the row fields add a ``review_`` prefix).
SCORE_KEYS = (
    "true_positives",
    "false_positives",
    "false_negatives",
    "precision",
    "recall",
    "f1",
    "weighted_precision",
    "weighted_recall",
    "weighted_f1",
    "blocker_recall",
    "severity_accuracy",
    "category_accuracy",
    "grounded_evidence",
    "verdict_correct",
    "clean_control",
    "clean_pass",
    "score_finite",
)

ScoreValue = float | int | bool | None


@attrs.frozen
class ReviewScore:
    """The score of one review. ``pairs`` (finding id, label id) is for explanation, not a metric."""

    true_positives: int
    false_positives: int
    false_negatives: int
    precision: float | None
    recall: float | None
    f1: float | None
    weighted_precision: float | None
    weighted_recall: float | None
    weighted_f1: float | None
    blocker_recall: float | None
    severity_accuracy: float | None
    category_accuracy: float | None
    grounded_evidence: float | None
    verdict_correct: bool
    clean_control: bool
    clean_pass: bool
    score_finite: bool
    pairs: tuple[tuple[str, str], ...] = ()

    def to_mapping(self) -> dict[str, ScoreValue]:
        """The ``review_score`` dict: exactly :data:`SCORE_KEYS`, in order."""
        return {key: getattr(self, key) for key in SCORE_KEYS}

    def row_fields(self) -> dict[str, ScoreValue]:
        """The ``review_<key>`` fields a result row carries."""
        return {f"review_{key}": getattr(self, key) for key in SCORE_KEYS}


def score_review(artifact: ReviewArtifact, labels: ReviewLabels) -> ReviewScore:
    """Score ``artifact`` against ``labels`` (``docs/review-scoring.md``, with optimal matching)."""
    findings, expected = artifact.findings, labels.labels
    pairs = match_findings(findings, expected)
    matched = len(pairs)
    credit = sum(min(f.severity.weight, e.severity.weight) for f, e in pairs)
    unmatched_weight = sum(f.severity.weight for f in findings) - sum(f.severity.weight for f, _ in pairs)
    blockers = [e for e in expected if e.severity.blocking]
    blockers_found = sum(1 for f, e in pairs if e.severity.blocking and f.severity.blocking)
    precision = _ratio(matched, len(findings))
    recall = _ratio(matched, len(expected))
    weighted_precision = _ratio(credit, credit + unmatched_weight)
    weighted_recall = _ratio(credit, sum(e.severity.weight for e in expected))
    weighted_f1 = _harmonic(weighted_precision, weighted_recall, has_labels=bool(expected))
    return ReviewScore(
        true_positives=matched,
        false_positives=len(findings) - matched,
        false_negatives=len(expected) - matched,
        precision=_rounded(precision),
        recall=_rounded(recall),
        f1=_rounded(_harmonic(precision, recall, has_labels=bool(expected))),
        weighted_precision=_rounded(weighted_precision),
        weighted_recall=_rounded(weighted_recall),
        weighted_f1=_rounded(weighted_f1),
        blocker_recall=_rounded(_ratio(blockers_found, len(blockers))),
        severity_accuracy=_rounded(_ratio(sum(f.severity is e.severity for f, e in pairs), matched)),
        category_accuracy=_rounded(_ratio(sum(f.category == e.category for f, e in pairs), matched)),
        grounded_evidence=_rounded(_ratio(sum(map(_grounded, findings)), len(findings))),
        verdict_correct=artifact.verdict is labels.expected_verdict,
        clean_control=not expected,
        clean_pass=not expected and not findings and artifact.verdict is Verdict.APPROVE,
        score_finite=all(_finite(value) for value in (precision, recall, weighted_f1)),
        pairs=tuple((f.id, e.id) for f, e in pairs),
    )


def review_oracle_passed(score: ReviewScore) -> bool:
    """The review oracle: no false positive, no false negative, and the right verdict."""
    return score.false_positives == 0 and score.false_negatives == 0 and score.verdict_correct


def _ratio(numerator: float, denominator: float) -> float | None:
    return numerator / denominator if denominator else None


def _harmonic(precision: float | None, recall: float | None, *, has_labels: bool) -> float | None:
    """F1 of two ratios; 0.0 when undefined but labels exist (a miss), None for a clean case."""
    if precision is not None and recall is not None and precision + recall > 0:
        return 2 * precision * recall / (precision + recall)
    return 0.0 if has_labels else None


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def _finite(value: float | None) -> bool:
    return value is None or math.isfinite(value)


def _grounded(finding: Finding) -> bool:
    return bool(finding.path) and finding.line > 0 and bool(finding.evidence.strip())
