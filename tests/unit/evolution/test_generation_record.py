"""``evolution.jsonl``'s records, field by field: what each refusal says, what reads back, the stop rules.

The loop continues from a history only when it can read every line whole; a damaged line is one
message naming the line and the field (exit 2). These tests pin the exact messages, the defaults of
the fields an older line may omit, the exact JSON a record writes, and the stop rules' boundaries.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from wfbench.domain.errors import InputError
from wfbench.domain.evolution.record import (
    EVOLUTION_SCHEMA,
    GenerationOutcome,
    GenerationRecord,
    Spend,
    generation_decision,
    stop_reason,
)

B, PR, KE, IN, NO = (
    GenerationOutcome.BASELINE,
    GenerationOutcome.PROMOTE,
    GenerationOutcome.KEEP_INCUMBENT,
    GenerationOutcome.INSUFFICIENT_EVIDENCE,
    GenerationOutcome.NO_PROPOSAL,
)


def _full() -> GenerationRecord:
    return GenerationRecord(
        generation=3,
        outcome=PR,
        started_at="2026-01-01T00:00:00+00:00",
        finished_at="2026-01-01T00:10:00+00:00",
        sweep_dir="gen-003/sweep",
        spend=Spend(0.25, 1.5, unmeasured_cells=0, proposer_source="wire"),
        incumbent_digest="b" * 64,
        candidate_overlay="gen-003/overlay",
        candidate_overlay_digest="a" * 64,
        proposer_model="claude-x",
        required_candidate_arms=("candidate_workflow", "candidate_review"),
        decisions=({"candidate_arm": "candidate_workflow", "decision": "promote", "reasons": []},),
        reasons=("candidate_workflow: promote",),
        promotion="gen-003/sweep/promotion.json",
        applied={"applied": True, "branch": "wfbench/gen-3"},
    )


def test_a_record_writes_every_field_of_its_line() -> None:
    """The exact JSON object of one line: decision, origin, spend with its total, every path."""
    assert _full().to_mapping() == {
        "schema": 1,
        "generation": 3,
        "outcome": "promote",
        "decision": "promote",
        "reasons": ["candidate_workflow: promote"],
        "decisions": [{"candidate_arm": "candidate_workflow", "decision": "promote", "reasons": []}],
        "candidate_origin": "model-proposer",
        "proposer_model": "claude-x",
        "candidate_overlay": "gen-003/overlay",
        "candidate_overlay_digest": "a" * 64,
        "required_candidate_arms": ["candidate_workflow", "candidate_review"],
        "incumbent_digest": "b" * 64,
        "spend": {
            "proposer_usd": 0.25,
            "sweep_usd": 1.5,
            "unmeasured_cells": 0,
            "total_usd": 1.75,
            "proposer_source": "wire",
        },
        "sweep_dir": "gen-003/sweep",
        "promotion": "gen-003/sweep/promotion.json",
        "applied": {"applied": True, "branch": "wfbench/gen-3"},
        "started_at": "2026-01-01T00:00:00+00:00",
        "finished_at": "2026-01-01T00:10:00+00:00",
    }
    assert EVOLUTION_SCHEMA == 1


def test_every_field_of_a_full_record_reads_back() -> None:
    """to_mapping → from_mapping keeps every field, including the optional ones and ``applied``."""
    record = _full()

    assert GenerationRecord.from_mapping(record.to_mapping(), line=4) == record


@pytest.mark.parametrize(
    ("outcome", "decision", "origin"),
    [
        (B, None, None),
        (NO, None, "model-proposer"),
        (PR, "promote", "model-proposer"),
        (KE, "keep_incumbent", "model-proposer"),
        (IN, "insufficient_evidence", "model-proposer"),
    ],
)
def test_only_a_decided_generation_has_a_decision_and_only_the_baseline_has_no_origin(
    outcome: GenerationOutcome, decision: str | None, origin: str | None
) -> None:
    """`decision` is the gate's word (none for the baseline or a failed proposal)."""
    raw = GenerationRecord(0, outcome, "s", "f", None, Spend(None, None), None).to_mapping()

    assert (raw["outcome"], raw["decision"], raw["candidate_origin"]) == (outcome.value, decision, origin)
    assert raw["applied"] is None


