"""wfbench's pure domain: rows, review scoring, aggregation, health, gates and promotion evidence.

Other evaluation tools import this package to score, aggregate and gate rows they produced
themselves; see ``docs/domain.md``. Nothing here performs I/O, reads a clock or logs.

``__all__`` is the stable API. The subpackages hold the concepts (``results``, ``review``,
``promotion``, ``session``, ``workspace``, ``sweep``); what they define beyond these names (the
scheduler's fold, comparator reuse, sandbox policies...) stays importable from them but may
change between releases.

Names the curation of #9 dropped from this package without notice still resolve here, with a
``DeprecationWarning`` naming their new home, until the release :data:`_REMOVED_IN`
(:data:`_DEPRECATED`); they are in neither ``__all__`` nor ``dir()``. The old flat modules
``wfbench.domain.scheduling`` and ``wfbench.domain.workspace_rules`` are shims that warn the same way.

Names are imported on first use (PEP 562), so ``import wfbench.domain.errors`` (what every
command of the CLI does) does not load the whole domain; :data:`_SOURCES` says where each name
lives and ``tests/unit/test_domain_public_api.py`` checks it against the imports below.
"""

import importlib as _importlib
import sys as _sys
import types as _types
import typing as _typing
import warnings as _warnings

if _typing.TYPE_CHECKING:
    from wfbench.domain.errors import InputError, ReviewArtifactError, WfbenchError
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
    from wfbench.domain.promotion.validation import ApplyExpectation, validate_for_apply
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
    "wfbench.domain.promotion.validation": ("ApplyExpectation", "validate_for_apply"),
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

#: The release that drops the deprecated names below (and the shim modules ``scheduling`` and
#: ``workspace_rules``); docs/domain.md's deprecation table and the CHANGELOG say the same.
_REMOVED_IN = "0.3.0"

#: Names #9 removed from this package without notice: their home now → names. Each still resolves
#: here with a DeprecationWarning until :data:`_REMOVED_IN`, and is never cached on the package (so
#: every import warns, and ``vars()`` keeps only the public surface).
_DEPRECATED: dict[str, tuple[str, ...]] = {
    "wfbench.domain.review.matching": ("match_findings",),
    "wfbench.domain.session.outcome": ("SessionSum", "sum_sessions"),
    "wfbench.domain.sweep.reuse": (
        "EVIDENCE_MAX_AGE",
        "ArmIdentity",
        "ReuseBinding",
        "ReuseSelection",
        "TaskBinding",
        "is_reusable_comparator",
        "keep_paid_canary",
        "reuse_refusal",
        "select_reusable_comparators",
        "stamp_reused",
    ),
    "wfbench.domain.sweep.scheduling": (
        "DEFAULT_OUTAGE_STREAK",
        "Breaker",
        "Cell",
        "FoldState",
        "canonical_order",
        "fold",
        "longest_first",
        "packed_window",
        "start_fold",
        "step",
    ),
}
_HOME_OF = {name: module for module, names in _DEPRECATED.items() for name in names}


def __getattr__(name: str) -> _typing.Any:
    """Import a public name on first use and keep it on the package; resolve a deprecated one, warning."""
    module = _MODULE_OF.get(name)
    if module is not None:
        value = getattr(_importlib.import_module(module), name)
        globals()[name] = value
        return value
    home = _HOME_OF.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if not _is_from_import_probe(_sys._getframe(1)):
        _warnings.warn(
            f"{__name__}.{name} is deprecated and will be removed in {_REMOVED_IN}; import it from {home}",
            DeprecationWarning,
            stacklevel=2,
        )
    return getattr(_importlib.import_module(home), name)


def _is_from_import_probe(caller: _types.FrameType) -> bool:
    """Whether ``caller`` is importlib checking a name before ``from wfbench.domain import name`` reads it.

    CPython looks such a name up twice: ``importlib._bootstrap._handle_fromlist`` first asks
    ``hasattr`` (to know whether ``name`` is a submodule to import), then the statement reads it.
    Only the read warns, so one import gives exactly one DeprecationWarning, not two.
    """
    return (
        caller.f_code.co_name == "_handle_fromlist"
        and caller.f_globals.get("__name__") == "importlib._bootstrap"
    )


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
