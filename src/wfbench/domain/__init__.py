"""wfbench's pure domain: rows, review scoring, aggregation, health, promotion and scheduling.

Other evaluation tools import this package to score, aggregate and gate rows they produced
themselves; see ``docs/domain.md``. Nothing here performs I/O, reads a clock or logs.
"""

from wfbench.domain.errors import InputError, ReviewArtifactError, WfbenchError
from wfbench.domain.rows import (
    EVIDENCE_FAILURE_KINDS,
    EXCLUDED_KINDS,
    EXECUTION_FAILURE_KINDS,
    SYSTEMIC_KINDS,
    USAGE_FIELDS,
    ErrorKind,
    Row,
)
from wfbench.domain.scheduling import (
    DEFAULT_OUTAGE_STREAK,
    Breaker,
    Cell,
    FoldState,
    canonical_order,
    fold,
    longest_first,
    packed_window,
    start_fold,
    step,
)

__all__ = [
    "DEFAULT_OUTAGE_STREAK",
    "EVIDENCE_FAILURE_KINDS",
    "EXCLUDED_KINDS",
    "EXECUTION_FAILURE_KINDS",
    "SYSTEMIC_KINDS",
    "USAGE_FIELDS",
    "Breaker",
    "Cell",
    "ErrorKind",
    "FoldState",
    "InputError",
    "ReviewArtifactError",
    "Row",
    "WfbenchError",
    "canonical_order",
    "fold",
    "longest_first",
    "packed_window",
    "start_fold",
    "step",
]
