"""`wfbench gate` and `wfbench report` as real subprocesses over results.jsonl files."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from wfbench.domain.promotion.evidence_parts import evidence_from_parts

DIGEST = "0123456789abcdef" * 4


def wfbench(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "wfbench", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def reference_row(task: str, arm: str, run: int, **fields: Any) -> dict[str, Any]:
    """A measured row in the reference harness's full shape (scheduler_tasks.md §5.1)."""
    row: dict[str, Any] = {
        "input_tokens": 1200,
        "cache_creation_input_tokens": 300,
        "cache_read_input_tokens": 9000,
        "output_tokens": 400,
        "cost_usd": 0.5,
        "duration_s": 60.0,
        "num_turns": 10,
        "ok": True,
        "session_ids": [f"s-{task}-{arm}-{run}"],
        "error_kind": None,
        "error_detail": None,
        "skill_invoked": True,
        "transcript_missing": False,
        "transcript_artifacts": [
            {
                "path": f"transcripts/{task}-{arm}-run{run}.jsonl",
                "sha256": DIGEST,
                "bytes": 10,
                "source": "parent-captured-stream-json",
            }
        ],
        "evidence_diagnostics": [],
        "gitnexus_tool_uses": 2,
        "tool_use_counts": {"Read": 3},
        "plan_produced": True,
        "authored_tests_passed": True,
        "authored_test_output": "ok",
        "verify_output": "ok",
        "oracle_passed": True,
        "oracle_output": "",
        "resolved": True,
        "diff_files": 2,
        "diff_insertions": 10,
        "diff_deletions": 3,
        "arm": arm,
        "model": "claude-pinned-1",
        "benchmark_model": "claude-pinned-1",
        "proposer_model": None,
        "effort": "xhigh",
        "task_ref": "v1",
        "task_base_sha": "a" * 40,
        "sanitized_task_sha": "b" * 40,
        "variant_head_sha": "c" * 40,
        "task_prompt_digest": DIGEST,
        "skill_digest": DIGEST,
        "runtime_digest": DIGEST,
        "recorded_at": "2026-01-01T00:00:00+00:00",
        "task": task,
        "class": "bugfix",
        "run": run,
        "sandbox_backend": "bwrap",
        "task_asset_snapshot_digest": DIGEST,
        "task_asset_manifest_digest": DIGEST,
        "sandbox_dependency_content_digest": DIGEST,
        "sandbox_dependency_manifest_digest": DIGEST,
        "sanitized_graph_snapshot_digest": None,
        "sanitized_graph_manifest_digest": None,
        "oracle_digest": DIGEST,
        "oracle_command_digest": DIGEST,
        "oracle_manifest_digest": DIGEST,
        "ce_plugin_version": None,
        "ce_plugin_manifest_digest": None,
    }
    if arm.startswith("candidate_"):
        row["candidate_overlay_digest"] = "d" * 64
    row.update(fields)
    return row