def test_a_minimal_line_reads_with_the_defaults_of_the_fields_it_omits() -> None:
    """Absent lists are empty, absent unmeasured cells are 0, absent optional texts are unknown."""
    raw = {
        "schema": 1,
        "generation": 0,
        "outcome": "baseline",
        "spend": {"proposer_usd": None, "sweep_usd": 0},
        "started_at": "s",
        "finished_at": "f",
    }

    record = GenerationRecord.from_mapping(raw)

    assert record == GenerationRecord(0, B, "s", "f", None, Spend(None, 0.0), None)
    assert record.spend.unmeasured_cells == 0
    assert record.spend.sweep_usd == 0.0
    assert isinstance(record.spend.sweep_usd, float)
    assert record.decisions == ()
    assert record.reasons == ()
    assert record.required_candidate_arms == ()


def test_money_figures_read_as_floats_and_zero_is_a_known_figure() -> None:
    """An integer dollar figure reads as a float; 0 is known (not unknown)."""
    raw = _full().to_mapping()
    raw["spend"].update(proposer_usd=0, sweep_usd=2, unmeasured_cells=3)

    spend = GenerationRecord.from_mapping(raw).spend

    assert spend == Spend(0.0, 2.0, unmeasured_cells=3, proposer_source="wire")
    assert isinstance(spend.proposer_usd, float)
    assert isinstance(spend.sweep_usd, float)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda raw: raw.update(schema=2), "line 7: is not an evolution record (schema 1)"),
        (lambda raw: raw.pop("schema"), "line 7: is not an evolution record (schema 1)"),
        (lambda raw: raw.update(generation=-1), "line 7: generation: must be a non-negative integer"),
        (lambda raw: raw.update(generation=True), "line 7: generation: must be a non-negative integer"),
        (lambda raw: raw.update(generation=1.0), "line 7: generation: must be a non-negative integer"),
        (lambda raw: raw.pop("generation"), "line 7: generation: must be a non-negative integer"),
        (lambda raw: raw.update(outcome="maybe"), "line 7: outcome: is not a known outcome"),
        (lambda raw: raw.pop("outcome"), "line 7: outcome: is not a known outcome"),
        (lambda raw: raw.update(spend=[]), "line 7: spend: must be an object"),
        (lambda raw: raw.pop("spend"), "line 7: spend: must be an object"),
        (
            lambda raw: raw["spend"].update(proposer_usd=-0.01),
            "line 7: spend.proposer_usd: must be a non-negative number or null",
        ),
        (
            lambda raw: raw["spend"].update(proposer_usd=math.inf),
            "line 7: spend.proposer_usd: must be a non-negative number or null",
        ),
        (
            lambda raw: raw["spend"].update(proposer_usd=math.nan),
            "line 7: spend.proposer_usd: must be a non-negative number or null",
        ),
        (
            lambda raw: raw["spend"].update(proposer_usd="0.25"),
            "line 7: spend.proposer_usd: must be a non-negative number or null",
        ),
        (
            lambda raw: raw["spend"].update(sweep_usd=True),
            "line 7: spend.sweep_usd: must be a non-negative number or null",
        ),
        (
            lambda raw: raw["spend"].update(sweep_usd=-1),
            "line 7: spend.sweep_usd: must be a non-negative number or null",
        ),
        (
            lambda raw: raw["spend"].update(unmeasured_cells=-1),
            "line 7: spend.unmeasured_cells: must be a non-negative integer",
        ),
        (
            lambda raw: raw["spend"].update(unmeasured_cells=False),
            "line 7: spend.unmeasured_cells: must be a non-negative integer",
        ),
        (
            lambda raw: raw["spend"].update(unmeasured_cells=None),
            "line 7: spend.unmeasured_cells: must be a non-negative integer",
        ),
        (
            lambda raw: raw["spend"].update(proposer_source="guessed"),
            "line 7: spend.proposer_source: must be wire, agent or null",
        ),
        (lambda raw: raw.update(started_at=None), "line 7: started_at: must be a string"),
        (lambda raw: raw.pop("finished_at"), "line 7: finished_at: must be a string"),
        (lambda raw: raw.update(finished_at=5), "line 7: finished_at: must be a string"),
        (lambda raw: raw.update(sweep_dir=3), "line 7: sweep_dir: must be a string or null"),
        (lambda raw: raw.update(incumbent_digest=[]), "line 7: incumbent_digest: must be a string or null"),
        (lambda raw: raw.update(candidate_overlay=1), "line 7: candidate_overlay: must be a string or null"),
        (
            lambda raw: raw.update(candidate_overlay_digest=False),
            "line 7: candidate_overlay_digest: must be a string or null",
        ),
        (lambda raw: raw.update(proposer_model={}), "line 7: proposer_model: must be a string or null"),
        (lambda raw: raw.update(promotion=2.0), "line 7: promotion: must be a string or null"),
        (
            lambda raw: raw.update(required_candidate_arms="candidate_workflow"),
            "line 7: required_candidate_arms: must be a list of strings",
        ),
        (
            lambda raw: raw.update(required_candidate_arms=["a", None]),
            "line 7: required_candidate_arms: must be a list of strings",
        ),
        (lambda raw: raw.update(decisions=["promote"]), "line 7: decisions: must be a list of objects"),
        (lambda raw: raw.update(decisions={}), "line 7: decisions: must be a list of objects"),
        (lambda raw: raw.update(reasons=[1]), "line 7: reasons: must be a list of strings"),
        (lambda raw: raw.update(reasons=None), "line 7: reasons: must be a list of strings"),
        (lambda raw: raw.update(applied=[]), "line 7: applied: must be an object or null"),
        (lambda raw: raw.update(applied="yes"), "line 7: applied: must be an object or null"),
    ],
)
def test_each_refusal_names_the_line_and_the_field(mutate: Any, message: str) -> None:
    """One message, naming where (the line) and what (the field) is wrong."""
    raw = _full().to_mapping()
    mutate(raw)

    with pytest.raises(InputError) as caught:
        GenerationRecord.from_mapping(raw, line=7)

    assert caught.value.message == message


