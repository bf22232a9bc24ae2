"""promotion.json as a value: schema 6 fields, expiry, aborted sweeps, and a strict reader."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest

from tests.unit.promotion.promotion_fixtures import MODEL, resolved_of, review_runs, runs, same, table
from wfbench.domain.errors import InputError
from wfbench.domain.promotion.evidence import (
    ABORTED_REASON,
    EvidenceBindings,
    PromotionEvidence,
    RunStatus,
    aggregate_from_mapping,
    decision_from_mapping,
)
from wfbench.domain.promotion.gates import DecisionKind, evaluate_candidate, evaluate_review_candidate
from wfbench.domain.promotion.policy import REFERENCE_POLICY, DecisionPolicy, PromotionPolicy

NOW = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)


def _decisions(policy: PromotionPolicy = REFERENCE_POLICY):
    rows = [
        *runs("task-a", "workflow", same(3, cost_usd=1.0)),
        *runs("task-a", "candidate_workflow", same(3, cost_usd=0.5)),
    ]
    rows += runs("task-b", "workflow", resolved_of(0, 3)) + runs(
        "task-b", "candidate_workflow", resolved_of(0, 3)
    )
    rows += review_runs("case-1", "review", weighted_f1=0.6) + review_runs(
        "case-1", "candidate_review", weighted_f1=0.8
    )
    agg = table(rows)
    return [
        evaluate_candidate(
            agg, candidate="candidate_workflow", incumbent="workflow", model=MODEL, policy=policy
        ),
        evaluate_review_candidate(
            agg, candidate="candidate_review", incumbent="review", model=MODEL, policy=policy
        ),
    ]


def _evidence(**kw: Any) -> PromotionEvidence:
    policy = kw.pop("policy", REFERENCE_POLICY)
    return PromotionEvidence.build(_decisions(policy), policy=policy, generated_at=NOW, **kw)


def _json(evidence: PromotionEvidence) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(json.dumps(evidence.to_mapping()))
    return result


def test_evidence_expires_ninety_days_after_it_was_generated() -> None:
    """evidence_expires_at = generated_at + 90 days."""
    evidence = _evidence()

    assert evidence.evidence_expires_at - evidence.generated_at == dt.timedelta(days=90)
    assert _json(evidence)["evidence_expires_at"] == "2026-05-30T12:00:00+00:00"


def test_a_naive_generation_time_is_refused() -> None:
    """The time must carry a timezone."""
    with pytest.raises(InputError) as caught:
        PromotionEvidence.build([], policy=REFERENCE_POLICY, generated_at=dt.datetime(2026, 1, 1))  # noqa: DTZ001

    assert caught.value.field == "generated_at"


def test_an_aborted_sweep_forces_every_decision_to_insufficient_evidence() -> None:
    """After deciding, an aborted sweep turns each decision insufficient and says why."""
    complete = _evidence()
    aborted = _evidence(run_status=RunStatus.ABORTED)

    assert complete.decisions[0].kind is DecisionKind.PROMOTE
    assert [d.kind for d in aborted.decisions] == [DecisionKind.INSUFFICIENT_EVIDENCE] * 2
    assert all(d.reasons[-1] == ABORTED_REASON for d in aborted.decisions)
    assert aborted.decisions[0].reasons[:-1] == complete.decisions[0].reasons
    assert _json(aborted)["run_status"] == "aborted"


def test_the_mapping_has_every_schema_6_field_in_the_reference_order() -> None:
    """Top-level keys of promotion.json, in order."""
    mapping = _evidence().to_mapping()

    assert list(mapping) == [
        "generated_at",
        "evidence_expires_at",
        "benchmark_model",
        "proposer_model",
        "effort",
        "candidate_origin",
        "candidate_overlay",
        "candidate_overlay_digest",
        "target_base_digests",
        "required_candidate_arms",
        "selected_tasks",
        "ce_plugin",
        "schema_version",
        "run_status",
        "policy",
        "decisions",
    ]
    assert mapping["schema_version"] == 6
    assert mapping["required_candidate_arms"] == ["candidate_workflow", "candidate_review"]


def test_the_policy_is_recorded_per_candidate_arm_with_the_reference_fields() -> None:
    """Implementation arms record the spend thresholds; the review arm its fixed metric."""
    policy = _evidence().to_mapping()["policy"]

    assert policy["candidate_workflow"] == {
        "metric": "cost_usd",
        "min_runs": 3,
        "min_improvement_pct": 5.0,
        "max_task_regression_pct": 20.0,
        "max_failed_task_regression_pct": 100.0,
        "min_gated_task_ratio": 0.5,
        "quality_rule": "no per-task resolution-rate regression",
    }
    assert policy["candidate_review"] == {
        "metric": "review_weighted_f1",
        "min_runs": 3,
        "min_improvement": 0.01,
        "quality_rule": (
            "correct verdict on every repeat; minimum blocker recall; no clean-control regression"
        ),
    }


@pytest.mark.parametrize(
    ("proposer", "origin"), [("claude-x", "model-proposer"), (None, "manual-initial-overlay")]
)
def test_the_candidate_origin_follows_the_proposer(proposer: str | None, origin: str) -> None:
    """model-proposer when a proposer model is set, else manual-initial-overlay."""
    evidence = _evidence(bindings=EvidenceBindings(proposer_model=proposer))

    assert evidence.to_mapping()["candidate_origin"] == origin


def test_evidence_round_trips_through_json() -> None:
    """from_mapping(to_mapping(e)) == e, through a JSON text."""
    bindings = EvidenceBindings(
        benchmark_model=MODEL,
        proposer_model="p",
        effort="high",
        candidate_overlay="o",
        candidate_overlay_digest="a" * 64,
        target_base_digests={"x": "b" * 64},
        selected_tasks=({"id": "task-a", "oracle_files": []},),
        ce_plugin={"version": "1"},
    )
    for evidence in (
        _evidence(bindings=bindings),
        _evidence(
            policy=PromotionPolicy(decision_policy=DecisionPolicy.REFERENCE, metric="num_turns", min_runs=2)
        ),
    ):
        assert PromotionEvidence.from_mapping(_json(evidence)) == evidence


def _broken(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    raw = _json(_evidence())
    target: Any = raw
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return raw


@pytest.mark.parametrize(
    ("path", "value", "field", "reason"),
    [
        (("schema_version",), 5, "schema_version", "unsupported schema; regenerate evidence with schema 6"),
        (
            ("generated_at",),
            "2026-01-01T00:00:00",
            "generated_at",
            "must be an ISO-8601 time with a timezone",
        ),
        (("evidence_expires_at",), "soon", "evidence_expires_at", "must be an ISO-8601 time with a timezone"),
        (("generated_at",), 7, "generated_at", "must be an ISO-8601 time with a timezone"),
        (("run_status",), "done", "run_status", "must be one of complete, aborted"),
        (("decisions",), {}, "decisions", "must be a list"),
        (
            ("decisions", 0, "decision"),
            "maybe",
            "decisions[0].decision",
            "must be one of promote, keep_incumbent, insufficient_evidence",
        ),
        (("decisions", 0, "gate"), "other", "decisions[0].gate", "must be one of implementation, review"),
        (("decisions", 0, "candidate_arm"), "", "decisions[0].candidate_arm", "must be a non-empty string"),
        (("decisions", 0, "reasons"), [1], "decisions[0].reasons", "must be a list of strings"),
        (("decisions", 0, "reasons"), "x", "decisions[0].reasons", "must be a list"),
        (("decisions", 0, "model"), 3, "decisions[0].model", "must be a string or null"),
        (
            ("decisions", 0, "median_improvement_pct"),
            "50",
            "decisions[0].median_improvement_pct",
            "must be a finite number or null",
        ),
        (
            ("decisions", 0, "gated_tasks"),
            [],
            "decisions[0].gated_tasks",
            "disagrees with the rest of the evidence",
        ),
        (
            ("decisions", 0, "metric_warning"),
            "beware",
            "decisions[0].metric_warning",
            "disagrees with the rest of the evidence",
        ),
        (("decisions", 0, "tasks", 0), [], "decisions[0].tasks[0]", "must be an object"),
        (
            ("decisions", 0, "tasks", 0, "gated"),
            "yes",
            "decisions[0].tasks[0].gated",
            "must be true or false",
        ),
        (
            ("decisions", 0, "tasks", 0, "improvement_pct"),
            float("inf"),
            "decisions[0].tasks[0].improvement_pct",
            "must be a finite number or null",
        ),
        (
            ("decisions", 0, "tasks", 0, "incumbent_resolved"),
            "9/9",
            "decisions[0].tasks",
            "disagrees with the rest of the evidence",
        ),
        (
            ("decisions", 0, "tasks", 0, "incumbent", "runs"),
            -1,
            "decisions[0].tasks[0].incumbent.runs",
            "must be a non-negative integer",
        ),
        (
            ("decisions", 0, "tasks", 0, "incumbent", "task"),
            None,
            "decisions[0].tasks[0].incumbent.task",
            "must be a non-empty string",
        ),
        (
            ("decisions", 0, "tasks", 0, "incumbent", "error_kinds"),
            {"exploded": 1},
            "decisions[0].tasks[0].incumbent.error_kinds",
            "must be one of session-error",
        ),
        (
            ("decisions", 0, "tasks", 0, "incumbent", "error_kinds"),
            {"oracle-failed": -1},
            "decisions[0].tasks[0].incumbent.error_kinds.oracle-failed",
            "must be a non-negative integer",
        ),
        (
            ("decisions", 0, "tasks", 0, "incumbent", "health_reasons"),
            [1],
            "decisions[0].tasks[0].incumbent.health_reasons",
            "must be a list of strings",
        ),
        (
            ("decisions", 0, "tasks", 0, "incumbent", "cost_usd"),
            "1",
            "decisions[0].tasks[0].incumbent.cost_usd",
            "must be a finite number or null",
        ),
        (
            ("decisions", 1, "tasks", 0, "incumbent", "review_weighted_f1"),
            "hi",
            "decisions[1].tasks[0].incumbent.review_weighted_f1",
            "must be a finite number or null",
        ),
        (
            ("decisions", 1, "tasks", 0, "clean_control"),
            None,
            "decisions[1].tasks[0].clean_control",
            "must be true or false",
        ),
        (("policy",), [], "policy", "must be an object"),
        (
            ("policy", "candidate_review"),
            KeyError,
            "policy",
            "must have one entry per decision's candidate arm",
        ),
        (("policy", "candidate_workflow"), [], "policy.candidate_workflow", "must be an object"),
        (
            ("policy", "candidate_workflow", "metric"),
            "vibes",
            "policy.metric",
            "unsupported promotion metric: vibes",
        ),
        (
            ("policy", "candidate_workflow", "quality_rule"),
            "anything goes",
            "policy.candidate_workflow",
            "disagrees with the other policy entries",
        ),
        (
            ("policy", "candidate_review", "min_runs"),
            2,
            "policy.candidate_workflow",
            "disagrees with the other policy entries",
        ),
        (
            ("candidate_origin",),
            "model-proposer",
            "candidate_origin",
            "disagrees with the rest of the evidence",
        ),
        (
            ("required_candidate_arms",),
            ["candidate_review"],
            "required_candidate_arms",
            "disagrees with the rest of the evidence",
        ),
        (("benchmark_model",), 1, "benchmark_model", "must be a string or null"),
        (("target_base_digests",), {"x": 1}, "target_base_digests", "must map paths to digest strings"),
        (("target_base_digests",), None, "target_base_digests", "must be an object"),
        (("selected_tasks",), [1], "selected_tasks[0]", "must be an object"),
        (("selected_tasks",), None, "selected_tasks", "must be a list"),
        (("ce_plugin",), "v1", "ce_plugin", "must be an object"),
    ],
)
def test_malformed_evidence_is_refused_naming_the_field(
    path: tuple[Any, ...], value: Any, field: str, reason: str
) -> None:
    """Each malformed or inconsistent field raises an InputError naming it and saying why."""
    with pytest.raises(InputError) as caught:
        PromotionEvidence.from_mapping(_broken(path, value))

    assert caught.value.field == field
    assert caught.value.reason.startswith(reason)


def test_a_non_object_is_not_evidence() -> None:
    """A list is refused outright."""
    with pytest.raises(InputError):
        PromotionEvidence.from_mapping([])  # type: ignore[arg-type]


def test_aggregates_and_decisions_round_trip_through_their_mappings() -> None:
    """aggregate_from_mapping and decision_from_mapping invert to_mapping."""
    for decision in _decisions():
        assert decision_from_mapping(json.loads(json.dumps(decision.to_mapping()))) == decision
        for row in decision.tasks:
            assert aggregate_from_mapping(row.incumbent.to_mapping()) == row.incumbent


@pytest.mark.parametrize(
    ("key", "value", "field"),
    [
        ("task", "", "decisions[0].tasks[0].task"),
        ("class", 5, "decisions[0].tasks[0].class"),
        ("candidate", [], "decisions[0].tasks[0].candidate"),
        ("incumbent_metric", "1", "decisions[0].tasks[0].incumbent_metric"),
        ("candidate_metric", "1", "decisions[0].tasks[0].candidate_metric"),
        ("quality_floor_enforced", None, "decisions[0].tasks[0].quality_floor_enforced"),
        ("skill_attributable_failure", None, "decisions[0].tasks[0].skill_attributable_failure"),
    ],
)
def test_each_task_row_field_is_named_when_malformed(key: str, value: Any, field: str) -> None:
    """Every field of an implementation task row is validated under its own name."""
    with pytest.raises(InputError) as caught:
        PromotionEvidence.from_mapping(_broken(("decisions", 0, "tasks", 0, key), value))

    assert caught.value.field == field


def test_a_lone_decision_is_read_under_its_own_name() -> None:
    """decision_from_mapping names fields under ``decision`` by default."""
    with pytest.raises(InputError) as caught:
        decision_from_mapping({})

    assert caught.value.field == "decision.gate"
    with pytest.raises(InputError) as caught:
        decision_from_mapping([])
    assert caught.value.field == "decision"


def test_the_policy_round_trips_whatever_the_decision_order() -> None:
    """A review decision before an implementation one keeps both gates' thresholds."""
    policy = PromotionPolicy(
        decision_policy=DecisionPolicy.REFERENCE, metric="duration_s", min_runs=2, review_min_improvement=0.05
    )
    decisions = list(reversed(_decisions(policy)))
    evidence = PromotionEvidence.build(decisions, policy=policy, generated_at=NOW)

    assert PromotionEvidence.from_mapping(_json(evidence)).policy == policy