def write_results(directory: Path, rows: list[dict[str, Any]]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "results.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def promoting_rows() -> list[dict[str, Any]]:
    rows = [reference_row("task-a", "workflow", run, cost_usd=1.0) for run in range(3)]
    rows += [reference_row("task-a", "candidate_workflow", run, cost_usd=0.5) for run in range(3)]
    rows += [reference_row("task-a", "baseline", run, cost_usd=0.8) for run in range(3)]
    return rows


def test_gate_prints_the_decisions_and_writes_nothing_by_default(tmp_path: Path) -> None:
    """Human text names the decision; the sweep directory is left exactly as it was."""
    write_results(tmp_path, promoting_rows())
    before = sorted(p.name for p in tmp_path.iterdir())

    text = wfbench("gate", tmp_path, "--policy", "reference")

    assert text.returncode == 0, text.stderr
    assert "decision: candidate_workflow vs workflow (implementation, cost_usd): PROMOTE" in text.stdout
    assert "median cost_usd improvement is 50.0% (required 5.0%)" in text.stdout
    assert "task-a  baseline: 3/3" in text.stdout
    assert "wrote" not in text.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_gate_json_prints_the_evidence_less_its_task_detail_which_tasks_out_writes(tmp_path: Path) -> None:
    """--json prints the summary, --out FILE writes the whole evidence, --tasks-out FILE the task
    lines; the summary and the lines read back into exactly the evidence written."""
    write_results(tmp_path, promoting_rows())
    target, tasks = tmp_path / "regated.json", tmp_path / "tasks.jsonl"

    printed = wfbench(
        *("gate", tmp_path / "results.jsonl", "--json", "--policy", "reference"),
        *("--out", target, "--tasks-out", tasks),
    )

    assert printed.returncode == 0, printed.stderr
    written, summary = json.loads(target.read_text()), json.loads(printed.stdout)
    assert written["schema_version"] == 6
    assert (summary["schema"], summary["decisions"][0]["decision"]) == ("wfbench.gate/v1", "promote")
    assert "tasks" not in summary["decisions"][0]
    assert written["benchmark_model"] == "claude-pinned-1"
    lines = [json.loads(line) for line in tasks.read_text().splitlines()]
    assert evidence_from_parts(summary, lines).to_mapping() == written


def test_a_reference_shaped_results_file_is_regated_as_is(tmp_path: Path) -> None:
    """A results.jsonl in the reference's shape, infra-error and review rows included, re-gates."""
    rows = promoting_rows()
    infra = {
        "task": "task-b",
        "arm": "workflow",
        "run": 0,
        "class": "bugfix",
        "ok": False,
        "resolved": False,
        "error_kind": "infra-error",
        "error_detail": "clone failed",
        "input_tokens": 0,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": 0,
        "session_ids": [],
        "cost_usd": 0.0,
        "duration_s": 0.0,
        "num_turns": 0,
        "plan_produced": False,
        "authored_tests_passed": False,
        "oracle_passed": False,
        "authored_test_output": "",
        "oracle_output": "",
        "skill_invoked": None,
        "transcript_missing": False,
        "sandbox_backend": "bwrap",
        "oracle_digest": DIGEST,
    }
    review = {
        "review_score": {"weighted_f1": 0.8},
        "review_evidence_valid": True,
        "review_artifact": "x.review.json",
        "review_weighted_f1": 0.8,
        "review_blocker_recall": 1.0,
        "review_false_positives": 0,
        "review_verdict_correct": True,
        "review_clean_control": False,
        "review_clean_pass": False,
    }
    rows.append(infra)
    rows += [reference_row("case-1", "review", r, **dict(review, review_weighted_f1=0.6)) for r in range(3)]
    rows += [reference_row("case-1", "candidate_review", r, **review) for r in range(3)]
    write_results(tmp_path, rows)

    result = wfbench("gate", tmp_path, "--json", "--out", tmp_path / "evidence.json")

    assert result.returncode == 0, result.stderr
    evidence = json.loads((tmp_path / "evidence.json").read_text())
    decisions = {d["candidate_arm"]: d for d in json.loads(result.stdout)["decisions"]}
    assert decisions["candidate_review"]["decision"] == "promote"
    assert decisions["candidate_workflow"]["decision"] == "insufficient_evidence"
    assert any(
        "task-b: both workflow and candidate_workflow" in r
        for r in decisions["candidate_workflow"]["reasons"]
    )
    task_a = next(task for task in evidence["selected_tasks"] if task["id"] == "task-a")
    assert task_a["oracle_digest"] == DIGEST
    assert evidence["candidate_overlay_digest"] == "d" * 64
    generated = dt.datetime.fromisoformat(evidence["generated_at"])
    assert dt.datetime.fromisoformat(evidence["evidence_expires_at"]) - generated == dt.timedelta(days=90)


def test_an_invalid_line_exits_2_naming_the_file_line_and_field(tmp_path: Path) -> None:
    """A bad field on line 2: one line on stderr naming file, line and field; nothing written."""
    rows = promoting_rows()
    rows[1]["cost_usd"] = "cheap"
    path = write_results(tmp_path, rows)

    result = wfbench("gate", tmp_path)

    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"wfbench: error: {path}: line 2: cost_usd: must be a finite non-negative number or null"
    ]
    assert not (tmp_path / "promotion.json").exists()


