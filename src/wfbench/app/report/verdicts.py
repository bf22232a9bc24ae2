"""The verdict blocks of a report, read from a ``promotion.json`` mapping (defensively).

``promotion.json`` may come from an older wfbench, another tool or a hand edit: every field is
read with its type checked, and anything missing or malformed is ``None`` (printed ``n/a``),
never a crash. One :class:`Verdict` per decision: the decision and its reasons, the other
policy's conclusion when both were judged (``by_policy``), the paired statistics when present
(the ``statistics`` object, issue 12's field names), the sentence saying what the sweep could
detect, the policy's thresholds and the per-task paired results with their regression flags.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from wfbench.domain.promotion.decision import Decision

__all__ = [
    "Effect",
    "PairedTask",
    "Verdict",
    "detectability_of",
    "detectability_sentences",
    "effect_of",
    "verdicts_of",
]


@attrs.frozen
class Effect:
    """One effect with its interval, from a ``statistics`` object (reported units)."""

    name: str
    unit: str | None
    effect: float | None
    ci_low: float | None
    ci_high: float | None
    confidence: float | None
    mde: float | None
    sign_test_p: float | None
    wins: int | None
    losses: int | None
    ties: int | None
    n_tasks: int | None
    runs_per_arm: int | None
    method: str | None
    seed: int | None
    resamples: int | None


@attrs.frozen
class PairedTask:
    """One task of a pair: both arms' resolution, the metric each way, and what regressed."""

    task: str
    task_class: str | None
    gated: bool | None
    incumbent_resolved: int | None
    incumbent_valid: int | None
    candidate_resolved: int | None
    candidate_valid: int | None
    incumbent_metric: float | None
    candidate_metric: float | None
    #: ``candidate − incumbent`` in the metric's unit.
    delta: float | None
    #: The gate's improvement (positive = the candidate is better: cheaper, or higher quality).
    improvement_pct: float | None
    flags: tuple[str, ...]
    #: Per-task effects from the statistics (resolution in points, the metric in its unit).
    resolution_pts: float | None = None
    effect: float | None = None
    effect_interval: tuple[float, float] | None = None

    @property
    def regressed(self) -> bool:
        """True when any flag marks a regression of the candidate."""
        return any(flag != "not gated" for flag in self.flags)

    def rate(self, side: str) -> float | None:
        """Resolve rate (0..1) of ``incumbent`` or ``candidate``; ``None`` without valid runs."""
        resolved, valid = (
            (self.incumbent_resolved, self.incumbent_valid)
            if side == "incumbent"
            else (self.candidate_resolved, self.candidate_valid)
        )
        return None if resolved is None or not valid else resolved / valid


@attrs.frozen
class Verdict:
    """One candidate's decision, as the verdict block shows it."""

    candidate: str
    incumbent: str
    gate: str | None
    metric: str | None
    decision: str
    reasons: tuple[str, ...]
    median_improvement_pct: float | None
    min_improvement_pct: float | None
    max_task_regression_pct: float | None
    policy: str | None
    #: Other policies' conclusions: ``(policy, decision, reasons)``.
    other_policies: tuple[tuple[str, str, tuple[str, ...]], ...]
    metric_effect: Effect | None
    resolution_effect: Effect | None
    detectability: str | None
    tasks: tuple[PairedTask, ...]

    @property
    def regressions(self) -> tuple[PairedTask, ...]:
        """The paired tasks with a regression flag."""
        return tuple(task for task in self.tasks if task.regressed)


def _num(value: Any) -> float | None:
    return None if isinstance(value, bool) or not isinstance(value, int | float) else float(value)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> Sequence[Any]:
    return value if isinstance(value, list | tuple) else ()


def _interval(value: Any) -> tuple[float, float] | None:
    items = _list(value)
    if len(items) != 2:
        return None
    low, high = _num(items[0]), _num(items[1])
    return None if low is None or high is None else (low, high)


