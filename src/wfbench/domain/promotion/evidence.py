"""Promotion evidence: the object written as ``promotion.json`` (schema 6, ``docs/domain.md`` §8).

:class:`PromotionEvidence` binds the decisions to what they were measured on (model, effort,
overlay digest, task bindings) and to when (``generated_at``; evidence expires 90 days later).
The time is an argument: the domain never reads a clock. :meth:`PromotionEvidence.to_mapping`
and :meth:`PromotionEvidence.from_mapping` convert to and from plain mappings (JSON is the
caller's business); ``from_mapping`` refuses anything malformed with an :class:`InputError`
naming the field, and reads back exactly what ``to_mapping`` wrote.
"""

from __future__ import annotations

import datetime as dt
import enum
import math
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import attrs

from wfbench.domain.errors import InputError
from wfbench.domain.promotion.decision import (
    Decision,
    DecisionKind,
    ImplementationTask,
    PolicyVerdict,
    ReviewTask,
    TaskEvidence,
)
from wfbench.domain.promotion.policy import EVIDENCE_MAX_AGE_DAYS, DecisionPolicy, GateKind, PromotionPolicy
from wfbench.domain.results.aggregation import MEDIAN_FIELDS, Aggregate
from wfbench.domain.results.rows import ErrorKind
from wfbench.domain.statistics.analysis import PairStatistics

__all__ = [
    "ABORTED_REASON",
    "EVIDENCE_SCHEMA_VERSION",
    "EvidenceBindings",
    "PromotionEvidence",
    "RunStatus",
    "aggregate_from_mapping",
    "decision_from_mapping",
]

EVIDENCE_SCHEMA_VERSION = 6
ABORTED_REASON = "sweep aborted; partial evidence cannot promote"
MODEL_PROPOSER, MANUAL_OVERLAY = "model-proposer", "manual-initial-overlay"

_AGG_COUNTS = (
    "runs",
    "valid_runs",
    "excluded_runs",
    "scored_runs",
    "resolved",
    "resolved_fresh",
    "transcripts_missing",
    "fresh_attempts",
    "admissible",
    "execution_failures",
    "evidence_failures",
)
_AGG_NUMBERS = (*MEDIAN_FIELDS, "cost_usd")
_STATISTICAL_FIELDS = (
    "decision_policy",
    "confidence",
    "resamples",
    "power",
    "seed",
    "non_inferiority_margin_pts",
    "min_tasks",
)


class RunStatus(enum.StrEnum):
    """Whether the sweep finished (no breaker trip, no cancellation)."""

    COMPLETE = "complete"
    ABORTED = "aborted"


@attrs.frozen
class EvidenceBindings:
    """What the evidence was measured on; apply refuses evidence whose bindings differ."""

    benchmark_model: str | None = None
    proposer_model: str | None = None
    effort: str | None = None
    candidate_overlay: str | None = None
    candidate_overlay_digest: str | None = None
    target_base_digests: Mapping[str, str] = attrs.field(factory=dict)
    #: Immutable task bindings: ``id``, resolved sha, prompt and oracle digests, ``oracle_files``.
    selected_tasks: tuple[Mapping[str, Any], ...] = ()
    ce_plugin: Mapping[str, Any] | None = None

    @property
    def candidate_origin(self) -> str:
        """``model-proposer`` when a proposer model is set, else ``manual-initial-overlay``."""
        return MODEL_PROPOSER if self.proposer_model else MANUAL_OVERLAY


def _aborted(decision: Decision) -> Decision:
    """Partial evidence cannot promote: under every policy, the verdict is insufficient."""
    insufficient = DecisionKind.INSUFFICIENT_EVIDENCE
    verdicts = tuple(
        attrs.evolve(v, kind=insufficient, reasons=(*v.reasons, ABORTED_REASON)) for v in decision.verdicts
    )
    return attrs.evolve(
        decision, kind=insufficient, reasons=(*decision.reasons, ABORTED_REASON), verdicts=verdicts
    )