def test_a_torn_last_line_exits_2_naming_its_line(tmp_path: Path) -> None:
    """A row cut mid-write is refused, never skipped."""
    path = write_results(tmp_path, promoting_rows())
    with path.open("a") as handle:
        handle.write('{"task": "task-a", "arm": "work')

    result = wfbench("report", path)

    assert result.returncode == 2
    assert f"{path}: line 10:" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "report.md").exists()


def test_a_directory_without_results_exits_2(tmp_path: Path) -> None:
    """No results.jsonl in the directory: exit 2 naming it."""
    result = wfbench("gate", tmp_path)

    assert result.returncode == 2
    assert str(tmp_path) in result.stderr
    assert "results.jsonl" in result.stderr


def test_a_bad_policy_option_exits_2_naming_the_option(tmp_path: Path) -> None:
    """--metric must be one of the four promotion metrics, and the error lists them."""
    write_results(tmp_path, promoting_rows())

    result = wfbench("gate", tmp_path, "--metric", "vibes")

    assert result.returncode == 2
    assert result.stderr.strip() == (
        "wfbench: error: wfbench gate: Invalid value for '--metric': 'vibes' is not one of 'cost_usd',"
        " 'output_tokens', 'duration_s', 'num_turns'."
    )


def test_missing_cost_renders_as_n_a_in_the_report(tmp_path: Path) -> None:
    """A null cost is n/a in report.md, never 0."""
    rows = promoting_rows()
    for row in rows:
        if row["arm"] == "workflow":
            row["cost_usd"] = None
    write_results(tmp_path, rows)

    result = wfbench("report", tmp_path)

    assert result.returncode == 0, result.stderr
    report = (tmp_path / "report.md").read_text()
    workflow_line = next(
        line for line in report.splitlines() if line.startswith("| task-a | bugfix | workflow |")
    )
    assert workflow_line.split(" | ")[4] == "n/a"  # the median cost column
    paired = next(line for line in report.splitlines() if line.startswith("| task-a | bugfix | 3/3 |"))
    assert paired.split(" | ")[4] == "n/a"  # the incumbent's cost in the paired table
    assert "$0.0000" not in workflow_line
    assert "## Measurement health" in report
    assert "cost_usd was not measured on every run" in report
    assert report.endswith("\n")


def test_custom_pairs_are_gated_and_no_candidates_write_nothing(tmp_path: Path) -> None:
    """--pair gates any arms; without a candidate arm nothing is written."""
    rows = [reference_row("t", "mine", r, cost_usd=1.0) for r in range(3)]
    rows += [reference_row("t", "mine_v2", r, cost_usd=0.5) for r in range(3)]
    write_results(tmp_path, rows)

    nothing = wfbench("gate", tmp_path, "--out", tmp_path / "promotion.json")
    assert nothing.returncode == 0
    assert "nothing to gate" in nothing.stdout
    assert not (tmp_path / "promotion.json").exists()

    paired = wfbench("gate", tmp_path, "--pair", "mine_v2=mine", "--json", "--policy", "reference")
    assert paired.returncode == 0, paired.stderr
    assert json.loads(paired.stdout)["decisions"][0]["decision"] == "promote"

    bad = wfbench("gate", tmp_path, "--pair", "mine_v2")
    assert bad.returncode == 2
    assert "--pair" in bad.stderr


def _sweep_evidence(directory: Path, generated_at: str) -> Path:
    """A sweep's own promotion.json, as ``wfbench run`` left it."""
    evidence = directory / "promotion.json"
    evidence.write_text(json.dumps({"generated_at": generated_at, "decisions": [], "schema_version": 6}))
    return evidence