def effect_of(raw: Any, name: str) -> Effect | None:
    """An :class:`Effect` from a ``statistics`` object (or its ``resolution``); ``None`` when absent."""
    data = _map(raw)
    if not data:
        return None
    return Effect(
        name=_str(data.get("metric")) or name,
        unit=_str(data.get("unit")),
        effect=_num(data.get("effect")),
        ci_low=_num(data.get("ci_low")),
        ci_high=_num(data.get("ci_high")),
        confidence=_num(data.get("confidence")),
        mde=_num(data.get("mde")),
        sign_test_p=_num(data.get("sign_test_p")),
        wins=_int(data.get("wins")),
        losses=_int(data.get("losses")),
        ties=_int(data.get("ties")),
        n_tasks=_int(data.get("n_tasks")),
        runs_per_arm=_int(data.get("runs_per_arm")),
        method=_str(data.get("method")),
        seed=_int(data.get("seed")),
        resamples=_int(data.get("resamples")),
    )


def _fraction(value: Any) -> tuple[int | None, int | None]:
    text = _str(value)
    if text is None or "/" not in text:
        return None, None
    head, _, tail = text.partition("/")
    return (int(head), int(tail)) if head.isdigit() and tail.isdigit() else (None, None)


def _side(task: Mapping[str, Any], side: str) -> tuple[int | None, int | None]:
    agg = _map(task.get(side))
    resolved, valid = _int(agg.get("resolved")), _int(agg.get("valid_runs"))
    if resolved is None or valid is None:
        return _fraction(task.get(f"{side}_resolved"))
    return resolved, valid


def _flags(task: Mapping[str, Any], paired: PairedTask, max_regression: float | None) -> tuple[str, ...]:
    flags: list[str] = []
    inc, cand = paired.rate("incumbent"), paired.rate("candidate")
    if inc is not None and cand is not None and cand < inc:
        flags.append("resolution dropped")
    if task.get("candidate_quality_floor_met") is False and task.get("quality_floor_enforced") is not False:
        flags.append("quality floor not met")
    if task.get("skill_attributable_failure") is True:
        flags.append("skill-attributable failure")
    improvement = paired.improvement_pct
    if improvement is not None and max_regression is not None and improvement < -max_regression:
        flags.append(f"regressed more than {max_regression:g}%")
    for name, label in (("weighted_f1", "weighted F1 dropped"), ("blocker_recall", "blocker recall dropped")):
        before, after = _num(task.get(f"incumbent_{name}")), _num(task.get(f"candidate_{name}"))
        if before is not None and after is not None and after < before:
            flags.append(label)
    if task.get("clean_control") is True and task.get("candidate_clean_pass") is False:
        flags.append("clean control failed")
    if task.get("gated") is False:
        flags.append("not gated")
    return tuple(flags)


def _paired(
    task: Mapping[str, Any], stats: Mapping[str, Mapping[str, Any]], max_regression: float | None
) -> PairedTask:
    name = _str(task.get("task")) or "?"
    inc_r, inc_v = _side(task, "incumbent")
    cand_r, cand_v = _side(task, "candidate")
    inc_m = _num(task.get("incumbent_metric", task.get("incumbent_weighted_f1")))
    cand_m = _num(task.get("candidate_metric", task.get("candidate_weighted_f1")))
    improvement = _num(task.get("improvement_pct"))
    if improvement is None and "candidate_weighted_f1" in task and inc_m is not None and cand_m is not None:
        improvement = 100.0 * (cand_m - inc_m)
    own = stats.get(name, {})
    paired = PairedTask(
        task=name,
        task_class=_str(task.get("class")),
        gated=task.get("gated") if isinstance(task.get("gated"), bool) else None,
        incumbent_resolved=inc_r,
        incumbent_valid=inc_v,
        candidate_resolved=cand_r,
        candidate_valid=cand_v,
        incumbent_metric=inc_m,
        candidate_metric=cand_m,
        delta=None if inc_m is None or cand_m is None else cand_m - inc_m,
        improvement_pct=improvement,
        flags=(),
        resolution_pts=_num(own.get("resolution_pts")),
        effect=_num(own.get("effect")),
        effect_interval=_interval(own.get("effect_interval")),
    )
    return attrs.evolve(paired, flags=_flags(task, paired, max_regression))


def _other_policies(decision: Mapping[str, Any]) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    own = _str(decision.get("policy"))
    out = []
    for policy, verdict in _map(decision.get("by_policy")).items():
        if policy == own or not isinstance(verdict, Mapping):
            continue
        reasons = tuple(str(reason) for reason in _list(verdict.get("reasons")))
        out.append((str(policy), _str(verdict.get("decision")) or "n/a", reasons))
    return tuple(out)