def test_a_line_that_is_not_an_object_is_refused() -> None:
    """A JSON array or a string on a line is not a record."""
    for raw in ([], "record", None):
        with pytest.raises(InputError, match=r"^line 1: is not an evolution record \(schema 1\)$"):
            GenerationRecord.from_mapping(raw, line=1)


def test_without_a_line_number_the_refusal_names_only_the_field() -> None:
    """``line=0`` (a record read on its own) leaves the locator out."""
    raw = _full().to_mapping()
    raw["spend"]["sweep_usd"] = -1

    with pytest.raises(InputError) as caught:
        GenerationRecord.from_mapping(raw)

    assert caught.value.message == "spend.sweep_usd: must be a non-negative number or null"
    assert caught.value.locator == ""
    assert caught.value.field == "spend.sweep_usd"


@pytest.mark.parametrize(("source"), ["wire", "agent", None])
def test_each_known_proposer_source_reads_back(source: str | None) -> None:
    """wire, agent and unknown are the three sources."""
    raw = _full().to_mapping()
    raw["spend"]["proposer_source"] = source

    assert GenerationRecord.from_mapping(raw).spend.proposer_source == source


# --------------------------------------------------------------------------- spend


def test_the_total_is_rounded_to_a_millionth_of_a_dollar() -> None:
    """Float sums do not leak into the record: 0.1 + 0.2 is 0.3."""
    assert Spend(0.1, 0.2).total_usd == 0.3
    assert Spend(0.0000004, 0.0).total_usd == 0.0
    assert Spend(0.0000006, 0.0).total_usd == 0.000001
    assert Spend(0.0, 0.0).total_usd == 0.0


def test_an_unmeasured_paid_cell_makes_the_written_total_unknown() -> None:
    """The line says `total_usd: null` when a paid cell had no cost, whatever the known parts."""
    assert Spend(0.5, 1.0, unmeasured_cells=2).to_mapping() == {
        "proposer_usd": 0.5,
        "sweep_usd": 1.0,
        "unmeasured_cells": 2,
        "total_usd": None,
        "proposer_source": None,
    }


