"""The evolve loop (``wfbench.app.evolve.evolution.evolve``) with fake services.

Every port the loop is given is a fake that records what it received: the proposer (a scripted
proposal per generation), the sweep runner (rows kept in memory, a ``promotion.json`` with the
scripted decision), the rows reader, the committed skills, the clock, ``--apply``, cancellation
and the step hook. The loop's own store is its output directory (``evolution.jsonl``, the
journals, the incumbent working copy), so each test gives it a temporary one; the corpus is the
demo's, materialized once. Nothing runs an agent, a sandbox or a subprocess.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest

from wfbench.adapters.store.clock import FakeClock
from wfbench.adapters.store.sweep_files import FileSweepDirectory
from wfbench.app.evolve.evolution import (
    EvolveConfig,
    EvolveResult,
    EvolveServices,
    ProposalOrder,
    SweepOrder,
    evolve,
)
from wfbench.app.evolve.proposer import Proposal
from wfbench.domain.errors import InputError
from wfbench.domain.results.rows import Row
from wfbench.domain.session.records import SessionRecord, Usage

SKILL = ".claude/skills/plan/SKILL.md"
COMMITTED = b"---\nname: plan\ndescription: Plan a change.\n---\n# Plan (committed)\n"
PROPOSER_USD = 0.01
CELL_USD = 0.1


def _skill(generation: int) -> bytes:
    return f"---\nname: plan\ndescription: Plan a change.\n---\n# Plan (generation {generation})\n".encode()


class Crash(Exception):
    """Stands in for the process being killed at a step."""


def _reusable(order: SweepOrder, arm: str, run: int) -> bool:
    """A comparator's runs after the first (the paid canary) stand in from the last sweep."""
    return order.reuse_results is not None and run > 0 and not arm.startswith("candidate_")


@attrs.define
class Fakes:
    """The loop's services; ``decisions[n - 1]`` is generation n's gate decision (None: no promotion.json)."""

    decisions: Sequence[str | None]
    proposals: dict[int, Mapping[str, bytes]] = attrs.field(factory=dict)
    proposer_cost: float | None = PROPOSER_USD
    crash_at: str | None = None
    cancel_sweep_of: int | None = None
    orders: list[SweepOrder] = attrs.field(factory=list)
    asked: list[ProposalOrder] = attrs.field(factory=list)
    applied: list[str] = attrs.field(factory=list)
    steps: list[str] = attrs.field(factory=list)
    rows: dict[str, list[Row]] = attrs.field(factory=dict)
    notes: list[str] = attrs.field(factory=list)

    def run_sweep(self, order: SweepOrder) -> int:
        self.orders.append(order)
        generation = int(order.out_dir.split("gen-")[-1].split(os.sep)[0])
        os.makedirs(order.out_dir)
        cells = [(arm, run) for arm in order.arms for run in range(3)]
        rows = [
            Row.from_mapping(
                {
                    "task": "fix-median",
                    "arm": arm,
                    "run": run,
                    "ok": True,
                    "resolved": True,
                    "cost_usd": CELL_USD,
                    "reused": _reusable(order, arm, run),
                }
            )
            for arm, run in cells
        ]
        self.rows[os.path.join(order.out_dir, "results.jsonl")] = rows
        if self.cancel_sweep_of == generation:
            return 130
        decision = self.decisions[generation - 1] if generation else None
        if decision is not None:
            entry = {
                "candidate_arm": "candidate_workflow",
                "incumbent_arm": "workflow",
                "decision": decision,
                "reasons": [f"scripted {decision}"],
            }
            Path(order.out_dir, "promotion.json").write_text(json.dumps({"decisions": [entry]}))
        return 0

    def propose(self, order: ProposalOrder) -> Proposal:
        self.asked.append(order)
        record = SessionRecord(
            ok=True,
            error_kind=None,
            error_detail=None,
            usage=Usage(100, 10, 0, 0),
            cost_usd=self.proposer_cost,
            num_turns=3,
            duration_s=1.0,
            session_id=order.label,
            skill_invoked=None,
        )
        number = int(order.label.removeprefix("proposer-gen"))
        files = self.proposals.get(number, {SKILL: _skill(number)})
        return Proposal(record=record, files=files, cost_usd=self.proposer_cost, cost_source="wire")

    def apply(self, promotion: str) -> Mapping[str, Any]:
        self.applied.append(promotion)
        return {"applied": True, "evidence": os.path.basename(os.path.dirname(os.path.dirname(promotion)))}

    def step(self, name: str) -> None:
        self.steps.append(name)
        if name == self.crash_at or f"{len(self.steps)}" == self.crash_at:
            raise Crash(name)

    def services(self, out: Path, *, apply: bool = False) -> EvolveServices:
        return EvolveServices(
            run_sweep=self.run_sweep,
            propose=self.propose,
            committed_skills=lambda roots: {SKILL: COMMITTED},
            read_rows=lambda path: self.rows[path],
            clock=FakeClock(tick=1.0),
            note=self.notes.append,
            apply=self.apply if apply else None,
            on_step=self.step,
            directory=FileSweepDirectory(str(out)),
        )


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> str:
    from wfbench.demo import materialize

    return materialize(str(tmp_path_factory.mktemp("demo") / "corpus"))


