"""wfbench's pure domain: rows, review scoring, aggregation, health, gates and promotion evidence.

Other evaluation tools import this package to score, aggregate and gate rows they produced
themselves; see ``docs/domain.md``. Nothing here performs I/O, reads a clock or logs.

``__all__`` is the stable API. The subpackages hold the concepts (``results``, ``review``,
``promotion``, ``session``, ``workspace``, ``sweep``); what they define beyond these names (the
scheduler's fold, comparator reuse, sandbox policies...) stays importable from them but may
change between releases.

Names are imported on first use (PEP 562), so ``import wfbench.domain.errors`` (what every
command of the CLI does) does not load the whole domain; :data:`_SOURCES` says where each name
lives and ``tests/unit/test_domain_public_api.py`` checks it against the imports below.
"""

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from wfbench.domain.errors import InputError, ReviewArtifactError, WfbenchError
    from wfbench.domain.promotion.apply import ApplyExpectation, validate_for_apply
    from wfbench.domain.promotion.decision import (
        Decision,
        DecisionKind,
        ImplementationTask,
        PolicyVerdict,
        ReviewTask,
    )
    from wfbench.domain.promotion.evidence import (
        EVIDENCE_SCHEMA_VERSION,
        EvidenceBindings,
        PromotionEvidence,
        RunStatus,
        aggregate_from_mapping,
        decision_from_mapping,
    )
    from wfbench.domain.promotion.gates import evaluate_pair, infer_gate
    from wfbench.domain.promotion.implementation_gate import evaluate_candidate
    from wfbench.domain.promotion.judging import PairSpec, judge, judge_rows
    from wfbench.domain.promotion.policy import (
        CANDIDATE_ARMS,
        DEFAULT_GATES,
        DEFAULT_POLICY,
        PROMOTION_METRICS,
        DecisionPolicy,
        GateKind,
        PromotionPolicy,
        check_candidate_arms,
    )
    from wfbench.domain.promotion.review_gate import evaluate_review_candidate
    from wfbench.domain.results.aggregation import (
        REVIEW_FLAG_METRICS,
        REVIEW_NUMERIC_METRICS,
        SAVINGS_FIELDS,
        Aggregate,
        AggregateTable,
        Savings,
        TableBuilder,
        aggregate,
        is_scored,
        saving_pct,
        savings,
    )
    from wfbench.domain.results.health import (
        ArmHealth,
        HealthCounters,
        HealthStatus,
        classify_health,
        classify_sweep_health,
        count_health,
        unusable_arms,
    )
    from wfbench.domain.results.jsonl import parse_row_lines, parse_rows
    from wfbench.domain.results.rows import (
        EVIDENCE_FAILURE_KINDS,
        EXCLUDED_KINDS,
        EXECUTION_FAILURE_KINDS,
        SYSTEMIC_KINDS,
        USAGE_FIELDS,
        ErrorKind,
        Row,
    )
    from wfbench.domain.results.summary import RowSummary, SummaryBuilder, summarize
    from wfbench.domain.review.artifact import Finding, ReviewArtifact, parse_review_artifact
    from wfbench.domain.review.fields import Category, Severity, Verdict
    from wfbench.domain.review.labels import Label, ReviewLabels, parse_labels
    from wfbench.domain.review.scoring import SCORE_KEYS, ReviewScore, review_oracle_passed, score_review
    from wfbench.domain.session.outcome import CellOutcome, classify_outcome
    from wfbench.domain.statistics.analysis import AnalysisConfig, PairStatistics, analyze_pair
    from wfbench.domain.statistics.planning import detectability
    from wfbench.domain.statistics.samples import PairedSamples, paired_samples
    from wfbench.domain.statistics.view import statistics_view
    from wfbench.domain.strict_json import JsonSyntaxError

