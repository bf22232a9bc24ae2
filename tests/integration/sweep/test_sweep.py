# ruff: noqa: E501 - scripted provider replies are kept on one line each, as they read in YAML
"""Whole sweeps through the `wfbench` command (a subprocess): the stand-in agent, bwrap, the
scripted provider on loopback, the real grading. Negative controls prove each grader can fail."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from tests.support.demo_run import DEMO_CELLS, WFBENCH, row, rows, wfbench
from tests.support.demo_run import bwrap_or_skip as _bwrap_or_skip


def test_the_offline_demo_sweep_exits_0_and_writes_every_output(demo_out):
    """`wfbench run` with no corpus runs the demo offline and writes results, reports and promotion."""
    out, done = demo_out
    assert done.returncode == 0, done.stderr[-2000:]
    for name in ("results.jsonl", "report.md", "report.html", "promotion.json", "wfbench.log"):
        assert (out / name).is_file(), name
    assert len(rows(out)) == DEMO_CELLS == 5 * 3 * 3 + 2 * 3
    assert "<svg" in (out / "report.html").read_text()
    decision = json.loads((out / "promotion.json").read_text())["decisions"][0]
    assert (decision["candidate_arm"], decision["decision"]) == ("candidate_workflow", "promote")


def test_the_demo_promotes_by_the_statistical_policy_and_ends_with_what_plan_asks(demo_out):
    """Five implementation tasks: the statistical policy (the default) promotes on the saving with
    resolution shown non-inferior; the reference agrees; the last lines are the `plan` of the next sweep."""
    out, done = demo_out
    decision = json.loads((out / "promotion.json").read_text())["decisions"][0]
    assert decision["policy"] == "statistical"
    assert {name: verdict["decision"] for name, verdict in decision["by_policy"].items()} == {
        "reference": "promote",
        "statistical": "promote",
    }
    assert any(r.startswith("resolution is shown non-inferior") for r in decision["reasons"])
    clamp = {(r["arm"], r["resolved"], r["error_kind"]) for r in rows(out) if r["task"] == "add-clamp"}
    assert clamp >= {("workflow", False, "oracle-failed"), ("candidate_workflow", True, None)}
    tail = done.stdout.rstrip().splitlines()[-2:]
    assert tail[0] == f"  plan (wfbench plan {out} --effect 10%; this sweep as the pilot):"
    assert tail[1].startswith("    candidate_workflow: cheapest design reaching 10%: ")


def test_a_wrong_fix_is_oracle_failed_although_its_authored_verify_passed(demo_out):
    """The baseline's integer-division median passes its own test and fails the hidden oracle."""
    out, _ = demo_out
    wrong = row(out, "fix-median", "baseline")
    assert wrong["authored_tests_passed"] is True
    assert (wrong["oracle_passed"], wrong["resolved"], wrong["error_kind"]) == (False, False, "oracle-failed")
    assert row(out, "fix-median", "workflow")["resolved"] is True


def test_each_review_task_is_scored_against_its_own_labels(demo_out):
    """Cross-task routing: the defect case matches its label; the clean control passes as clean."""
    out, _ = demo_out
    defect, clean = row(out, "review-pr-41", "review"), row(out, "review-pr-42", "review")
    assert (defect["review_true_positives"], defect["review_false_positives"]) == (1, 0)
    assert defect["review_artifact"] == "cells/review-pr-41/review/run-0/review.json"
    assert clean["review_clean_pass"] is True
    assert clean["resolved"] is True


def test_the_hidden_oracle_output_is_never_persisted(demo_out):
    """Only passed/failed of the hidden oracle reaches the row, never its test output."""
    out, _ = demo_out
    text = (out / "results.jsonl").read_text()
    assert "test_even_count_is_the_mean_of_the_two_middle_values" not in text
    failed = row(out, "fix-median", "baseline")
    assert failed["oracle_output"].startswith("hidden oracle failed: ")
    assert failed["oracle_evidence"] == "junit"


