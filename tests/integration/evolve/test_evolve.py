"""`wfbench evolve` end to end, offline: two scripted generations (one promote, one keep_incumbent).

The scripted provider runs as `wfbench provider serve --log` and `wfbench evolve` reaches it
through `--base-url` and the loopback key proxy, so the test reads every request the model
received — cells and proposer alike — from the provider's own log. Arms: `workflow` (evolved),
`baseline` (a comparator whose fix-median runs fail the hidden oracle, so the evidence holds
oracle failures) and `review` (a comparator graded against hidden labels). `--apply` applies
each promoted generation to a clone of the demo repository on a new branch.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import attrs
import pytest

from tests.support.demo_run import WFBENCH, bwrap_or_skip
from tests.support.evolve_kit import CONCISE, EXHAUSTIVE, write_evolve_corpus
from wfbench.adapters.gateway.price_table import builtin_prices
from wfbench.domain.session.records import Usage

MODEL = "claude-sonnet-4-5"


@attrs.frozen
class Evolved:
    corpus: Path
    out: Path
    target: Path
    log: Path
    done: subprocess.CompletedProcess[str]

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in (self.out / "evolution.jsonl").read_text().splitlines()]

    def rows(self, generation: int) -> list[dict[str, Any]]:
        path = self.out / f"gen-{generation:03d}" / "sweep" / "results.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()]

    def requests(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log.read_text().splitlines()]


def _serve(script: Path, log: Path) -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen(
        [*WFBENCH, "provider", "serve", str(script), "--log", str(log)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    url = server.stdout.readline().strip()
    assert url.startswith("http://127.0.0.1:"), (
        url,
        server.stderr.read() if server.poll() is not None else "",
    )
    return server, url


@pytest.fixture(scope="module")
def evolved(tmp_path_factory: pytest.TempPathFactory) -> Evolved:
    bwrap_or_skip()
    root = tmp_path_factory.mktemp("evolve")
    corpus = write_evolve_corpus(root)
    target = root / "target"
    subprocess.run(["git", "clone", "-q", str(corpus.parent / "repo"), str(target)], check=True)
    log = root / "requests.jsonl"
    server, url = _serve(corpus.parent / "provider-evolve.yaml", log)
    try:
        env = {**os.environ, "WFBENCH_ANTHROPIC_API_KEY": "offline-test-key"}
        argv = [
            *WFBENCH,
            "evolve",
            str(corpus),
            "--generations",
            "2",
            "--out",
            str(root / "out"),
            "--arms",
            "workflow,baseline,review",
            "--workers",
            "3",
            "--base-url",
            url,
            "--no-provider-script",
            "--apply",
            str(target),
            "--branch",
            "evolved",
        ]
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1800, check=False)
    finally:
        server.terminate()
        server.wait(30)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return Evolved(corpus, root / "out", target, log, done)


def test_two_generations_promote_then_keep_the_incumbent(evolved: Evolved) -> None:
    """evolution.jsonl: the baseline, a promote, a keep_incumbent, each from the model proposer."""
    records = evolved.records()

    assert [r["outcome"] for r in records] == ["baseline", "promote", "keep_incumbent"]
    for record in records[1:]:
        assert record["candidate_origin"] == "model-proposer"
        assert record["proposer_model"] == MODEL
        assert re.fullmatch(r"[0-9a-f]{64}", record["candidate_overlay_digest"])
        assert record["required_candidate_arms"] == ["candidate_workflow"]
        assert [d["candidate_arm"] for d in record["decisions"]] == ["candidate_workflow"]
    assert records[2]["incumbent_digest"] == records[1]["candidate_overlay_digest"]
    assert "task cap" in " ".join(records[2]["decisions"][0]["reasons"])


def test_the_spend_is_the_sum_of_the_sweeps_metered_cells_and_the_metered_proposer(evolved: Evolved) -> None:
    """Per generation: sweep spend = Σ wire-metered cost of its paid rows; total = that + the proposer's.

    The proposer reached the model through its own metered lease: its cost is the wire's usage at the
    model's prices, which equals what its transcript reports (the lease would have flagged a disagreement).
    """
    prices = builtin_prices().prices_for(MODEL)
    assert prices is not None
    for record in evolved.records():
        rows = evolved.rows(record["generation"])
        paid = [r for r in rows if not r.get("reused")]
        assert paid
        assert all(r["usage_source"] == "wire" for r in paid)
        total = round(sum(r["cost_usd"] for r in paid), 6)
        assert record["spend"]["sweep_usd"] == pytest.approx(total, abs=1e-9)
        assert record["spend"]["unmeasured_cells"] == 0
        if record["generation"] == 0:
            assert record["spend"]["proposer_usd"] == 0.0
            continue
        assert record["spend"]["proposer_source"] == "wire"
        transcript = evolved.out / f"gen-{record['generation']:03d}" / "proposer" / "transcript.jsonl"
        result = [
            json.loads(line) for line in transcript.read_text().splitlines() if '"type":"result"' in line
        ][-1]
        usage = Usage(**{k: result["usage"].get(k) for k in attrs.fields_dict(Usage)})
        assert usage.output_tokens, result
        assert record["spend"]["proposer_usd"] == pytest.approx(prices.cost_usd(usage), abs=1e-9)
        assert record["spend"]["total_usd"] == pytest.approx(total + prices.cost_usd(usage), abs=1e-9)


def test_the_promoted_candidate_is_the_next_generations_incumbent(evolved: Evolved) -> None:
    """Gen 2's workflow cells run the skill gen 1's candidate cells ran; OUT/incumbent holds it."""
    gen1, gen2 = evolved.rows(1), evolved.rows(2)
    candidate = {r["skill_digest"] for r in gen1 if r["arm"] == "candidate_workflow"}
    incumbent = {r["skill_digest"] for r in gen2 if r["arm"] == "workflow"}

    assert candidate == incumbent
    assert len(candidate) == 1
    assert (evolved.out / "incumbent" / ".claude/skills/plan/SKILL.md").read_text() == CONCISE
    gen2_candidate = evolved.out / "gen-002" / "overlay" / ".claude/skills/plan/SKILL.md"
    assert gen2_candidate.read_text() == EXHAUSTIVE


def test_comparator_rows_are_reused_with_a_paid_canary(evolved: Evolved) -> None:
    """Gen 1 reuses 5 of gen 0's 6 incumbent and review rows (the sixth is the paid canary); gen 2 pays
    the new incumbent and reuses 5 of gen 1's review rows. Every sweep measured cleanly: no reply the
    wire could not meter to the end (such a row is never reused)."""
    gen0, gen1, gen2 = evolved.rows(0), evolved.rows(1), evolved.rows(2)

    def cells(rows: list[dict[str, Any]], arm: str, **where: Any) -> set[tuple[str, int]]:
        return {
            (r["task"], r["run"])
            for r in rows
            if r["arm"] == arm and all(r.get(k) == v for k, v in where.items())
        }

    for rows in (gen0, gen1, gen2):
        assert [r for r in rows if r.get("wire_incomplete")] == []
        assert all(r.get("error_kind") != "evidence-unverified" for r in rows)
    for prior, rows, arm in ((gen0, gen1, "workflow"), (gen0, gen1, "review"), (gen1, gen2, "review")):
        reused = cells(rows, arm, reused=True)
        assert len(cells(prior, arm)) == len(cells(rows, arm)) == 6, arm
        assert len(reused) == 5, (arm, reused)  # all but the paid canary
        assert reused <= cells(prior, arm, error_kind=None), arm  # only rows that measured cleanly
    assert not cells(gen1, "candidate_workflow", reused=True)
    assert not cells(gen2, "workflow", reused=True)  # the incumbent changed: its skill digest differs


def test_the_promotion_evidence_names_the_proposer(evolved: Evolved) -> None:
    """Each generation's promotion.json: proposer_model and candidate_origin model-proposer."""
    for generation in (1, 2):
        evidence = json.loads(
            (evolved.out / f"gen-{generation:03d}" / "sweep" / "promotion.json").read_text()
        )
        assert evidence["proposer_model"] == MODEL
        assert evidence["candidate_origin"] == "model-proposer"