def _config(corpus: str, out: Path, generations: int = 2, **extra: Any) -> EvolveConfig:
    return EvolveConfig(
        corpus_path=corpus,
        out_dir=str(out),
        generations=generations,
        base_arms=("workflow",),
        proposer_model="claude-sonnet-4-5",
        **extra,
    )


def _outcomes(result: EvolveResult) -> list[str]:
    return [record.outcome.value for record in result.history]


def _lines(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "evolution.jsonl").read_text().splitlines()]


def _incumbent(out: Path) -> dict[str, bytes]:
    root = out / "incumbent"
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# --- promote and keep_incumbent ------------------------------------------------------------------


def test_a_promote_makes_the_candidate_the_next_generations_incumbent(corpus: str, tmp_path: Path) -> None:
    fakes = Fakes(["promote", "keep_incumbent"])

    result = evolve(_config(corpus, tmp_path), fakes.services(tmp_path))

    assert _outcomes(result) == ["baseline", "promote", "keep_incumbent"]
    assert [order.incumbent[SKILL] for order in fakes.asked] == [COMMITTED, _skill(1)]
    assert _incumbent(tmp_path) == {SKILL: _skill(1)}
    assert [order.incumbent_overlay for order in fakes.orders] == [None, None, str(tmp_path / "incumbent")]
    assert result.history[2].incumbent_digest == result.history[1].candidate_overlay_digest
    assert result.history[1].candidate_origin == "model-proposer"
    assert [order.arms for order in fakes.orders[1:]] == [("workflow", "candidate_workflow")] * 2


def test_a_keep_incumbent_leaves_the_incumbent_as_it_was(corpus: str, tmp_path: Path) -> None:
    fakes = Fakes(["keep_incumbent", "keep_incumbent"])

    result = evolve(_config(corpus, tmp_path), fakes.services(tmp_path))

    assert _outcomes(result) == ["baseline", "keep_incumbent", "keep_incumbent"]
    assert [order.incumbent[SKILL] for order in fakes.asked] == [COMMITTED, COMMITTED]
    assert not (tmp_path / "incumbent").exists()
    assert [order.incumbent_overlay for order in fakes.orders] == [None, None, None]
    assert result.history[2].incumbent_digest is None


def test_a_second_promote_joins_the_first_in_the_incumbent(corpus: str, tmp_path: Path) -> None:
    extra = ".claude/skills/plan/notes.md"
    fakes = Fakes(["promote", "promote"], proposals={1: {SKILL: _skill(1), extra: b"# notes\n"}})

    evolve(_config(corpus, tmp_path), fakes.services(tmp_path))

    assert _incumbent(tmp_path) == {SKILL: _skill(2), extra: b"# notes\n"}
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("incumbent")) == ["incumbent"]


def test_a_promoted_generation_is_applied_when_asked_and_its_summary_recorded(
    corpus: str, tmp_path: Path
) -> None:
    fakes = Fakes(["promote", "keep_incumbent"])

    result = evolve(_config(corpus, tmp_path), fakes.services(tmp_path, apply=True))

    assert fakes.applied == [str(tmp_path / "gen-001" / "sweep" / "promotion.json")]
    assert result.history[1].applied == {"applied": True, "evidence": "gen-001"}
    assert result.history[2].applied is None


# --- stopping ------------------------------------------------------------------------------------