def _stamp(moment: dt.datetime) -> str:
    return moment.isoformat()


@attrs.frozen
class PromotionEvidence:
    """``promotion.json``: schema 6 fields, the policy and one decision per candidate arm."""

    generated_at: dt.datetime
    evidence_expires_at: dt.datetime
    run_status: RunStatus
    policy: PromotionPolicy
    decisions: tuple[Decision, ...]
    bindings: EvidenceBindings = EvidenceBindings()
    schema_version: int = EVIDENCE_SCHEMA_VERSION

    @classmethod
    def build(
        cls,
        decisions: Sequence[Decision],
        *,
        policy: PromotionPolicy,
        generated_at: dt.datetime,
        run_status: RunStatus = RunStatus.COMPLETE,
        bindings: EvidenceBindings = EvidenceBindings(),
    ) -> PromotionEvidence:
        """Stamp ``decisions``; an aborted sweep forces every decision to insufficient_evidence.

        Raises:
            InputError: ``generated_at`` has no timezone.
        """
        if generated_at.utcoffset() is None:
            raise InputError("must carry a timezone", field="generated_at")
        if run_status is RunStatus.ABORTED:
            decisions = [_aborted(d) for d in decisions]
        return cls(
            generated_at=generated_at,
            evidence_expires_at=generated_at + dt.timedelta(days=EVIDENCE_MAX_AGE_DAYS),
            run_status=run_status,
            policy=policy,
            decisions=tuple(decisions),
            bindings=bindings,
        )

    @property
    def required_candidate_arms(self) -> tuple[str, ...]:
        """The candidate arms judged, in decision order."""
        return tuple(decision.candidate_arm for decision in self.decisions)

    def policy_mapping(self) -> dict[str, Any]:
        """``{candidate arm: the policy it was judged by}``."""
        return {d.candidate_arm: self.policy.for_gate(d.gate) for d in self.decisions}

    def to_mapping(self) -> dict[str, Any]:
        """The ``promotion.json`` object, fields in the reference's order."""
        out = self._head()
        out["selected_tasks"] = [dict(task) for task in self.bindings.selected_tasks]
        out["ce_plugin"] = self._plugin()
        out["schema_version"] = self.schema_version
        out |= {"run_status": self.run_status.value, "policy": self.policy_mapping()}
        out["decisions"] = [decision.to_mapping() for decision in self.decisions]
        return out

    def summary_mapping(self, schema: str) -> dict[str, Any]:
        """``wfbench gate --json``'s document (``schema``): the evidence without what grows with
        every task (``selected_tasks``, and each decision's as :meth:`Decision.summary_mapping`),
        counts in its place. It is not ``promotion.json``: it has no ``schema_version``."""
        out = {"schema": schema, **self._head(), "selected_task_count": len(self.bindings.selected_tasks)}
        out["ce_plugin"] = self._plugin()
        out |= {"run_status": self.run_status.value, "policy": self.policy_mapping()}
        out["decisions"] = [decision.summary_mapping() for decision in self.decisions]
        return out

    def _head(self) -> dict[str, Any]:
        b = self.bindings
        return {
            "generated_at": _stamp(self.generated_at),
            "evidence_expires_at": _stamp(self.evidence_expires_at),
            "benchmark_model": b.benchmark_model,
            "proposer_model": b.proposer_model,
            "effort": b.effort,
            "candidate_origin": b.candidate_origin,
            "candidate_overlay": b.candidate_overlay,
            "candidate_overlay_digest": b.candidate_overlay_digest,
            "target_base_digests": dict(b.target_base_digests),
            "required_candidate_arms": list(self.required_candidate_arms),
        }

    def _plugin(self) -> dict[str, Any] | None:
        plugin = self.bindings.ce_plugin
        return None if plugin is None else dict(plugin)

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> PromotionEvidence:
        """Read what :meth:`to_mapping` wrote.

        Raises:
            InputError: a field is missing, mistyped or inconsistent (the field is named).
        """
        if not isinstance(raw, Mapping):
            raise InputError("promotion evidence must be a JSON object")
        if raw.get("schema_version") != EVIDENCE_SCHEMA_VERSION:
            raise InputError("unsupported schema; regenerate evidence with schema 6", field="schema_version")
        decisions = tuple(
            decision_from_mapping(item, field=f"decisions[{index}]")
            for index, item in enumerate(_list(raw, "decisions"))
        )
        evidence = cls(
            generated_at=_time(raw, "generated_at"),
            evidence_expires_at=_time(raw, "evidence_expires_at"),
            run_status=_enum(RunStatus, raw.get("run_status"), "run_status"),
            policy=_policy(raw.get("policy"), decisions),
            decisions=decisions,
            bindings=_bindings(raw),
        )
        _agrees(evidence.to_mapping(), raw, ("candidate_origin", "required_candidate_arms"))
        return evidence


