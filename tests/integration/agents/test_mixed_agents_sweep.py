"""One sweep, one skill change, four agents: each agent's candidate is gated against its own incumbent.

Issue 30's acceptance "a mixed sweep with one arm per agent gates and reports per agent": the demo's
concise plan skill (its candidate overlay) on Claude Code, Codex, Gemini CLI and OpenCode, each a
``workflow_<agent>`` arm and a ``candidate_<agent>`` arm whose ``incumbent:`` is its own agent's
(docs/agents.md, "One skill, four agents"). ``gate --json`` holds one decision per agent, judged
with that agent's model, and report.md's per-agent view shows them. The agents run against the
scripted provider on fix-median, one run each (the reference policy with ``--min-runs 1``
decides; the statistical policy needs five tasks and three runs). Two variants: the stand-in,
Claude Code and Codex (the fast ones: 18 s at load 15), and — nightly — the four real CLIs
(150–230 s at load 20; Gemini CLI's and OpenCode's sessions only add time here, their protocols
have their own demo sweeps).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import attrs
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
MODELS = {
    "standin": "claude-sonnet-4-5",
    "claude": "claude-sonnet-4-5",
    "codex": "gpt-5.5",
    "gemini": "gemini-2.5-pro",
    "opencode": "claude-sonnet-4-5",
}
FAST = ("standin", "claude", "codex")
REAL = ("claude", "codex", "gemini", "opencode")
REQUIRED = {
    "claude": (claude_binary, "WFBENCH_REQUIRE_CLAUDE"),
    "codex": (codex_binary, "WFBENCH_REQUIRE_CODEX"),
    "gemini": (gemini_binary, "WFBENCH_REQUIRE_GEMINI"),
    "opencode": (opencode_binary, "WFBENCH_REQUIRE_OPENCODE"),
}


def _mixed_corpus(demo: Path, dest: Path, agents: tuple[str, ...]) -> Path:
    """The demo corpus with a workflow and a candidate arm per agent (and no other arms)."""
    shutil.copytree(demo.parent if demo.is_file() else demo, dest)
    corpus = yaml.safe_load((dest / "corpus.yaml").read_text())
    arms = {}
    for agent in agents:
        model = MODELS[agent]
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


@attrs.frozen
class Mixed:
    out: Path
    agents: tuple[str, ...]


@pytest.fixture(
    scope="module",
    params=[FAST, pytest.param(REAL, marks=pytest.mark.nightly)],
    ids=["standin-claude-codex", "four-real-clis"],
)
def mixed_sweep(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, demo_corpus: Path
) -> Mixed:
    agents: tuple[str, ...] = request.param
    bwrap_or_skip()
    for agent in agents:
        if agent in REQUIRED and REQUIRED[agent][0]() is None:
            require_or_skip(REQUIRED[agent][1], f"the real {agent} CLI is not installed")
    root = tmp_path_factory.mktemp("mixed")
    corpus, out = _mixed_corpus(demo_corpus, root / "corpus", agents), root / "out"
    done = wfbench(
        *("run", str(corpus), "--tasks", "fix-median", "--runs", "1", "--workers", "4", "--out", str(out)),
        timeout=900,
    )
    assert done.returncode == 0, tell(done)
    return Mixed(out, agents)


def test_every_agents_arms_resolve_on_their_own_agent(mixed_sweep: Mixed) -> None:
    table = {r["arm"]: r for r in rows(mixed_sweep.out)}
    assert {arm: (r["agent"], r["resolved"], r["skill_invoked"]) for arm, r in table.items()} == {
        f"{role}_{agent}": (agent, True, True)
        for agent in mixed_sweep.agents
        for role in ("workflow", "candidate")
    }


def test_gate_decides_once_per_agent_against_its_own_incumbent_with_its_model(mixed_sweep: Mixed) -> None:
    evidence = mixed_sweep.out / "promotion.json"
    done = wfbench(
        *("gate", str(mixed_sweep.out), "--json", "--policy", "reference", "--min-runs", "1"),
        *("--out", str(evidence), "--force"),
    )
    assert done.returncode == 0, tell(done)
    decisions = {d["candidate_arm"]: d for d in json.loads(done.stdout)["decisions"]}
    assert {arm: (d["incumbent_arm"], d["model"], d["decision"]) for arm, d in decisions.items()} == {
        f"candidate_{agent}": (f"workflow_{agent}", MODELS[agent], "promote") for agent in mixed_sweep.agents
    }


def test_report_md_shows_each_agents_own_decision_in_its_per_agent_view(mixed_sweep: Mixed) -> None:
    test_gate_decides_once_per_agent_against_its_own_incumbent_with_its_model(mixed_sweep)
    done = wfbench("report", str(mixed_sweep.out), "--min-runs", "1")
    assert done.returncode == 0, tell(done)
    view = (mixed_sweep.out / "report.md").read_text().split("## Per agent\n\n", 1)[1].split("\n\n", 1)[0]
    lines = view.splitlines()[2:]
    assert [line.split(" | ")[0] for line in lines] == [f"| `{agent}`" for agent in mixed_sweep.agents]
    for agent, line in zip(mixed_sweep.agents, lines, strict=True):
        assert f"`candidate_{agent}` vs `workflow_{agent}`: **PROMOTE**" in line, line
        assert "| 2/2 |" in line, line  # both arms resolved