def test_two_generations_in_a_row_without_enough_evidence_stop_the_loop(corpus: str, tmp_path: Path) -> None:
    fakes = Fakes(["insufficient_evidence", None, "promote"])

    result = evolve(_config(corpus, tmp_path, generations=3), fakes.services(tmp_path))

    assert _outcomes(result) == ["baseline", "insufficient_evidence", "insufficient_evidence"]
    assert result.stopped == "2 generations in a row ended without enough evidence"
    assert len(fakes.asked) == 2
    assert result.history[2].reasons == ("the sweep wrote no promotion.json (exit 0)",)


def test_generations_without_evidence_that_are_not_in_a_row_do_not_stop_it(
    corpus: str, tmp_path: Path
) -> None:
    fakes = Fakes(["insufficient_evidence", "keep_incumbent", "insufficient_evidence"])

    result = evolve(_config(corpus, tmp_path, generations=3), fakes.services(tmp_path))

    assert _outcomes(result) == [
        "baseline",
        "insufficient_evidence",
        "keep_incumbent",
        "insufficient_evidence",
    ]
    assert result.stopped is None


def test_a_proposal_that_changes_nothing_counts_towards_the_stop(corpus: str, tmp_path: Path) -> None:
    fakes = Fakes(["insufficient_evidence", "promote"], proposals={2: {}})

    result = evolve(_config(corpus, tmp_path, generations=3), fakes.services(tmp_path))

    assert _outcomes(result) == ["baseline", "insufficient_evidence", "no_proposal"]
    assert result.history[2].reasons == ("the proposer changed no skill file",)
    assert len(fakes.orders) == 2  # no sweep for a generation without a proposal


def test_max_generations_counts_proposing_generations_across_runs(corpus: str, tmp_path: Path) -> None:
    fakes = Fakes(["keep_incumbent"] * 5)

    first = evolve(_config(corpus, tmp_path, generations=5, max_generations=2), fakes.services(tmp_path))
    second = evolve(_config(corpus, tmp_path, generations=5, max_generations=3), fakes.services(tmp_path))

    assert _outcomes(first) == ["baseline", "keep_incumbent", "keep_incumbent"]
    assert first.stopped == "reached --max-generations 2"
    assert _outcomes(second) == [*_outcomes(first), "keep_incumbent"]
    assert second.stopped == "reached --max-generations 3"
    assert len(fakes.asked) == 3
    assert [record["generation"] for record in _lines(tmp_path)] == [0, 1, 2, 3]


def test_the_budget_stops_the_loop_once_spent_and_each_sweep_gets_what_is_left(
    corpus: str, tmp_path: Path
) -> None:
    """Budget $0.75. Baseline: 3 paid cells ($0.30); gen 1: proposer $0.01 + 4 paid cells of 6 ($0.40):
    $0.71 spent, so gen 2 starts with $0.04 and its sweep gets $0.03; then the budget is spent."""
    fakes = Fakes(["keep_incumbent"] * 3)

    result = evolve(_config(corpus, tmp_path, generations=3, max_cost_usd=0.75), fakes.services(tmp_path))

    assert _outcomes(result) == ["baseline", "keep_incumbent", "keep_incumbent"]
    assert [order.max_cost_usd for order in fakes.orders] == [0.75, pytest.approx(0.44), pytest.approx(0.03)]
    assert result.stopped == "spent $1.1200 of the --max-cost $0.7500 budget"


def test_a_proposer_of_unknown_cost_leaves_the_sweep_nothing_and_stops_the_loop(
    corpus: str, tmp_path: Path
) -> None:
    fakes = Fakes(["keep_incumbent"] * 3, proposer_cost=None)

    result = evolve(_config(corpus, tmp_path, generations=3, max_cost_usd=10.0), fakes.services(tmp_path))

    assert fakes.orders[1].max_cost_usd == 0.0
    assert result.history[1].spend.total_usd is None
    assert result.stopped == "a generation's spend is unknown, so --max-cost cannot be enforced"


