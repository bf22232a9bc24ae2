"""The gates' vocabulary: decisions, per-task evidence, and the checks both gates share.

A :class:`Decision` is what a gate returns: ``promote``, ``keep_incumbent`` or
``insufficient_evidence``, every reason in the order the rules fired, and the per-task evidence
(including both arms' raw aggregates, which apply-time validation recomputes from).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any

import attrs

from wfbench.domain.promotion.policy import DecisionPolicy, GateKind, metric_warning
from wfbench.domain.results.aggregation import Aggregate, AggregateTable
from wfbench.domain.statistics.analysis import PairStatistics

__all__ = [
    "Decision",
    "DecisionKind",
    "GateVerdict",
    "ImplementationTask",
    "PolicyVerdict",
    "ReviewTask",
    "TaskEvidence",
    "blocking_kind",
    "check_model",
    "check_scored_runs",
    "paired_tasks",
]


class DecisionKind(enum.StrEnum):
    """The gate's verdict on one candidate arm."""

    PROMOTE = "promote"
    KEEP_INCUMBENT = "keep_incumbent"
    INSUFFICIENT_EVIDENCE = "insufficient_evidence"


def _fraction(agg: Aggregate) -> str:
    return f"{agg.resolved}/{agg.valid_runs}"


@attrs.frozen
class ImplementationTask:
    """One task's paired evidence in the implementation gate."""

    task: str
    task_class: str | None
    incumbent: Aggregate
    candidate: Aggregate
    incumbent_metric: float | None
    candidate_metric: float | None
    #: ``round(100·(incumbent − candidate)/incumbent, 1)``; positive = cheaper candidate.
    improvement_pct: float | None
    gated: bool
    quality_floor_enforced: bool
    skill_attributable_failure: bool

    @property
    def candidate_quality_floor_met(self) -> bool:
        """True when the candidate resolved every one of at least one valid run."""
        return self.candidate.valid_runs > 0 and self.candidate.resolved == self.candidate.valid_runs

    def to_mapping(self) -> dict[str, Any]:
        """The task row with the reference's field names, plus both arms' scored-run counts."""
        return {
            "task": self.task,
            "class": self.task_class,
            "incumbent_resolved": _fraction(self.incumbent),
            "candidate_resolved": _fraction(self.candidate),
            "incumbent": self.incumbent.to_mapping(),
            "candidate": self.candidate.to_mapping(),
            "incumbent_excluded_runs": self.incumbent.excluded_runs,
            "candidate_excluded_runs": self.candidate.excluded_runs,
            "incumbent_scored_runs": self.incumbent.scored_runs,
            "candidate_scored_runs": self.candidate.scored_runs,
            "candidate_quality_floor_met": self.candidate_quality_floor_met,
            "quality_floor_enforced": self.quality_floor_enforced,
            "incumbent_metric": self.incumbent_metric,
            "candidate_metric": self.candidate_metric,
            "improvement_pct": self.improvement_pct,
            "gated": self.gated,
            "skill_attributable_failure": self.skill_attributable_failure,
        }


@attrs.frozen
class ReviewTask:
    """One corpus case's paired evidence in the review gate; review tasks are always gated."""

    task: str
    task_class: str | None
    incumbent: Aggregate
    candidate: Aggregate
    #: The case has no labels: quality is judged on false positives and the clean verdict.
    clean_control: bool

    gated = True

    def to_mapping(self) -> dict[str, Any]:
        """The task row with the reference's field names, plus both arms' scored-run counts."""
        out: dict[str, Any] = {
            "task": self.task,
            "class": self.task_class,
            "incumbent": self.incumbent.to_mapping(),
            "candidate": self.candidate.to_mapping(),
            "gated": True,
            "clean_control": self.clean_control,
            "incumbent_scored_runs": self.incumbent.scored_runs,
            "candidate_scored_runs": self.candidate.scored_runs,
        }
        for side, agg in (("incumbent", self.incumbent), ("candidate", self.candidate)):
            for name in ("weighted_f1", "blocker_recall", "false_positives", "clean_pass"):
                out[f"{side}_{name}"] = agg.review.get(f"review_{name}")
        return out


TaskEvidence = ImplementationTask | ReviewTask


@attrs.frozen
class PolicyVerdict:
    """What one decision policy concluded on a pair: its kind and its reasons."""

    policy: DecisionPolicy
    kind: DecisionKind
    reasons: tuple[str, ...]

    def to_mapping(self) -> dict[str, Any]:
        return {"decision": self.kind.value, "reasons": list(self.reasons)}


