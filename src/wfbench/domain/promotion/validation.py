"""Apply-time validation of ``promotion.json``: complete, current and exact (``docs/domain.md`` §8).

:func:`validate_for_apply` takes the evidence as read (a plain mapping, possibly malformed),
what the applier expects it to be bound to, and the current time, and returns every problem it
finds; an empty tuple means the evidence may be applied. Nothing here applies anything.
The last check recomputes every decision from the raw aggregates stored in its task rows and the
run-level samples stored in its ``statistics`` (checked against those aggregates), all
decisions together since the statistical policy's Holm correction spans the sweep, and requires
each result to be ``promote`` and identical to the stored decision, reasons included.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping
from typing import Any

import attrs

from wfbench.domain.errors import InputError
from wfbench.domain.promotion.evidence import (
    EVIDENCE_SCHEMA_VERSION,
    EvidenceBindings,
    RunStatus,
    aggregate_from_mapping,
)
from wfbench.domain.promotion.gates import evaluate_pair
from wfbench.domain.promotion.judging import PairSpec, judge, sample_problems
from wfbench.domain.promotion.policy import (
    CANDIDATE_ARMS,
    DEFAULT_GATES,
    DEFAULT_POLICY,
    EVIDENCE_MAX_AGE_DAYS,
    REVIEW_METRIC,
    DecisionPolicy,
    GateKind,
    PromotionPolicy,
)
from wfbench.domain.results.aggregation import Aggregate, AggregateTable
from wfbench.domain.statistics.analysis import PairStatistics
from wfbench.domain.statistics.samples import PairedSamples

__all__ = ["FUTURE_SKEW", "ApplyExpectation", "validate_for_apply"]

#: Clock skew tolerated on ``generated_at``.
FUTURE_SKEW = dt.timedelta(minutes=5)

_HEX64 = re.compile(r"[0-9a-f]{64}")
_TASK_DIGESTS = (
    "oracle_digest",
    "oracle_command_digest",
    "oracle_manifest_digest",
    "sandbox_dependency_content_digest",
    "sandbox_dependency_manifest_digest",
)
_BOUND_FIELDS = (
    "benchmark_model",
    "proposer_model",
    "effort",
    "candidate_origin",
    "candidate_overlay_digest",
    "required_candidate_arms",
    "selected_tasks",
    "target_base_digests",
)
_AGG_COUNTS = ("runs", "valid_runs", "excluded_runs", "resolved")
_REVIEW_FLAGS = ("verdict_correct", "clean_control", "clean_pass")


@attrs.frozen
class ApplyExpectation:
    """What the applier computed itself and the evidence must be bound to."""

    bindings: EvidenceBindings
    required_candidate_arms: tuple[str, ...]
    policy: PromotionPolicy = DEFAULT_POLICY
    pairs: Mapping[str, str] = CANDIDATE_ARMS
    gates: Mapping[str, GateKind] = DEFAULT_GATES
    #: The selected tasks each candidate arm runs on (a sweep mixing implementation and review
    #: tasks runs each arm on its own kind); an arm not listed is judged on every selected task.
    arm_tasks: Mapping[str, frozenset[str]] = attrs.field(factory=dict)

    def tasks_for(self, arm: str) -> frozenset[str]:
        """The task ids ``arm``'s decision must cover."""
        if arm in self.arm_tasks:
            return self.arm_tasks[arm]
        return frozenset(str(task.get("id")) for task in self.bindings.selected_tasks)

    def gate(self, arm: str) -> GateKind:
        """The gate that judges ``arm`` (implementation unless declared otherwise)."""
        return self.gates.get(arm, GateKind.IMPLEMENTATION)

    def expected_mapping(self) -> dict[str, Any]:
        """The bound top-level fields as the evidence should carry them."""
        b = self.bindings
        return {
            "benchmark_model": b.benchmark_model,
            "proposer_model": b.proposer_model,
            "effort": b.effort,
            "candidate_origin": b.candidate_origin,
            "candidate_overlay_digest": b.candidate_overlay_digest,
            "required_candidate_arms": list(self.required_candidate_arms),
            "selected_tasks": [dict(task) for task in b.selected_tasks],
            "target_base_digests": dict(b.target_base_digests),
        }


