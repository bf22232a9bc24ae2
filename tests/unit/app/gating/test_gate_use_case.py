"""The gate use case (``app.gating.sweep_facts.gate_sweep``) over the in-package fakes.

The sweep directory is a ``MemorySweepDirectory`` and time a ``FakeClock``: no disk, no CLI.
"""

from __future__ import annotations

import datetime as dt
import json

import attrs

from tests.unit.promotion.promotion_fixtures import runs, same
from wfbench.adapters.store.clock import FakeClock
from wfbench.adapters.store.memory_sweep import MemorySweepDirectory
from wfbench.app.gating.sweep_facts import EVIDENCE_NAME, gate_sweep, read_sweep_facts
from wfbench.domain.promotion.gates import DecisionKind
from wfbench.domain.promotion.policy import DEFAULT_POLICY, DecisionPolicy, PromotionPolicy
from wfbench.domain.results.rows import Row

SWEEP_TIME = "2026-01-01T00:00:00+00:00"
CLOCK = FakeClock(start=dt.datetime(2026, 6, 1, tzinfo=dt.UTC))


def _rows(candidate: str = "mine_v2", incumbent: str = "mine") -> list[Row]:
    rows = runs("t", incumbent, same(3, num_turns=10)) + runs("t", candidate, same(3, num_turns=8))
    return [attrs.evolve(row, extra={**row.extra, "benchmark_model": "m-1"}) for row in rows]


def _sweep(**evidence: object) -> MemorySweepDirectory:
    directory = MemorySweepDirectory()
    if evidence:
        directory.files[EVIDENCE_NAME] = json.dumps(evidence).encode()
    return directory


# The reference rule: these tests are about which pairs are judged and when, on one small task.
TURNS = PromotionPolicy(metric="num_turns", decision_policy=DecisionPolicy.REFERENCE)


def test_arms_with_their_own_names_are_regated_as_the_sweep_judged_them() -> None:
    directory = _sweep(
        decisions=[{"candidate_arm": "mine_v2", "incumbent_arm": "mine"}], generated_at=SWEEP_TIME
    )

    result = gate_sweep(_rows(), policy=TURNS, pairs=None, directory=directory, clock=CLOCK)

    (decision,) = result.decisions
    assert (decision.candidate_arm, decision.incumbent_arm, decision.kind) == (
        "mine_v2",
        "mine",
        DecisionKind.PROMOTE,
    )


def test_without_the_sweeps_evidence_arms_with_their_own_names_are_not_gated() -> None:
    result = gate_sweep(_rows(), policy=TURNS, pairs=None, directory=_sweep(), clock=CLOCK)

    assert result.decisions == ()


def test_given_pairs_win_over_the_pairs_the_sweep_judged() -> None:
    directory = _sweep(decisions=[{"candidate_arm": "mine", "incumbent_arm": "mine_v2"}])

    result = gate_sweep(_rows(), policy=TURNS, pairs={"mine_v2": "mine"}, directory=directory, clock=CLOCK)

    assert [d.candidate_arm for d in result.decisions] == ["mine_v2"]


def test_a_regate_keeps_the_sweeps_time_not_the_clocks() -> None:
    directory = _sweep(
        decisions=[{"candidate_arm": "mine_v2", "incumbent_arm": "mine"}], generated_at=SWEEP_TIME
    )

    result = gate_sweep(_rows(), policy=TURNS, pairs=None, directory=directory, clock=CLOCK)

    assert result.evidence is not None
    assert result.evidence.generated_at == dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def test_rows_without_any_time_and_no_evidence_file_take_the_clocks_time() -> None:
    result = gate_sweep(_rows(), policy=TURNS, pairs={"mine_v2": "mine"}, directory=_sweep(), clock=CLOCK)

    assert result.evidence is not None
    assert result.evidence.generated_at == CLOCK.now()


def test_the_evidence_file_is_read_once_per_regate() -> None:
    directory = _sweep(
        decisions=[{"candidate_arm": "mine_v2", "incumbent_arm": "mine"}], generated_at=SWEEP_TIME
    )

    gate_sweep(_rows(), policy=DEFAULT_POLICY, pairs=None, directory=directory, clock=CLOCK)

    assert directory.reads == [EVIDENCE_NAME]
    assert directory.writes == []


def test_an_unreadable_evidence_file_says_nothing() -> None:
    directory = MemorySweepDirectory(files={EVIDENCE_NAME: b"{not json"})

    facts = read_sweep_facts(directory)

    assert (dict(facts.pairs), facts.generated_at) == ({}, None)


def test_a_time_without_an_offset_is_not_the_sweeps_time() -> None:
    facts = read_sweep_facts(_sweep(generated_at="2026-01-01T00:00:00", decisions=[]))

    assert facts.generated_at is None