def test_gate_never_overwrites_the_sweeps_evidence_without_force(tmp_path: Path) -> None:
    """--out at the sweep's promotion.json is refused (exit 2, file untouched); --force writes it."""
    write_results(tmp_path, promoting_rows())
    evidence = _sweep_evidence(tmp_path, "2026-01-02T00:00:00+00:00")
    original = evidence.read_bytes()

    refused = wfbench("gate", tmp_path, "--out", evidence)

    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        f"wfbench: error: {evidence}: --out: is the sweep's own evidence; refusing to overwrite it"
        " without --force"
    ]
    assert evidence.read_bytes() == original

    forced = wfbench("gate", tmp_path, "--out", evidence, "--force", "--policy", "reference")

    assert forced.returncode == 0, forced.stderr
    assert json.loads(evidence.read_text())["decisions"][0]["decision"] == "promote"


@pytest.mark.parametrize("option", ["--out", "--tasks-out"])
def test_gate_refuses_any_existing_out_file_without_force(tmp_path: Path, option: str) -> None:
    """An unrelated existing file is not overwritten either, by the evidence or the task lines."""
    write_results(tmp_path, promoting_rows())
    other = tmp_path / "notes.json"
    other.write_text("keep me")

    refused = wfbench("gate", tmp_path, option, other)

    assert refused.returncode == 2
    assert f"{other}: {option}: already exists; refusing to overwrite it without --force" in refused.stderr
    assert other.read_text() == "keep me"


def test_a_regate_keeps_the_evidence_time_of_the_sweep(tmp_path: Path) -> None:
    """generated_at (and the 90-day expiry) come from the sweep's promotion.json, not the clock."""
    write_results(tmp_path, promoting_rows())
    _sweep_evidence(tmp_path, "2026-01-02T03:04:05+00:00")

    printed = wfbench("gate", tmp_path, "--json")

    evidence = json.loads(printed.stdout)
    assert evidence["generated_at"] == "2026-01-02T03:04:05+00:00"
    assert evidence["evidence_expires_at"] == "2026-04-02T03:04:05+00:00"


def test_without_sweep_evidence_the_newest_row_dates_the_evidence(tmp_path: Path) -> None:
    """No promotion.json: the newest recorded_at of the rows is the evidence's time."""
    rows = promoting_rows()
    rows[4]["recorded_at"] = "2026-03-01T12:00:00+00:00"
    write_results(tmp_path, rows)

    evidence = json.loads(wfbench("gate", tmp_path, "--json").stdout)

    assert evidence["generated_at"] == "2026-03-01T12:00:00+00:00"


def test_gate_json_without_a_candidate_prints_an_explicit_empty_result(tmp_path: Path) -> None:
    """Not ``null``: an object with no decisions and the reason."""
    write_results(tmp_path, [reference_row("t", "workflow", r) for r in range(3)])

    printed = wfbench("gate", tmp_path, "--json")

    assert printed.returncode == 0, printed.stderr
    assert json.loads(printed.stdout) == {
        "schema": "wfbench.gate/v1",
        "decisions": [],
        "reason": "no candidate arm has rows; nothing to gate",
    }


def test_fail_on_exits_3_only_for_the_named_decisions(tmp_path: Path) -> None:
    """A promotion passes --fail-on keep_incumbent,insufficient_evidence; a keep_incumbent fails it."""
    write_results(tmp_path / "promote", promoting_rows())
    keep = promoting_rows()
    for row in keep:
        if row["arm"] == "candidate_workflow":
            row["cost_usd"] = 2.0
    write_results(tmp_path / "keep", keep)
    gate_on = ("--fail-on", "keep_incumbent,insufficient_evidence")

    reference = ("--policy", "reference")
    promoted = wfbench("gate", tmp_path / "promote", *gate_on, *reference)
    kept = wfbench("gate", tmp_path / "keep", *gate_on, *reference)
    kept_without_fail_on = wfbench("gate", tmp_path / "keep", *reference)

    assert promoted.returncode == 0, promoted.stderr
    assert kept.returncode == 3
    assert "keep_incumbent" in kept.stderr
    assert "KEEP_INCUMBENT" in kept.stdout
    assert kept_without_fail_on.returncode == 0