REVIEW_CONTROLS = """
default: {say: "unscripted", usage: {input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 0, cache_creation_input_tokens: 0}}
conversations:
  - when: ["CASE wrong-place"]
    turns:
      - {tools: [{name: Skill, input: {skill: review}}], usage: &u {input_tokens: 100, output_tokens: 50, cache_read_input_tokens: 0, cache_creation_input_tokens: 0}}
      - {tools: [{name: Write, input: {file_path: "{review_output}", content: '{"schema_version": 1, "verdict": "request_changes", "findings": [{"id": "f1", "severity": "high", "path": "calc/WRONG.py", "line": 99, "end_line": 99, "category": "correctness", "scenario": "s", "evidence": "e", "recommendation": "r", "blocking": true}]}'}}], usage: *u}
      - {say: done, usage: *u}
  - when: ["CASE approve"]
    turns:
      - {tools: [{name: Skill, input: {skill: review}}], usage: *u}
      - {tools: [{name: Write, input: {file_path: "{review_output}", content: '{"schema_version": 1, "verdict": "approve", "findings": []}'}}], usage: *u}
      - {say: done, usage: *u}
  - when: ["CASE no-skill"]
    turns:
      - {tools: [{name: Write, input: {file_path: "{review_output}", content: '{"schema_version": 1, "verdict": "request_changes", "findings": [{"id": "f1", "severity": "high", "path": "calc/stats.py", "line": 24, "end_line": 25, "category": "correctness", "scenario": "s", "evidence": "e", "recommendation": "r", "blocking": true}]}'}}], usage: *u}
      - {say: done, usage: *u}
"""


def _review_corpus(demo_corpus: Path, tmp: Path) -> Path:
    root = demo_corpus.parent
    tasks = []
    for case in ("wrong-place", "approve", "no-skill"):
        tasks.append(
            f"""  - id: {case}
    class: review-defect
    kind: review
    repo: {root / "repo"}
    ref: review
    setup: git apply .wfbench-review/pr-41.patch
    prompt: "CASE {case}: review the percentile helper."
    verify: test -s "$WFBENCH_REVIEW_OUTPUT"
    labels: oracles/pr-41.labels.json
"""
        )
    (root / "controls-script.yaml").write_text(REVIEW_CONTROLS)
    corpus = root / "controls.yaml"
    corpus.write_text(
        "provider_script: controls-script.yaml\ndefaults: {model: claude-sonnet-4-5}\ntasks:\n"
        + "".join(tasks)
    )
    return corpus


def test_review_negative_controls_score_as_valid_misses(demo_corpus, tmp_path):
    """Wrong place: tp 0 fp 1 fn 1, evidence valid; approve on a defect: precision null; no skill call: skill-not-invoked."""
    _bwrap_or_skip()
    out = tmp_path / "out"
    done = wfbench(
        "run",
        str(_review_corpus(demo_corpus, tmp_path)),
        "--arms",
        "review",
        "--out",
        str(out),
        "--workers",
        "3",
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    wrong = row(out, "wrong-place", "review")
    assert (
        wrong["review_true_positives"],
        wrong["review_false_positives"],
        wrong["review_false_negatives"],
    ) == (0, 1, 1)
    assert (wrong["review_evidence_valid"], wrong["error_kind"], wrong["resolved"]) == (
        True,
        "oracle-failed",
        False,
    )
    approve = row(out, "approve", "review")
    assert approve["review_precision"] is None
    assert approve["review_false_negatives"] == 1
    assert approve["review_verdict_correct"] is False
    assert approve["review_evidence_valid"] is True
    lazy = row(out, "no-skill", "review")
    assert (lazy["skill_invoked"], lazy["error_kind"], lazy["resolved"]) == (
        False,
        "skill-not-invoked",
        False,
    )


OVERLOADED = "default: {status: 529}\n"


def test_five_scripted_529s_in_a_row_trip_the_breaker_and_every_started_cell_has_its_row(
    demo_corpus, tmp_path
):
    """A provider that always answers 529: each cell runs again twice (no back-off here), then the
    breaker still trips after the streak — a real outage ends the sweep as before; exit 1."""
    _bwrap_or_skip()
    script = tmp_path / "overloaded.yaml"
    script.write_text(OVERLOADED)
    out = tmp_path / "out"
    done = wfbench(
        "run",
        str(demo_corpus),
        "--arms",
        "baseline",
        "--runs",
        "8",
        "--workers",
        "2",
        "--out",
        str(out),
        "--provider-script",
        str(script),
        "--throttle-retries",
        "2",
        "--throttle-backoff",
        "0",
    )
    assert done.returncode == 1, done.stdout[-2000:]
    assert "[systemic-outage]" in done.stdout
    kept = rows(out)
    assert 5 <= len(kept) < 2 * 8
    assert [r["error_kind"] for r in kept[:5]] == ["session-error"] * 5
    assert [len(r["throttled_attempts"]) for r in kept[:5]] == [2] * 5
    assert {r["error_kind"] for r in kept[5:]} <= {"session-error", "cancelled"}
    started = done.stdout.count("] resolved=")
    assert started == len(kept)
    report = (out / "report.md").read_text()
    assert "Sweep aborted" in report
    history = json.loads((out / "concurrency.json").read_text())
    assert history["limit_history"][0]["new"] == 1
    assert "## Concurrency" in report


def test_sigint_mid_sweep_exits_130_with_no_process_left_behind(tmp_path):
    """Ctrl-C: running sessions are stopped, the partial report is written, exit 130."""
    _bwrap_or_skip()
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [*WFBENCH, "run", "--out", str(out), "--workers", "2"], stdout=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (
        (out / "results.jsonl").exists() and (out / "results.jsonl").read_text().count("\n") >= 2
    ):
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    code = proc.wait(timeout=30)
    assert code == 130
    assert (out / "report.md").is_file()
    leftovers = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True, check=True).stdout
    assert str(out) not in leftovers
    assert len(rows(out)) < DEMO_CELLS


