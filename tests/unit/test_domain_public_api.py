"""``wfbench.domain`` is a curated public API: ``__all__`` is exact, resolvable and documented."""

from __future__ import annotations

import inspect
import types

import wfbench.domain


def test_every_name_in_all_exists_on_the_package() -> None:
    """No stale entry: each name of ``__all__`` resolves to an attribute of ``wfbench.domain``."""
    missing = [name for name in wfbench.domain.__all__ if not hasattr(wfbench.domain, name)]

    assert missing == []


def test_star_import_gives_exactly_all() -> None:
    """``from wfbench.domain import *`` binds exactly the names of ``__all__``, nothing else."""
    namespace: dict[str, object] = {}

    exec("from wfbench.domain import *", namespace)  # noqa: S102 - a fixed statement

    assert set(namespace) - {"__builtins__"} == set(wfbench.domain.__all__)


def test_every_public_name_the_package_imports_is_listed_in_all() -> None:
    """Nothing is half-exported: a name imported into the package but left out of ``__all__`` fails."""
    unlisted = [
        name
        for name, value in vars(wfbench.domain).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType)
        and name not in wfbench.domain.__all__
    ]

    assert unlisted == []


def test_all_lists_each_name_once() -> None:
    """No duplicates (a duplicate would hide a copy-paste of the wrong name)."""
    names = list(wfbench.domain.__all__)

    assert len(names) == len(set(names))


def test_all_exports_no_module_and_no_private_name() -> None:
    """Curated: submodules and underscore names stay out of the public surface."""
    leaked = [
        name
        for name in wfbench.domain.__all__
        if name.startswith("_") or isinstance(getattr(wfbench.domain, name), types.ModuleType)
    ]

    assert leaked == []


def test_every_exported_class_and_function_is_wfbench_s_own_and_documented() -> None:
    """Each exported class or function is defined in ``wfbench.domain`` and has a docstring."""
    problems = []
    for name in wfbench.domain.__all__:
        value = getattr(wfbench.domain, name)
        if not (inspect.isclass(value) or inspect.isfunction(value)):
            continue
        if not value.__module__.startswith("wfbench.domain."):
            problems.append(f"{name}: defined in {value.__module__}")
        if not (value.__doc__ or "").strip():
            problems.append(f"{name}: no docstring")

    assert problems == []


def test_the_names_a_tool_needs_to_score_aggregate_and_gate_are_exported() -> None:
    """The workflow of docs/domain.md needs these; dropping one from ``__all__`` breaks users."""
    needed = {
        "Row", "ErrorKind", "InputError", "ReviewArtifactError", "classify_outcome",
        "parse_review_artifact", "parse_labels", "score_review", "review_oracle_passed",
        "aggregate", "savings", "SAVINGS_FIELDS", "classify_health", "classify_sweep_health",
        "HealthStatus", "PromotionPolicy", "evaluate_candidate", "evaluate_review_candidate",
        "evaluate_pair", "Decision", "DecisionKind", "GateKind", "PromotionEvidence",
        "EvidenceBindings", "RunStatus", "EVIDENCE_SCHEMA_VERSION", "parse_rows",
    }  # fmt: skip

    assert needed - set(wfbench.domain.__all__) == set()


#: The stable API, pinned: adding or removing a public name is a deliberate change of this list,
#: of docs/domain.md's table and of the CHANGELOG.
PUBLIC_API = frozenset({
    "CANDIDATE_ARMS", "DEFAULT_GATES", "DEFAULT_POLICY", "EVIDENCE_FAILURE_KINDS",
    "EVIDENCE_SCHEMA_VERSION", "EXCLUDED_KINDS", "EXECUTION_FAILURE_KINDS", "PROMOTION_METRICS",
    "REVIEW_FLAG_METRICS", "REVIEW_NUMERIC_METRICS", "SAVINGS_FIELDS", "SCORE_KEYS", "SYSTEMIC_KINDS",
    "USAGE_FIELDS", "Aggregate", "AggregateTable", "ApplyExpectation", "ArmHealth", "Category",
    "CellOutcome", "Decision", "DecisionKind", "ErrorKind", "EvidenceBindings", "Finding", "GateKind",
    "HealthCounters", "HealthStatus", "ImplementationTask", "InputError", "JsonSyntaxError", "Label",
    "PromotionEvidence", "PromotionPolicy", "ReviewArtifact", "ReviewArtifactError", "ReviewLabels",
    "ReviewScore", "ReviewTask", "Row", "RunStatus", "Savings", "Severity", "Verdict", "WfbenchError",
    "aggregate", "aggregate_from_mapping", "check_candidate_arms", "classify_health",
    "classify_outcome", "classify_sweep_health", "count_health", "decision_from_mapping",
    "evaluate_candidate", "evaluate_pair", "evaluate_review_candidate", "infer_gate", "is_scored",
    "parse_labels", "parse_review_artifact", "parse_rows", "review_oracle_passed", "saving_pct",
    "savings", "score_review", "unusable_arms", "validate_for_apply",
    "parse_row_lines", "summarize", "RowSummary", "SummaryBuilder", "TableBuilder",
    # Paired statistics and the statistical policy (#12).
    "AnalysisConfig", "DecisionPolicy", "PairSpec", "PairStatistics", "PairedSamples", "PolicyVerdict",
    "analyze_pair", "detectability", "judge", "judge_rows", "paired_samples", "statistics_view",
})  # fmt: skip


def test_the_public_api_is_exactly_the_pinned_list() -> None:
    """``__all__`` changes only together with the pinned list (and the docs that describe it)."""
    assert set(wfbench.domain.__all__) == PUBLIC_API


def test_scheduler_and_reuse_internals_stay_in_their_subpackages() -> None:
    """The fold, the breaker and comparator reuse are importable from ``sweep`` but not public API."""
    from wfbench.domain.sweep import reuse, scheduling

    internals = {"FoldState", "step", "packed_window", "start_fold", "fold", "Breaker", "Cell",
                 "select_reusable_comparators", "stamp_reused", "sum_sessions"}  # fmt: skip

    assert internals & set(wfbench.domain.__all__) == set()
    assert callable(scheduling.step)
    assert callable(reuse.select_reusable_comparators)


def test_the_lazy_table_matches_the_imports_static_checkers_see() -> None:
    """``_SOURCES`` (used at run time) lists exactly the names of the ``TYPE_CHECKING`` imports, by module."""
    import ast

    tree = ast.parse(inspect.getsource(wfbench.domain))
    guarded = next(node for node in tree.body if isinstance(node, ast.If))
    imported = {
        node.module: tuple(alias.name for alias in node.names)
        for node in guarded.body
        if isinstance(node, ast.ImportFrom)
    }

    assert imported == wfbench.domain._SOURCES
