"""A sweep with one candidate per agent: each is judged against its own agent's incumbent.

The statistical gate's Holm correction runs per family, and a pair's family is its incumbent's
agent: four agents' candidates are four decisions, not four alternatives to one incumbent. Each
pair is judged with its own model, whatever the run's ``--model`` says.
"""

from __future__ import annotations

import datetime as dt

import attrs

from tests.unit.promotion.promotion_fixtures import runs
from wfbench.app.gating.gating import regate
from wfbench.domain.promotion.gates import DecisionKind
from wfbench.domain.results.rows import Row

NOW = dt.datetime(2026, 12, 6, tzinfo=dt.UTC)
TASKS = ("t1", "t2", "t3", "t4", "t5")
AGENTS = {"claude": "claude-sonnet-4-5", "gemini": "gemini-2.5-pro"}


def _arm(agent: str, arm: str, cost: float, *, fails: str | None = None) -> list[Row]:
    """Three runs per task, costs varying by run and task; every run of task ``fails`` unresolved."""
    runtime = {"agent": agent, "benchmark_model": AGENTS[agent]}
    failed = {"resolved": False, "error_kind": "oracle-failed"}
    rows = [
        row
        for index, task in enumerate(TASKS)
        for row in runs(
            task,
            arm,
            [
                {"cost_usd": cost + 0.01 * (run + index), **(failed if task == fails else {})}
                for run in range(3)
            ],
        )
    ]
    return [attrs.evolve(row, extra={**row.extra, **runtime}) for row in rows]


def _sweep(agents: dict[str, str]) -> list[Row]:
    """Per entry of ``agents``: a workflow arm at $0.40 failing t1, a candidate at $0.30 (the demo)."""
    return [
        row
        for name, agent in agents.items()
        for row in [
            *_arm(agent, f"workflow_{name}", 0.40, fails="t1"),
            *_arm(agent, f"candidate_{name}", 0.30),
        ]
    ]


def _decisions(agents: dict[str, str]):  # type: ignore[no-untyped-def]
    pairs = {f"candidate_{name}": f"workflow_{name}" for name in agents}
    return {d.candidate_arm: d for d in regate(_sweep(agents), now=NOW, pairs=pairs).decisions}


def test_each_agents_candidate_is_promoted_against_its_own_incumbent_with_its_own_model() -> None:
    decisions = _decisions({"claude": "claude", "gemini": "gemini"})

    assert {arm: (d.incumbent_arm, d.kind, d.model) for arm, d in decisions.items()} == {
        "candidate_claude": ("workflow_claude", DecisionKind.PROMOTE, "claude-sonnet-4-5"),
        "candidate_gemini": ("workflow_gemini", DecisionKind.PROMOTE, "gemini-2.5-pro"),
    }


def test_the_holm_correction_counts_one_agents_claims_not_the_whole_sweeps() -> None:
    per_agent = _decisions({"claude": "claude", "gemini": "gemini"})
    one_agent = _decisions({"a": "claude", "b": "claude"})

    assert all("Holm over 2 promotion claim(s)" in " ".join(d.reasons) for d in per_agent.values())
    assert all("Holm over 4 promotion claim(s)" in " ".join(d.reasons) for d in one_agent.values())
    # promotion.json of a one-agent sweep is as it was: no family recorded
    assert [d.to_mapping().get("holm_family") for d in per_agent.values()] == ["claude", "gemini"]
    assert all("holm_family" not in d.to_mapping() for d in one_agent.values())


def test_the_sweeps_own_promotion_step_decides_once_per_agent_with_each_pairs_model() -> None:
    """promotion.json (the run's finish step) agrees with a re-gate, whatever the run's --model."""
    from wfbench.adapters.store.memory_sweep import MemorySweepDirectory
    from wfbench.app.corpus.arms import AgentChoice, Arm, TaskKind
    from wfbench.app.sweep.finish import FinishInput, promotion_evidence

    arms = [
        Arm(
            f"{role}_{agent}",
            TaskKind.IMPLEMENTATION,
            (),
            agent=AgentChoice(agent),
            model=AGENTS[agent],
            **extra,
        )
        for agent in AGENTS
        for role, extra in (("workflow", {}), ("candidate", {"incumbent": f"workflow_{agent}"}))
    ]
    data = FinishInput(
        corpus=None,
        tasks=(),
        arms=arms,
        rows=_sweep({"claude": "claude", "gemini": "gemini"}),
        out_dir="unused",
        directory=MemorySweepDirectory(),
        model="claude-sonnet-4-5",
        tripped=False,
        cancelled=False,
        now=NOW,
    )
    decisions = promotion_evidence(data)["decisions"]

    assert [(d["candidate_arm"], d["incumbent_arm"], d["decision"], d["model"]) for d in decisions] == [
        ("candidate_claude", "workflow_claude", "promote", "claude-sonnet-4-5"),
        ("candidate_gemini", "workflow_gemini", "promote", "gemini-2.5-pro"),
    ]


def test_the_evidence_of_a_per_agent_sweep_recomputes_to_itself_for_apply() -> None:
    """`wfbench promote` re-judges the stored samples: each pair in its agent's family, with its model."""
    from wfbench.domain.promotion.evidence import EvidenceBindings
    from wfbench.domain.promotion.validation import ApplyExpectation, _check_recomputed

    pairs = {"candidate_claude": "workflow_claude", "candidate_gemini": "workflow_gemini"}
    evidence = regate(_sweep({"claude": "claude", "gemini": "gemini"}), now=NOW, pairs=pairs).evidence
    assert evidence is not None
    decisions = evidence.to_mapping()["decisions"]
    assert [d["holm_family"] for d in decisions] == ["claude", "gemini"]
    expected = ApplyExpectation(
        bindings=EvidenceBindings(benchmark_model="claude-sonnet-4-5"),
        required_candidate_arms=tuple(pairs),
        pairs=pairs,
    )
    assert _check_recomputed(decisions, expected) == []
    one_family = [{k: v for k, v in d.items() if k != "holm_family"} for d in decisions]
    assert _check_recomputed(one_family, expected)  # judged as one family, it would not promote
