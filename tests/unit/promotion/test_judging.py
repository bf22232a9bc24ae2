"""The sweep-level judgement in promotion.json: policy, both verdicts, statistics; read back; applied."""

from __future__ import annotations

import copy
import datetime as dt
import json

import attrs
import pytest

from tests.unit.promotion.promotion_fixtures import MODEL
from tests.unit.promotion.test_promotion_apply import _bindings
from tests.unit.promotion.test_statistical_gate import STATISTICAL, task_rows, wins
from wfbench.domain.errors import InputError
from wfbench.domain.promotion.decision import DecisionKind
from wfbench.domain.promotion.evidence import PromotionEvidence, RunStatus, decision_from_mapping
from wfbench.domain.promotion.judging import PairSpec, judge_rows, sample_problems
from wfbench.domain.promotion.policy import REFERENCE_POLICY, DecisionPolicy, PromotionPolicy
from wfbench.domain.promotion.validation import ApplyExpectation, validate_for_apply
from wfbench.domain.statistics.analysis import analyze_pair
from wfbench.domain.statistics.samples import paired_samples

NOW = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
ARM = "candidate_workflow"


def sweep_rows() -> list:
    """Twelve tasks: the candidate wins on eleven and drops one run on the twelfth."""
    rows = wins(11)[: 11 * 6] + task_rows("t11", "111", "110")
    rename = {"inc": "workflow", "cand": ARM}
    return [attrs.evolve(row, arm=rename[row.arm]) for row in rows]


def evidence(
    policy: PromotionPolicy = STATISTICAL, status: RunStatus = RunStatus.COMPLETE
) -> PromotionEvidence:
    rows = sweep_rows()
    _, decisions = judge_rows(rows, [PairSpec(ARM, "workflow")], model=MODEL, policy=policy)
    tasks = tuple(sorted({row.task for row in rows}))
    return PromotionEvidence.build(
        decisions, policy=policy, generated_at=NOW, run_status=status, bindings=_bindings(tasks)
    )


def expectation(policy: PromotionPolicy = STATISTICAL) -> ApplyExpectation:
    tasks = tuple(sorted({row.task for row in sweep_rows()}))
    return ApplyExpectation(bindings=_bindings(tasks), required_candidate_arms=(ARM,), policy=policy)


def test_each_decision_records_the_policy_both_verdicts_and_the_statistics() -> None:
    decision = evidence().to_mapping()["decisions"][0]

    assert decision["policy"] == "statistical"
    assert decision["decision"] == "promote"
    assert decision["by_policy"]["statistical"] == {"decision": "promote", "reasons": decision["reasons"]}
    assert decision["by_policy"]["reference"]["decision"] == "keep_incumbent"
    assert decision["statistics"]["resolution"]["n_tasks"] == 12
    assert decision["statistics"]["metric"] == "cost_usd"


def test_the_policy_entry_records_the_statistical_settings() -> None:
    entry = evidence().to_mapping()["policy"][ARM]

    assert entry["decision_policy"] == "statistical"
    assert (entry["confidence"], entry["resamples"], entry["power"], entry["seed"]) == (0.9, 2000, 0.8, None)
    assert entry["non_inferiority_margin_pts"] == 10.0
    assert entry["multiplicity"] == "holm"


def test_the_reference_policy_entry_keeps_exactly_the_reference_s_fields() -> None:
    entry = evidence(REFERENCE_POLICY).to_mapping()["policy"][ARM]

    assert "decision_policy" not in entry
    assert set(entry) == {
        "metric",
        "min_runs",
        "min_improvement_pct",
        "max_task_regression_pct",
        "max_failed_task_regression_pct",
        "min_gated_task_ratio",
        "quality_rule",
    }


@pytest.mark.parametrize("policy", [STATISTICAL, REFERENCE_POLICY, PromotionPolicy(seed=7, resamples=500)])
def test_evidence_reads_back_exactly_what_it_wrote(policy: PromotionPolicy) -> None:
    written = evidence(policy).to_mapping()

    back = PromotionEvidence.from_mapping(json.loads(json.dumps(written)))

    assert back.to_mapping() == written
    assert back.policy == policy


def test_an_aborted_sweep_forces_every_policy_s_verdict() -> None:
    decision = evidence(status=RunStatus.ABORTED).to_mapping()["decisions"][0]

    assert decision["decision"] == "insufficient_evidence"
    assert {v["decision"] for v in decision["by_policy"].values()} == {"insufficient_evidence"}
    assert decision_from_mapping(decision).kind is DecisionKind.INSUFFICIENT_EVIDENCE


