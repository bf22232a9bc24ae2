"""What is left of ``wfbench evolve --max-cost`` for the next generation and its sweep."""

from __future__ import annotations

from wfbench.app.evolve.evolution import budget_left, sweep_budget
from wfbench.domain.evolution.record import GenerationOutcome, GenerationRecord, Spend


def _record(generation: int, spend: Spend) -> GenerationRecord:
    return GenerationRecord(
        generation=generation,
        outcome=GenerationOutcome.BASELINE if generation == 0 else GenerationOutcome.KEEP_INCUMBENT,
        started_at="2026-01-01T00:00:00+00:00",
        finished_at="2026-01-01T00:10:00+00:00",
        sweep_dir=f"gen-{generation}",
        spend=spend,
        incumbent_digest=None,
    )


def test_without_a_budget_nothing_is_passed_on() -> None:
    assert budget_left(None, [_record(0, Spend(0.0, 3.0))]) is None
    assert sweep_budget(None, 1.0) is None
    assert sweep_budget(None, None) is None


def test_the_budget_left_is_the_budget_minus_every_generations_total() -> None:
    history = [_record(0, Spend(0.0, 1.25)), _record(1, Spend(0.5, 2.0))]

    assert budget_left(10.0, history) == 6.25
    assert budget_left(10.0, []) == 10.0
    assert budget_left(3.0, history) == 0.0  # overspent: never negative


def test_the_sweep_gets_what_the_proposer_left() -> None:
    assert sweep_budget(6.25, 0.25) == 6.0
    assert sweep_budget(6.25, 0.0) == 6.25
    assert sweep_budget(0.2, 0.25) == 0.0


def test_a_proposer_of_unknown_cost_leaves_nothing_to_spend() -> None:
    """Unknown is never zero: a budget that cannot be checked is treated as spent."""
    assert sweep_budget(6.25, None) == 0.0
