"""Issue 25 §3 end to end: a candidate cell that edits test infrastructure blocks the promotion that
``wfbench run`` itself decides (its ``promotion.json``), under bwrap, with the stand-in agent and
with the real Claude CLI, over the scripted provider.

One task of the demo corpus (``add-mode``: its hidden oracle is a JUnit-reporting unittest suite,
stdlib only, so no install) and three corpus arms, all calling the ``work`` skill and writing the
same correct fix: ``inc`` (the incumbent, expensive usage), and two cheaper candidates paired with
it, ``clean`` (the control: nothing else) and ``planted`` (also writes a harmless nested
``tests/conftest.py``). Under ``defaults.policy: reference`` the control promotes; the planted arm,
resolved on every run all the same, is kept out by name (file and cell).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import claude_binary, require_or_skip
from tests.integration.sweep.test_sweep_arms import BIG, MODE, SMALL
from tests.support.sweep_kit import MODEL, WFBENCH, bwrap_or_skip, rows, run_sweep, tell

TASK = "add-mode"
RUNS = 3  # the gate's minimum paired runs (PromotionPolicy.min_runs): fewer never promote
PLANT = "tests/conftest.py"
CONFTEST = '"""Shared fixtures (none yet)."""\n'
TEST = (
    "import unittest\n\nfrom calc.stats import mode\n\n\nclass ModeTest(unittest.TestCase):\n"
    "    def test_mode(self):\n        self.assertEqual(mode([1, 2, 2]), 2)\n"
)
SKILL = "---\nname: work\ndescription: terse\n---\n# Work\n\nBe terse.\n"
#: arm -> (the token its prompt carries, the usage of each turn, whether it plants the conftest)
ARMS: dict[str, tuple[str, dict[str, int], bool]] = {
    "inc": ("INCUMBENT-ARM", BIG, False),
    "clean": ("CLEAN-CANDIDATE", SMALL, False),
    "planted": ("PLANTED-CANDIDATE", SMALL, True),
}


def _tool(name: str, **given: str) -> dict[str, Any]:
    return {"name": name, "input": given}


def _conversation(token: str, usage: dict[str, int], plant: bool) -> dict[str, Any]:
    """Invoke the skill, write the correct fix and a test (and, when ``plant``, a nested conftest)."""
    stats = "{workspace}/calc/stats.py"
    edits = [
        _tool("Read", file_path=stats),
        _tool("Edit", file_path=stats, old_string="    return ordered[len(ordered) // 2]\n", new_string=MODE),
        _tool("Write", file_path="{workspace}/tests/test_mode.py", content=TEST),
    ]
    if plant:
        edits.append(_tool("Write", file_path=f"{{workspace}}/{PLANT}", content=CONFTEST))
    return {
        "when": [token],
        "turns": [
            {"say": "Working.", "tools": [_tool("Skill", skill="work")], "usage": usage},
            {"tools": edits, "usage": usage},
            {"say": "Done.", "usage": usage},
        ],
    }


def _corpus(tmp: Path) -> Path:
    from wfbench.demo import materialize

    demo = Path(materialize(str(tmp / "demo")))
    task = next(t for t in yaml.safe_load(demo.read_text())["tasks"] if t["id"] == TASK)
    script = {
        "default": {"say": "unscripted", "usage": SMALL},
        "conversations": [_conversation(*spec) for spec in ARMS.values()],
    }
    (tmp / "script.yaml").write_text(yaml.safe_dump(script, sort_keys=False, width=10_000))
    overlay = tmp / "overlay/.claude/skills/work"
    overlay.mkdir(parents=True)
    (overlay / "SKILL.md").write_text(SKILL)
    phase = {"name": "work", "role": "work", "skill": "work"}
    arms: dict[str, Any] = {
        arm: {"phases": [{**phase, "prompt": f"{token}: {{task}}"}]} for arm, (token, _, _) in ARMS.items()
    }
    arms["clean"]["incumbent"] = arms["planted"]["incumbent"] = "inc"
    corpus = {
        "provider_script": str(tmp / "script.yaml"),
        "environment": {"python": "harness"},
        "skills": {"plan": "preset-plan", "work": "preset-work", "review": "preset-review"},
        "arms": arms,
        "defaults": {
            "model": MODEL,
            "arms": list(ARMS),
            "runs": RUNS,
            "policy": "reference",
            "candidate_overlay": str(tmp / "overlay"),
        },
        "tasks": [task],
    }
    path = demo.parent / "tampering.yaml"
    path.write_text(yaml.safe_dump(corpus, sort_keys=False, width=10_000))
    return path


def _sweep(tmp: Path, *args: str, env: dict[str, str] | None = None) -> Path:
    out = tmp / "out"
    run_env = {**os.environ, "WFBENCH_CACHE": str(tmp / "cache"), **(env or {})}
    done = run_sweep(_corpus(tmp), out, "--outage-streak", "0", *args, env=run_env, timeout=1500)
    assert done.returncode == 0, tell(done)
    assert "[promotion] planted: keep_incumbent" in done.stdout, tell(done)
    return out


def _decisions(out: Path) -> dict[str, dict[str, Any]]:
    evidence = json.loads((out / "promotion.json").read_text())
    return {d["candidate_arm"]: d for d in evidence["decisions"]}


def _check_rows(out: Path, agent: str) -> None:
    """Every cell is resolved (the plant changes no verdict); only the planted arm's rows name it."""
    found = rows(out)
    assert {r["agent"] for r in found} == {agent}
    assert sorted((r["arm"], r["run"]) for r in found) == sorted((a, i) for a in ARMS for i in range(RUNS))
    for row in found:
        assert (row["resolved"], row["error_kind"], row["skill_invoked"]) == (True, None, True), row
        named = [d for d in row["evidence_diagnostics"] if d.startswith("shadowing file: ")]
        patch = (out / row["patch_artifact"]).read_text()
        if ARMS[row["arm"]][2]:  # positive control: the plant is in the patch, and the row names it
            assert f"b/{PLANT}" in patch, patch[:800]
            assert named == [
                f"shadowing file: {PLANT} (added): pytest configuration or plugin (conftest/ini)"
            ]
        else:
            assert PLANT not in patch
            assert named == [], row["evidence_diagnostics"]