def _verdict(decision: Mapping[str, Any], policy: Mapping[str, Any], detect: str | None) -> Verdict:
    stats = _map(decision.get("statistics"))
    per_task = {
        str(item.get("task")): item for item in _list(stats.get("tasks")) if isinstance(item, Mapping)
    }
    max_regression = _num(policy.get("max_task_regression_pct"))
    tasks = tuple(
        _paired(task, per_task, max_regression)
        for task in _list(decision.get("tasks"))
        if isinstance(task, Mapping)
    )
    return Verdict(
        candidate=_str(decision.get("candidate_arm")) or "?",
        incumbent=_str(decision.get("incumbent_arm")) or "?",
        gate=_str(decision.get("gate")),
        metric=_str(decision.get("metric")) or _str(policy.get("metric")),
        decision=_str(decision.get("decision")) or "n/a",
        reasons=tuple(str(reason) for reason in _list(decision.get("reasons"))),
        median_improvement_pct=_num(decision.get("median_improvement_pct")),
        min_improvement_pct=_num(policy.get("min_improvement_pct")),
        max_task_regression_pct=max_regression,
        policy=_str(decision.get("policy")),
        other_policies=_other_policies(decision),
        metric_effect=effect_of(stats, _str(decision.get("metric")) or "metric") if stats else None,
        resolution_effect=effect_of(stats.get("resolution"), "resolved") if stats else None,
        detectability=detect,
        tasks=tasks,
    )


def _sentence(decision: Mapping[str, Any], policy: Mapping[str, Any]) -> str | None:
    from wfbench.domain.errors import InputError
    from wfbench.domain.statistics.view import statistics_view

    raw = decision.get("statistics")
    if not isinstance(raw, Mapping):
        return None
    try:
        view = statistics_view(
            raw,
            candidate=str(decision.get("candidate_arm")),
            incumbent=str(decision.get("incumbent_arm")),
            target=_num(policy.get("min_improvement_pct")),
        )
    except InputError as exc:
        return f"n/a (the statistics object does not hold up: {exc.reason})"
    return view.detectability.sentence


def detectability_sentences(promotion: Mapping[str, Any] | None) -> dict[str, str]:
    """Candidate arm → the sentence saying what its sweep could detect (from each ``statistics`` object).

    The statistics are recomputed from the samples they carry (so a tampered object is said,
    not shown); the target is the policy's ``min_improvement_pct`` for spend metrics.
    """
    if not isinstance(promotion, Mapping):
        return {}
    policies = _map(promotion.get("policy"))
    out: dict[str, str] = {}
    for decision in _list(promotion.get("decisions")):
        if not isinstance(decision, Mapping):
            continue
        candidate = _str(decision.get("candidate_arm")) or "?"
        sentence = _sentence(decision, _map(policies.get(candidate)))
        if sentence is not None:
            out[candidate] = sentence
    return out


def detectability_of(decisions: Iterable[Decision], promotion: Mapping[str, Any] | None) -> dict[str, str]:
    """:func:`detectability_sentences` for decisions judged in this process, without recomputing them.

    ``promotion`` is their own evidence mapping (``GateVerdict.to_mapping``: the policy targets).
    A statistics object made here holds up by construction, so the bootstrap that
    :func:`detectability_sentences` runs again to check a stored one is skipped (at 4,000 tasks it
    was the report's largest cost after reading the rows).
    """
    from wfbench.domain.statistics.planning import detectability

    policies = _map((promotion or {}).get("policy"))
    out: dict[str, str] = {}
    for decision in decisions:
        if decision.statistics is None:
            continue
        target = _num(_map(policies.get(decision.candidate_arm)).get("min_improvement_pct"))
        out[decision.candidate_arm] = detectability(decision.statistics, target=target).sentence
    return out


def verdicts_of(
    promotion: Mapping[str, Any] | None, detectability: Mapping[str, str] | None = None
) -> tuple[Verdict, ...]:
    """One verdict per decision of ``promotion`` (empty when there is none).

    ``detectability`` maps a candidate arm to the sentence saying what its sweep could detect.
    """
    if not isinstance(promotion, Mapping):
        return ()
    policies = _map(promotion.get("policy"))
    out = []
    for decision in _list(promotion.get("decisions")):
        if not isinstance(decision, Mapping):
            continue
        candidate = _str(decision.get("candidate_arm")) or "?"
        policy = _map(policies.get(candidate)) if candidate in policies else policies
        out.append(_verdict(decision, policy, (detectability or {}).get(candidate)))
    return tuple(out)