@attrs.frozen
class Decision:
    """A gate's decision on one candidate arm, with every reason and the per-task evidence.

    ``kind`` and ``reasons`` are those of ``policy``; ``verdicts`` holds every policy's
    conclusion (the reference's beside the statistical one) and ``statistics`` the paired
    analysis. A gate alone (:func:`evaluate_candidate`) leaves both empty; the sweep-level
    judgement (:func:`~wfbench.domain.promotion.judging.judge`) fills them.
    """

    kind: DecisionKind
    candidate_arm: str
    incumbent_arm: str
    gate: GateKind
    metric: str
    model: str | None
    reasons: tuple[str, ...]
    tasks: tuple[TaskEvidence, ...]
    median_improvement_pct: float | None = None
    policy: DecisionPolicy = DecisionPolicy.REFERENCE
    statistics: PairStatistics | None = None
    verdicts: tuple[PolicyVerdict, ...] = ()
    #: The statistical gate's Holm family (the incumbent's agent in a sweep over several agents).
    family: str | None = None

    @property
    def metric_warning(self) -> str | None:
        """The main-loop-only warning for token and turn metrics, else ``None``."""
        return metric_warning(self.metric)

    @property
    def gated_tasks(self) -> tuple[str, ...]:
        """Ids of the tasks that carried quality signal, in task order."""
        return tuple(row.task for row in self.tasks if row.gated)

    @property
    def ungated_tasks(self) -> tuple[str, ...]:
        """Ids of the tasks neither arm resolved, judged on spend only."""
        return tuple(row.task for row in self.tasks if not row.gated)

    def to_mapping(self) -> dict[str, Any]:
        """The decision object of ``promotion.json`` (``policy``, ``by_policy`` and ``statistics``
        only when the decision was judged with its statistics)."""
        out = self._head()
        out |= {
            "gated_tasks": list(self.gated_tasks),
            "ungated_tasks": list(self.ungated_tasks),
            "reasons": list(self.reasons),
            "tasks": [row.to_mapping() for row in self.tasks],
        }
        return self._tail(out, None if self.statistics is None else self.statistics.to_mapping())

    def summary_mapping(self) -> dict[str, Any]:
        """The decision without what grows with every task (``gated_tasks``, ``tasks``, the
        statistics' ``tasks``), which ``gate --tasks-out`` writes instead: counts in their place."""
        out = self._head()
        out |= {
            "task_count": len(self.tasks),
            "gated_task_count": sum(1 for row in self.tasks if row.gated),
            "ungated_tasks": list(self.ungated_tasks),
            "reasons": list(self.reasons),
        }
        return self._tail(out, None if self.statistics is None else self.statistics.summary_mapping())

    def _head(self) -> dict[str, Any]:
        return {
            "gate": self.gate.value,
            "candidate_arm": self.candidate_arm,
            "incumbent_arm": self.incumbent_arm,
            "decision": self.kind.value,
            "metric": self.metric,
            "metric_warning": self.metric_warning,
            "median_improvement_pct": self.median_improvement_pct,
            "model": self.model,
        }

    def _tail(self, out: dict[str, Any], statistics: dict[str, Any] | None) -> dict[str, Any]:
        if self.statistics is not None or self.verdicts:
            out["policy"] = self.policy.value
            out["by_policy"] = {v.policy.value: v.to_mapping() for v in self.verdicts}
            out["statistics"] = statistics
        if self.family is not None:
            out["holm_family"] = self.family
        return out


@attrs.define
class GateVerdict:
    """The gate's running flags and reasons (private, mutable while one gate runs)."""

    insufficient: bool = False
    regression: bool = False
    unscored: bool = False
    reasons: list[str] = attrs.field(factory=list)

    def lacks(self, reason: str) -> None:
        self.insufficient = True
        self.reasons.append(reason)

    def regressed(self, reason: str) -> None:
        self.regression = True
        self.reasons.append(reason)

    def unscorable(self, reason: str) -> None:
        self.unscored = True
        self.reasons.append(reason)


def paired_tasks(table: AggregateTable, arms: tuple[str, str], tasks: Iterable[str] | None) -> list[str]:
    """The tasks to judge: those given, else every task where either paired arm has rows."""
    if tasks is not None:
        return sorted(set(tasks))
    return sorted({task for task, arm in table if arm in arms})


def check_scored_runs(
    task: str, inc: Aggregate, cand: Aggregate, min_runs: int, verdict: GateVerdict
) -> None:
    """wfbench's paired-equality check on scored runs (skill-not-invoked rows are not scored)."""
    unscored = "runs that never invoked the skill under test are not scored"
    if inc.scored_runs != cand.scored_runs:
        verdict.unscorable(
            f"{task}: paired arms have different scored run counts "
            f"({inc.scored_runs}/{cand.scored_runs} scored; {unscored})"
        )
    elif inc.scored_runs < min_runs <= min(inc.valid_runs, cand.valid_runs):
        verdict.unscorable(
            f"{task}: needs at least {min_runs} scored runs per arm "
            f"(got {inc.scored_runs}/{cand.scored_runs}; {unscored})"
        )


def check_model(model: str | None, what: str, verdict: GateVerdict) -> None:
    if not model:
        verdict.lacks(f"a named model is required so {what} evidence cannot drift")


def blocking_kind(verdict: GateVerdict) -> DecisionKind | None:
    """The decision forced before any improvement is weighed, if any."""
    if verdict.insufficient:
        return DecisionKind.INSUFFICIENT_EVIDENCE
    if verdict.regression:
        return DecisionKind.KEEP_INCUMBENT
    if verdict.unscored:
        return DecisionKind.INSUFFICIENT_EVIDENCE
    return None