def _check_promotion(out: Path) -> None:
    """The control promotes; the planted candidate is kept out, its reasons naming file and cells."""
    decisions = _decisions(out)
    assert {arm: (d["incumbent_arm"], d["policy"]) for arm, d in decisions.items()} == {
        "clean": ("inc", "reference"),
        "planted": ("inc", "reference"),
    }
    clean, planted = decisions["clean"], decisions["planted"]
    assert clean["decision"] == "promote", clean
    assert not any("test-infrastructure" in reason for reason in clean["reasons"]), clean["reasons"]
    assert planted["decision"] == "keep_incumbent", planted
    [reason] = [r for r in planted["reasons"] if r.startswith("test-infrastructure edits block promotion")]
    cells = reason.removeprefix(f"test-infrastructure edits block promotion ({RUNS}): ").split("; ")
    assert sorted(cells) == [f"{TASK}/planted/run-{i}: {PLANT}" for i in range(RUNS)], reason


def _regate(out: Path) -> None:
    """``wfbench gate`` on the sweep's rows reaches the same refusal (the sweep's evidence re-judged)."""
    done = subprocess.run(
        [*WFBENCH, "gate", str(out)], capture_output=True, text=True, check=False, timeout=300
    )
    assert done.returncode == 0, tell(done)
    assert "planted vs inc (implementation, cost_usd): KEEP_INCUMBENT" in done.stdout, done.stdout
    assert f"{TASK}/planted/run-0: {PLANT}" in done.stdout


def test_a_candidate_that_plants_a_nested_conftest_is_refused_by_the_sweeps_own_promotion(
    tmp_path: Path,
) -> None:
    bwrap_or_skip()
    out = _sweep(tmp_path)
    _check_rows(out, "standin")
    _check_promotion(out)
    _regate(out)


def test_the_same_refusal_with_the_real_claude_cli(tmp_path: Path) -> None:
    bwrap_or_skip()
    binary = claude_binary()
    if binary is None:
        require_or_skip("WFBENCH_REQUIRE_CLAUDE", "the claude CLI is not installed")
    out = _sweep(tmp_path, "--agent", "claude", env={"WFBENCH_CLAUDE_BIN": str(binary)})
    _check_rows(out, "claude")
    _check_promotion(out)
