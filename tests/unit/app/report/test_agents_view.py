"""report.md's per-agent view: one line per agent, its arms, resolution, spend and its own decision."""

from __future__ import annotations

from tests.unit.app.gating.test_per_agent_gate import NOW, _sweep
from wfbench.app.gating.gating import regate
from wfbench.app.report.markdown import render_markdown
from wfbench.app.report.model import ReportInputs, build_model

PAIRS = {"candidate_claude": "workflow_claude", "candidate_gemini": "workflow_gemini"}


def _report(agents: dict[str, str]) -> str:
    rows = _sweep(agents)
    evidence = regate(rows, now=NOW, pairs=PAIRS).evidence
    assert evidence is not None
    return render_markdown(build_model(rows, ReportInputs(promotion=evidence.to_mapping())))


def test_a_sweep_over_two_agents_shows_each_agents_arms_spend_and_own_decision() -> None:
    report = _report({"claude": "claude", "gemini": "gemini"})
    table = report.split("## Per agent\n\n", 1)[1].split("\n\n", 1)[0].splitlines()

    assert table[0] == "| agent | arms | resolved | spend | $ per resolved run | decisions |"
    # 15 runs per arm; the workflow fails t1 (3 runs): 27 of 30 resolve; $6.45 + $4.95 spent.
    assert table[2:] == [
        "| `claude` | `workflow_claude`, `candidate_claude` | 27/30 | $11.4000 | $0.4222 |"
        " `candidate_claude` vs `workflow_claude`: **PROMOTE** |",
        "| `gemini` | `workflow_gemini`, `candidate_gemini` | 27/30 | $11.4000 | $0.4222 |"
        " `candidate_gemini` vs `workflow_gemini`: **PROMOTE** |",
    ]


def test_a_sweep_on_one_agent_has_no_per_agent_view() -> None:
    assert "## Per agent" not in _report({"claude": "claude", "gemini": "claude"})