# --- reading helpers ---------------------------------------------------------------------


def _agrees(built: Mapping[str, Any], raw: Mapping[str, Any], keys: Sequence[str], prefix: str = "") -> None:
    for key in keys:
        if key not in built or key not in raw or built[key] != raw[key]:
            raise InputError("disagrees with the rest of the evidence", field=f"{prefix}{key}")


def _list(raw: Mapping[str, Any], key: str, prefix: str = "") -> list[Any]:
    value = raw.get(key)
    if not isinstance(value, list):
        raise InputError("must be a list", field=f"{prefix}{key}")
    return value


def _mapping(value: Any, field: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InputError("must be an object", field=field)
    return value


def _opt_str(raw: Mapping[str, Any], key: str, prefix: str = "") -> str | None:
    value = raw.get(key)
    if value is not None and not isinstance(value, str):
        raise InputError("must be a string or null", field=f"{prefix}{key}")
    return value


def _str(raw: Mapping[str, Any], key: str, prefix: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value:
        raise InputError("must be a non-empty string", field=f"{prefix}{key}")
    return value


def _flag(raw: Mapping[str, Any], key: str, prefix: str) -> bool:
    value = raw.get(key)
    if not isinstance(value, bool):
        raise InputError("must be true or false", field=f"{prefix}{key}")
    return value


def _count(raw: Mapping[str, Any], key: str, prefix: str) -> int:
    value = raw.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError("must be a non-negative integer", field=f"{prefix}{key}")
    return value


def _number(value: Any, field: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InputError("must be a finite number or null", field=field)
    return float(value)


_E = TypeVar("_E", bound=enum.Enum)


def _enum(kind: type[_E], value: Any, field: str) -> _E:
    try:
        return kind(value)
    except ValueError:
        allowed = ", ".join(str(member.value) for member in kind)
        raise InputError(f"must be one of {allowed}", field=field) from None


def _time(raw: Mapping[str, Any], key: str) -> dt.datetime:
    value = raw.get(key)
    try:
        moment = dt.datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        moment = None
    if moment is None or moment.utcoffset() is None:
        raise InputError("must be an ISO-8601 time with a timezone", field=key)
    return moment


def _bindings(raw: Mapping[str, Any]) -> EvidenceBindings:
    digests = _mapping(raw.get("target_base_digests"), "target_base_digests")
    if not all(isinstance(key, str) and isinstance(value, str) for key, value in digests.items()):
        raise InputError("must map paths to digest strings", field="target_base_digests")
    tasks = _list(raw, "selected_tasks")
    for index, task in enumerate(tasks):
        _mapping(task, f"selected_tasks[{index}]")
    plugin = raw.get("ce_plugin")
    return EvidenceBindings(
        benchmark_model=_opt_str(raw, "benchmark_model"),
        proposer_model=_opt_str(raw, "proposer_model"),
        effort=_opt_str(raw, "effort"),
        candidate_overlay=_opt_str(raw, "candidate_overlay"),
        candidate_overlay_digest=_opt_str(raw, "candidate_overlay_digest"),
        target_base_digests=dict(digests),
        selected_tasks=tuple(dict(task) for task in tasks),
        ce_plugin=None if plugin is None else dict(_mapping(plugin, "ce_plugin")),
    )


def _policy(raw: Any, decisions: Sequence[Decision]) -> PromotionPolicy:
    """Rebuild the policy from its per-arm entries; every entry must match it exactly."""
    entries = _mapping(raw, "policy")
    if set(entries) != {d.candidate_arm for d in decisions}:
        raise InputError("must have one entry per decision's candidate arm", field="policy")
    values: dict[str, Any] = {}
    for decision in decisions:
        entry = _mapping(entries[decision.candidate_arm], f"policy.{decision.candidate_arm}")
        if decision.gate is GateKind.REVIEW:
            values |= {
                "min_runs": entry.get("min_runs"),
                "review_min_improvement": entry.get("min_improvement"),
            }
        else:
            names = ("metric", "min_runs", "min_improvement_pct", "max_task_regression_pct")
            values |= {name: entry.get(name) for name in (*names, "max_failed_task_regression_pct")}
            values["min_gated_task_ratio"] = entry.get("min_gated_task_ratio")
        if "decision_policy" in entry:
            values |= {name: entry.get(name) for name in _STATISTICAL_FIELDS}
        else:  # an entry with the reference's fields alone was decided by the reference's rule
            values["decision_policy"] = DecisionPolicy.REFERENCE
    try:
        policy = PromotionPolicy(**values)
    except InputError as exc:
        raise InputError(exc.reason, field=f"policy.{exc.field}") from None
    for decision in decisions:
        if policy.for_gate(decision.gate) != entries[decision.candidate_arm]:
            raise InputError(
                "disagrees with the other policy entries", field=f"policy.{decision.candidate_arm}"
            )
    return policy


def aggregate_from_mapping(raw: Any, *, field: str = "aggregate") -> Aggregate:
    """Rebuild an :class:`Aggregate` from :meth:`Aggregate.to_mapping` output.

    Raises:
        InputError: a field is missing or mistyped (named as ``field.name``).
    """
    data = _mapping(raw, field)
    prefix = f"{field}."
    kinds = _mapping(data.get("error_kinds"), f"{prefix}error_kinds")
    error_kinds = {
        _enum(ErrorKind, kind, f"{prefix}error_kinds"): _count(kinds, kind, f"{prefix}error_kinds.")
        for kind in kinds
    }
    reasons = _list(data, "health_reasons", prefix)
    if not all(isinstance(reason, str) for reason in reasons):
        raise InputError("must be a list of strings", field=f"{prefix}health_reasons")
    review: dict[str, float | int | bool | None] = {}
    for key, value in data.items():
        if key.startswith("review_"):
            review[key] = (
                value if value is None or isinstance(value, bool) else _number(value, f"{prefix}{key}")
            )
    values: dict[str, Any] = {name: _count(data, name, prefix) for name in _AGG_COUNTS}
    values |= {name: _number(data.get(name), f"{prefix}{name}") for name in _AGG_NUMBERS}
    return Aggregate(
        task=_str(data, "task", prefix),
        arm=_str(data, "arm", prefix),
        task_class=_opt_str(data, "class", prefix),
        error_kinds=dict(sorted(error_kinds.items())),
        health_reasons=tuple(reasons),
        review=review,
        **values,
    )


def _task_from_mapping(raw: Any, gate: GateKind, field: str) -> TaskEvidence:
    data = _mapping(raw, field)
    prefix = f"{field}."
    task, task_class = _str(data, "task", prefix), _opt_str(data, "class", prefix)
    inc = aggregate_from_mapping(data.get("incumbent"), field=f"{prefix}incumbent")
    cand = aggregate_from_mapping(data.get("candidate"), field=f"{prefix}candidate")
    if gate is GateKind.REVIEW:
        return ReviewTask(task, task_class, inc, cand, clean_control=_flag(data, "clean_control", prefix))
    return ImplementationTask(
        task=task,
        task_class=task_class,
        incumbent=inc,
        candidate=cand,
        incumbent_metric=_number(data.get("incumbent_metric"), f"{prefix}incumbent_metric"),
        candidate_metric=_number(data.get("candidate_metric"), f"{prefix}candidate_metric"),
        improvement_pct=_number(data.get("improvement_pct"), f"{prefix}improvement_pct"),
        gated=_flag(data, "gated", prefix),
        quality_floor_enforced=_flag(data, "quality_floor_enforced", prefix),
        skill_attributable_failure=_flag(data, "skill_attributable_failure", prefix),
    )


def decision_from_mapping(raw: Any, *, field: str = "decision") -> Decision:
    """Rebuild a :class:`Decision` from :meth:`Decision.to_mapping` output.

    Raises:
        InputError: a field is missing, mistyped, or disagrees with the task rows it summarises.
    """
    data = _mapping(raw, field)
    prefix = f"{field}."
    gate = _enum(GateKind, data.get("gate"), f"{prefix}gate")
    reasons = _list(data, "reasons", prefix)
    if not all(isinstance(reason, str) for reason in reasons):
        raise InputError("must be a list of strings", field=f"{prefix}reasons")
    decision = Decision(
        kind=_enum(DecisionKind, data.get("decision"), f"{prefix}decision"),
        candidate_arm=_str(data, "candidate_arm", prefix),
        incumbent_arm=_str(data, "incumbent_arm", prefix),
        gate=gate,
        metric=_str(data, "metric", prefix),
        model=_opt_str(data, "model", prefix),
        reasons=tuple(reasons),
        tasks=tuple(
            _task_from_mapping(item, gate, f"{prefix}tasks[{index}]")
            for index, item in enumerate(_list(data, "tasks", prefix))
        ),
        median_improvement_pct=_number(data.get("median_improvement_pct"), f"{prefix}median_improvement_pct"),
    )
    if "policy" in data or "by_policy" in data or "statistics" in data:
        decision = _judged(decision, data, prefix)
    built = decision.to_mapping()
    _agrees(built, data, sorted(set(built) | set(data)), prefix)
    return decision


def _judged(decision: Decision, data: Mapping[str, Any], prefix: str) -> Decision:
    """The decision with the policy in force, every policy's verdict and the statistics."""
    policy = _enum(DecisionPolicy, data.get("policy"), f"{prefix}policy")
    verdicts = []
    for name, value in _mapping(data.get("by_policy"), f"{prefix}by_policy").items():
        where = f"{prefix}by_policy.{name}"
        entry = _mapping(value, where)
        reasons = _list(entry, "reasons", f"{where}.")
        if not all(isinstance(reason, str) for reason in reasons):
            raise InputError("must be a list of strings", field=f"{where}.reasons")
        kind = _enum(DecisionKind, entry.get("decision"), f"{where}.decision")
        verdicts.append(PolicyVerdict(_enum(DecisionPolicy, name, where), kind, tuple(reasons)))
    chosen = [v for v in verdicts if v.policy is policy]
    if not chosen or (chosen[0].kind, chosen[0].reasons) != (decision.kind, decision.reasons):
        raise InputError("must hold the deciding policy's decision and reasons", field=f"{prefix}by_policy")
    raw = data.get("statistics")
    statistics = None
    if raw is not None:
        statistics = PairStatistics.from_mapping(
            raw,
            candidate=decision.candidate_arm,
            incumbent=decision.incumbent_arm,
            field=f"{prefix}statistics",
        )
    return attrs.evolve(decision, policy=policy, verdicts=tuple(verdicts), statistics=statistics)
