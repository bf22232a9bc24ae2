# ruff: noqa: E501 - scripted provider turns read best on one line each
"""A whole sweep with the real Claude Code CLI (`wfbench run --agent claude`) under bubblewrap,
against the scripted provider: one implementation task and one review task, one run each.
Required in CI (WFBENCH_REQUIRE_CLAUDE=1); skipped locally when the CLI is not installed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import claude_binary, require_or_skip
from tests.support.demo_run import bwrap_or_skip, row, rows, wfbench

USAGE = {
    "input_tokens": 900,
    "output_tokens": 300,
    "cache_read_input_tokens": 0,
    "cache_creation_input_tokens": 0,
}
WRONG_FIX = "    middle = len(ordered) // 2\n    if len(ordered) % 2:\n        return ordered[middle]\n    return (ordered[middle - 1] + ordered[middle]) // 2\n"
REVIEW = '{"schema_version": 1, "verdict": "request_changes", "findings": [{"id": "f1", "severity": "high", "path": "calc/stats.py", "line": 24, "end_line": 25, "category": "correctness", "scenario": "percentile(values, 100)", "evidence": "ordered[rank] indexes one past the end", "recommendation": "clamp the rank", "blocking": true}]}'


def _script() -> dict[str, Any]:
    """The real CLI edits only files it has read, so the fix reads stats.py first."""
    edit = {
        "file_path": "{workspace}/calc/stats.py",
        "old_string": "    return ordered[len(ordered) // 2]\n",
        "new_string": WRONG_FIX,
    }
    test = {
        "file_path": "{workspace}/tests/test_median_even.py",
        "content": "from calc.stats import median\n\n\ndef test_even():\n    assert median([1, 3, 5, 7]) == 4\n",
    }
    return {
        "default": {"say": "unscripted", "usage": USAGE},
        "conversations": [
            {
                "when": ["even number of values"],
                "turns": [
                    {
                        "tools": [{"name": "Read", "input": {"file_path": "{workspace}/calc/stats.py"}}],
                        "usage": USAGE,
                    },
                    {
                        "tools": [{"name": "Edit", "input": edit}, {"name": "Write", "input": test}],
                        "usage": USAGE,
                    },
                    {"say": "Fixed; the new test passes.", "usage": USAGE},
                ],
            },
            {
                "when": ["PR #41"],
                "turns": [
                    {"tools": [{"name": "Skill", "input": {"skill": "review"}}], "usage": USAGE},
                    {
                        "tools": [
                            {"name": "Write", "input": {"file_path": "{review_output}", "content": REVIEW}}
                        ],
                        "usage": USAGE,
                    },
                    {"say": "Review written.", "usage": USAGE},
                ],
            },
        ],
    }


def _corpus(demo: Path) -> Path:
    """The demo's fix-median and review-pr-41 tasks alone, with the script above."""
    full = yaml.safe_load(demo.read_text())
    (demo.parent / "claude-script.yaml").write_text(yaml.safe_dump(_script()))
    corpus = {
        **full,
        "provider_script": "claude-script.yaml",
        "defaults": {"model": "claude-sonnet-4-5"},
        "tasks": [t for t in full["tasks"] if t["id"] in ("fix-median", "review-pr-41")],
    }
    path = demo.parent / "claude-sweep.yaml"
    path.write_text(yaml.safe_dump(corpus, sort_keys=False))
    return path


