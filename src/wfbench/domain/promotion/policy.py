"""Promotion policy: which candidate arm pairs with which incumbent, and the gates' thresholds.

The thresholds, metric names and the default pairing follow the reference harness. Arms are
data in wfbench (``docs/arms.md``): :data:`CANDIDATE_ARMS` is only the default pairing, and every
gate accepts any candidate → incumbent pair its caller passes in.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import attrs

from wfbench.domain.errors import InputError
from wfbench.domain.results.rows import ErrorKind

__all__ = [
    "CANDIDATE_ARMS",
    "DEFAULT_GATES",
    "DEFAULT_POLICY",
    "EVIDENCE_MAX_AGE_DAYS",
    "IMPLEMENTATION_QUALITY_RULE",
    "MAIN_LOOP_ONLY_METRICS",
    "METRIC_WARNING",
    "PROMOTION_METRICS",
    "REVIEW_METRIC",
    "REVIEW_QUALITY_RULE",
    "SKILL_ATTRIBUTABLE_ERROR_KINDS",
    "GateKind",
    "PromotionPolicy",
    "check_candidate_arms",
    "metric_warning",
]


class GateKind(enum.StrEnum):
    """Which gate judges a candidate: resolution and spend, or review quality."""

    IMPLEMENTATION = "implementation"
    REVIEW = "review"


#: The default pairing of candidate arm → incumbent arm.
CANDIDATE_ARMS: Mapping[str, str] = MappingProxyType(
    {
        "candidate_workflow": "workflow",
        "candidate_workflow_direct": "workflow_direct",
        "candidate_review": "review",
    }
)

#: The gate that judges each default candidate arm.
DEFAULT_GATES: Mapping[str, GateKind] = MappingProxyType(
    {
        "candidate_workflow": GateKind.IMPLEMENTATION,
        "candidate_workflow_direct": GateKind.IMPLEMENTATION,
        "candidate_review": GateKind.REVIEW,
    }
)

#: Metrics an implementation candidate may be ranked on; the default is ``cost_usd``.
PROMOTION_METRICS = ("output_tokens", "cost_usd", "duration_s", "num_turns")

#: Metrics that miss subagent spend: choosing one stamps :data:`METRIC_WARNING` on the decision.
MAIN_LOOP_ONLY_METRICS = frozenset({"output_tokens", "num_turns"})

METRIC_WARNING = (
    "WARNING: token and turn metrics count only the main-loop session — subagent spend is "
    "invisible to them; rank on cost_usd, the only reported figure that includes subagent spend."
)

#: The review gate's fixed metric.
REVIEW_METRIC = "review_weighted_f1"

#: Days after ``generated_at`` at which promotion evidence expires.
EVIDENCE_MAX_AGE_DAYS = 90

#: Error kinds the skill under test is to blame for: they keep a task gated and enforce the floor.
SKILL_ATTRIBUTABLE_ERROR_KINDS = frozenset({ErrorKind.SKILL_NOT_INVOKED})

IMPLEMENTATION_QUALITY_RULE = "no per-task resolution-rate regression"
REVIEW_QUALITY_RULE = "correct verdict on every repeat; minimum blocker recall; no clean-control regression"


def _check_metric(_instance: object, _attribute: object, value: str) -> None:
    if value not in PROMOTION_METRICS:
        raise InputError(f"unsupported promotion metric: {value}", field="metric")


def _check_min_runs(_instance: object, _attribute: object, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError("must be an integer of at least 1", field="min_runs")


def _check_finite(_instance: object, attribute: attrs.Attribute[float], value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InputError("must be a finite number", field=attribute.name)


@attrs.frozen
class PromotionPolicy:
    """The gates' thresholds, one value for a whole sweep.

    ``metric``, ``min_runs``, ``min_improvement_pct`` and ``max_task_regression_pct`` are the
    user's tunables; the others are the reference's constants, kept here so evidence records
    exactly what it was judged by.
    """

    metric: str = attrs.field(default="cost_usd", validator=_check_metric)
    min_runs: int = attrs.field(default=3, validator=_check_min_runs)
    min_improvement_pct: float = attrs.field(default=5.0, validator=_check_finite)
    max_task_regression_pct: float = attrs.field(default=20.0, validator=_check_finite)
    max_failed_task_regression_pct: float = attrs.field(default=100.0, validator=_check_finite)
    min_gated_task_ratio: float = attrs.field(default=0.5, validator=_check_finite)
    #: Absolute weighted-F1 points a review candidate must gain on some defect case.
    review_min_improvement: float = attrs.field(default=0.01, validator=_check_finite)

    @classmethod
    def default(cls) -> PromotionPolicy:
        """The reference's defaults: cost_usd, 3 runs, +5 % median, −20 % task cap."""
        return cls()

    def for_gate(self, gate: GateKind) -> dict[str, Any]:
        """The policy one candidate arm is judged by, as written into ``promotion.json``."""
        if gate is GateKind.REVIEW:
            return {
                "metric": REVIEW_METRIC,
                "min_runs": self.min_runs,
                "min_improvement": self.review_min_improvement,
                "quality_rule": REVIEW_QUALITY_RULE,
            }
        return {
            "metric": self.metric,
            "min_runs": self.min_runs,
            "min_improvement_pct": self.min_improvement_pct,
            "max_task_regression_pct": self.max_task_regression_pct,
            "max_failed_task_regression_pct": self.max_failed_task_regression_pct,
            "min_gated_task_ratio": self.min_gated_task_ratio,
            "quality_rule": IMPLEMENTATION_QUALITY_RULE,
        }


#: The reference's default policy.
DEFAULT_POLICY = PromotionPolicy()


def metric_warning(metric: str) -> str | None:
    """:data:`METRIC_WARNING` for main-loop-only metrics, else ``None``."""
    return METRIC_WARNING if metric in MAIN_LOOP_ONLY_METRICS else None


def check_candidate_arms(arms: Sequence[str], pairs: Mapping[str, str] = CANDIDATE_ARMS) -> None:
    """Refuse an empty or repeating candidate list, or an arm ``pairs`` does not pair.

    Raises:
        InputError: naming the offending arm.
    """
    if not arms or len(set(arms)) != len(arms):
        raise InputError("promotion policy requires unique candidate arms", field="arms")
    for arm in arms:
        if arm not in pairs:
            raise InputError(f"unsupported candidate arm: {arm}", field="arms")