def test_the_spend_recorded_is_the_sweeps_paid_cells_plus_the_proposer(corpus: str, tmp_path: Path) -> None:
    """Reused rows are not paid for: gen 1's sweep paid 4 cells of its 6 (the comparator's canary)."""
    fakes = Fakes(["promote"])

    result = evolve(_config(corpus, tmp_path, generations=1), fakes.services(tmp_path))

    for record in result.history:
        rows = fakes.rows[os.path.join(str(record.sweep_dir), "results.jsonl")]
        paid = sum(row.cost_usd or 0.0 for row in rows if not row.reused)
        assert record.spend.sweep_usd == pytest.approx(paid)
    baseline, gen1 = result.history
    assert baseline.spend.to_mapping() == {
        "proposer_usd": 0.0,
        "sweep_usd": pytest.approx(0.3),
        "unmeasured_cells": 0,
        "total_usd": pytest.approx(0.3),
        "proposer_source": None,
    }
    assert gen1.spend.sweep_usd == pytest.approx(0.4)
    assert gen1.spend.proposer_usd == PROPOSER_USD
    assert gen1.spend.proposer_source == "wire"
    assert gen1.spend.total_usd == pytest.approx(0.41)
    assert _lines(tmp_path)[1]["spend"]["total_usd"] == pytest.approx(0.41)


# --- interruption and crashes --------------------------------------------------------------------


def test_a_cancelled_generation_gets_no_record_and_the_next_run_redoes_it(
    corpus: str, tmp_path: Path
) -> None:
    fakes = Fakes(["promote", "keep_incumbent"], cancel_sweep_of=1)

    cancelled = evolve(_config(corpus, tmp_path), fakes.services(tmp_path))
    fakes.cancel_sweep_of = None
    again = evolve(_config(corpus, tmp_path, generations=1), fakes.services(tmp_path))

    assert cancelled.cancelled
    assert _outcomes(cancelled) == ["baseline"]
    assert (tmp_path / "gen-001.interrupted-1" / "sweep").is_dir()
    assert _outcomes(again) == ["baseline", "promote"]
    assert [order.label for order in fakes.asked] == ["proposer-gen1", "proposer-gen1"]
    assert _incumbent(tmp_path) == {SKILL: _skill(1)}


#: The steps of an uninterrupted two-promote run (with --apply): every point a crash is tried at.
STEPS = [
    "run-started",
    "swept",
    "journal",
    "recorded",
    "swept",
    "journal",
    "incumbent-staged",
    "incumbent-swapped",
    "journal-applied",
    "recorded",
    "swept",
    "journal",
    "incumbent-staged",
    "incumbent-aside",
    "incumbent-swapped",
    "incumbent-cleaned",
    "journal-applied",
    "recorded",
]


def _clean(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in record.items() if k not in ("started_at", "finished_at")} for record in records]


@pytest.fixture(scope="module")
def uninterrupted(corpus: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Fakes]:
    out = tmp_path_factory.mktemp("uninterrupted")
    fakes = Fakes(["promote", "promote"])
    evolve(_config(corpus, out), fakes.services(out, apply=True))
    return out, fakes


def test_the_uninterrupted_run_takes_every_step(uninterrupted: tuple[Path, Fakes]) -> None:
    _out, fakes = uninterrupted
    assert fakes.steps == STEPS


@pytest.mark.parametrize("crash_at", range(1, len(STEPS) + 1), ids=lambda k: f"{k}-{STEPS[k - 1]}")
def test_a_crash_after_any_step_then_a_new_run_ends_as_an_uninterrupted_one(
    corpus: str, tmp_path: Path, uninterrupted: tuple[Path, Fakes], crash_at: int
) -> None:
    """Same records (but timestamps), same incumbent bytes; a decided generation is never swept or
    proposed again, nor applied twice; an undecided one is redone."""
    reference, done = uninterrupted
    fakes = Fakes(["promote", "promote"], crash_at=str(crash_at))
    with pytest.raises(Crash):
        evolve(_config(corpus, tmp_path), fakes.services(tmp_path, apply=True))
    fakes.crash_at = None
    again = evolve(_config(corpus, tmp_path), fakes.services(tmp_path, apply=True))  # the same command

    def cleaned(out: Path) -> list[dict[str, Any]]:
        return json.loads(json.dumps(_clean(_lines(out))).replace(str(out), "<OUT>"))

    assert cleaned(tmp_path) == cleaned(reference)
    assert _incumbent(tmp_path) == _incumbent(reference)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("incumbent")) == ["incumbent"]
    redone = 1 if STEPS[crash_at - 1] == "swept" else 0
    assert len(fakes.orders) == len(done.orders) + redone
    assert len(fakes.asked) == len(done.asked) + (redone if crash_at > 4 else 0)
    assert [os.path.relpath(p, tmp_path) for p in fakes.applied] == [
        os.path.relpath(p, reference) for p in done.applied
    ]
    assert again.stopped is None
    assert not (tmp_path / "evolution-run.json").exists()


