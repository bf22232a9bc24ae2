"""``--max-cost`` and ``network: host`` through ``python -m wfbench run`` (stand-in agent, bwrap).

The budget is checked against the spend the key proxy metered at the wire, priced with the pinned
model's prices (claude-sonnet-4-5: $3 input, $15 output per million tokens). A cell past the
budget has its next model request refused (its row is ``cancelled``: ``--resume`` runs it again);
no cell starts after it; report.md, the sweep's note and ``wfbench.log`` say so. The control is
the same corpus without a budget: every cell runs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.support.sweep_kit import (
    base_files,
    bwrap_or_skip,
    impl_task,
    make_repo,
    rows,
    rule,
    run_sweep,
    tell,
    write_corpus,
)

#: $0.003 per turn at claude-sonnet-4-5 prices.
TURN = {"usage": {"input_tokens": 1000, "output_tokens": 0}}
TASKS = ("first", "second", "third")


def _corpus(root: Path, **task_extra: Any) -> Path:
    make_repo(root, base_files(skills=()))
    three_turns = [dict(TURN, tools=[{"name": "Bash", "input": {"command": "true"}}])] * 2 + [
        dict(TURN, say="done")
    ]
    script = {"conversations": [rule(t, *three_turns) for t in TASKS]}
    return write_corpus(root, [impl_task(t, oracle="true", **task_extra) for t in TASKS], script)


def test_max_cost_refuses_requests_past_the_budget_and_starts_no_more_cells(tmp_path: Path) -> None:
    bwrap_or_skip()
    corpus = _corpus(tmp_path)
    out = tmp_path / "out"
    done = run_sweep(corpus, out, "--arms", "baseline", "--workers", "1", "--max-cost", "0.005")
    assert done.returncode == 1, tell(done)
    found = rows(out)
    assert [r["task"] for r in found] == ["first"]  # no cell started after the budget was reached
    row = found[0]
    assert (row["error_kind"], row["resolved"]) == ("cancelled", False), row
    assert "stopped by --max-cost" in row["error_detail"]
    assert row["wire_requests"] == 2  # the third request was refused, never forwarded
    assert [r["kind"] for r in row["wire_refusals"]] == ["budget"]
    assert row["cost_usd"] == pytest.approx(0.006)
    assert "[max-cost] metered spend $0.0060 of $0.0050 reached the --max-cost budget" in done.stdout
    assert "  stopped by --max-cost: cells were held back; partial evidence cannot promote" in done.stdout
    assert "  spent: $0.0060; metered at the wire this run: $0.0060 of $0.0050" in done.stdout  # the summary
    assert "interrupted after" not in done.stdout  # nobody cancelled it
    report = (out / "report.md").read_text()
    assert "Sweep stopped by --max-cost (metered spend $0.0060 of $0.0050)" in report
    wire = "from usage metered at the wire by the key proxy, at the pinned model's prices"
    assert f"- Total spend: $0.0060 over 1 cell(s), {wire}" in report
    events = [json.loads(line) for line in (out / "wfbench.log").read_text().splitlines()]
    finished = [e for e in events if e["event"] == "sweep_finished"][-1]
    assert finished["max_cost_reached"] is True
    assert finished["metered_spend_usd"] == pytest.approx(0.006)


def test_without_a_budget_the_same_corpus_runs_every_cell(tmp_path: Path) -> None:
    """The control: nothing but the budget stopped the sweep above."""
    bwrap_or_skip()
    corpus = _corpus(tmp_path)
    out = tmp_path / "out"
    done = run_sweep(corpus, out, "--arms", "baseline", "--workers", "1")
    assert done.returncode == 0, tell(done)
    assert [(r["task"], r["error_kind"], r["cost_usd"]) for r in rows(out)] == [
        (t, None, pytest.approx(0.009)) for t in TASKS
    ]
    report = (out / "report.md").read_text()
    assert "- Total spend: $0.0270 over 3 cell(s), from usage metered at the wire by the key proxy" in report


def test_a_budget_for_an_unpriced_model_is_refused_before_any_session(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path)
    out = tmp_path / "out"
    done = run_sweep(corpus, out, "--arms", "baseline", "--max-cost", "1", "--model", "my-own-model")
    assert done.returncode == 2, tell(done)
    assert "--max-cost" in done.stderr
    assert "no prices are known for model my-own-model" in done.stderr
    assert not (out / "results.jsonl").exists() or rows(out) == []


def test_network_host_is_refused_under_ci_unless_allowed(tmp_path: Path) -> None:
    bwrap_or_skip()
    corpus = _corpus(tmp_path, network="host")
    env = {**os.environ, "CI": "1"}
    refused = run_sweep(corpus, tmp_path / "refused", "--arms", "baseline", env=env)
    assert refused.returncode == 2, tell(refused)
    assert "network: host" in refused.stderr
    assert "--allow-host-network" in refused.stderr
    allowed = run_sweep(corpus, tmp_path / "allowed", "--arms", "baseline", "--allow-host-network", env=env)
    assert allowed.returncode == 0, tell(allowed)
    assert "WARNING: task first, task second, task third use network: host" in allowed.stdout
    assert {r["network"] for r in rows(tmp_path / "allowed")} == {"host"}