def test_by_default_the_statistical_policy_decides_what_fail_on_acts_on(tmp_path: Path) -> None:
    """One task, three identical runs per arm: the reference promotes; the default does not, so a
    CI job with --fail-on keep_incumbent,insufficient_evidence fails (issue #27)."""
    write_results(tmp_path, promoting_rows())

    done = wfbench("gate", tmp_path, "--fail-on", "keep_incumbent,insufficient_evidence", "--json")

    assert done.returncode == 3
    (decision, *_) = json.loads(done.stdout)["decisions"]
    assert decision["decision"] == "insufficient_evidence"
    assert decision["policy"] == "statistical"
    assert decision["by_policy"]["reference"]["decision"] == "promote"


def test_re_gating_a_reference_sweep_reproduces_its_reference_decision(tmp_path: Path) -> None:
    """Without --policy, a sweep whose promotion.json has the reference's fields alone is re-gated
    by the reference's rule; report then agrees with it, and refuses another rule."""
    write_results(tmp_path, promoting_rows())
    reference = wfbench("gate", tmp_path, "--policy", "reference", "--json").stdout
    (tmp_path / "promotion.json").write_text(reference)

    again = wfbench("gate", tmp_path, "--json")
    report = wfbench("report", tmp_path)
    other = wfbench("report", tmp_path, "--policy", "statistical")

    assert json.loads(again.stdout)["decisions"] == json.loads(reference)["decisions"]
    assert json.loads(again.stdout)["decisions"][0]["decision"] == "promote"
    assert report.returncode == 0, report.stderr
    assert other.returncode == 2
    assert "was decided by the reference policy; report.md would disagree" in other.stderr


def test_fail_on_counts_a_missing_candidate_as_insufficient_evidence(tmp_path: Path) -> None:
    """A CI gate whose candidate never ran must not pass silently."""
    write_results(tmp_path, [reference_row("t", "workflow", r) for r in range(3)])

    done = wfbench("gate", tmp_path, "--fail-on", "insufficient_evidence")

    assert done.returncode == 3


def test_fail_on_refuses_an_unknown_decision(tmp_path: Path) -> None:
    """A typo'd decision is a usage error naming the option and the choices, not a gate that never fails."""
    write_results(tmp_path, promoting_rows())

    done = wfbench("gate", tmp_path, "--fail-on", "keep-incumbent")

    assert done.returncode == 2
    assert done.stderr.strip() == (
        "wfbench: error: --fail-on: unknown decision 'keep-incumbent' (choose from promote,"
        " keep_incumbent, insufficient_evidence)"
    )


def test_a_candidate_cell_that_edited_test_infrastructure_is_refused_by_name(tmp_path: Path) -> None:
    """Issue 25 §3: the row's shadowing diagnostic (as a cell writes it) blocks the promotion."""
    rows = promoting_rows()
    planted = "shadowing file: tests/conftest.py (added): pytest configuration or plugin (conftest/ini)"
    write_results(tmp_path, rows)
    clean = wfbench("gate", tmp_path, "--policy", "reference")
    rows[4]["evidence_diagnostics"] = [planted]  # candidate_workflow, run 1
    write_results(tmp_path, rows)

    # The reference rule promotes these rows on one task (the control); the edit turns that into a refusal.
    text = wfbench("gate", tmp_path, "--policy", "reference")

    assert "PROMOTE" in clean.stdout, clean.stdout
    assert text.returncode == 0, text.stderr
    decision = "decision: candidate_workflow vs workflow (implementation, cost_usd): KEEP_INCUMBENT"
    assert decision in text.stdout
    cell = "task-a/candidate_workflow/run-1: tests/conftest.py"
    assert f"test-infrastructure edits block promotion (1): {cell}" in text.stdout
