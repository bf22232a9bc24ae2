"""The evolution loop's pure rules: generation outcomes, stop rules, records, the proposer's digest."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from wfbench.domain.errors import InputError
from wfbench.domain.evolution.digest import HIDDEN_DETAIL, evidence_digest
from wfbench.domain.evolution.record import (
    GenerationOutcome,
    GenerationRecord,
    Spend,
    generation_decision,
    stop_reason,
)
from wfbench.domain.results.rows import ErrorKind, Row

P, K, N = "promote", "keep_incumbent", "insufficient_evidence"


@pytest.mark.parametrize(
    ("decisions", "outcome"),
    [
        ([P], GenerationOutcome.PROMOTE),
        ([P, P], GenerationOutcome.PROMOTE),
        ([P, K], GenerationOutcome.KEEP_INCUMBENT),
        ([P, N], GenerationOutcome.INSUFFICIENT_EVIDENCE),
        ([K, N], GenerationOutcome.KEEP_INCUMBENT),
        ([N], GenerationOutcome.INSUFFICIENT_EVIDENCE),
        ([], GenerationOutcome.INSUFFICIENT_EVIDENCE),
    ],
)
def test_a_generation_promotes_only_when_every_candidate_arm_does(
    decisions: list[str], outcome: GenerationOutcome
) -> None:
    """All promote → promote; a keep is a definite no; otherwise (or nothing decided) insufficient."""
    assert generation_decision(decisions) is outcome


def _record(
    generation: int, outcome: GenerationOutcome, total: float | None = 1.0, **kw: Any
) -> GenerationRecord:
    spend = Spend(0.0, total) if total is not None else Spend(None, 1.0)
    return GenerationRecord(
        generation=generation,
        outcome=outcome,
        started_at="2026-01-01T00:00:00+00:00",
        finished_at="2026-01-01T00:10:00+00:00",
        sweep_dir=f"gen-{generation}",
        spend=spend,
        incumbent_digest=None,
        **kw,
    )


B, PR, KE, IN, NO = (
    GenerationOutcome.BASELINE,
    GenerationOutcome.PROMOTE,
    GenerationOutcome.KEEP_INCUMBENT,
    GenerationOutcome.INSUFFICIENT_EVIDENCE,
    GenerationOutcome.NO_PROPOSAL,
)


def test_the_loop_stops_after_two_generations_in_a_row_without_evidence() -> None:
    """insufficient, insufficient → stop; a proposal that failed counts as no evidence too."""
    assert stop_reason([_record(0, B), _record(1, IN)], max_generations=None, max_cost_usd=None) is None
    assert "2 generations in a row" in str(
        stop_reason([_record(0, B), _record(1, IN), _record(2, NO)], max_generations=None, max_cost_usd=None)
    )
    assert (
        stop_reason([_record(1, IN), _record(2, KE), _record(3, IN)], max_generations=None, max_cost_usd=None)
        is None
    )


def test_the_generation_budget_counts_proposing_generations_only() -> None:
    """--max-generations 2: the baseline does not count; two proposals reach it."""
    history = [_record(0, B), _record(1, PR)]

    assert stop_reason(history, max_generations=2, max_cost_usd=None) is None
    assert (
        stop_reason([*history, _record(2, KE)], max_generations=2, max_cost_usd=None)
        == "reached --max-generations 2"
    )


def test_the_cost_budget_stops_once_spent_and_fails_closed_on_unknown_spend() -> None:
    """--max-cost: spent ≥ budget stops; a generation with unknown spend stops (cannot be enforced)."""
    history = [_record(0, B, 1.5), _record(1, KE, 1.5)]

    assert stop_reason(history, max_generations=None, max_cost_usd=3.1) is None
    assert "spent $3.0000 of the --max-cost $3.0000" in str(
        stop_reason(history, max_generations=None, max_cost_usd=3.0)
    )
    unknown = [*history, _record(2, KE, None)]
    assert "cannot be enforced" in str(stop_reason(unknown, max_generations=None, max_cost_usd=100.0))
    assert stop_reason(unknown, max_generations=None, max_cost_usd=None) is None


def test_a_spend_with_an_unknown_part_is_unknown() -> None:
    """Unknown is never zero: a proposer without a cost, or an unpriced paid cell, makes the total unknown."""
    assert Spend(0.25, 1.0).total_usd == 1.25
    assert Spend(None, 1.0).total_usd is None
    assert Spend(0.25, None).total_usd is None
    assert Spend(0.25, 1.0, unmeasured_cells=1).total_usd is None


@pytest.mark.parametrize("source", ["wire", "agent", None])
def test_where_the_proposers_cost_came_from_reads_back(source: str | None) -> None:
    """The proposer's cost is the wire's when the endpoint meters it; the record says which."""
    record = attrs.evolve(_record(2, KE), spend=Spend(0.5, 1.0, proposer_source=source))
    raw = record.to_mapping()

    assert raw["spend"]["proposer_source"] == source
    assert GenerationRecord.from_mapping(raw) == record


def test_a_record_reads_back_what_it_wrote() -> None:
    """to_mapping → from_mapping; a proposing generation is from the model proposer, the baseline is not."""
    record = _record(
        3,
        PR,
        2.0,
        candidate_overlay="gen-003/overlay",
        candidate_overlay_digest="a" * 64,
        proposer_model="m",
        required_candidate_arms=("candidate_workflow",),
        decisions=({"candidate_arm": "candidate_workflow", "decision": P},),
        reasons=("candidate_workflow: promote",),
        promotion="gen-003/sweep/promotion.json",
        applied={"applied": True},
    )
    raw = record.to_mapping()

    assert GenerationRecord.from_mapping(raw) == record
    assert raw["candidate_origin"] == "model-proposer"
    assert raw["decision"] == "promote"
    assert _record(0, B).to_mapping()["candidate_origin"] is None
    assert _record(0, B).to_mapping()["decision"] is None
    assert _record(1, NO).to_mapping()["decision"] is None


@pytest.mark.parametrize(
    "mutate",
    [
        lambda raw: raw.update(schema=2),
        lambda raw: raw.update(generation=-1),
        lambda raw: raw.update(generation=True),
        lambda raw: raw.update(outcome="maybe"),
        lambda raw: raw.update(spend=[]),
        lambda raw: raw["spend"].update(sweep_usd=-1),
        lambda raw: raw["spend"].update(unmeasured_cells="1"),
        lambda raw: raw.update(sweep_dir=3),
        lambda raw: raw.update(started_at=None),
        lambda raw: raw.update(required_candidate_arms="candidate_workflow"),
        lambda raw: raw.update(decisions=["promote"]),
        lambda raw: raw["spend"].update(proposer_source="guessed"),
        lambda raw: raw["spend"].update(proposer_source=["wire"]),
    ],
)
def test_a_damaged_record_is_refused(mutate: Any) -> None:
    """The loop continues only from a history it can read whole."""
    raw = _record(1, PR).to_mapping()
    mutate(raw)

    with pytest.raises(InputError):
        GenerationRecord.from_mapping(raw, line=2)


# --------------------------------------------------------------------------- the digest

ORACLE_SECRET = "test_hidden_oracle_case_7"
LABEL_SECRET = "hidden-label-id-42"
API_KEY = "sk-ant-api03-abcdefghijklmnop"


def _row(arm: str, run: int, **fields: Any) -> Row:
    values: dict[str, Any] = {
        "ok": True,
        "resolved": True,
        "cost_usd": 0.5,
        "num_turns": 6,
        "duration_s": 12.0,
    }
    values.update(fields)
    kind = values.pop("error_kind", None)
    review = values.pop("review", {})
    extra = values.pop("extra", {})
    return Row(
        task="t1",
        arm=arm,
        run=run,
        error_kind=None if kind is None else ErrorKind(kind),
        review=review,
        task_class="bug-fix",
        extra=extra,
        **values,
    )


def _digest(rows: list[Row]) -> str:
    return evidence_digest(
        rows,
        prompts={"t1": "Fix the median."},
        decisions=[
            {
                "candidate_arm": "candidate_workflow",
                "incumbent_arm": "workflow",
                "decision": K,
                "reasons": [f"t1: resolution regressed ({API_KEY})"],
            }
        ],
        secrets=[API_KEY],
    )


def test_the_digest_shows_outcomes_costs_failures_and_authored_tests() -> None:
    """Per task: prompt, each arm's resolved share, kinds, median cost/turns/wall; failing runs; decisions."""
    rows = [
        _row("workflow", 0),
        _row(
            "workflow",
            1,
            resolved=False,
            error_kind="verify-failed",
            extra={"error_detail": "the tests failed", "authored_test_output": "line 1\nFAILED test_mean\n"},
        ),
    ]

    digest = _digest(rows)

    assert "> Fix the median." in digest
    assert "- workflow: resolved 1/2 (verify-failed×1), median cost $0.5000, turns 6, wall 12.0 s" in digest
    assert "- workflow run 1: verify-failed — the tests failed" in digest
    assert "      FAILED test_mean" in digest
    assert "candidate_workflow vs workflow: keep_incumbent" in digest