def _hidden_strings(corpus: Path) -> list[str]:
    """Strings only the hidden oracles and labels hold: test and class names, label ids, file names."""
    hidden = []
    for path in sorted((corpus.parent / "oracles").iterdir()):
        text = path.read_text()
        hidden += re.findall(r"def (test_\w+)", text) + re.findall(r"class (\w+)", text)
        hidden += re.findall(r'"id": "([^"]+)"', text)
        hidden.append(path.name)
    return sorted(set(hidden))


def test_the_model_never_receives_hidden_oracle_bytes_or_labels(evolved: Evolved) -> None:
    """No request the provider logged — proposer or cell — holds a string of the hidden files.

    Positive controls: the proposer's requests carry the evidence digest it read (with an oracle
    failure of the baseline, shown without its details), and the hidden strings are real.
    """
    hidden = _hidden_strings(evolved.corpus)
    bodies = [json.dumps(request) for request in evolved.requests()]
    proposer = [b for b in bodies if "skill proposer of wfbench evolve" in b]

    assert len(hidden) >= 8, hidden
    assert "percentile-rank" in hidden
    assert len(proposer) >= 6  # three turns per generation
    assert any("Evidence from the last sweep" in b and "oracle-failed" in b for b in proposer)
    assert any("the hidden oracle failed (its output is never shown)" in b for b in proposer)
    leaks = sorted({s for s in hidden for b in bodies if s in b})
    assert leaks == [], leaks


