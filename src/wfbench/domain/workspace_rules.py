"""Deprecated since #9: the workspace rules live in :mod:`wfbench.domain.workspace.rules`.

Importing this module warns (``DeprecationWarning``) and it goes in 0.3.0 (``wfbench.domain._REMOVED_IN``);
every name it held is the same object there. Nothing in wfbench imports it (import-linter refuses).
"""

import warnings

from wfbench.domain.workspace.rules import (
    COMMIT_RE,
    MAX_RELATIVE_PATH_BYTES,
    PLAN_DIR,
    PLAN_SUFFIXES,
    REASON_PATHS,
    BoundaryVerdict,
    ChangeKind,
    Churn,
    Patch,
    PathChange,
    PhaseBoundary,
    Snapshot,
    WorkspaceState,
    check_plan_phase,
    check_read_only_phase,
    diff_states,
    is_inside,
    is_plan_document,
    mount_target_problem,
    parse_shortstat,
    phase_verdict,
    relative_path_problem,
)

warnings.warn(
    "wfbench.domain.workspace_rules is deprecated and will be removed in 0.3.0; "
    "import from wfbench.domain.workspace.rules",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = [
    "COMMIT_RE",
    "MAX_RELATIVE_PATH_BYTES",
    "PLAN_DIR",
    "PLAN_SUFFIXES",
    "REASON_PATHS",
    "BoundaryVerdict",
    "ChangeKind",
    "Churn",
    "Patch",
    "PathChange",
    "PhaseBoundary",
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
]
