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
        "Row",
        "ErrorKind",
        "InputError",
        "ReviewArtifactError",
        "classify_outcome",
        "parse_review_artifact",
        "parse_labels",
        "score_review",
        "review_oracle_passed",
        "aggregate",
        "savings",
        "SAVINGS_FIELDS",
        "classify_health",
        "classify_sweep_health",
        "HealthStatus",
        "PromotionPolicy",
        "evaluate_candidate",
        "evaluate_review_candidate",
        "evaluate_pair",
        "Decision",
        "DecisionKind",
        "GateKind",
        "PromotionEvidence",
        "EvidenceBindings",
        "RunStatus",
        "EVIDENCE_SCHEMA_VERSION",
        "parse_rows",
    }

    assert needed - set(wfbench.domain.__all__) == set()


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
