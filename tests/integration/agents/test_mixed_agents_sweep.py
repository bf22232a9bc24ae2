"""One sweep, one skill change, four agents: each agent's candidate is gated against its own incumbent.

Issue 30's acceptance "a mixed sweep with one arm per agent gates and reports per agent": the demo's
concise plan skill (its candidate overlay) on Claude Code, Codex, Gemini CLI and OpenCode, each a
``workflow_<agent>`` arm and a ``candidate_<agent>`` arm whose ``incumbent:`` is its own agent's
(docs/agents.md, "One skill, four agents"). ``gate --json`` holds one decision per agent, judged
with that agent's model, and report.md's per-agent view shows them. The four real CLIs run against
the scripted provider on fix-median, one run each (the reference policy with ``--min-runs 1``
decides; the statistical policy needs five tasks and three runs).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from tests.conftest import claude_binary, codex_binary, gemini_binary, opencode_binary, require_or_skip
from tests.support.demo_run import wfbench
from tests.support.sweep_kit import bwrap_or_skip, rows, tell

pytestmark = [
    pytest.mark.claude,
    pytest.mark.codex,
    pytest.mark.gemini,
    pytest.mark.opencode,
    pytest.mark.bwrap,
    pytest.mark.slow,
]

#: agent → its model (Codex and Gemini CLI speak their own APIs; OpenCode the demo's Anthropic one)
AGENTS = {
    "claude": "claude-sonnet-4-5",
    "codex": "gpt-5.5",
    "gemini": "gemini-2.5-pro",
    "opencode": "claude-sonnet-4-5",
}
REQUIRED = {
    "claude": (claude_binary, "WFBENCH_REQUIRE_CLAUDE"),
    "codex": (codex_binary, "WFBENCH_REQUIRE_CODEX"),
    "gemini": (gemini_binary, "WFBENCH_REQUIRE_GEMINI"),
    "opencode": (opencode_binary, "WFBENCH_REQUIRE_OPENCODE"),
}


def _mixed_corpus(demo: Path, dest: Path) -> Path:
    """The demo corpus with a workflow and a candidate arm per agent (and no other arms)."""
    shutil.copytree(demo.parent if demo.is_file() else demo, dest)
    corpus = yaml.safe_load((dest / "corpus.yaml").read_text())
    arms = {}
    for agent, model in AGENTS.items():
        arms[f"workflow_{agent}"] = {"like": "workflow", "agent": agent, "model": model}
        arms[f"candidate_{agent}"] = {
            "like": "candidate_workflow",
            "agent": agent,
            "model": model,
            "incumbent": f"workflow_{agent}",
        }
    corpus["arms"] = arms
    corpus["defaults"]["arms"] = list(arms)
    (dest / "corpus.yaml").write_text(yaml.safe_dump(corpus, sort_keys=False))
    return dest / "corpus.yaml"


@pytest.fixture(scope="module")
def mixed_sweep(tmp_path_factory: pytest.TempPathFactory, demo_corpus: Path) -> Path:
    bwrap_or_skip()
    for agent, (find, variable) in REQUIRED.items():
        if find() is None:
            require_or_skip(variable, f"the real {agent} CLI is not installed")
    root = tmp_path_factory.mktemp("mixed")
    corpus, out = _mixed_corpus(demo_corpus, root / "corpus"), root / "out"
    done = wfbench(
        *("run", str(corpus), "--tasks", "fix-median", "--runs", "1", "--workers", "4", "--out", str(out)),
        timeout=900,
    )
    assert done.returncode == 0, tell(done)
    return out


def test_every_agents_arms_resolve_on_their_own_agent(mixed_sweep: Path) -> None:
    table = {r["arm"]: r for r in rows(mixed_sweep)}
    assert {arm: (r["agent"], r["resolved"], r["skill_invoked"]) for arm, r in table.items()} == {
        f"{role}_{agent}": (agent, True, True) for agent in AGENTS for role in ("workflow", "candidate")
    }


def test_gate_decides_once_per_agent_against_its_own_incumbent_with_its_model(mixed_sweep: Path) -> None:
    evidence = mixed_sweep / "promotion.json"
    done = wfbench(
        *("gate", str(mixed_sweep), "--json", "--policy", "reference", "--min-runs", "1"),
        *("--out", str(evidence), "--force"),
    )
    assert done.returncode == 0, tell(done)
    decisions = {d["candidate_arm"]: d for d in json.loads(done.stdout)["decisions"]}
    assert {arm: (d["incumbent_arm"], d["model"], d["decision"]) for arm, d in decisions.items()} == {
        f"candidate_{agent}": (f"workflow_{agent}", model, "promote") for agent, model in AGENTS.items()
    }


def test_report_md_shows_each_agents_own_decision_in_its_per_agent_view(mixed_sweep: Path) -> None:
    test_gate_decides_once_per_agent_against_its_own_incumbent_with_its_model(mixed_sweep)
    done = wfbench("report", str(mixed_sweep), "--min-runs", "1")
    assert done.returncode == 0, tell(done)
    view = (mixed_sweep / "report.md").read_text().split("## Per agent\n\n", 1)[1].split("\n\n", 1)[0]
    lines = view.splitlines()[2:]
    assert [line.split(" | ")[0] for line in lines] == [f"| `{agent}`" for agent in AGENTS]
    for agent, line in zip(AGENTS, lines, strict=True):
        assert f"`candidate_{agent}` vs `workflow_{agent}`: **PROMOTE**" in line, line
        assert "| 2/2 |" in line, line  # both arms resolved
