# ruff: noqa: E501 - scripted provider turns read best on one line each
"""Sweeps with corpus-defined arms (subprocesses of `wfbench run`): a candidate arm whose sessions
never invoke its skill is `skill-not-invoked` in every row and cannot be promoted; and, through
the sweep's own promotion step, the reference's counter-example (one scored run at 0.9 plus two
uninvoked rows) does not promote either."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import yaml

from tests.support.demo_run import bwrap_or_skip, rows, wfbench
from tests.unit.promotion.promotion_fixtures import review_row
from wfbench.adapters.store.memory_sweep import MemorySweepDirectory
from wfbench.app.corpus.arms import preset_arms
from wfbench.app.sweep.finish import FinishInput, promotion_evidence

BIG = {
    "input_tokens": 2000,
    "output_tokens": 900,
    "cache_read_input_tokens": 0,
    "cache_creation_input_tokens": 0,
}
SMALL = {
    "input_tokens": 500,
    "output_tokens": 100,
    "cache_read_input_tokens": 0,
    "cache_creation_input_tokens": 0,
}
MODE = (
    "    return ordered[len(ordered) // 2]\n\n\ndef mode(values):\n    if not values:\n"
    '        raise ValueError("empty")\n    counts = {}\n    for value in values:\n'
    "        counts[value] = counts.get(value, 0) + 1\n    best = max(counts.values())\n"
    "    return min(value for value, count in counts.items() if count == best)\n"
)


def _edits(usage: dict[str, int]) -> dict[str, Any]:
    old = "    return ordered[len(ordered) // 2]\n"
    test = (
        "import unittest\n\nfrom calc.stats import mode\n\n\nclass ModeTest(unittest.TestCase):\n"
        "    def test_mode(self):\n        self.assertEqual(mode([1, 2, 2]), 2)\n"
    )
    return {
        "tools": [
            {"name": "Read", "input": {"file_path": "{workspace}/calc/stats.py"}},
            {
                "name": "Edit",
                "input": {"file_path": "{workspace}/calc/stats.py", "old_string": old, "new_string": MODE},
            },
            {"name": "Write", "input": {"file_path": "{workspace}/tests/test_mode.py", "content": test}},
        ],
        "usage": usage,
    }


def _corpus(demo: Path, tmp: Path) -> Path:
    """One feature task; arms `inc` (calls the work skill) and `cand` (never does, and is cheaper)."""
    root = demo.parent
    script = {
        "default": {"say": "unscripted", "usage": SMALL},
        "conversations": [
            {
                "when": ["INCUMBENT-ARM"],
                "turns": [
                    {
                        "say": "Working.",
                        "tools": [{"name": "Skill", "input": {"skill": "work"}}],
                        "usage": BIG,
                    },
                    _edits(BIG),
                    {"say": "Done.", "usage": BIG},
                ],
            },
            {"when": ["CANDIDATE-ARM"], "turns": [_edits(SMALL), {"say": "Done.", "usage": SMALL}]},
        ],
    }
    (tmp / "script.yaml").write_text(yaml.safe_dump(script))
    overlay = tmp / "overlay" / ".claude" / "skills" / "work"
    overlay.mkdir(parents=True)
    (overlay / "SKILL.md").write_text("---\nname: work\ndescription: terse\n---\n# Work\n\nBe terse.\n")
    phase = {"name": "work", "role": "work", "skill": "work"}
    corpus = {
        "provider_script": str(tmp / "script.yaml"),
        "environment": {"python": "harness"},
        "skills": {"plan": "preset-plan", "work": "preset-work", "review": "preset-review"},
        "arms": {
            "inc": {"phases": [{**phase, "prompt": "INCUMBENT-ARM: {task}"}]},
            "cand": {"incumbent": "inc", "phases": [{**phase, "prompt": "CANDIDATE-ARM: {task}"}]},
        },
        "defaults": {
            "model": "claude-sonnet-4-5",
            "arms": ["inc", "cand"],
            "runs": 3,
            "candidate_overlay": str(tmp / "overlay"),
        },
        "tasks": [
            {
                "id": "add-mode",
                "class": "feature",
                "repo": str(root / "repo"),
                "ref": "main",
                "prompt": "Add mode(values) to calc/stats.py.",
                "verify": "python -m unittest discover -s tests",  # the demo's environment: stdlib only
                "oracle": {
                    "command": "true",
                    "files": [{"source": "oracles/add_mode_oracle.py", "target": "o.py"}],
                },
            }
        ],
    }
    path = root / "no-skill-candidate.yaml"
    path.write_text(yaml.safe_dump(corpus, sort_keys=False))
    return path


def _decisions_text(evidence: str) -> str:
    """The decisions part of an evidence text, as written (the sweep also records its corpus and overlay)."""
    return evidence[evidence.index('  "decisions": ') :].split("\n  ],\n", 1)[0]


def test_a_candidate_that_never_invokes_its_skill_is_skill_not_invoked_and_is_not_promoted(
    demo_corpus, tmp_path
):
    """Cheaper candidate runs that never call the skill are skill-not-invoked; the decision is not promote."""
    bwrap_or_skip()
    out = tmp_path / "out"
    done = wfbench("run", str(_corpus(demo_corpus, tmp_path)), "--out", str(out), "--workers", "3")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    by_arm: dict[str, list[dict[str, Any]]] = {}
    for r in rows(out):
        by_arm.setdefault(r["arm"], []).append(r)
    assert [(r["skill_invoked"], r["error_kind"]) for r in by_arm["cand"]] == [
        (False, "skill-not-invoked")
    ] * 3
    assert not any(r["resolved"] for r in by_arm["cand"])
    assert [(r["skill_invoked"], r["resolved"]) for r in by_arm["inc"]] == [(True, True)] * 3
    text = (out / "promotion.json").read_text(encoding="utf-8")
    assert "skill-not-invoked×3" in text  # written as gate --out writes it, not as \\u00d7
    assert "\\u00d7" not in text
    regated = tmp_path / "regated.json"  # the sweep's own pair (cand=inc), from promotion.json
    done_gate = wfbench("gate", str(out), "--out", str(regated))
    assert done_gate.returncode == 0, done_gate.stderr[-2000:]
    assert _decisions_text(regated.read_text(encoding="utf-8")) == _decisions_text(text)
    assert wfbench("gate", str(out), "--pair", "candidate_workflow=workflow").stdout.endswith(
        "decisions: no candidate arm has rows; nothing to gate\n"
    )  # an explicit --pair replaces the sweep's pairs
    decision = json.loads(text)["decisions"][0]
    assert (decision["candidate_arm"], decision["incumbent_arm"]) == ("cand", "inc")
    assert decision["decision"] != "promote"
    assert "[promotion] cand: " + decision["decision"] in done.stdout


def test_the_sweeps_promotion_step_does_not_promote_one_scored_run_plus_two_uninvoked_rows():
    """Review counter-example: candidate F1 0.9 once plus two skill-not-invoked rows vs three scored 0.7 runs."""
    incumbent = [review_row("case-1", "review", run, weighted_f1=0.7) for run in range(3)]
    candidate = [
        review_row("case-1", "candidate_review", 0, weighted_f1=0.9),
        *(
            review_row("case-1", "candidate_review", run, weighted_f1=0.0, error_kind="skill-not-invoked")
            for run in (1, 2)
        ),
    ]
    presets = preset_arms()
    arms = [presets["review"], presets["candidate_review"]]
    data = FinishInput(
        corpus=None,
        tasks=(),
        arms=arms,
        rows=[*incumbent, *candidate],
        out_dir="unused",
        directory=MemorySweepDirectory(),
        model="claude-sonnet-4-5",
        tripped=False,
        cancelled=False,
        now=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
    )
    (decision,) = promotion_evidence(data)["decisions"]
    assert decision["candidate_arm"] == "candidate_review"
    assert decision["decision"] != "promote"


def test_a_corpus_that_chooses_the_statistical_policy_has_its_sweep_judged_by_it(demo_corpus, tmp_path):
    """`defaults.policy: statistical` decides the sweep's promotion; the reference's verdict is kept beside."""
    path = _corpus(demo_corpus, tmp_path)
    data = yaml.safe_load(path.read_text())
    data["defaults"]["policy"] = "statistical"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    out = tmp_path / "out"

    done = wfbench("run", str(path), "--out", str(out), "--workers", "3")

    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    evidence = json.loads((out / "promotion.json").read_text())
    assert evidence["policy"]["cand"]["decision_policy"] == "statistical"
    (decision,) = evidence["decisions"]
    assert decision["policy"] == "statistical"
    assert decision["decision"] == "keep_incumbent"
    assert any("never invoked the skill under test" in reason for reason in decision["reasons"])
    assert set(decision["by_policy"]) == {"reference", "statistical"}
    assert decision["statistics"]["resolution"]["n_tasks"] == 1
    assert "[promotion] cand: keep_incumbent" in done.stdout