# --------------------------------------------------------------------------- the decision and the stop rules


@pytest.mark.parametrize(
    ("decisions", "outcome"),
    [
        (["keep_incumbent"], KE),
        (["insufficient_evidence", "keep_incumbent"], KE),
        (["promote", "promote", "insufficient_evidence"], IN),
        (["baseline"], IN),
        (["no_proposal", "promote"], IN),
    ],
)
def test_a_keep_is_definite_and_anything_else_but_all_promote_is_insufficient(
    decisions: list[str], outcome: GenerationOutcome
) -> None:
    """A keep anywhere is a definite no even beside doubt; words that are not decisions never promote."""
    assert generation_decision(decisions) is outcome


def _gen(generation: int, outcome: GenerationOutcome, total: float | None = 1.0) -> GenerationRecord:
    spend = Spend(0.0, total)
    return GenerationRecord(generation, outcome, "s", "f", None, spend, None)


def test_the_generation_budget_is_reached_exactly_at_its_count() -> None:
    """One proposal below the budget goes on; at the budget it stops (the baseline never counts)."""
    assert stop_reason([_gen(0, B)], max_generations=1, max_cost_usd=None) is None
    assert stop_reason([_gen(0, B), _gen(1, KE)], max_generations=1, max_cost_usd=None) == (
        "reached --max-generations 1"
    )
    assert stop_reason([_gen(0, B), _gen(1, B)], max_generations=1, max_cost_usd=None) is None
    assert stop_reason([], max_generations=0, max_cost_usd=None) == "reached --max-generations 0"


def test_the_cost_budget_stops_at_exactly_the_budget_and_says_what_was_spent() -> None:
    """spent ≥ budget stops; a cent below goes on; the message gives both to four decimals."""
    history = [_gen(0, B, 0.5), _gen(1, KE, 0.75)]

    assert stop_reason(history, max_generations=None, max_cost_usd=1.26) is None
    assert stop_reason(history, max_generations=None, max_cost_usd=1.25) == (
        "spent $1.2500 of the --max-cost $1.2500 budget"
    )
    assert stop_reason(history, max_generations=None, max_cost_usd=1.0) == (
        "spent $1.2500 of the --max-cost $1.0000 budget"
    )
    assert (
        stop_reason([], max_generations=None, max_cost_usd=0.0)
        == "spent $0.0000 of the --max-cost $0.0000 budget"
    )


def test_unknown_spend_anywhere_in_the_history_stops_a_budgeted_loop() -> None:
    """Even the first generation's unknown spend: the budget cannot be enforced."""
    history = [_gen(0, B, None), _gen(1, KE, 0.1)]

    assert stop_reason(history, max_generations=None, max_cost_usd=100.0) == (
        "a generation's spend is unknown, so --max-cost cannot be enforced"
    )
    assert stop_reason(history, max_generations=5, max_cost_usd=None) is None


def test_the_generation_budget_is_checked_before_the_cost_budget() -> None:
    """Both reached: the message names the generations."""
    history = [_gen(0, B, None), _gen(1, KE, None)]

    assert stop_reason(history, max_generations=1, max_cost_usd=1.0) == "reached --max-generations 1"


@pytest.mark.parametrize(
    ("outcomes", "stops"),
    [
        ([B, IN, IN], True),
        ([B, NO, NO], True),
        ([B, NO, IN], True),
        ([B, IN, PR], False),
        ([B, KE, IN], False),
        ([B, IN, KE, IN], False),
        ([B, IN], False),
        ([B, B, IN], False),
        ([IN, KE, IN, NO], True),
    ],
)
def test_two_proposing_generations_in_a_row_without_evidence_stop_the_loop(
    outcomes: list[GenerationOutcome], stops: bool
) -> None:
    """The last two proposing generations both without evidence (insufficient or no proposal)."""
    history = [_gen(i, outcome) for i, outcome in enumerate(outcomes)]
    reason = stop_reason(history, max_generations=None, max_cost_usd=None)

    assert reason == ("2 generations in a row ended without enough evidence" if stops else None)
