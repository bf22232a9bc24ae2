"""A provider's rate-limit burst through ``wfbench run``: throttled cells run again, nothing trips.

The scripted provider answers the first request of each task's rule with 529 (``burst``), as a
provider does when a sweep starts more sessions than its rate limit admits. The scheduler halves
its limit once for the burst, runs each throttled cell again after the back-off, and every cell
ends resolved: one row each, carrying its throttled attempt. Without the retries
(``--throttle-retries 0``) the same burst is five session errors in a row and trips the breaker —
the behaviour this replaces. Both run the stand-in agent under bubblewrap.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.sweep_kit import (
    base_files,
    bwrap_or_skip,
    impl_task,
    make_repo,
    rows,
    rule,
    run_sweep,
    tell,
    turn,
    write,
    write_corpus,
)

TASKS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot")


def _bursting_corpus(root: Path) -> Path:
    make_repo(root, base_files())
    rules: list[dict[str, Any]] = []
    for task_id in TASKS:
        ok = rule(task_id, turn(write("{workspace}/out.txt", "done\n")), turn(say="done"))
        rules.append({**ok, "burst": {"status": 529, "requests": 1}})
    return write_corpus(root, [impl_task(task_id) for task_id in TASKS], {"conversations": rules})


def test_a_rate_limit_burst_is_retried_under_a_lower_limit_and_every_cell_resolves(tmp_path: Path) -> None:
    """6 workers, 6 first requests answered 529: one cut (6 → 3), six retries, six resolved rows."""
    bwrap_or_skip()
    corpus = _bursting_corpus(tmp_path)
    out = tmp_path / "out"

    done = run_sweep(
        corpus, out, "--arms", "baseline", "--workers", "6", "--throttle-backoff", "0.2", "--timeout", "60"
    )

    assert done.returncode == 0, tell(done)
    kept = rows(out)
    assert sorted(r["task"] for r in kept) == sorted(TASKS)
    assert all(r["resolved"] and r["error_kind"] is None for r in kept), [r.get("error_detail") for r in kept]
    for row in kept:
        (attempt,) = row["throttled_attempts"]
        assert attempt["api_error_status"] == 529
    assert "[systemic-outage]" not in done.stdout
    history = json.loads((out / "concurrency.json").read_text())
    assert history["retries"] == len(TASKS)
    throttled = [c for c in history["limit_history"] if c["reason"] == "throttled"]
    assert [(c["old"], c["new"], c["status"]) for c in throttled] == [(6, 3, 529)]
    assert "[concurrency] limit 6 → 3 (throttled 529" in done.stdout
    log = [json.loads(line) for line in (out / "wfbench.log").read_text().splitlines()]
    assert [e["new"] for e in log if e["event"] == "concurrency_limit"][0] == 3
    report = (out / "report.md").read_text()
    assert "## Concurrency" in report
    assert "6 throttled attempt(s) ran again" in report


def test_without_retries_the_same_burst_trips_the_breaker(tmp_path: Path) -> None:
    """Negative control: --throttle-retries 0 folds each 529 as a session error; five in a row trip."""
    bwrap_or_skip()
    corpus = _bursting_corpus(tmp_path)
    out = tmp_path / "out"

    done = run_sweep(corpus, out, "--arms", "baseline", "--workers", "6", "--throttle-retries", "0")

    assert done.returncode == 1, tell(done)
    assert "[systemic-outage] 5 consecutive" in done.stdout
    assert [r["error_kind"] for r in rows(out)[:5]] == ["session-error"] * 5
    history = out / "concurrency.json"
    assert not history.exists() or json.loads(history.read_text())["retries"] == 0