def test_a_decision_that_disagrees_with_its_deciding_verdict_is_refused() -> None:
    decision = evidence().to_mapping()["decisions"][0]
    decision["by_policy"]["statistical"]["decision"] = "keep_incumbent"

    with pytest.raises(InputError, match="deciding policy") as caught:
        decision_from_mapping(decision)

    assert caught.value.field == "decision.by_policy"


def test_tampered_statistics_are_refused_when_read() -> None:
    decision = evidence().to_mapping()["decisions"][0]
    decision["statistics"]["resolution"]["ci_low"] = 12.0

    with pytest.raises(InputError, match="disagrees") as caught:
        decision_from_mapping(decision)

    assert caught.value.field == "decision.statistics"


def test_statistical_evidence_may_be_applied() -> None:
    assert validate_for_apply(evidence().to_mapping(), expected=expectation(), now=NOW) == ()


def test_evidence_judged_by_the_reference_cannot_be_applied_as_statistical() -> None:
    raw = evidence(REFERENCE_POLICY).to_mapping()

    problems = validate_for_apply(raw, expected=expectation(), now=NOW)

    assert "promotion binding mismatch for policy" in problems


def test_applying_recomputes_the_statistical_decision() -> None:
    raw = evidence().to_mapping()
    raw["decisions"][0]["statistics"]["tasks"][0]["candidate"]["resolved"] = [False, False, False]

    problems = validate_for_apply(raw, expected=expectation(), now=NOW)

    assert any("unreadable statistics" in p and "disagrees" in p for p in problems)


def test_samples_that_disagree_with_the_aggregates_are_refused_at_apply() -> None:
    """Forge a self-consistent statistics object whose samples are not the aggregates' runs."""
    raw = evidence().to_mapping()
    rows = [row for row in sweep_rows() if not (row.task == "t11" and row.arm == ARM)]
    rows += task_rows("t11", "111", "111", candidate=ARM)[3:]
    forged = analyze_pair(paired_samples(rows, candidate=ARM, incumbent="workflow", metric="cost_usd"))
    raw["decisions"][0]["statistics"] = forged.to_mapping()

    problems = validate_for_apply(copy.deepcopy(raw), expected=expectation(), now=NOW)

    assert any("t11: candidate_workflow's samples disagree with its aggregate" in p for p in problems)


def test_sample_problems_name_missing_or_extra_tasks() -> None:
    rows = sweep_rows()
    table, _ = judge_rows(rows, [PairSpec(ARM, "workflow")], model=MODEL)
    fewer = paired_samples(
        [r for r in rows if r.task != "t00"], candidate=ARM, incumbent="workflow", metric="cost_usd"
    )

    assert sample_problems(fewer, table) == ["its samples do not cover exactly the tasks both arms ran"]
    full = paired_samples(rows, candidate=ARM, incumbent="workflow", metric="cost_usd")
    assert sample_problems(full, table) == []


def test_a_statistical_expectation_refuses_evidence_without_statistics() -> None:
    raw = evidence().to_mapping()
    for key in ("policy", "by_policy", "statistics"):
        raw["decisions"][0].pop(key)

    problems = validate_for_apply(raw, expected=expectation(), now=NOW)

    assert problems == (f"decision for {ARM} has no statistics to recompute from",)


def test_the_decision_policy_is_validated() -> None:
    with pytest.raises(InputError, match="reference, statistical") as caught:
        PromotionPolicy(decision_policy="bayesian")  # type: ignore[arg-type]

    assert caught.value.field == "decision_policy"
    assert PromotionPolicy(decision_policy="statistical").decision_policy is DecisionPolicy.STATISTICAL  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("confidence", 1.5),
        ("power", 0.0),
        ("resamples", 50),
        ("resamples", True),
        ("seed", -3),
        ("seed", 1.5),
        ("non_inferiority_margin_pts", -1.0),
        ("non_inferiority_margin_pts", float("nan")),
        ("min_tasks", 1),
        ("min_tasks", 2.0),
    ],
)
def test_the_statistical_settings_are_validated(field: str, value: object) -> None:
    with pytest.raises(InputError) as caught:
        PromotionPolicy(**{field: value})  # type: ignore[arg-type]

    assert caught.value.field == field
