"""A corpus and provider script for ``wfbench evolve`` offline: the proposer is scripted too.

The corpus is the demo's first four tasks (fix-median, add-mode and the two reviews), decided by
the reference rule (whose reasons the tests read). The provider script is the demo's, with rules
put first for:

* the **proposer**, generation 1: it reads the plan skill and ``EVIDENCE.md``, then writes a
  concise plan skill ("Keep plans short…", the demo overlay's text) — the demo's candidate rules
  make plans written under it cheaper, so the gate promotes it;
* the **proposer**, generation 2: it writes an exhaustive plan skill ("Plan exhaustively…");
* plans written under the exhaustive skill: much larger usage, so the gate keeps the incumbent.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import yaml

CONCISE = (
    "---\nname: plan\ndescription: Plan a change before touching code.\n---\n# Plan (concise)\n\n"
    "Keep plans short: name the one file to change and the one test to add, in at most\n"
    "five lines, under docs/plans/. Do not restate the task.\n"
)
EXHAUSTIVE = (
    "---\nname: plan\ndescription: Plan a change before touching code.\n---\n# Plan (exhaustive)\n\n"
    "Plan exhaustively: list every file, every risk, every alternative and every test, with\n"
    "a full rationale for each, under docs/plans/.\n"
)
HUGE = {
    "input_tokens": 20000,
    "cache_creation_input_tokens": 8000,
    "cache_read_input_tokens": 60000,
    "output_tokens": 6000,
}
SMALL = {
    "input_tokens": 500,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 2000,
    "output_tokens": 150,
}
PLAN_SKILL = "{workspace}/.claude/skills/plan/SKILL.md"
TASK_MARKS = {"fix-median": "even number of values", "add-mode": "Add mode(values)"}


def _proposer_rule(generation: int, text: str) -> dict[str, Any]:
    return {
        "when": [f"skill proposer of wfbench evolve, generation {generation}."],
        "turns": [
            {
                "say": "Reading the incumbent skill and the evidence.",
                "tools": [
                    {"name": "Read", "input": {"file_path": PLAN_SKILL}},
                    {"name": "Read", "input": {"file_path": "{workspace}/EVIDENCE.md"}},
                ],
                "usage": SMALL,
            },
            {
                "tools": [{"name": "Write", "input": {"file_path": PLAN_SKILL, "content": text}}],
                "usage": SMALL,
            },
            {"say": "The plan skill is rewritten.", "usage": SMALL},
        ],
    }


def _exhaustive_rule(task: str, mark: str) -> dict[str, Any]:
    plan = (
        "# Plan\n\n" + "\n".join(f"- consideration {i}: every detail, at length." for i in range(40)) + "\n"
    )
    return {
        "when": [mark, "Use the plan skill for", "Plan exhaustively"],
        "turns": [
            {"say": "unused", "usage": SMALL},
            {
                "tools": [
                    {
                        "name": "Write",
                        "input": {"file_path": f"{{workspace}}/docs/plans/{task}.md", "content": plan},
                    }
                ],
                "usage": HUGE,
            },
            {"say": "An exhaustive plan is written.", "usage": HUGE},
        ],
    }


def write_evolve_corpus(root: Path) -> Path:
    """The demo materialized under ``root/corpus`` with the evolve script; the corpus file."""
    from wfbench.demo import materialize

    corpus = Path(materialize(str(root / "corpus")))
    script = yaml.safe_load(resources.files("wfbench.demo").joinpath("provider.yaml").read_text())
    rules = [_proposer_rule(1, CONCISE), _proposer_rule(2, EXHAUSTIVE)]
    rules += [_exhaustive_rule(task, mark) for task, mark in TASK_MARKS.items()]
    script["conversations"] = rules + script["conversations"]
    (corpus.parent / "provider-evolve.yaml").write_text(yaml.safe_dump(script, sort_keys=False))
    raw = yaml.safe_load(corpus.read_text())
    raw["provider_script"] = "provider-evolve.yaml"
    raw["defaults"] = {key: value for key, value in raw["defaults"].items() if key != "candidate_overlay"}
    raw["defaults"]["arms"] = ["workflow"]
    raw["defaults"]["policy"] = "reference"
    raw["tasks"] = [
        task for task in raw["tasks"] if task["id"] in (*TASK_MARKS, "review-pr-41", "review-pr-42")
    ]
    corpus.write_text(yaml.safe_dump(raw, sort_keys=False))
    return corpus