def test_the_digest_never_holds_hidden_oracle_output_or_labels() -> None:
    """Oracle output, oracle evidence, review artifacts and label matching never reach it; an
    oracle failure's detail is replaced; the review score is shown, not what it was scored against."""
    rows = [
        _row(
            "workflow",
            0,
            resolved=False,
            error_kind="oracle-failed",
            extra={
                "error_detail": f"hidden oracle failed: {ORACLE_SECRET} failed",
                "oracle_output": ORACLE_SECRET,
                "oracle_evidence": ORACLE_SECRET,
            },
        ),
        _row(
            "review",
            0,
            review={"review_weighted_f1": 0.75, "review_verdict_correct": True},
            extra={
                "label_matching": [{"label": LABEL_SECRET}],
                "review_artifact": LABEL_SECRET,
                "review_score": {"labels": LABEL_SECRET},
            },
        ),
    ]

    digest = _digest(rows)

    assert ORACLE_SECRET not in digest
    assert LABEL_SECRET not in digest
    assert f"- workflow run 0: oracle-failed — {HIDDEN_DETAIL}" in digest
    assert "review weighted F1 0.75" in digest


def test_the_digest_is_redacted() -> None:
    """A secret in a detail, a test output or a reason is masked."""
    rows = [
        _row(
            "workflow",
            0,
            resolved=False,
            error_kind="session-error",
            extra={"error_detail": f"401 with key {API_KEY}", "authored_test_output": f"env {API_KEY}"},
        )
    ]

    digest = _digest(rows)

    assert API_KEY not in digest
    assert "[REDACTED]" in digest