def test_apply_commits_the_promoted_generation_on_a_new_branch(evolved: Evolved) -> None:
    """--apply: gen 1's evidence applied to the clone and committed on `evolved`; gen 2 is not applied."""
    records = evolved.records()
    git = ["git", "-C", str(evolved.target)]

    def out(*args: str) -> str:
        return subprocess.run([*git, *args], capture_output=True, text=True, check=True).stdout

    assert records[1]["applied"]["applied"] is True
    assert records[1]["applied"]["branch"] == "evolved"
    assert records[2]["applied"] is None
    assert out("rev-parse", "--abbrev-ref", "HEAD").strip() == "evolved"
    assert out("show", "HEAD:.claude/skills/plan/SKILL.md") == CONCISE
    assert "Evidence: sha256:" in out("log", "-1", "--format=%B")


def test_running_evolve_again_continues_from_the_history(evolved: Evolved) -> None:
    """A further run on the same OUT with --max-generations 2 stops at once (two proposing generations)."""
    done = subprocess.run(
        [
            *WFBENCH,
            "evolve",
            str(evolved.corpus),
            "--generations",
            "1",
            "--out",
            str(evolved.out),
            "--arms",
            "workflow,baseline,review",
            "--max-generations",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )

    assert done.returncode == 0, done.stderr[-2000:]
    assert "stopping: reached --max-generations 2" in done.stdout
    assert len(evolved.records()) == 3


def test_max_cost_is_each_sweeps_budget_and_stops_the_loop(tmp_path: Path) -> None:
    """--max-cost: the baseline sweep gets the whole budget as its own --max-cost (metered at the wire,
    it stops issuing cells once spent), and no proposing generation starts after it."""
    bwrap_or_skip()
    corpus = write_evolve_corpus(tmp_path)
    out = tmp_path / "out"
    done = subprocess.run(
        [
            *WFBENCH,
            "evolve",
            str(corpus),
            "--generations",
            "2",
            "--out",
            str(out),
            "--arms",
            "workflow,baseline,review",
            "--workers",
            "1",
            "--max-cost",
            "0.0001",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )

    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    records = [json.loads(line) for line in (out / "evolution.jsonl").read_text().splitlines()]
    assert [r["outcome"] for r in records] == ["baseline"]
    assert records[0]["spend"]["total_usd"] >= 0.0001
    assert "stopping: spent $" in done.stdout
    assert "--max-cost $0.0001 budget" in done.stdout
    rows = (out / "gen-000" / "sweep" / "results.jsonl").read_text().splitlines()
    assert "[max-cost]" in done.stdout + done.stderr
    assert len(rows) == 1  # one worker: the first cell spent the budget, no other cell started
    assert not (out / "gen-001").exists()


def test_ctrl_c_ends_the_loop_with_130_and_the_next_run_redoes_the_generation(tmp_path: Path) -> None:
    """SIGINT during the baseline sweep: the sweep is cancelled, the loop stops (exit 130) without a
    record for the interrupted generation, and the next run moves its directory aside and redoes it."""
    bwrap_or_skip()
    corpus = write_evolve_corpus(tmp_path)
    out = tmp_path / "out"
    argv = [
        *WFBENCH,
        "evolve",
        str(corpus),
        "--generations",
        "2",
        "--out",
        str(out),
        "--arms",
        "workflow,baseline,review",
        "--workers",
        "1",
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    running = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert running.stdout is not None
    seen = []
    for line in running.stdout:
        seen.append(line)
        if "generation 0: measuring" in line:
            break
    time.sleep(3)
    running.send_signal(signal.SIGINT)
    rest, stderr = running.communicate(timeout=600)

    assert running.returncode == 130, "".join(seen) + rest + stderr
    assert "[evolve] cancelled" in rest
    assert not (out / "evolution.jsonl").exists() or not (out / "evolution.jsonl").read_text()
    assert not (out / "gen-001").exists()

    again = subprocess.run(
        [*argv, "--max-cost", "0.0001"], capture_output=True, text=True, timeout=600, check=False
    )

    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    assert (out / "gen-000.interrupted-1").is_dir()
    records = [json.loads(line) for line in (out / "evolution.jsonl").read_text().splitlines()]
    assert [r["outcome"] for r in records] == ["baseline"]
