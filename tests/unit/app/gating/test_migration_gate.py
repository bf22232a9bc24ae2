"""Decisions across agents and models: a declared Claude→Codex migration is decided, else refused.

The rows are a Claude Code incumbent on ``claude-sonnet-4-5`` and a Codex candidate on ``gpt-5.5``,
each with a cost (every agent's cost is its wire usage at its model's prices); the gate decides on
``cost_usd`` as a team choosing a model on cost per resolved task would.
"""

from __future__ import annotations

import datetime as dt

import attrs
import pytest

from tests.unit.promotion.promotion_fixtures import runs, same
from wfbench.app.gating.gating import regate
from wfbench.domain.promotion.gates import DecisionKind
from wfbench.domain.promotion.migration import PairRuntimes, declared, pair_model
from wfbench.domain.promotion.policy import DecisionPolicy, PromotionPolicy
from wfbench.domain.results.rows import Row

NOW = dt.datetime(2026, 12, 6, tzinfo=dt.UTC)
COST = PromotionPolicy(metric="cost_usd", decision_policy=DecisionPolicy.REFERENCE)
PAIRS = {"codex_direct": "workflow_direct"}


def _rows(candidate_cost: float, *, migrates: str | None, candidate_resolves: bool = True) -> list[Row]:
    incumbent = runs("t", "workflow_direct", same(3, cost_usd=0.40))
    candidate = runs("t", "codex_direct", same(3, cost_usd=candidate_cost, resolved=candidate_resolves))
    claude = {"agent": "claude", "benchmark_model": "claude-sonnet-4-5"}
    codex = {"agent": "codex", "benchmark_model": "gpt-5.5", **({"migrates": migrates} if migrates else {})}
    return [attrs.evolve(r, extra={**r.extra, **claude}) for r in incumbent] + [
        attrs.evolve(r, extra={**r.extra, **codex}) for r in candidate
    ]


def _decision(rows: list[Row]):  # type: ignore[no-untyped-def]
    (decision,) = regate(rows, now=NOW, policy=COST, pairs=PAIRS).decisions
    return decision


def test_a_declared_claude_to_codex_migration_that_costs_less_is_promoted() -> None:
    decision = _decision(_rows(0.10, migrates="agent,model"))

    assert decision.kind is DecisionKind.PROMOTE
    assert decision.model == "claude-sonnet-4-5"  # judged as the incumbent's benchmark
    assert "declared agent migration: claude → codex (decided on the policy's metric)" in decision.reasons
    assert "declared model migration: claude-sonnet-4-5 → gpt-5.5 (decided on the policy's metric)" in (
        decision.reasons
    )


def test_a_declared_migration_that_costs_more_keeps_the_incumbent() -> None:
    assert _decision(_rows(0.90, migrates="agent,model")).kind is DecisionKind.KEEP_INCUMBENT


@pytest.mark.parametrize(("migrates", "missing"), [(None, "agent"), ("agent", "model"), ("model", "agent")])
def test_an_undeclared_difference_is_refused_naming_it(migrates: str | None, missing: str) -> None:
    decision = _decision(_rows(0.10, migrates=migrates))

    assert decision.kind is DecisionKind.INSUFFICIENT_EVIDENCE
    assert any(
        f"undeclared {missing} change" in reason and f"migrates: [{missing}]" in reason
        for reason in decision.reasons
    )


def test_a_pair_on_one_runtime_needs_no_declaration_and_gets_no_migration_note() -> None:
    model, notes = pair_model("c", "i", PairRuntimes(("m",), ("m",), ("claude",), ("claude",)))
    assert (model, notes) == ("m", ())


def test_an_arm_whose_rows_name_two_models_cannot_be_decided() -> None:
    model, notes = pair_model("c", "i", PairRuntimes(("m",), ("m", "n"), migrates=frozenset({"model"})))
    assert model is None
    assert notes == ("rows disagree on the benchmark model (m, n)",)


def test_a_declaration_is_read_from_the_rows_field_and_unknown_words_are_ignored() -> None:
    assert declared("agent,model") == frozenset({"agent", "model"})
    assert declared(" model ,prompt") == frozenset({"model"})
    assert declared(None) == frozenset()


@pytest.mark.parametrize(
    ("migrates", "expected"), [("agent,model", "promote"), (None, "insufficient_evidence")]
)
def test_the_sweeps_own_promotion_step_honours_the_declaration(migrates: str | None, expected: str) -> None:
    """The run's finish step (promotion.json) applies the same rule as a re-gate."""
    from wfbench.adapters.store.memory_sweep import MemorySweepDirectory
    from wfbench.app.corpus.arms import AgentChoice, Arm, TaskKind
    from wfbench.app.sweep.finish import FinishInput, promotion_evidence

    incumbent = Arm("workflow_direct", TaskKind.IMPLEMENTATION, ())
    candidate = Arm(
        "codex_direct",
        TaskKind.IMPLEMENTATION,
        (),
        incumbent="workflow_direct",
        agent=AgentChoice("codex"),
        model="gpt-5.5",
        migrates=("agent", "model") if migrates else (),
    )
    data = FinishInput(
        corpus=None,
        tasks=(),
        arms=[incumbent, candidate],
        rows=_rows(0.10, migrates=migrates),
        out_dir="unused",
        directory=MemorySweepDirectory(),
        model="claude-sonnet-4-5",
        tripped=False,
        cancelled=False,
        now=NOW,
        policy=COST,
    )
    (decision,) = promotion_evidence(data)["decisions"]
    assert decision["decision"] == expected
