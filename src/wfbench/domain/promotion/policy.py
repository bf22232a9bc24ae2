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
from wfbench.domain.statistics.config import AnalysisConfig
from wfbench.domain.statistics.effects import Scale
from wfbench.domain.statistics.gate_power import GateDesign

__all__ = [
    "CANDIDATE_ARMS",
    "DEFAULT_GATES",
    "DEFAULT_POLICY",
    "EVIDENCE_MAX_AGE_DAYS",
    "IMPLEMENTATION_QUALITY_RULE",
    "MAIN_LOOP_ONLY_METRICS",
    "METRIC_WARNING",
    "PROMOTION_METRICS",
    "REFERENCE_POLICY",
    "REVIEW_METRIC",
    "REVIEW_QUALITY_RULE",
    "SKILL_ATTRIBUTABLE_ERROR_KINDS",
    "DecisionPolicy",
    "GateKind",
    "PromotionPolicy",
    "check_candidate_arms",
    "metric_warning",
]


class GateKind(enum.StrEnum):
    """Which gate judges a candidate: resolution and spend, or review quality."""

    IMPLEMENTATION = "implementation"
    REVIEW = "review"


class DecisionPolicy(enum.StrEnum):
    """Which rule decides: the reference's thresholds, or the statistical policy."""

    #: The reference harness's deterministic threshold rules (``--policy reference``; what
    #: re-gating a reference sweep reproduces).
    REFERENCE = "reference"
    #: Paired per-task intervals, non-inferiority and Holm across candidates (``docs/statistics.md``);
    #: the default.
    STATISTICAL = "statistical"


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


def _decision_policy(value: Any) -> DecisionPolicy:
    try:
        return DecisionPolicy(value)
    except ValueError:
        allowed = ", ".join(member.value for member in DecisionPolicy)
        raise InputError(f"must be one of {allowed}", field="decision_policy") from None


def _check_unit(_instance: object, attribute: attrs.Attribute[float], value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 < value < 1.0:
        raise InputError("must be a number strictly between 0 and 1", field=attribute.name)


def _check_non_negative(instance: object, attribute: attrs.Attribute[float], value: float) -> None:
    _check_finite(instance, attribute, value)
    if value < 0:
        raise InputError("must not be negative", field=attribute.name)


def _check_resamples(_instance: object, _attribute: object, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 100 <= value <= 1_000_000:
        raise InputError("must be an integer from 100 to 1000000", field="resamples")


def _check_seed(_instance: object, _attribute: object, value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise InputError("must be a non-negative integer or null", field="seed")


def _check_min_tasks(_instance: object, _attribute: object, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 2:
        raise InputError("must be an integer of at least 2", field="min_tasks")


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
    #: Which rule decides (the other one's decision is recorded beside it).
    decision_policy: DecisionPolicy = attrs.field(
        default=DecisionPolicy.STATISTICAL, converter=_decision_policy
    )
    #: The statistical analysis: two-sided confidence (one-sided α = half the rest), bootstrap
    #: resamples, the MDE's power, and the seed (``None``: derived from the evidence).
    confidence: float = attrs.field(default=0.9, validator=_check_unit)
    resamples: int = attrs.field(default=2000, validator=_check_resamples)
    power: float = attrs.field(default=0.8, validator=_check_unit)
    seed: int | None = attrs.field(default=None, validator=_check_seed)
    #: Statistical policy: the resolution drop (points) a cheaper candidate must be shown not to
    #: exceed (``docs/statistics.md``, "The non-inferiority design").
    non_inferiority_margin_pts: float = attrs.field(default=10.0, validator=_check_non_negative)
    #: Statistical policy: fewest paired tasks (below 5 no exact test reaches one-sided 5 %).
    min_tasks: int = attrs.field(default=5, validator=_check_min_tasks)

    @classmethod
    def default(cls) -> PromotionPolicy:
        """The defaults: cost_usd, 3 runs, +5 %, −20 % task cap; the statistical policy decides."""
        return cls()

    @property
    def analysis(self) -> AnalysisConfig:
        """The paired analysis every decision's ``statistics`` object is computed with."""
        return AnalysisConfig(
            confidence=self.confidence, resamples=self.resamples, power=self.power, seed=self.seed
        )

    def for_gate(self, gate: GateKind) -> dict[str, Any]:
        """The policy one candidate arm is judged by, as written into ``promotion.json``.

        The reference policy's entry (at the default analysis settings) has exactly the
        reference's fields; any other adds the statistical ones (``decision_policy`` and the
        analysis settings), so an entry without ``decision_policy`` is the reference's.
        """
        if gate is GateKind.REVIEW:
            out: dict[str, Any] = {
                "metric": REVIEW_METRIC,
                "min_runs": self.min_runs,
                "min_improvement": self.review_min_improvement,
                "quality_rule": REVIEW_QUALITY_RULE,
            }
        else:
            out = {
                "metric": self.metric,
                "min_runs": self.min_runs,
                "min_improvement_pct": self.min_improvement_pct,
                "max_task_regression_pct": self.max_task_regression_pct,
                "max_failed_task_regression_pct": self.max_failed_task_regression_pct,
                "min_gated_task_ratio": self.min_gated_task_ratio,
                "quality_rule": IMPLEMENTATION_QUALITY_RULE,
            }
        if self.statistical_fields() != _DEFAULT_STATISTICAL_FIELDS:
            out |= self.statistical_fields()
        return out

    def gate_design(self, claims: int = 2) -> GateDesign:
        """What the statistical gate asks of a sweep whose Holm family has ``claims`` claims (two
        per candidate): each claim's first-step level, the margin and the saving it requires."""
        required = Scale.LOG_RATIO.from_presented(max(0.0, min(99.0, self.min_improvement_pct)))
        return GateDesign(
            alpha=self.analysis.alpha / claims,
            margin=self.non_inferiority_margin_pts / 100.0,
            required=required,
            power=self.power,
            min_tasks=self.min_tasks,
            min_runs=self.min_runs,
        )

    def statistical_fields(self) -> dict[str, Any]:
        """The statistical policy's settings, with the names ``promotion.json`` records."""
        return {
            "decision_policy": self.decision_policy.value,
            "confidence": self.confidence,
            "resamples": self.resamples,
            "power": self.power,
            "seed": self.seed,
            "non_inferiority_margin_pts": self.non_inferiority_margin_pts,
            "min_tasks": self.min_tasks,
            "multiplicity": "holm",
        }


#: The default policy: the reference's thresholds, decided by the statistical policy.
DEFAULT_POLICY = PromotionPolicy()
#: The reference's own policy (``--policy reference``).
REFERENCE_POLICY = PromotionPolicy(decision_policy=DecisionPolicy.REFERENCE)
_DEFAULT_STATISTICAL_FIELDS = REFERENCE_POLICY.statistical_fields()


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
