"""Ctrl-C, then ``--resume``: the sweep ends with the same aggregates and decisions as an uninterrupted one.

The demo at ``--runs 1`` (8 cells) with the stand-in agent under bwrap, and a copy of the demo's
provider script whose first ``PR #42`` reply stalls for :data:`STALL_S` seconds. That cell,
``review-pr-42/review/0``, is the last in submission order, so once the 7 other rows are in
``results.jsonl`` it is the one still running: SIGINT then cancels it for certain (the attempt is
retried when the machine was so slow that the stall ended first). The same script serves the
interrupted sweep, its resume and the uninterrupted reference, so every row has the same runtime.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from tests.integration.sweep.test_crash_resume import sweep_summary
from tests.support.demo_run import WFBENCH, bwrap_or_skip, wfbench
from wfbench import demo

STALL_S = 20
CELLS = 8
ATTEMPTS = 3
STALLED = ("review-pr-42", "review", 0)
PR42_RULE = '- when: ["PR #42", "Use the review skill"]'


def _stalling_script(tmp: Path, stall_s: int = STALL_S) -> Path:
    """The demo's provider script, the first reply of its Claude PR #42 review rule delayed by ``stall_s`` s.

    The demo has a PR #42 rule per protocol (Codex's comes first and uses ``*cx_review``): the
    stall goes into the rule whose own turns use ``*review`` (the Anthropic one the stand-in
    talks to), never past the end of that rule into the next one.
    """
    text = (Path(demo.__file__).parent / "provider.yaml").read_text()
    rules = text.split(PR42_RULE)
    assert len(rules) > 1, "the demo's provider script has no PR #42 review rule any more"
    for at in range(1, len(rules)):
        body, sep, rest = rules[at].partition("\n  - when:")
        stalled = body.replace("usage: *review}", f"usage: *review, stall_s: {stall_s}}}", 1)
        if stalled != body:
            rules[at] = stalled + sep + rest
            break
    else:
        raise AssertionError("no PR #42 review rule with a *review reply in the demo's provider script")
    script = tmp / "stall.yaml"
    script.write_text(PR42_RULE.join(rules))
    return script


def _argv(where: list[str], script: Path) -> list[str]:
    tasks = [
        "--tasks",
        "fix-median,add-mode,review-pr-*",
    ]  # the demo's first two implementation tasks: 8 cells
    return [
        *WFBENCH,
        "run",
        *where,
        *tasks,
        "--runs",
        "1",
        "--workers",
        "2",
        "--provider-script",
        str(script),
    ]


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)


def _lines(out: Path) -> list[str]:
    path = out / "results.jsonl"
    return path.read_text().splitlines() if path.exists() else []


def _interrupt(out: Path, script: Path) -> tuple[int, str]:
    """Start the sweep, SIGINT it once every cell but the stalled one has its row: (exit code, stdout)."""
    proc = subprocess.Popen(_argv(["--out", str(out)], script), stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and len(_lines(out)) < CELLS - 1 and proc.poll() is None:
        time.sleep(0.1)
    time.sleep(2)  # the stalled cell is past its start (its row exists once it started)
    proc.send_signal(signal.SIGINT)
    stdout, _ = proc.communicate(timeout=120)
    return proc.returncode, stdout


def _cancelled(lines: list[str]) -> list[str]:
    return [line for line in lines if json.loads(line)["error_kind"] == "cancelled"]


def _gate(out: Path) -> dict[str, Any]:
    evidence = out.parent / f"{out.name}-regated.json"  # the whole evidence, every task's aggregates
    done = wfbench("gate", str(out), "--out", str(evidence), "--force")
    assert done.returncode == 0, done.stderr[-2000:]
    return _without_volatile(json.loads(evidence.read_text(encoding="utf-8")))


def _without_volatile(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _without_volatile(v)
            for k, v in value.items()
            if k not in ("generated_at", "evidence_expires_at") and "duration" not in k
        }
    if isinstance(value, list):
        return [_without_volatile(v) for v in value]
    return value


def test_a_sweep_interrupted_with_sigint_resumes_to_the_aggregates_of_an_uninterrupted_sweep(tmp_path):
    """Exit 130 with a cancelled row; --resume sets it aside, reruns its cell, exits 0; equal aggregates.

    The uninterrupted reference runs beside the interrupted sweep and its resume (a separate
    ``--out``): each of them spends :data:`STALL_S` seconds waiting on the stalled reply.
    """
    bwrap_or_skip()
    script = _stalling_script(tmp_path)
    reference = tmp_path / "reference"
    uninterrupted = subprocess.Popen(
        _argv(["--out", str(reference)], script), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        for attempt in range(ATTEMPTS):
            out = tmp_path / f"out-{attempt}"
            code, stdout = _interrupt(out, script)
            if _cancelled(_lines(out)):
                break
        assert code == 130, stdout[-2000:]
        interrupted = _lines(out)
        cancelled = _cancelled(interrupted)
        assert [tuple(json.loads(line)[k] for k in ("task", "arm", "run")) for line in cancelled] == [STALLED]
        interrupted_summary = sweep_summary(out)

        resumed = _run(_argv(["--resume", str(out)], script))

        _, reference_stderr = uninterrupted.communicate(timeout=300)
    finally:
        uninterrupted.kill()
        uninterrupted.wait()
    assert uninterrupted.returncode == 0, reference_stderr[-2000:]
    assert interrupted_summary != sweep_summary(reference)  # the comparison below can fail
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    assert "moved them to" in resumed.stdout
    assert resumed.stdout.count("already have a row") == 1
    assert f"{CELLS - 1} cell(s) already have a row; running 1" in resumed.stdout
    assert (out / "results.cancelled.jsonl").read_text().splitlines() == cancelled
    after = _lines(out)
    assert _cancelled(after) == []
    assert after[: CELLS - 1] == [line for line in interrupted if line not in cancelled]
    assert len(after) == CELLS
    assert sweep_summary(out) == sweep_summary(reference)
    assert _gate(out) == _gate(reference)
    assert "Sweep cancelled" not in (out / "report.md").read_text()