def test_a_real_cli_sweep_grades_a_wrong_fix_and_a_review_like_the_stand_in(demo_corpus, tmp_path):
    """--agent claude: the wrong fix is oracle-failed with its authored test passing; the review finds the defect."""
    bwrap_or_skip()
    if claude_binary() is None:
        require_or_skip("WFBENCH_REQUIRE_CLAUDE", "the real Claude Code CLI is not installed")
    out = tmp_path / "out"
    done = wfbench(
        "run",
        str(_corpus(demo_corpus)),
        "--agent",
        "claude",
        "--arms",
        "baseline,review",
        "--runs",
        "1",
        "--workers",
        "2",
        "--out",
        str(out),
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert len(rows(out)) == 2
    fix = row(out, "fix-median", "baseline")
    assert (fix["authored_tests_passed"], fix["oracle_passed"], fix["error_kind"]) == (
        True,
        False,
        "oracle-failed",
    ), fix
    assert fix["input_tokens"] == 3 * USAGE["input_tokens"]
    review = row(out, "review-pr-41", "review")
    assert (review["skill_invoked"], review["review_evidence_valid"], review["resolved"]) == (
        True,
        True,
        True,
    ), review
    assert review["review_true_positives"] == 1
    assert (out / review["transcript_artifacts"][0]["path"]).is_file()


def _outcomes(out: Path) -> dict[tuple[str, str, int], tuple[Any, ...]]:
    """Per cell: what the sweep measured (tokens are scripted, so they and the cost must agree too).

    Not ``num_turns``: 2.1.328 counts one per tool result plus one, the stand-in one per model call.
    """
    return {
        (r["task"], r["arm"], r["run"]): (
            r["resolved"],
            r["error_kind"],
            r["authored_tests_passed"],
            r["oracle_passed"],
            r["skill_invoked"],
            r["input_tokens"],
            r["output_tokens"],
            r["cost_usd"],
            r["diff_files"] if "diff_files" in r else None,
        )
        for r in rows(out)
    }


#: One cell of each of the demo's stories (``--runs 1``): baseline's wrong median fix, add-clamp (the
#: workflow's long plan fails it, the candidate's concise plan resolves it), the review that finds
#: PR #41's defect and the one that approves PR #42. The other tasks are add-mode's story again.
STORIES = ("--tasks", "fix-median,add-clamp,review-pr-*", "--runs", "1")


def _selected(
    cells: dict[tuple[str, str, int], Any], selection: tuple[str, ...]
) -> set[tuple[str, str, int]]:
    """The stand-in's cells that ``selection`` (STORIES or the whole demo) runs."""
    if not selection:
        return set(cells)
    return {
        (task, arm, run)
        for task, arm, run in cells
        if run == 0 and (task in ("fix-median", "add-clamp") or task.startswith("review-pr-"))
    }


@pytest.mark.parametrize(
    "selection",
    [
        pytest.param(STORIES, id="one-cell-of-each-story"),
        pytest.param((), id="whole-demo", marks=pytest.mark.nightly),
    ],
)
def test_the_demo_with_the_real_cli_ends_exactly_like_the_stand_in_run(demo_out, tmp_path, selection):
    """`wfbench run --agent claude` on the demo: the same outcome for every cell, and `promote`.

    The real CLI refuses to Edit a file the session has not Read; the demo's script reads first, and
    the stand-in enforces the same rule (tests/integration/agents/test_agent_read_before_edit.py).
    CI runs one cell of each story (a fifth of the sessions); the nightly tier the whole demo, whose
    51 cells also reach the stand-in's ``promote`` (the decision is a function of the rows compared).
    """
    bwrap_or_skip()
    if claude_binary() is None:
        require_or_skip("WFBENCH_REQUIRE_CLAUDE", "the real Claude Code CLI is not installed")
    standin_out, standin = demo_out
    assert standin.returncode == 0, standin.stderr[-2000:]
    out = tmp_path / "out"
    done = wfbench("run", "--agent", "claude", *selection, "--workers", "3", "--out", str(out), timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    real, standin_cells = _outcomes(out), _outcomes(standin_out)
    assert set(real) == _selected(standin_cells, selection)
    assert [(k, real[k], standin_cells[k]) for k in real if real[k] != standin_cells[k]] == []
    if not selection:
        decisions = json.loads((out / "promotion.json").read_text())["decisions"]
        assert [(d["candidate_arm"], d["decision"]) for d in decisions] == [("candidate_workflow", "promote")]
