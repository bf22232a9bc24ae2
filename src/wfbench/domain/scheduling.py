"""Deprecated since #9: the scheduler's fold lives in :mod:`wfbench.domain.sweep.scheduling`.

Importing this module warns (``DeprecationWarning``) and it goes in 0.3.0 (``wfbench.domain._REMOVED_IN``);
every name it held is the same object there. Nothing in wfbench imports it (import-linter refuses).
"""

import warnings

from wfbench.domain.sweep.scheduling import (
    DEFAULT_OUTAGE_STREAK,
    DETAIL_LIMIT,
    WINDOW_MULTIPLIER,
    Action,
    Breaker,
    CancelRequested,
    CancelRunning,
    Cell,
    CellFinished,
    Event,
    FoldState,
    PersistRow,
    StopReason,
    StopSubmitting,
    SubmitCell,
    SweepDone,
    breaker_kind,
    canonical_order,
    failed_cell_row,
    fold,
    longest_first,
    packed_window,
    start_fold,
    step,
    step_all,
)

warnings.warn(
    "wfbench.domain.scheduling is deprecated and will be removed in 0.3.0; "
    "import from wfbench.domain.sweep.scheduling",
    DeprecationWarning,
    stacklevel=2,
)

__all__ = [
    "DEFAULT_OUTAGE_STREAK",
    "DETAIL_LIMIT",
    "WINDOW_MULTIPLIER",
    "Action",
    "Breaker",
    "CancelRequested",
    "CancelRunning",
    "Cell",
    "CellFinished",
    "Event",
    "FoldState",
    "PersistRow",
    "StopReason",
    "StopSubmitting",
    "SubmitCell",
    "SweepDone",
    "breaker_kind",
    "canonical_order",
    "failed_cell_row",
    "fold",
    "longest_first",
    "packed_window",
    "start_fold",
    "step",
    "step_all",
]
