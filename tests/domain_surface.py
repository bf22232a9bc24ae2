"""The pinned surface of ``wfbench.domain`` (#24), shared by the unit and integration tests that guard it.

Written out by hand, never derived from the package: a change to the package that these lists do
not follow is what the tests exist to catch.
"""

from __future__ import annotations

#: The stable API: what ``__all__`` held when it was pinned. A name added to ``__all__`` must be added
#: here; a name dropped from it must be named under "Deprecated" or "Removed" in CHANGELOG.md
#: (tests/integration/test_domain_surface_records.py), and may then leave this list.
PUBLIC_API = frozenset(
    {
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
        "ApplyExpectation",
        "ArmHealth",
        "Category",
        "CellOutcome",
        "Decision",
        "DecisionKind",
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
        "PromotionEvidence",
        "PromotionPolicy",
        "ReviewArtifact",
        "ReviewArtifactError",
        "ReviewLabels",
        "ReviewScore",
        "ReviewTask",
        "Row",
        "RunStatus",
        "Savings",
        "Severity",
        "Verdict",
        "WfbenchError",
        "aggregate",
        "aggregate_from_mapping",
        "check_candidate_arms",
        "classify_health",
        "classify_outcome",
        "classify_sweep_health",
        "count_health",
        "decision_from_mapping",
        "evaluate_candidate",
        "evaluate_pair",
        "evaluate_review_candidate",
        "infer_gate",
        "is_scored",
        "parse_labels",
        "parse_review_artifact",
        "parse_rows",
        "review_oracle_passed",
        "saving_pct",
        "savings",
        "score_review",
        "unusable_arms",
        "validate_for_apply",
        "parse_row_lines",
        "summarize",
        "RowSummary",
        "SummaryBuilder",
        "TableBuilder",
        # Paired statistics and the statistical policy (#12).
        "AnalysisConfig",
        "DecisionPolicy",
        "PairSpec",
        "PairStatistics",
        "PairedSamples",
        "PolicyVerdict",
        "analyze_pair",
        "detectability",
        "judge",
        "judge_rows",
        "paired_samples",
        "statistics_view",
    }
)

#: The release that removes every deprecated import below.
REMOVED_IN = "0.3.0"

_SCHEDULING = "wfbench.domain.sweep.scheduling"
_REUSE = "wfbench.domain.sweep.reuse"

#: Names #9 dropped from ``wfbench.domain`` without notice → the module that holds them now.
DEPRECATED_NAMES: dict[str, str] = {
    "Breaker": _SCHEDULING,
    "Cell": _SCHEDULING,
    "DEFAULT_OUTAGE_STREAK": _SCHEDULING,
    "FoldState": _SCHEDULING,
    "canonical_order": _SCHEDULING,
    "fold": _SCHEDULING,
    "longest_first": _SCHEDULING,
    "packed_window": _SCHEDULING,
    "start_fold": _SCHEDULING,
    "step": _SCHEDULING,
    "ArmIdentity": _REUSE,
    "EVIDENCE_MAX_AGE": _REUSE,
    "ReuseBinding": _REUSE,
    "ReuseSelection": _REUSE,
    "TaskBinding": _REUSE,
    "is_reusable_comparator": _REUSE,
    "keep_paid_canary": _REUSE,
    "reuse_refusal": _REUSE,
    "select_reusable_comparators": _REUSE,
    "stamp_reused": _REUSE,
    "match_findings": "wfbench.domain.review.matching",
    "SessionSum": "wfbench.domain.session.outcome",
    "sum_sessions": "wfbench.domain.session.outcome",
}

#: Flat modules #9 moved, kept as shims → (their new module, the public names the old one defined).
DEPRECATED_MODULES: dict[str, tuple[str, frozenset[str]]] = {
    "wfbench.domain.scheduling": (
        _SCHEDULING,
        frozenset(
            {
                "Action",
                "Breaker",
                "CancelRequested",
                "CancelRunning",
                "Cell",
                "CellFinished",
                "DEFAULT_OUTAGE_STREAK",
                "DETAIL_LIMIT",
                "Event",
                "FoldState",
                "PersistRow",
                "StopReason",
                "StopSubmitting",
                "SubmitCell",
                "SweepDone",
                "WINDOW_MULTIPLIER",
                "breaker_kind",
                "canonical_order",
                "failed_cell_row",
                "fold",
                "longest_first",
                "packed_window",
                "start_fold",
                "step",
                "step_all",
            }
        ),
    ),
    "wfbench.domain.workspace_rules": (
        "wfbench.domain.workspace.rules",
        frozenset(
            {
                "BoundaryVerdict",
                "COMMIT_RE",
                "ChangeKind",
                "Churn",
                "MAX_RELATIVE_PATH_BYTES",
                "PLAN_DIR",
                "PLAN_SUFFIXES",
                "Patch",
                "PathChange",
                "PhaseBoundary",
                "REASON_PATHS",
                "Snapshot",
                "WorkspaceState",
                "check_plan_phase",
                "check_read_only_phase",
                "diff_states",
                "is_inside",
                "is_plan_document",
                "mount_target_problem",
                "parse_shortstat",
                "phase_verdict",
                "relative_path_problem",
            }
        ),
    ),
}


def deprecated_imports() -> dict[str, str]:
    """Each deprecated import path (``wfbench.domain.step``, ``wfbench.domain.scheduling``) → its new home."""
    names = {f"wfbench.domain.{name}": home for name, home in DEPRECATED_NAMES.items()}
    return names | {module: home for module, (home, _) in DEPRECATED_MODULES.items()}
