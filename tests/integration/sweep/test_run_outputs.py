"""What ``python -m wfbench run`` tells other tools and people: ``--json``, ``--fail-on``, the summary,
``wfbench.log`` levels, and ``--provider-log`` with the count of requests answered by ``default``.

The demo at ``--runs 1`` (8 cells, stand-in agent, bwrap, scripted provider): with one candidate arm
at one run, the gate can only answer ``insufficient_evidence``, which ``--fail-on`` turns into 3.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support.demo_run import WFBENCH, bwrap_or_skip
from wfbench import demo

EVENTS = {
    "note",
    "sweep_started",
    "cell_started",
    "phase_started",
    "phase_finished",
    "cell_finished",
    "sweep_finished",
    "summary",
}


def _run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        # The demo's first two implementation tasks and its reviews: 8 cells, the counts below.
        [*WFBENCH, "run", "--runs", "1", "--tasks", "fix-median,add-mode,review-pr-*", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_json_events_fail_on_and_the_summary(tmp_path: Path) -> None:
    bwrap_or_skip()
    out = tmp_path / "out"

    done = _run("--out", out, "--json", "--fail-on", "keep_incumbent,insufficient_evidence")

    assert done.returncode == 3, done.stderr[-3000:]
    events = [json.loads(line) for line in done.stdout.splitlines()]  # stdout is JSON lines only
    assert {e["event"] for e in events} == EVENTS
    assert sum(e["event"] == "cell_finished" for e in events) == 8
    assert sum(e["event"] == "phase_finished" for e in events) == 12  # workflow arms have two phases
    finished = next(e for e in events if e["event"] == "sweep_finished")
    assert finished["decisions"] == [
        {"candidate_arm": "candidate_workflow", "decision": "insufficient_evidence"}
    ]
    summary = events[-1]
    assert summary["event"] == "summary"
    assert summary["spent_usd"] > 0
    # Every request goes through the key proxy's meter: progress and the summary show the wire's
    # figure, which equals the rows' once every session has ended.
    assert (finished["spend_source"], finished["spent_usd"]) == ("wire", summary["metered_spend_usd"])
    # Equal up to the rows' own rounding (each row's cost is kept to 6 decimals; the wire sums unrounded).
    assert summary["metered_spend_usd"] == pytest.approx(summary["spent_usd"], abs=1e-6 * 8)
    assert summary["report_html"] == str(out / "report.html")
    assert "--fail-on insufficient_evidence,keep_incumbent: insufficient_evidence" in done.stderr
    assert "wfbench: warning: --runs 1: the gate needs 3 paired runs" in done.stderr
    log = [json.loads(line) for line in (out / "wfbench.log").read_text().splitlines()]
    assert all(entry["level"] in ("info", "warning", "error") for entry in log)
    assert {
        "sweep_started",
        "warning",
        "sweep_plan",
        "phase_finished",
        "cell_finished",
        "sweep_finished",
    } <= {entry["event"] for entry in log}


def test_provider_log_records_who_answered_and_defaults_are_counted(tmp_path: Path) -> None:
    """A typo'd `when:` string: the review sessions are answered by `default`; the log, the terminal
    and report.md all say so."""
    bwrap_or_skip()
    text = (Path(demo.__file__).parent / "provider.yaml").read_text()
    typo = text.replace("Use the review skill", "Use the reviw skill")
    assert typo != text
    script = tmp_path / "typo.yaml"
    script.write_text(typo)
    log = tmp_path / "requests.jsonl"
    out = tmp_path / "out"

    done = _run("--out", out, "--provider-script", script, "--provider-log", log)

    requests = [json.loads(line) for line in log.read_text().splitlines()]
    defaults = [r for r in requests if r["source"] == "default"]
    assert defaults
    assert all(r["rule"] is None for r in defaults)
    assert all(isinstance(r["rule"], int) for r in requests if r["source"] == "scripted")
    count = f"{len(defaults)} of {len(requests)} request(s) matched no `when:` rule"
    assert count in done.stdout
    report = (out / "report.md").read_text()
    assert f"- scripted provider: {len(requests)} requests, {len(defaults)} answered by `default`" in report
    events = [json.loads(line) for line in (out / "wfbench.log").read_text().splitlines()]
    replies = next(e for e in events if e["event"] == "provider_replies")
    assert (replies["level"], replies["counts"]["default"]) == ("warning", len(defaults))