def validate_for_apply(raw: Any, *, expected: ApplyExpectation, now: dt.datetime) -> tuple[str, ...]:
    """Every reason ``raw`` may not be applied; empty when it is complete, current and exact."""
    if not isinstance(raw, Mapping):
        return ("promotion evidence must be a JSON object",)
    if raw.get("schema_version") != EVIDENCE_SCHEMA_VERSION:
        return ("promotion evidence has an unsupported schema; regenerate evidence with schema 6",)
    problems: list[str] = []
    if raw.get("run_status") != RunStatus.COMPLETE.value:
        problems.append("promotion evidence is not from a complete sweep")
    problems += _check_arms(raw, expected.pairs)
    problems += _check_selected_tasks(raw.get("selected_tasks"))
    wanted = expected.expected_mapping()
    problems += [
        f"promotion binding mismatch for {key}"
        for key in _BOUND_FIELDS
        if _bound_value(key, raw.get(key)) != _bound_value(key, wanted[key])
    ]
    expected_policy = {
        arm: expected.policy.for_gate(expected.gate(arm)) for arm in expected.required_candidate_arms
    }
    if raw.get("policy") != expected_policy:
        problems.append("promotion binding mismatch for policy")
    problems += _check_times(raw, now)
    problems += _check_decisions(raw.get("decisions"), expected)
    return tuple(problems)


def _bound_value(key: str, value: Any) -> Any:
    """A bound field as compared: the required arms as a set (a sweep lists them in its ``--arms``
    order, the applier in the corpus's; the evidence is the same either way)."""
    if key == "required_candidate_arms" and isinstance(value, list):
        return sorted(map(str, value))
    return value


def _check_arms(raw: Mapping[str, Any], pairs: Mapping[str, str]) -> list[str]:
    arms = raw.get("required_candidate_arms")
    if (
        not isinstance(arms, list)
        or not arms
        or not all(isinstance(arm, str) and arm in pairs for arm in arms)
        or len(set(arms)) != len(arms)
    ):
        return ["required_candidate_arms must be a non-empty list of unique candidate arms"]
    return []


def _is_hex64(value: Any) -> bool:
    return isinstance(value, str) and _HEX64.fullmatch(value) is not None


def _oracle_files_ok(files: Any) -> bool:
    return (
        isinstance(files, list)
        and bool(files)
        and all(
            isinstance(item, Mapping)
            and isinstance(item.get("target"), str)
            and bool(item["target"])
            and _is_hex64(item.get("sha256"))
            and isinstance(item.get("size"), int)
            and not isinstance(item["size"], bool)
            and item["size"] >= 0
            for item in files
        )
    )


def _check_selected_tasks(tasks: Any) -> list[str]:
    if not isinstance(tasks, list) or not tasks or not all(isinstance(task, Mapping) for task in tasks):
        return ["selected_tasks must be a non-empty list of task bindings"]
    ids = [task.get("id") for task in tasks]
    if not all(isinstance(task_id, str) and task_id for task_id in ids) or len(set(ids)) != len(ids):
        return ["selected_tasks must have unique, non-empty string ids"]
    problems: list[str] = []
    for task in tasks:
        if not all(_is_hex64(task.get(name)) for name in _TASK_DIGESTS):
            problems.append(f"selected task {task['id']} lacks hidden-oracle or dependency digests")
        if not _oracle_files_ok(task.get("oracle_files")):
            problems.append(f"selected task {task['id']} has malformed oracle_files")
    return problems


def _parse_time(value: Any) -> dt.datetime | None:
    try:
        moment = dt.datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None
    return moment if moment is not None and moment.utcoffset() is not None else None


def _check_times(raw: Mapping[str, Any], now: dt.datetime) -> list[str]:
    generated, expires = _parse_time(raw.get("generated_at")), _parse_time(raw.get("evidence_expires_at"))
    if generated is None or expires is None:
        return ["promotion evidence timestamps must be ISO-8601 times with a timezone"]
    problems: list[str] = []
    if generated > now + FUTURE_SKEW:
        problems.append("promotion evidence was generated in the future")
    if (
        expires <= generated
        or expires - generated > dt.timedelta(days=EVIDENCE_MAX_AGE_DAYS)
        or now > expires
    ):
        problems.append("promotion evidence has expired; re-run the paired suite")
    return problems


def _check_decisions(decisions: Any, expected: ApplyExpectation) -> list[str]:
    arms = list(expected.required_candidate_arms)
    if not isinstance(decisions, list) or not all(isinstance(item, Mapping) for item in decisions):
        return ["decisions must be a list of decision objects"]
    listed = [item.get("candidate_arm") for item in decisions]
    if len(set(map(str, listed))) != len(listed):
        return ["decisions repeat a candidate arm"]
    if stray := [arm for arm in listed if arm not in arms]:
        return [f"decision for {stray[0]} is not a required candidate arm"]
    if sorted(map(str, listed)) != sorted(arms):  # any order: each arm is bound by its name
        return ["decisions must list one decision per required candidate arm"]
    problems: list[str] = []
    for item in decisions:
        problems += _check_decision(item, expected)
    if problems:
        return problems
    return _check_recomputed(decisions, expected)


