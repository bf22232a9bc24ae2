"""The re-gate use case and report.md, over rows in memory (no disk, no clock)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import attrs
import pytest

from tests.unit.promotion.promotion_fixtures import record, review_runs, runs, same
from wfbench.app.gating.gating import regate, resolve_model
from wfbench.app.promotion import apply
from wfbench.domain.errors import InputError
from wfbench.domain.promotion.evidence import EvidenceBindings, RunStatus
from wfbench.domain.promotion.gates import DecisionKind
from wfbench.domain.promotion.policy import REFERENCE_POLICY as REFERENCE
from wfbench.domain.promotion.policy import DecisionPolicy, GateKind, PromotionPolicy

NOW = dt.datetime(2026, 2, 1, tzinfo=dt.UTC)


def _modelled(rows, model="m-1"):
    return [attrs.evolve(row, extra={**row.extra, "benchmark_model": model}) for row in rows]


def _impl_rows(cand_cost=0.5):
    return _modelled(
        runs("task-a", "workflow", same(3, cost_usd=1.0))
        + runs("task-a", "candidate_workflow", same(3, cost_usd=cand_cost))
    )


def test_regate_judges_every_candidate_arm_present_in_pairing_order() -> None:
    """Implementation and review candidates both get a decision, review by the review gate."""
    rows = _impl_rows() + _modelled(
        review_runs("case-1", "review") + review_runs("case-1", "candidate_review", weighted_f1=0.9)
    )

    result = regate(rows, now=NOW, policy=REFERENCE)

    assert [d.candidate_arm for d in result.decisions] == ["candidate_workflow", "candidate_review"]
    assert [d.gate for d in result.decisions] == [GateKind.IMPLEMENTATION, GateKind.REVIEW]
    assert all(d.kind is DecisionKind.PROMOTE for d in result.decisions)
    assert result.evidence is not None
    assert result.evidence.generated_at == NOW
    assert result.model == "m-1"


def test_regate_without_candidates_has_no_evidence() -> None:
    """Only baseline rows: aggregates, no decisions, no evidence."""
    result = regate(runs("task-a", "baseline", same(3)), now=NOW)

    assert result.decisions == ()
    assert result.evidence is None
    assert ("task-a", "baseline") in result.table


def test_regate_uses_the_policy_and_custom_pairs() -> None:
    """The policy's metric and a custom pairing reach the gate."""
    rows = _modelled(runs("t", "mine", same(3, num_turns=10)) + runs("t", "mine_v2", same(3, num_turns=8)))

    result = regate(
        rows,
        now=NOW,
        pairs={"mine_v2": "mine"},
        policy=PromotionPolicy(decision_policy=DecisionPolicy.REFERENCE, metric="num_turns"),
    )

    (decision,) = result.decisions
    assert (decision.metric, decision.kind, decision.median_improvement_pct) == (
        "num_turns",
        DecisionKind.PROMOTE,
        20.0,
    )


def test_rows_that_disagree_on_the_model_cannot_promote() -> None:
    """Two benchmark models in the paired rows: no model, and the reason says why."""
    rows = _modelled(runs("task-a", "workflow", same(3, cost_usd=1.0)), "m-1")
    rows += _modelled(runs("task-a", "candidate_workflow", same(3, cost_usd=0.5)), "m-2")

    (decision,) = regate(rows, now=NOW, policy=REFERENCE).decisions

    assert decision.kind is DecisionKind.INSUFFICIENT_EVIDENCE
    assert decision.reasons[0] == "rows disagree on the benchmark model (m-1, m-2)"
    assert resolve_model(rows) == (None, "rows disagree on the benchmark model (m-1, m-2)")


def test_the_model_falls_back_to_the_rows_model_field() -> None:
    """Rows with only ``model`` (no benchmark_model) still name the model."""
    rows = [attrs.evolve(row, extra={"model": "m-9"}) for row in runs("t", "a", same(2))]

    assert resolve_model(rows) == ("m-9", None)
    assert resolve_model(runs("t", "a", same(2))) == (None, None)


def test_a_cancelled_row_marks_the_run_aborted_and_nothing_promotes() -> None:
    """A cancelled cell means the sweep did not finish: aborted evidence, insufficient decisions."""
    rows = _impl_rows() + [record("task-z", "baseline", 0, error_kind="cancelled", resolved=False)]

    result = regate(rows, now=NOW, policy=REFERENCE)

    assert result.evidence is not None
    assert result.evidence.run_status is RunStatus.ABORTED
    assert result.decisions[0].kind is DecisionKind.INSUFFICIENT_EVIDENCE
    assert (
        regate(rows, now=NOW, run_status=RunStatus.COMPLETE, policy=REFERENCE).decisions[0].kind
        is DecisionKind.PROMOTE
    )


def test_bindings_are_derived_from_what_the_rows_attest() -> None:
    """Task digests the rows agree on are recorded; disagreeing ones are left out."""
    rows = [
        attrs.evolve(r, extra={**r.extra, "oracle_digest": "o" * 64, "effort": "high"}) for r in _impl_rows()
    ]
    rows[0] = attrs.evolve(rows[0], extra={**rows[0].extra, "task_base_sha": "x"})
    rows[1] = attrs.evolve(rows[1], extra={**rows[1].extra, "task_base_sha": "y"})

    evidence = regate(rows, now=NOW, policy=REFERENCE).evidence

    assert evidence is not None
    assert evidence.bindings.selected_tasks == ({"id": "task-a", "oracle_digest": "o" * 64},)
    assert evidence.bindings.effort == "high"
    assert evidence.bindings.benchmark_model == "m-1"


def test_explicit_bindings_win_and_supply_the_model() -> None:
    """Bindings passed in are used as they are, model included."""
    rows = runs("task-a", "workflow", same(3, cost_usd=1.0)) + runs(
        "task-a", "candidate_workflow", same(3, cost_usd=0.5)
    )

    result = regate(rows, now=NOW, bindings=EvidenceBindings(benchmark_model="pinned"), policy=REFERENCE)

    assert result.decisions[0].kind is DecisionKind.PROMOTE
    assert result.evidence is not None
    assert result.evidence.bindings.benchmark_model == "pinned"


def test_evidence_above_the_size_apply_reads_is_refused_by_its_size_not_misread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file cut at the cap would have been reported as broken JSON: it is refused as too large."""
    path = tmp_path / "promotion.json"
    path.write_text('{"schema": 6, "decisions": []}', encoding="utf-8")
    monkeypatch.setattr(apply, "MAX_EVIDENCE_BYTES", path.stat().st_size)
    assert apply._read_evidence(str(path))[1] == {"schema": 6, "decisions": []}
    monkeypatch.setattr(apply, "MAX_EVIDENCE_BYTES", path.stat().st_size - 1)
    with pytest.raises(InputError) as refused:
        apply._read_evidence(str(path))
    assert "larger than" in refused.value.reason
    assert refused.value.source == str(path)
