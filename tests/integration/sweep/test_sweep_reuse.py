"""Sweeps that start from an earlier sweep: `--reuse-results`, `--resume`, and the re-gate of its
rows with `wfbench gate` / `wfbench report` (subprocesses of the `wfbench` command)."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.demo_run import DEMO_CELLS, IMPL_TASKS, legacy_copy, row, rows, wfbench
from wfbench.app.sweep.reuse_plan import expected_durations
from wfbench.domain.results.aggregation import aggregate
from wfbench.domain.results.rows import Row
from wfbench.domain.sweep.scheduling import Cell, longest_first

TIMING = ("duration", "wall", "recorded_at", "generated_at", "expires_at")

#: Rows an interrupted sweep keeps in the resume tests: all but the last 8 cells.
KEPT = DEMO_CELLS - 8


def _untimed(value: Any) -> Any:
    """``value`` without timestamps and durations (the only things a rerun may change)."""
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if not any(t in k for t in TIMING)}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def _aggregates(out: Path) -> dict[str, Any]:
    table = aggregate([Row.from_mapping(r) for r in rows(out)])
    return {f"{task}/{arm}": _untimed(agg.to_mapping()) for (task, arm), agg in table.items()}


def _decisions(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text())["decisions"]


def _fresh_cells(out: Path) -> int:
    """Cells that really ran in this sweep (each logs one ``cell_finished`` event)."""
    events = [json.loads(line) for line in (out / "wfbench.log").read_text().splitlines()]
    return sum(1 for e in events if e.get("event") == "cell_finished")


def test_a_second_sweep_reuses_incumbent_rows_keeps_one_paid_canary_and_always_runs_candidates(
    demo_out, tmp_path
):
    """--reuse-results: workflow and review rows (clean controls too) are carried forward with their
    transcripts, one cell per incumbent arm stays paid, candidates and baseline run, same decision.
    The dry run of the same command said so beforehand: the same reuse count, and its estimate is
    what the fresh cells then cost."""
    prior, first = demo_out
    assert first.returncode == 0
    out = tmp_path / "again"
    dry = wfbench("run", "--out", str(out), "--workers", "3", "--reuse-results", str(prior), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    fresh = DEMO_CELLS - 19
    assert (
        f"{DEMO_CELLS} planned, 0 already have a row (resume), 19 reused from {prior}, {fresh} to run"
        in dry.stdout
    )
    estimate = re.search(rf"estimated spend: \$([0-9.]+) for {fresh} cell\(s\)", dry.stdout)
    assert estimate, dry.stdout
    done = wfbench("run", "--out", str(out), "--workers", "3", "--reuse-results", str(prior))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert (
        "reuse-results: keeping one paid workflow cell (add-clamp run 0) so incumbent health is"
        " measured this sweep" in done.stdout
    )
    assert (
        "reuse-results: keeping one paid review cell (review-pr-41 run 0) so incumbent health is"
        " measured this sweep" in done.stdout
    )
    assert f"reuse-results {prior}: 19 comparator cell(s) match this sweep; candidate arms always run" in (
        done.stdout
    )
    kept = rows(out)
    assert len(kept) == len(rows(prior)) == DEMO_CELLS
    reused = [r for r in kept if r.get("reused")]
    workflow = [(t, "workflow", run) for t in IMPL_TASKS for run in range(3) if (t, run) != ("add-clamp", 0)]
    reviews = [("review-pr-41", "review", 1), ("review-pr-41", "review", 2)]
    reviews += [("review-pr-42", "review", run) for run in range(3)]
    assert sorted((r["task"], r["arm"], r["run"]) for r in reused) == sorted(workflow + reviews)
    assert all(r["review_clean_control"] is True for r in reused if r["task"] == "review-pr-42")
    assert row(out, "add-clamp", "workflow", 0).get("reused") is not True
    assert row(out, "review-pr-41", "review", 0).get("reused") is not True
    assert _fresh_cells(out) == DEMO_CELLS - 19 < _fresh_cells(prior)
    fresh_spend = sum(r["cost_usd"] for r in kept if not r.get("reused"))
    # Within 1 %: the demo jitters usage per cell; the estimate prices the planned cells from prior rows.
    assert float(estimate.group(1)) == pytest.approx(fresh_spend, rel=0.01)
    for r in reused:
        original = row(prior, r["task"], r["arm"], r["run"])
        assert r["reused_from_recorded_at"] == original["recorded_at"]
        assert r["session_ids"] == original["session_ids"]
        for artifact in r["transcript_artifacts"]:
            data = (out / artifact["path"]).read_bytes()
            assert hashlib.sha256(data).hexdigest() == artifact["sha256"]
    assert all(not r.get("reused") for r in kept if r["arm"] in ("candidate_workflow", "baseline"))
    assert (out / "cells/review-pr-41/review/run-1/review.json").is_file()
    assert (out / "cells/review-pr-42/review/run-0/review.json").read_bytes() == (
        prior / "cells/review-pr-42/review/run-0/review.json"
    ).read_bytes()
    assert (out / "cells/fix-median/workflow/run-2/patch.diff").read_bytes() == (
        prior / "cells/fix-median/workflow/run-2/patch.diff"
    ).read_bytes()
    assert [d["decision"] for d in _decisions(out / "promotion.json")] == ["promote"]
    fresh = [(r["task"], r["arm"], r["run"]) for r in kept if not r.get("reused")]
    canonical = sorted(fresh, key=[(r["task"], r["arm"], r["run"]) for r in rows(prior)].index)
    durations = expected_durations(Row.from_mapping(r) for r in rows(prior))
    assert fresh == [c.key for c in longest_first([Cell(*key) for key in canonical], durations)]


def test_an_artifact_that_drifted_since_it_was_recorded_sends_the_cell_to_a_paid_run(demo_out, tmp_path):
    """A transcript whose bytes no longer match its row is not copied: the cell runs; nothing is left.

    With one review run per task, review-pr-41 run 0 is the paid canary, so the tampered transcript
    is that of the only cell reuse would copy: the clean control review-pr-42 run 0.
    """
    prior, _ = demo_out
    tampered = tmp_path / "prior"
    shutil.copytree(prior, tampered, ignore=shutil.ignore_patterns("demo-corpus"))
    original = row(prior, "review-pr-42", "review", 0)
    transcript = tampered / original["transcript_artifacts"][0]["path"]
    before = transcript.read_bytes()
    transcript.write_bytes(before.replace(b"review", b"REVIEW", 1))
    assert transcript.read_bytes() != before
    out = tmp_path / "out"
    done = wfbench(
        "run", "--arms", "review", "--runs", "1", "--out", str(out), "--reuse-results", str(tampered)
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert (
        "reuse-results: keeping one paid review cell (review-pr-41 run 0) so incumbent health is"
        " measured this sweep" in done.stdout
    )
    assert f"reuse-results {tampered}: 1 comparator cell(s) match this sweep" in done.stdout
    assert "[review-pr-42][review][run 0] comparator reuse failed (" in done.stdout
    assert "drifted" in done.stdout
    assert "; running a paid cell" in done.stdout
    assert "reused comparator" not in done.stdout
    assert not any(r.get("reused") for r in rows(out))
    assert _fresh_cells(out) == 2
    assert not list(out.rglob("*.reuse-tmp"))


def test_a_prior_sweep_in_the_legacy_flat_layout_is_reused_into_the_cell_directories(demo_out, tmp_path):
    """Reuse reads a pre-`cells/` sweep (flat patches, reviews, transcripts) and writes the new layout.

    The reused rows name their files under ``cells/<task>/<arm>/run-<i>/``, the bytes are the prior
    ones (transcripts re-checked by sha256), and nothing lands flat in the new sweep's root.
    """
    prior = legacy_copy(demo_out[0], tmp_path / "legacy")
    assert (prior / "review-pr-42-review-run0.review.json").is_file()
    assert not (prior / "cells").exists()
    out = tmp_path / "out"
    done = wfbench("run", "--out", str(out), "--workers", "3", "--reuse-results", str(prior))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    reused = [r for r in rows(out) if r.get("reused")]
    assert len(reused) == 19  # as in the cells layout: every comparator cell but one canary per arm
    for r in reused:
        own = f"cells/{r['task']}/{r['arm']}/run-{r['run']}/"
        for artifact in r["transcript_artifacts"]:
            assert artifact["path"].startswith(own + "transcripts/")
            assert hashlib.sha256((out / artifact["path"]).read_bytes()).hexdigest() == artifact["sha256"]
        if r["arm"] == "review":
            assert r["review_artifact"] == own + "review.json"
            legacy = prior / row(prior, r["task"], r["arm"], r["run"])["review_artifact"]
            assert (out / r["review_artifact"]).read_bytes() == legacy.read_bytes()
        else:
            assert (out / own / "patch.diff").read_bytes() == (
                prior / f"{r['task']}-{r['arm']}-run{r['run']}.patch"
            ).read_bytes()
    assert not list(out.glob("*.patch"))
    assert not list(out.glob("*.review.json"))
    assert not (out / "transcripts").exists()
    assert [d["decision"] for d in _decisions(out / "promotion.json")] == ["promote"]


def test_a_changed_binding_reuses_nothing(demo_out, tmp_path):
    """A small review sweep reuses the clean-control row under the prior model and nothing under another.

    Both review rows are reusable under the prior model, so review-pr-41 run 0 (the arm's first cell)
    stays paid as the canary; under another model nothing matches, so no canary is needed.
    """
    prior, _ = demo_out
    same = wfbench(
        "run",
        "--arms",
        "review",
        "--runs",
        "1",
        "--out",
        str(tmp_path / "same"),
        "--reuse-results",
        str(prior),
    )
    assert same.returncode == 0, same.stderr[-2000:]
    assert "keeping one paid review cell (review-pr-41 run 0)" in same.stdout
    assert "1 comparator cell(s) match" in same.stdout
    assert [r["task"] for r in rows(tmp_path / "same") if r.get("reused")] == ["review-pr-42"]
    assert _fresh_cells(tmp_path / "same") == 1
    other = wfbench(
        "run",
        "--arms",
        "review",
        "--runs",
        "1",
        "--model",
        "claude-opus-4-1",
        "--out",
        str(tmp_path / "other"),
        "--reuse-results",
        str(prior),
    )
    assert other.returncode == 0, other.stderr[-2000:]
    assert "0 comparator cell(s) match" in other.stdout
    assert "keeping one paid" not in other.stdout
    assert not any(r.get("reused") for r in rows(tmp_path / "other"))
    assert _fresh_cells(tmp_path / "other") == 2


def test_a_tasks_changed_memory_limit_reruns_its_cells_and_reuses_the_others(demo_out, tmp_path):
    """limits.memory added to fix-median: its demo rows (measured without it) rerun; add-mode's are reused.

    Two runs each: without the change, every cell but the arm's one paid canary would be reused.
    """
    from wfbench.demo import materialize

    prior, _ = demo_out
    corpus = Path(materialize(str(tmp_path / "demo")))
    spec = yaml.safe_load(corpus.read_text())
    for task in spec["tasks"]:
        if task["id"] == "fix-median":
            task["limits"] = {"memory": "1G"}
    corpus.write_text(yaml.safe_dump(spec, sort_keys=False))
    out = tmp_path / "out"
    select = ("--tasks", "fix-median,add-mode", "--arms", "workflow", "--runs", "2", "--workers", "2")
    done = wfbench("run", str(corpus), "--out", str(out), *select, "--reuse-results", str(prior))
    assert done.returncode == 0, done.stderr[-2000:]
    reused = sorted((r["task"], r["run"]) for r in rows(out) if r.get("reused"))
    assert reused == [("add-mode", 0), ("add-mode", 1)]
    assert all(r["task_limits_digest"] for r in rows(out) if r["task"] == "fix-median")
    assert _fresh_cells(out) == 2


def test_reuse_refuses_its_own_output_directory_and_a_directory_without_results(demo_out, tmp_path):
    """--reuse-results naming --out, or a directory with no results.jsonl, is a usage error (exit 2)."""
    prior, _ = demo_out
    own = wfbench("run", "--out", str(prior), "--reuse-results", str(prior), timeout=60)
    assert own.returncode == 2
    assert "--reuse-results: must not be the sweep's own --out directory" in own.stderr
    empty = wfbench("run", "--out", str(tmp_path / "o"), "--reuse-results", str(tmp_path), timeout=60)
    assert empty.returncode == 2
    assert "holds no regular results.jsonl" in empty.stderr


def test_a_resumed_sweep_ends_with_the_same_aggregates_and_decisions_as_an_uninterrupted_one(
    demo_out, tmp_path
):
    """An interrupted sweep (all but its last 8 rows kept) resumed in place runs only the missing cells."""
    prior, _ = demo_out
    out = tmp_path / "interrupted"
    shutil.copytree(prior, out)
    lines = (out / "results.jsonl").read_text().splitlines(keepends=True)
    (out / "results.jsonl").write_text("".join(lines[:KEPT]))
    (out / "promotion.json").unlink()
    (out / "wfbench.log").unlink()
    done = wfbench("run", "--resume", str(out), "--workers", "3")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert _fresh_cells(out) == DEMO_CELLS - KEPT == 8
    assert sorted((r["task"], r["arm"], r["run"]) for r in rows(out)) == sorted(
        (r["task"], r["arm"], r["run"]) for r in rows(prior)
    )
    assert _aggregates(out) == _aggregates(prior)
    assert _untimed(_decisions(out / "promotion.json")) == _untimed(_decisions(prior / "promotion.json"))


def test_an_interrupted_sweep_in_the_legacy_layout_resumes_with_the_same_aggregates(demo_out, tmp_path):
    """--resume of a pre-`cells/` sweep keeps its flat artifacts; the missing cells write under cells/."""
    prior, _ = demo_out
    out = legacy_copy(prior, tmp_path / "interrupted")
    lines = (out / "results.jsonl").read_text().splitlines(keepends=True)
    (out / "results.jsonl").write_text("".join(lines[:KEPT]))
    (out / "promotion.json").unlink()
    (out / "wfbench.log").unlink()
    done = wfbench("run", "--resume", str(out), "--workers", "3")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert _fresh_cells(out) == DEMO_CELLS - KEPT == 8
    assert _aggregates(out) == _aggregates(prior)
    assert _untimed(_decisions(out / "promotion.json")) == _untimed(_decisions(prior / "promotion.json"))
    resumed = rows(out)[KEPT:]
    assert all(
        a["path"].startswith(f"cells/{r['task']}/{r['arm']}/run-{r['run']}/transcripts/")
        for r in resumed
        for a in r["transcript_artifacts"]
    )
    kept = rows(out)[:KEPT]
    assert all(a["path"].startswith("transcripts/") for r in kept for a in r["transcript_artifacts"])


def test_wfbench_gate_of_the_demo_results_gives_the_decisions_of_its_promotion_json(demo_out, tmp_path):
    """Re-gating results.jsonl alone reproduces promotion.json's decisions; `report` rewrites both reports."""
    prior, _ = demo_out
    shutil.copy(prior / "results.jsonl", tmp_path / "results.jsonl")
    # Rows alone do not say which rule decided; the demo's is the default one (statistical).
    out = str(tmp_path / "promotion.json")
    gated = wfbench("gate", str(tmp_path), "--json", "--out", out, timeout=60)
    assert gated.returncode == 0, gated.stderr
    printed = [(d["candidate_arm"], d["decision"]) for d in json.loads(gated.stdout)["decisions"]]
    assert printed == [(d["candidate_arm"], d["decision"]) for d in _decisions(prior / "promotion.json")]
    assert _decisions(tmp_path / "promotion.json") == _decisions(prior / "promotion.json")
    report = wfbench("report", str(tmp_path), timeout=60)
    assert report.returncode == 0, report.stderr
    assert "candidate_workflow" in (tmp_path / "report.md").read_text()
    html = (tmp_path / "report.html").read_text()
    assert "<svg" in html
    assert "promote" in html