def _check_decision(decision: Mapping[str, Any], expected: ApplyExpectation) -> list[str]:
    arm = str(decision["candidate_arm"])
    gate = expected.gate(arm)
    metric = REVIEW_METRIC if gate is GateKind.REVIEW else expected.policy.metric
    problems: list[str] = []
    if decision.get("incumbent_arm") != expected.pairs.get(arm):
        problems.append(f"decision for {arm} names the wrong incumbent")
    if decision.get("decision") != "promote":
        problems.append(f"decision for {arm} is {decision.get('decision')}, not promote")
    if decision.get("metric") != metric:
        problems.append(f"decision for {arm} has a metric mismatch ({decision.get('metric')} vs {metric})")
    return problems + _check_task_rows(decision, arm, gate, expected)


def _check_task_rows(
    decision: Mapping[str, Any], arm: str, gate: GateKind, expected: ApplyExpectation
) -> list[str]:
    rows = decision.get("tasks")
    if not isinstance(rows, list) or not rows:
        return [f"decision for {arm} has no per-task gate evidence"]
    if not all(
        isinstance(row, Mapping)
        and isinstance(row.get("task"), str)
        and row["task"]
        and isinstance(row.get("gated"), bool)
        for row in rows
    ):
        return [f"decision for {arm} has malformed per-task gate evidence"]
    tasks = [row["task"] for row in rows]
    if len(set(tasks)) != len(tasks):
        return [f"decision for {arm} repeats a task"]
    if set(tasks) != expected.tasks_for(arm):
        return [f"decision for {arm}: task evidence does not match selected tasks"]
    ungated = decision.get("ungated_tasks")
    if not isinstance(ungated, list) or not all(isinstance(task, str) for task in ungated):
        return [f"decision for {arm} is missing its ungated task list"]
    if set(ungated) != {row["task"] for row in rows if not row["gated"]}:
        return [f"decision for {arm}: ungated tasks disagree with its per-task evidence"]
    gated = sum(1 for row in rows if row["gated"])
    if gated == 0:
        return [f"decision for {arm} has no gated task"]
    if gated < expected.policy.min_gated_task_ratio * len(rows):
        return [f"decision for {arm} rests on too thin a gated evidence base ({gated}/{len(rows)})"]
    if gate is GateKind.REVIEW and ungated:
        return [f"review decision for {arm} has ungated tasks"]
    return [
        problem for row in rows for problem in _check_row_aggregates(row, arm, gate, expected.policy.metric)
    ]


def _finite_at_least_zero(value: Any) -> bool:
    return _is_number(value) and math.isfinite(value) and value >= 0


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _unit_or_none(value: Any) -> bool:
    return value is None or (_finite_at_least_zero(value) and value <= 1)


def _counts_problem(agg: Any) -> str | None:
    if not isinstance(agg, Mapping) or not all(_is_count(agg.get(name)) for name in _AGG_COUNTS):
        return "counts must be non-negative integers"
    if agg["runs"] != agg["valid_runs"] + agg["excluded_runs"] or agg["resolved"] > agg["valid_runs"]:
        return "counts are inconsistent"
    return None


def _implementation_problem(agg: Mapping[str, Any], metric: str) -> str | None:
    if not (agg.get(metric) is None or _finite_at_least_zero(agg.get(metric))):
        return f"{metric} must be null or a finite number >= 0"
    kinds = agg.get("error_kinds")
    if not isinstance(kinds, Mapping) or not all(
        isinstance(k, str) and _is_count(n) for k, n in kinds.items()
    ):
        return "error_kinds must map kinds to counts"
    return None


def _review_problem(agg: Mapping[str, Any]) -> str | None:
    if not all(isinstance(agg.get(f"review_{name}"), bool) for name in _REVIEW_FLAGS):
        return "review verdict and clean-control flags must be booleans"
    f1 = agg.get("review_weighted_f1")
    if not _unit_or_none(f1) or (f1 is None and agg["review_clean_control"] is not True):
        return "review_weighted_f1 must be in [0, 1] (null only on a clean control)"
    if not _unit_or_none(agg.get("review_blocker_recall")):
        return "review_blocker_recall must be in [0, 1] or null"
    if not _finite_at_least_zero(agg.get("review_false_positives")):
        return "review_false_positives must be a finite number >= 0"
    return None