def test_refusals_of_whole_documents_say_why() -> None:
    """A naive time and a non-object each carry their own reason."""
    with pytest.raises(InputError) as naive:
        PromotionEvidence.build([], policy=REFERENCE_POLICY, generated_at=dt.datetime(2026, 1, 1))  # noqa: DTZ001
    with pytest.raises(InputError) as not_object:
        PromotionEvidence.from_mapping("{}")  # type: ignore[arg-type]

    assert naive.value.reason == "must carry a timezone"
    assert not_object.value.reason == "promotion evidence must be a JSON object"


@pytest.mark.parametrize(
    ("key", "value", "field"),
    [
        ("runs", True, "decisions[0].tasks[0].incumbent.runs"),
        ("arm", "", "decisions[0].tasks[0].incumbent.arm"),
        ("class", 5, "decisions[0].tasks[0].incumbent.class"),
        ("error_kinds", [], "decisions[0].tasks[0].incumbent.error_kinds"),
    ],
)
def test_each_aggregate_field_is_named_when_malformed(key: str, value: Any, field: str) -> None:
    """Aggregates inside task rows are validated field by field."""
    with pytest.raises(InputError) as caught:
        PromotionEvidence.from_mapping(_broken(("decisions", 0, "tasks", 0, "incumbent", key), value))

    assert caught.value.field == field


def test_a_lone_aggregate_is_read_under_its_own_name() -> None:
    """aggregate_from_mapping names fields under ``aggregate`` by default."""
    with pytest.raises(InputError) as caught:
        aggregate_from_mapping([])
    assert caught.value.field == "aggregate"
    with pytest.raises(InputError) as caught:
        aggregate_from_mapping({"error_kinds": {}, "health_reasons": [], "runs": -1})
    assert caught.value.field == "aggregate.runs"


@pytest.mark.parametrize(
    ("key", "value", "field"),
    [
        ("incumbent_arm", "", "decisions[0].incumbent_arm"),
        ("metric", None, "decisions[0].metric"),
        ("tasks", None, "decisions[0].tasks"),
        ("surprise", 1, "decisions[0].surprise"),
        ("metric_warning", KeyError, "decisions[0].metric_warning"),
    ],
)
def test_decision_fields_are_named_and_unknown_or_missing_keys_refused(
    key: str, value: Any, field: str
) -> None:
    """A decision object must be exactly what the gate wrote: no extra, no missing keys."""
    with pytest.raises(InputError) as caught:
        PromotionEvidence.from_mapping(_broken(("decisions", 0, key), value))

    assert caught.value.field == field
