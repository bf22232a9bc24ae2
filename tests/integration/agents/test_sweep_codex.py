# ruff: noqa: E501 - scripted provider turns read best on one line each
"""Whole sweeps (`wfbench run`, a subprocess) with the real Codex CLI under bwrap, against the
scripted provider: the acceptance list of issue 15.

* the demo's tasks with one Claude Code arm and one Codex arm per kind (``workflow`` beside
  ``codex_direct``, ``review`` beside ``codex_review``): Codex writes files via ``apply_patch``
  (fix-median) and via ``exec_command`` (add-mode), both resolve against the hidden oracles, its
  review artifact scores against the labels, usage reaches the rows, and the report is valid;
* a ``--base-url`` sweep with a planted key: a 529 is a ``session-error``, and a tool that dumps
  every ``/proc/*/environ`` it can see finds neither the key nor the proxy's dummy token; neither
  is in any file under ``--out``.

Required in CI (``WFBENCH_REQUIRE_CODEX=1``, ``WFBENCH_REQUIRE_CLAUDE=1``, ``WFBENCH_REQUIRE_BWRAP=1``).
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import claude_binary, codex_binary, require_or_skip
from tests.support.demo_run import wfbench
from tests.support.sweep_kit import (
    base_files,
    bwrap_or_skip,
    by_task,
    impl_task,
    make_repo,
    rows,
    run_sweep,
    tell,
    write_corpus,
)
from wfbench.adapters.provider.script import ProviderScript
from wfbench.adapters.provider.scripted import ScriptedProvider

pytestmark = [pytest.mark.codex, pytest.mark.bwrap]
DUMMY_PREFIX = "wfbench-proxy-"


def codex_or_skip() -> None:
    bwrap_or_skip()
    if codex_binary() is None:
        require_or_skip("WFBENCH_REQUIRE_CODEX", "the real Codex CLI is not installed")


def files_holding(root: Path, needle: str) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


@pytest.mark.claude
def test_a_claude_arm_and_a_codex_arm_on_the_demo_tasks_end_with_a_valid_report(tmp_path: Path) -> None:
    codex_or_skip()
    if claude_binary() is None:
        require_or_skip("WFBENCH_REQUIRE_CLAUDE", "the real Claude Code CLI is not installed")
    out = tmp_path / "out"
    done = wfbench(
        "run",
        "--agent",
        "claude",
        "--arms",
        "workflow,codex_direct,review,codex_review",
        "--tasks",
        "fix-median,add-mode,review-pr-*",  # the demo's first two implementation tasks and its reviews
        "--runs",
        "1",
        "--workers",
        "2",
        "--out",
        str(out),
        timeout=600,
    )
    assert done.returncode == 0, tell(done)
    table = {(r["task"], r["arm"]): r for r in rows(out)}
    assert len(table) == 8
    for task in ("fix-median", "add-mode"):
        cell = table[(task, "codex_direct")]
        assert cell["resolved"] is True, (task, cell["error_kind"], cell.get("error_detail"))
        assert cell["oracle_passed"] is True
        assert cell["skill_invoked"] is True
        assert (cell["agent"], cell["agent_version"], cell["model"]) == (
            "codex",
            "codex-cli 0.171.0",
            "gpt-5.5",
        )
        assert cell["cost_usd"] > 0  # Codex reports no cost: the wire's usage at gpt-5.5's prices is it
    median = table[("fix-median", "codex_direct")]
    assert median["tool_use_counts"] == {"command_execution": 2, "file_change": 1}  # via apply_patch
    assert table[("add-mode", "codex_direct")]["tool_use_counts"] == {
        "command_execution": 2
    }  # via exec_command
    # Usage is metered at the wire (Codex's Responses requests went through the cell's lease): four
    # turns of 2000 uncached + 14000 cached input, 800 output, and the scripted cache write of 0 the
    # upstream reported. Codex's own report is kept beside it: its 0 cache write cannot be told from
    # absent, so the adapter reports None — which the agreement rule does not take for a contradiction.
    assert median["usage_source"] == "wire"
    assert median["wire_requests"] == 4, median
    assert (
        median["input_tokens"],
        median["cache_read_input_tokens"],
        median["cache_creation_input_tokens"],
        median["output_tokens"],
    ) == (8000, 56000, 0, 3200)
    assert median["cost_usd"] == pytest.approx((8000 * 5.0 + 56000 * 0.50 + 3200 * 30.0) / 1e6)
    assert median["agent_reported_cost_usd"] is None
    assert median["agent_reported_usage"] == {
        "input_tokens": 8000,
        "cache_creation_input_tokens": None,
        "cache_read_input_tokens": 56000,
        "output_tokens": 3200,
    }
    review = table[("review-pr-41", "codex_review")]
    assert review["resolved"] is True
    assert review["review_evidence_valid"] is True
    assert review["review_weighted_f1"] == 1.0
    assert table[("review-pr-42", "codex_review")]["resolved"] is True
    claude_review = table[("review-pr-41", "review")]
    assert (claude_review["agent"], claude_review["resolved"]) == ("claude", True)
    assert claude_review["runtime_digest"] != review["runtime_digest"]
    report = (out / "report.md").read_text()
    for arm in ("workflow", "codex_direct", "review", "codex_review"):
        assert f"| {arm} |" in report
    assert "`codex_direct`: codex `codex-cli 0.171.0` (model `gpt-5.5`)" in report  # agents by arm
    assert "`workflow`: claude `2.1.328 (Claude Code)` (model `claude-sonnet-4-5`)" in report
    assert (out / "report.html").stat().st_size > 0
    assert files_holding(out, DUMMY_PREFIX) == []


HUNT = (
    "for f in /proc/[0-9]*/environ; do echo \"== $f\"; tr '\\0' '\\n' < $f; done > environ.txt 2>&1; "
    "env >> environ.txt; grep -r -a -l -- 'wfbench-prox[y]-' ~ /tmp /workspace 2>/dev/null >> environ.txt; cat environ.txt"
)


def shell(cmd: str) -> dict[str, Any]:
    return {"name": "exec_command", "input": {"cmd": cmd, "yield_time_ms": 30000}}


USAGE = {
    "input_tokens": 900,
    "output_tokens": 300,
    "cache_read_input_tokens": 4000,
    "cache_creation_input_tokens": 100,
}


def test_a_codex_sweep_records_a_529_as_session_error_and_no_tool_can_read_the_key(tmp_path: Path) -> None:
    codex_or_skip()
    key = f"wfb-real-{uuid.uuid4().hex}"
    make_repo(tmp_path, base_files())
    script = {
        "conversations": [
            {
                "when": ["CASE write:"],
                "turns": [
                    {"tools": [shell("printf 'written\\n' > done.txt")], "usage": USAGE},
                    {"say": "Written.", "usage": USAGE},
                ],
            },
            {"when": ["CASE flaky:"], "turns": [{"status": 529}]},
            {
                "when": ["CASE hunt:"],
                "turns": [{"tools": [shell(HUNT)], "usage": USAGE}, {"say": "Hunted.", "usage": USAGE}],
            },
        ]
    }
    tasks = [impl_task("write", oracle="grep -qx written done.txt"), impl_task("flaky"), impl_task("hunt")]
    corpus = write_corpus(tmp_path, tasks, None)
    out = tmp_path / "out"
    env = {**os.environ, "WFBENCH_ANTHROPIC_API_KEY": key}
    with ScriptedProvider(ProviderScript.from_yaml(yaml.safe_dump(script), source="codex.yaml")) as provider:
        done = run_sweep(
            corpus,
            out,
            "--agent",
            "codex",
            "--model",
            "gpt-5.5",
            "--arms",
            "baseline",
            "--base-url",
            provider.base_url,
            "--outage-streak",
            "0",
            "--workers",
            "2",
            "--timeout",
            "120",
            "--throttle-retries",
            "0",
            env=env,
            timeout=600,
        )
    assert done.returncode == 0, tell(done)
    cells = by_task(out)
    written = cells["write"]
    assert written["resolved"] is True, written.get("error_detail")
    assert (
        written["input_tokens"],
        written["cache_read_input_tokens"],
        written["cache_creation_input_tokens"],
        written["output_tokens"],
    ) == (1800, 8000, 200, 600)
    flaky = cells["flaky"]
    assert flaky["error_kind"] == "session-error"
    assert flaky["resolved"] is False
    assert flaky["input_tokens"] is None
    hunt = cells["hunt"]
    patch = (out / "cells/hunt/baseline/run-0/patch.diff").read_text()
    assert "== /proc/1/environ" in patch  # positive control: the dump ran over Codex's own environ
    assert "Permission denied" in patch  # … which is closed: Codex runs from an execute-only binary
    assert "PATH=" in patch  # the tool's own environment was dumped
    assert "WFBENCH_API_KEY=" not in patch
    assert DUMMY_PREFIX not in patch
    assert hunt["ok"] is True
    # All requests reached the provider through the key proxy with the real key swapped in.
    assert provider.requests
    assert all(r.path == "/v1/responses" for r in provider.requests)
    assert not any(key in json.dumps(r.to_mapping()) for r in provider.requests)
    assert files_holding(out, key) == []
    assert files_holding(out, DUMMY_PREFIX) == []
    assert key not in done.stdout + done.stderr


def test_an_agents_md_overlay_reaches_the_codex_candidate_read_only_and_not_its_incumbent(
    tmp_path: Path,
) -> None:
    """A candidate that is "my AGENTS.md": committed into its workspace, sent by Codex, never writable."""
    codex_or_skip()
    make_repo(tmp_path, base_files())
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "AGENTS.md").write_text("Keep every change minimal. MARK-OVERLAY\n")
    read_skill = shell("cat ~/.agents/skills/work/SKILL.md")
    tamper = shell("echo tamper >> AGENTS.md; echo rc=$?; printf 'done\\n' > done.txt")
    script = {
        "conversations": [
            {
                "when": ["CASE agents:"],
                "turns": [
                    {"tools": [read_skill], "usage": USAGE},
                    {"tools": [tamper], "usage": USAGE},
                    {"say": "Done.", "usage": USAGE},
                ],
            }
        ]
    }
    corpus = write_corpus(tmp_path, [impl_task("agents", oracle="grep -qx done done.txt")], None)
    data = yaml.safe_load(corpus.read_text())
    data["arms"] = {
        "codex_direct": {"like": "workflow_direct", "agent": "codex", "model": "gpt-5.5"},
        "codex_terse": {
            "like": "codex_direct",
            "agent": "codex",
            "model": "gpt-5.5",
            "incumbent": "codex_direct",
        },
    }
    corpus.write_text(yaml.safe_dump(data, sort_keys=False))
    out = tmp_path / "out"
    env = {**os.environ, "WFBENCH_ANTHROPIC_API_KEY": "wfb-real-agents-md"}
    with ScriptedProvider(ProviderScript.from_yaml(yaml.safe_dump(script), source="agents.yaml")) as provider:
        done = run_sweep(
            corpus,
            out,
            "--arms",
            "codex_direct,codex_terse",
            "--candidate-overlay",
            str(overlay),
            "--runs",
            "1",
            "--base-url",
            provider.base_url,
            "--workers",
            "1",
            "--timeout",
            "120",
            env=env,
            timeout=600,
        )
    assert done.returncode == 0, tell(done)
    table = {r["arm"]: r for r in rows(out)}
    for arm in ("codex_direct", "codex_terse"):
        assert table[arm]["resolved"] is True, (arm, table[arm].get("error_detail"))
        assert table[arm]["skill_invoked"] is True
    assert table["codex_terse"]["candidate_overlay_digest"]
    assert table["codex_terse"]["skill_digest"] != table["codex_direct"]["skill_digest"]  # covers AGENTS.md
    sent = [json.dumps(r.body) for r in provider.requests]
    with_overlay = [body for body in sent if "MARK-OVERLAY" in body]
    assert len(with_overlay) == 3  # the candidate's three requests; the incumbent's three hold no AGENTS.md
    assert all("# AGENTS.md instructions for /workspace" in body for body in with_overlay)
    assert len(sent) == 6
    transcripts = (out / "cells/agents/codex_terse/run-0/transcripts").glob("*.jsonl")
    tool_output = "".join(path.read_text() for path in transcripts)
    assert "Read-only file system" in tool_output
    assert "AGENTS.md" not in (out / "cells/agents/codex_terse/run-0/patch.diff").read_text()
    assert (
        (json.loads((out / "promotion.json").read_text())["decisions"][0]["candidate_arm"]) == "codex_terse"
    )