def test_a_torn_last_line_is_replaced_from_its_generations_journal(corpus: str, tmp_path: Path) -> None:
    fakes = Fakes(["promote"])
    evolve(_config(corpus, tmp_path, generations=1), fakes.services(tmp_path))
    lines = (tmp_path / "evolution.jsonl").read_bytes().splitlines(keepends=True)
    (tmp_path / "evolution.jsonl").write_bytes(lines[0] + lines[1][:40])  # killed while appending gen 1

    again = evolve(_config(corpus, tmp_path, generations=1, max_generations=1), fakes.services(tmp_path))

    assert _outcomes(again) == ["baseline", "promote"]
    assert (tmp_path / "evolution.jsonl").read_bytes() == b"".join(lines)
    assert len(fakes.orders) == 2


def test_a_torn_line_without_a_journal_is_refused_naming_the_line(corpus: str, tmp_path: Path) -> None:
    fakes = Fakes(["promote"])
    evolve(_config(corpus, tmp_path, generations=1), fakes.services(tmp_path))
    with (tmp_path / "evolution.jsonl").open("ab") as handle:
        handle.write(b'{"schema": 1, "gen')

    with pytest.raises(InputError) as caught:
        evolve(_config(corpus, tmp_path, generations=1), fakes.services(tmp_path))

    assert "line 3" in str(caught.value)
    assert "evolution.jsonl" in str(caught.value)


def test_a_promoted_overlay_changed_after_its_record_is_refused(corpus: str, tmp_path: Path) -> None:
    fakes = Fakes(["promote"])
    evolve(_config(corpus, tmp_path, generations=1), fakes.services(tmp_path))
    (tmp_path / "gen-001" / "overlay" / SKILL).write_bytes(_skill(9))

    with pytest.raises(InputError) as caught:
        evolve(_config(corpus, tmp_path, generations=1), fakes.services(tmp_path))

    assert "generation 1" in str(caught.value)
    assert "candidate_overlay_digest" in str(caught.value)
    assert _incumbent(tmp_path) == {SKILL: _skill(1)}  # nothing rebuilt from it


def test_an_incumbent_working_copy_changed_by_hand_is_rebuilt_from_the_records(
    corpus: str, tmp_path: Path
) -> None:
    fakes = Fakes(["promote", "keep_incumbent"])
    evolve(_config(corpus, tmp_path, generations=1), fakes.services(tmp_path))
    (tmp_path / "incumbent" / SKILL).write_bytes(b"edited by hand\n")
    (tmp_path / "incumbent.next").mkdir()  # a leftover of a killed swap

    evolve(_config(corpus, tmp_path, generations=1), fakes.services(tmp_path))

    assert fakes.asked[1].incumbent[SKILL] == _skill(1)
    assert _incumbent(tmp_path) == {SKILL: _skill(1)}
    assert not (tmp_path / "incumbent.next").exists()


# --- --generations N across a kill ----------------------------------------------------------------


def _numbers(out: Path) -> list[int]:
    return [record["generation"] for record in _lines(out)]


@pytest.mark.parametrize("crash_at", ["journal", "recorded"])
def test_a_run_killed_in_its_last_generation_then_run_again_makes_no_extra_generation(
    corpus: str, tmp_path: Path, crash_at: str
) -> None:
    """Killed after generation 2 of `--generations 2` was journaled (or recorded): the same command
    finishes it and stops there, like the uninterrupted run (it used to go on to generations 3 and 4)."""
    fakes = Fakes(["keep_incumbent"] * 4)
    steps = ["run-started", "swept", "journal", "recorded", "swept", "journal", "recorded"]
    steps += ["swept", "journal"]
    steps += ["recorded"] if crash_at == "recorded" else []
    fakes.crash_at = str(len(steps))
    with pytest.raises(Crash):
        evolve(_config(corpus, tmp_path, generations=2), fakes.services(tmp_path))
    assert fakes.steps == steps
    fakes.crash_at = None

    again = evolve(_config(corpus, tmp_path, generations=2), fakes.services(tmp_path))

    assert _numbers(tmp_path) == [0, 1, 2]
    assert again.stopped is None
    assert len(fakes.asked) == 2
    assert any(
        "finishing the run that was interrupted" in note and "ends at generation 2" in note
        for note in fakes.notes
    )
    assert not (tmp_path / "evolution-run.json").exists()