def test_a_bad_corpus_fails_before_any_session_naming_file_task_and_field(tmp_path, demo_corpus):
    """Duplicate ids, unknown keys and unresolvable refs exit 2 with one precise message."""
    repo = demo_corpus.parent / "repo"
    one = (
        f"  - {{id: t, class: c, repo: {repo}, ref: main, prompt: p, verify: 'true', "
        "oracle: {command: 'true', files: [{source: oracles/fix_median_oracle.py, target: o.py}]}}\n"
    )
    base = "tasks:\n" + one
    cases = {
        "dup.yaml": (base + one, "t: id: duplicate task id"),
        "unknown.yaml": (base.replace("prompt: p", "prompt: p, colour: red", 1), "t: colour: unknown key"),
        "ref.yaml": (base.replace("ref: main", "ref: no-such-ref", 1), "t: ref: ref 'no-such-ref'"),
    }
    for name, (text, expected) in cases.items():
        path = demo_corpus.parent / name
        path.write_text(text)
        done = wfbench("tasks", "check", str(path), timeout=60)
        assert done.returncode == 2, (name, done.stderr)
        assert str(path) in done.stderr, (name, done.stderr)
        assert expected in done.stderr, (name, done.stderr)


def test_without_bwrap_the_run_says_so_and_how_to_install_it(tmp_path):
    """No silent host fallback: a missing bwrap is an error naming the package and the explicit opt-out."""
    env = {**os.environ, "PATH": str(tmp_path)}
    done = subprocess.run(
        [*WFBENCH, "run", "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode != 0
    assert "apt-get install bubblewrap" in done.stderr
    assert "host-unsafe" in done.stderr


def test_under_host_unsafe_the_demo_reviews_write_inside_the_cells_private_directory(tmp_path):
    """No fixed host path: the review artifact path comes from the prompt, so /review-output is never touched."""
    existed = os.path.exists("/review-output")
    env = {k: v for k, v in os.environ.items() if k != "CI"}  # host-unsafe is refused under CI
    out = tmp_path / "out"
    done = subprocess.run(
        [*WFBENCH, "run", "--sandbox", "host-unsafe", "--arms", "review", "--runs", "1", "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    defect, clean = row(out, "review-pr-41", "review"), row(out, "review-pr-42", "review")
    assert (defect["review_evidence_valid"], defect["resolved"]) == (True, True)
    assert (clean["review_evidence_valid"], clean["review_clean_pass"]) == (True, True)
    assert os.path.exists("/review-output") == existed
    transcript = (out / defect["transcript_artifacts"][0]["path"]).read_text()
    assert "Review output file: /review-output" not in transcript
    assert "review-output.json" in transcript