#: Where each public name is defined: module → names (the imports above, for static checkers).
_SOURCES: dict[str, tuple[str, ...]] = {
    "wfbench.domain.errors": ("InputError", "ReviewArtifactError", "WfbenchError"),
    "wfbench.domain.promotion.apply": ("ApplyExpectation", "validate_for_apply"),
    "wfbench.domain.promotion.decision": (
        "Decision",
        "DecisionKind",
        "ImplementationTask",
        "PolicyVerdict",
        "ReviewTask",
    ),
    "wfbench.domain.promotion.evidence": (
        "EVIDENCE_SCHEMA_VERSION",
        "EvidenceBindings",
        "PromotionEvidence",
        "RunStatus",
        "aggregate_from_mapping",
        "decision_from_mapping",
    ),
    "wfbench.domain.promotion.gates": ("evaluate_pair", "infer_gate"),
    "wfbench.domain.promotion.implementation_gate": ("evaluate_candidate",),
    "wfbench.domain.promotion.judging": ("PairSpec", "judge", "judge_rows"),
    "wfbench.domain.promotion.policy": (
        "CANDIDATE_ARMS",
        "DEFAULT_GATES",
        "DEFAULT_POLICY",
        "PROMOTION_METRICS",
        "DecisionPolicy",
        "GateKind",
        "PromotionPolicy",
        "check_candidate_arms",
    ),
    "wfbench.domain.promotion.review_gate": ("evaluate_review_candidate",),
    "wfbench.domain.results.aggregation": (
        "REVIEW_FLAG_METRICS",
        "REVIEW_NUMERIC_METRICS",
        "SAVINGS_FIELDS",
        "Aggregate",
        "AggregateTable",
        "Savings",
        "TableBuilder",
        "aggregate",
        "is_scored",
        "saving_pct",
        "savings",
    ),
    "wfbench.domain.results.health": (
        "ArmHealth",
        "HealthCounters",
        "HealthStatus",
        "classify_health",
        "classify_sweep_health",
        "count_health",
        "unusable_arms",
    ),
    "wfbench.domain.results.jsonl": ("parse_row_lines", "parse_rows"),
    "wfbench.domain.results.rows": (
        "EVIDENCE_FAILURE_KINDS",
        "EXCLUDED_KINDS",
        "EXECUTION_FAILURE_KINDS",
        "SYSTEMIC_KINDS",
        "USAGE_FIELDS",
        "ErrorKind",
        "Row",
    ),
    "wfbench.domain.results.summary": ("RowSummary", "SummaryBuilder", "summarize"),
    "wfbench.domain.review.artifact": ("Finding", "ReviewArtifact", "parse_review_artifact"),
    "wfbench.domain.review.fields": ("Category", "Severity", "Verdict"),
    "wfbench.domain.review.labels": ("Label", "ReviewLabels", "parse_labels"),
    "wfbench.domain.review.scoring": ("SCORE_KEYS", "ReviewScore", "review_oracle_passed", "score_review"),
    "wfbench.domain.session.outcome": ("CellOutcome", "classify_outcome"),
    "wfbench.domain.statistics.analysis": ("AnalysisConfig", "PairStatistics", "analyze_pair"),
    "wfbench.domain.statistics.planning": ("detectability",),
    "wfbench.domain.statistics.samples": ("PairedSamples", "paired_samples"),
    "wfbench.domain.statistics.view": ("statistics_view",),
    "wfbench.domain.strict_json": ("JsonSyntaxError",),
}
_MODULE_OF = {name: module for module, names in _SOURCES.items() for name in names}


def __getattr__(name: str) -> _typing.Any:
    """Import a public name on first use and keep it on the package."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "CANDIDATE_ARMS",
    "DEFAULT_GATES",
    "DEFAULT_POLICY",
    "EVIDENCE_FAILURE_KINDS",
    "EVIDENCE_SCHEMA_VERSION",
    "EXCLUDED_KINDS",
    "EXECUTION_FAILURE_KINDS",
    "PROMOTION_METRICS",
    "REVIEW_FLAG_METRICS",
    "REVIEW_NUMERIC_METRICS",
    "SAVINGS_FIELDS",
    "SCORE_KEYS",
    "SYSTEMIC_KINDS",
    "USAGE_FIELDS",
    "Aggregate",
    "AggregateTable",
    "AnalysisConfig",
    "ApplyExpectation",
    "ArmHealth",
    "Category",
    "CellOutcome",
    "Decision",
    "DecisionKind",
    "DecisionPolicy",
    "ErrorKind",
    "EvidenceBindings",
    "Finding",
    "GateKind",
    "HealthCounters",
    "HealthStatus",
    "ImplementationTask",
    "InputError",
    "JsonSyntaxError",
    "Label",
    "PairSpec",
    "PairStatistics",
    "PairedSamples",
    "PolicyVerdict",
    "PromotionEvidence",
    "PromotionPolicy",
    "ReviewArtifact",
    "ReviewArtifactError",
    "ReviewLabels",
    "ReviewScore",
    "ReviewTask",
    "Row",
    "RowSummary",
    "RunStatus",
    "Savings",
    "Severity",
    "SummaryBuilder",
    "TableBuilder",
    "Verdict",
    "WfbenchError",
    "aggregate",
    "aggregate_from_mapping",
    "analyze_pair",
    "check_candidate_arms",
    "classify_health",
    "classify_outcome",
    "classify_sweep_health",
    "count_health",
    "decision_from_mapping",
    "detectability",
    "evaluate_candidate",
    "evaluate_pair",
    "evaluate_review_candidate",
    "infer_gate",
    "is_scored",
    "judge",
    "judge_rows",
    "paired_samples",
    "parse_labels",
    "parse_review_artifact",
    "parse_row_lines",
    "parse_rows",
    "review_oracle_passed",
    "saving_pct",
    "savings",
    "score_review",
    "statistics_view",
    "summarize",
    "unusable_arms",
    "validate_for_apply",
]