def test_the_same_command_after_a_run_that_ended_makes_n_more_generations(
    corpus: str, tmp_path: Path
) -> None:
    """Control: a run that ended is not resumed; `--generations N` again continues with N more."""
    fakes = Fakes(["keep_incumbent"] * 4)

    evolve(_config(corpus, tmp_path, generations=2), fakes.services(tmp_path))
    evolve(_config(corpus, tmp_path, generations=2), fakes.services(tmp_path))

    assert _numbers(tmp_path) == [0, 1, 2, 3, 4]
    assert not any("interrupted" in note for note in fakes.notes)


def test_a_rerun_with_another_n_ends_where_a_first_run_with_that_n_would(corpus: str, tmp_path: Path) -> None:
    """Killed after generation 1's line of `--generations 2`, run again with `--generations 3`: up to 3."""
    fakes = Fakes(["keep_incumbent"] * 5, crash_at="7")  # the 7th step: generation 1's line
    with pytest.raises(Crash):
        evolve(_config(corpus, tmp_path, generations=2), fakes.services(tmp_path))
    assert fakes.steps[-1] == "recorded"
    fakes.crash_at = None

    evolve(_config(corpus, tmp_path, generations=3), fakes.services(tmp_path))

    assert _numbers(tmp_path) == [0, 1, 2, 3]


def test_a_run_cancelled_in_its_last_generation_is_finished_by_the_same_command(
    corpus: str, tmp_path: Path
) -> None:
    """Ctrl-C in generation 2 of 2: the same command redoes generation 2 and stops there."""
    fakes = Fakes(["keep_incumbent"] * 4, cancel_sweep_of=2)
    cancelled = evolve(_config(corpus, tmp_path, generations=2), fakes.services(tmp_path))
    fakes.cancel_sweep_of = None
    assert cancelled.cancelled
    assert (tmp_path / "evolution-run.json").is_file()  # the run has not ended

    again = evolve(_config(corpus, tmp_path, generations=2), fakes.services(tmp_path))

    assert _numbers(tmp_path) == [0, 1, 2]
    assert [order.label for order in fakes.asked] == ["proposer-gen1", "proposer-gen2", "proposer-gen2"]
    assert again.stopped is None


def test_a_run_a_stop_rule_ended_is_not_resumed(corpus: str, tmp_path: Path) -> None:
    """Stopped by --max-generations before its N: the run has ended; the next one counts afresh."""
    fakes = Fakes(["keep_incumbent"] * 4)

    first = evolve(_config(corpus, tmp_path, generations=3, max_generations=1), fakes.services(tmp_path))
    evolve(_config(corpus, tmp_path, generations=1), fakes.services(tmp_path))

    assert first.stopped == "reached --max-generations 1"
    assert _numbers(tmp_path) == [0, 1, 2]


AT_LEAST = "must be an integer ≥"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "is not valid JSON"),
        ("[]", "must be a JSON object"),
        ('{"schema": 2, "after_generation": 0, "generations": 1}', "schema: must be 1"),
        ('{"schema": 1, "after_generation": -1, "generations": 1}', f"after_generation: {AT_LEAST} 0"),
        ('{"schema": 1, "after_generation": true, "generations": 1}', f"after_generation: {AT_LEAST} 0"),
        ('{"schema": 1, "after_generation": 0, "generations": 0}', f"generations: {AT_LEAST} 1"),
        ('{"schema": 1, "after_generation": 5, "generations": 1}', "ends at generation 1"),
    ],
)
def test_a_run_file_that_is_not_one_the_loop_wrote_is_refused_and_nothing_runs(
    corpus: str, tmp_path: Path, content: str, message: str
) -> None:
    fakes = Fakes(["keep_incumbent"] * 3)
    evolve(_config(corpus, tmp_path, generations=1), fakes.services(tmp_path))
    (tmp_path / "evolution-run.json").write_text(content)

    with pytest.raises(InputError) as caught:
        evolve(_config(corpus, tmp_path, generations=1), fakes.services(tmp_path))

    assert message in str(caught.value)
    assert "evolution-run.json" in str(caught.value)
    assert _numbers(tmp_path) == [0, 1]
    assert len(fakes.asked) == 1