def _aggregate_problem(agg: Any, gate: GateKind, metric: str) -> str | None:
    problem = _counts_problem(agg)
    if problem is not None:
        return problem
    return _review_problem(agg) if gate is GateKind.REVIEW else _implementation_problem(agg, metric)


def _check_row_aggregates(row: Mapping[str, Any], arm: str, gate: GateKind, metric: str) -> list[str]:
    where = f"decision for {arm}, task {row['task']}"
    problems = [
        f"{where}: {side} aggregate {problem}"
        for side in ("incumbent", "candidate")
        if (problem := _aggregate_problem(row.get(side), gate, metric)) is not None
    ]
    if (
        gate is GateKind.REVIEW
        and not problems
        and row["incumbent"]["review_clean_control"] != row["candidate"]["review_clean_control"]
    ):
        problems.append(f"{where}: paired arms disagree on the clean control")
    return problems


def _stored_cells(decision: Mapping[str, Any], cells: dict[tuple[str, str], Aggregate]) -> str | None:
    """Read a decision's raw aggregates into ``cells``; a problem when one is unreadable or misplaced."""
    arm, incumbent = str(decision["candidate_arm"]), str(decision["incumbent_arm"])
    try:
        for row in decision["tasks"]:
            for side, name in (("incumbent", incumbent), ("candidate", arm)):
                agg = aggregate_from_mapping(row[side], field=f"{row['task']}.{side}")
                if (agg.task, agg.arm) != (row["task"], name):
                    return f"decision for {arm}, task {row['task']}: {side} aggregate belongs to another cell"
                cells[(row["task"], name)] = agg
    except InputError as exc:
        return f"decision for {arm} has an unreadable aggregate: {exc}"
    return None


def _stored_samples(decision: Mapping[str, Any]) -> PairedSamples | str:
    """The run-level samples stored in a decision's statistics (recomputed and checked), or a problem."""
    arm, incumbent = str(decision["candidate_arm"]), str(decision["incumbent_arm"])
    if decision.get("statistics") is None:
        return f"decision for {arm} has no statistics to recompute from"
    try:
        stats = PairStatistics.from_mapping(decision["statistics"], candidate=arm, incumbent=incumbent)
    except InputError as exc:
        return f"decision for {arm} has unreadable statistics: {exc}"
    return stats.samples


def _check_recomputed(decisions: list[Mapping[str, Any]], expected: ApplyExpectation) -> list[str]:
    """Recompute every decision together (Holm's correction spans the sweep's candidates) from
    the raw aggregates and samples stored in them; each must be ``promote`` and identical."""
    cells: dict[tuple[str, str], Aggregate] = {}
    problems = [p for d in decisions if (p := _stored_cells(d, cells)) is not None]
    if problems:
        return problems
    table = AggregateTable(dict(sorted(cells.items())))
    legacy = all("statistics" not in d for d in decisions)
    samples: dict[str, PairedSamples] = {}
    for decision in decisions if not legacy else ():
        stored = _stored_samples(decision)
        if isinstance(stored, str):
            problems.append(stored)
            continue
        samples[str(decision["candidate_arm"])] = stored
        problems += [f"decision for {decision['candidate_arm']}: {p}" for p in sample_problems(stored, table)]
    if problems:
        return problems
    specs = [
        PairSpec(
            str(d["candidate_arm"]),
            str(d["incumbent_arm"]),
            expected.gate(str(d["candidate_arm"])),
            family=d["holm_family"] if isinstance(d.get("holm_family"), str) else None,
        )
        for d in decisions
    ]
    model = expected.bindings.benchmark_model
    # a sweep over several agents judged each pair with its own model (its decision says which)
    own = {str(d["candidate_arm"]): d["model"] for d in decisions if isinstance(d.get("holm_family"), str)}
    if legacy and expected.policy.decision_policy is DecisionPolicy.REFERENCE:
        recomputed = tuple(
            evaluate_pair(
                table,
                candidate=s.candidate,
                incumbent=s.incumbent,
                model=model,
                policy=expected.policy,
                gate=s.gate,
            )
            for s in specs
        )
    elif legacy:
        return [f"decision for {spec.candidate} has no statistics to recompute from" for spec in specs]
    else:
        recomputed = judge(table, samples, specs, model=model, policy=expected.policy, pair_models=own)
    for decision, again in zip(decisions, recomputed, strict=True):
        arm = str(decision["candidate_arm"])
        if again.kind.value != "promote":
            problems.append(f"recomputed decision for {arm} is {again.kind.value}, not promote")
        elif again.to_mapping() != dict(decision):
            problems.append(f"recomputed decision for {arm} does not match the stored evidence")
    return problems
