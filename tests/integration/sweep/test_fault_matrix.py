"""The fault matrix (issue 6 §2): whole sweeps through ``python -m wfbench run`` with injected faults.

Every sweep is a subprocess over a small corpus whose provider script injects one fault per
task (429, 500, 529, a stream truncated mid-event, a malformed body, a stall past the session
timeout, a connection reset). The rows must say ``session-error`` with a detail naming the fault,
never a success; the agent's own usage report is null (an errored session's self-report is not a
measurement), while the row's usage and cost are what the key proxy metered at the wire before
the fault (the turn that completed: real spend); the report must not count them. The breaker
sweep proves every fault counts toward ``--outage-streak``, that a success resets the streak, that
submission stops, and that the exit code and report.md say so. Then: a hanging verify/oracle is
killed with its process group at ``--verify-timeout``, and a full disk under ``--out`` fails
loudly without tearing ``results.jsonl``. The stand-in agent runs everything; the real CLI
(``--agent claude``) runs 529, truncation and a stall (required when WFBENCH_REQUIRE_CLAUDE=1).
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import claude_binary, require_or_skip
from tests.support.sweep_kit import (
    USAGE,
    base_files,
    bwrap_or_skip,
    by_task,
    impl_task,
    make_repo,
    processes_with,
    rows,
    rule,
    run_sweep,
    tell,
    turn,
    write,
    write_corpus,
)

USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
USAGE_AND_COST = (*USAGE_FIELDS, "cost_usd")
#: claude-sonnet-4-5 prices (USD per million tokens) for sweep_kit.USAGE: one turn's metered cost.
ONE_TURN_COST = (USAGE["input_tokens"] * 3.0 + USAGE["output_tokens"] * 15.0) / 1e6
#: fault name -> (the failing turn, a phrase the row's error_detail must hold)
FAULTS: dict[str, tuple[dict[str, Any], str]] = {
    "f429": ({"status": 429}, "429"),
    "f500": ({"status": 500}, "500"),
    "f529": ({"status": 529}, "529"),
    "truncated": ({"truncate_after_events": 3}, "truncated"),
    "malformed": ({"malformed": True}, "JSON"),
    "stall": ({"stall_s": 120, "say": "too late"}, "timeout"),
    "reset": ({"reset": True}, "reset"),
}
#: The stand-in's session timeout for fault sweeps: a stalled session is killed after it.
STANDIN_TIMEOUT = "5"


def _ok_rule(task_id: str) -> dict[str, Any]:
    return rule(task_id, turn(write("{workspace}/out.txt", "done\n")), turn(say="done"))


def _fault_rule(task_id: str, fault: dict[str, Any], *, late: bool) -> dict[str, Any]:
    """The fault on the first model call, or (``late``) after a turn that reported usage and wrote a file."""
    if late:
        return rule(task_id, turn(write("{workspace}/out.txt", "partial\n")), dict(fault))
    return rule(task_id, dict(fault))


@pytest.fixture(scope="module")
def standin_matrix(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """One sweep: a success control, then every fault early and late (breaker disabled)."""
    bwrap_or_skip()
    root = tmp_path_factory.mktemp("matrix")
    make_repo(root, base_files())
    tasks = [impl_task("control")]
    script_rules = [_ok_rule("control")]
    for name, (fault, _) in FAULTS.items():
        for late in (False, True):
            task_id = f"{name}-{'late' if late else 'early'}"
            tasks.append(impl_task(task_id))
            script_rules.append(_fault_rule(task_id, fault, late=late))
    corpus = write_corpus(root, tasks, {"conversations": script_rules})
    out = root / "out"
    done = run_sweep(
        corpus,
        out,
        "--arms",
        "baseline",
        "--outage-streak",
        "0",
        "--workers",
        "3",
        "--timeout",
        STANDIN_TIMEOUT,
        "--throttle-backoff",
        "0",
    )
    return out, done


def test_the_success_control_of_the_fault_matrix_is_measured(standin_matrix):
    """Negative control: the same corpus without a fault resolves, with tokens and a cost."""
    out, done = standin_matrix
    assert done.returncode == 0, tell(done)
    control = by_task(out)["control"]
    assert (control["ok"], control["resolved"], control["error_kind"]) == (True, True, None)
    assert control["input_tokens"] == 2 * USAGE["input_tokens"]
    assert control["cost_usd"] is not None
    assert control["cost_usd"] > 0


@pytest.mark.parametrize("late", [False, True], ids=["first-call", "after-a-measured-turn"])
@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_each_provider_fault_is_a_session_error_with_only_the_wire_measuring_it(standin_matrix, fault, late):
    """429/500/529/truncated/malformed/stall/reset: session-error naming the fault; the agent's usage null,
    the row's the wire's (the measured turn before a late fault, nothing before an early one)."""
    out, done = standin_matrix
    assert done.returncode == 0, tell(done)
    row = by_task(out)[f"{fault}-{'late' if late else 'early'}"]
    assert (row["ok"], row["resolved"], row["error_kind"]) == (False, False, "session-error")
    assert FAULTS[fault][1].lower() in row["error_detail"].lower(), row["error_detail"]
    assert row["agent_reported_usage"] == dict.fromkeys(USAGE_FIELDS)
    assert row["agent_reported_cost_usd"] is None
    assert row["usage_source"] == "wire"
    if late:
        assert {name: row[name] for name in USAGE_FIELDS} == USAGE
        assert row["cost_usd"] == pytest.approx(ONE_TURN_COST)
    else:
        assert {name: row[name] for name in USAGE_AND_COST} == dict.fromkeys(USAGE_AND_COST)
    assert row["oracle_passed"] is None
    assert row["authored_tests_passed"] is None


def test_faulted_cells_are_excluded_from_the_report_and_never_trip_a_disabled_breaker(standin_matrix):
    """report.md lists each fault as session-error×1, excluded; --outage-streak 0 never stops the sweep."""
    out, done = standin_matrix
    assert done.returncode == 0, tell(done)
    assert "[systemic-outage]" not in done.stdout
    assert len(rows(out)) == 1 + 2 * len(FAULTS)
    report = (out / "report.md").read_text()
    assert f"{2 * len(FAULTS)} run(s) hit session/infra errors" in report
    for name in FAULTS:
        line = next(x for x in report.splitlines() if x.startswith(f"| {name}-early |"))
        assert "0/0 (1 excluded)" in line, line
        assert "session-error×1" in line, line
    assert "Sweep aborted" not in report
    log = [json.loads(line) for line in (out / "wfbench.log").read_text().splitlines()]
    assert log[-1]["event"] == "sweep_finished"
    assert log[-1]["tripped"] is False


BREAKER_ORDER = ("f429", "control", "f500", "f529", "truncated", "malformed", "reset", "stall", "f429b")


def test_the_breaker_trips_after_the_configured_streak_of_systemic_faults(tmp_path):
    """--outage-streak 7 over every fault kind: a success resets the streak; 7 in a row trip it, exit 1."""
    bwrap_or_skip()
    make_repo(tmp_path, base_files())
    faults = {**{name: fault for name, (fault, _) in FAULTS.items()}, "f429b": {"status": 429}}
    tasks, script_rules = [], []
    for task_id in (*BREAKER_ORDER, "never-a", "never-b"):
        tasks.append(impl_task(task_id))
        script_rules.append(
            _ok_rule(task_id) if task_id == "control" else rule(task_id, faults.get(task_id, {"status": 529}))
        )
    corpus = write_corpus(tmp_path, tasks, {"conversations": script_rules})
    out = tmp_path / "out"
    done = run_sweep(
        corpus,
        out,
        "--arms",
        "baseline",
        "--outage-streak",
        "7",
        "--workers",
        "1",
        "--timeout",
        STANDIN_TIMEOUT,
        "--throttle-backoff",
        "0",
    )
    assert done.returncode == 1, tell(done)
    kept = rows(out)
    assert [r["task"] for r in kept[: len(BREAKER_ORDER)]] == list(BREAKER_ORDER)
    # Without the reset at "control", the streak would reach 7 at "stall"; it trips at "f429b".
    assert [r["error_kind"] for r in kept[: len(BREAKER_ORDER)]] == [
        None if t == "control" else "session-error" for t in BREAKER_ORDER
    ]
    overrun = kept[len(BREAKER_ORDER) :]
    assert len(overrun) <= 1
    assert {r["task"] for r in overrun} <= {"never-a"}
    assert {r["error_kind"] for r in overrun} <= {"session-error", "cancelled"}
    assert "never-b" not in {r["task"] for r in kept}  # submission stopped
    assert "[systemic-outage] 7 consecutive" in done.stdout
    assert "Sweep aborted: partial evidence; promotion is disabled." in (out / "report.md").read_text()
    assert "Sweep aborted" in (out / "report.html").read_text()
    log = [json.loads(line) for line in (out / "wfbench.log").read_text().splitlines()]
    assert (log[-1]["event"], log[-1]["exit_code"], log[-1]["tripped"]) == ("sweep_finished", 1, True)


# --- the real claude CLI ---------------------------------------------------------------------


def test_the_real_cli_under_529_truncation_and_a_stall(tmp_path):
    """--agent claude: each fault is a session-error without usage; three in a row trip --outage-streak 3."""
    bwrap_or_skip()
    if claude_binary() is None:
        require_or_skip("WFBENCH_REQUIRE_CLAUDE", "the claude CLI is not installed")
    make_repo(tmp_path, base_files())
    order = ("control", "f529", "truncated", "stall")
    script_rules = [
        _ok_rule("control"),
        _fault_rule("f529", FAULTS["f529"][0], late=True),
        _fault_rule("truncated", FAULTS["truncated"][0], late=False),
        _fault_rule("stall", FAULTS["stall"][0], late=False),
    ]
    corpus = write_corpus(tmp_path, [impl_task(t) for t in order], {"conversations": script_rules})
    out = tmp_path / "out"
    done = run_sweep(
        corpus,
        out,
        "--agent",
        "claude",
        "--arms",
        "baseline",
        "--outage-streak",
        "3",
        "--workers",
        "4",
        "--timeout",
        "15",
        "--throttle-backoff",
        "0",
    )
    assert done.returncode == 1, tell(done)
    kept = by_task(out)
    assert (kept["control"]["resolved"], kept["control"]["error_kind"]) == (True, None), tell(done)
    assert kept["control"]["input_tokens"] is not None
    # A cut stream: the CLI ends its session on an API error, or (it varies with timing) ends it ok on
    # the cut reply; the proxy saw the upstream cut it, so both are the provider's session-error.
    cut = ("API Error", "the model provider cut")
    for task_id, phrases in (("f529", ("529",)), ("truncated", cut), ("stall", ("timeout",))):
        row = kept[task_id]
        assert (row["ok"], row["resolved"], row["error_kind"]) == (False, False, "session-error"), row
        assert any(phrase in row["error_detail"] for phrase in phrases), row["error_detail"]
        assert row["agent_reported_usage"] == dict.fromkeys(USAGE_FIELDS)
        measured = {name: row[name] for name in USAGE_FIELDS}
        assert measured == (USAGE if task_id == "f529" else dict.fromkeys(USAGE_FIELDS)), row
    assert [r["task"] for r in rows(out)] == list(order)
    assert "[systemic-outage] 3 consecutive" in done.stdout
    assert "Sweep aborted" in (out / "report.md").read_text()


# --- hanging verify and oracle ---------------------------------------------------------------


def test_a_hanging_verify_or_oracle_is_killed_at_its_timeout_with_its_process_group(tmp_path):
    """--verify-timeout: a hanging verify/oracle and its setsid child are killed; the arm's failure.

    The hang is the agent's code (issue 10 §7): verify-failed / oracle-failed, resolved false,
    tokens and cost kept — never an infra-error that would leave the evidence and feed the breaker.
    """
    bwrap_or_skip()
    token = f"wfbench-hang-{uuid.uuid4().hex[:12]}"

    def hang(tag: str) -> str:
        return (
            f"setsid bash -c 'exec -a {token}-{tag}-detached sleep 900' & "
            f"bash -c 'exec -a {token}-{tag} sleep 900'"
        )

    make_repo(tmp_path, base_files())
    tasks = [
        impl_task("verify-hangs", verify=hang("verify")),
        impl_task("oracle-hangs", oracle=hang("oracle")),
        impl_task("control"),
    ]
    script_rules = [_ok_rule(t["id"]) for t in tasks]
    corpus = write_corpus(tmp_path, tasks, {"conversations": script_rules})
    out = tmp_path / "out"
    try:
        done = run_sweep(
            corpus,
            out,
            "--arms",
            "baseline",
            "--outage-streak",
            "0",
            "--workers",
            "3",
            "--verify-timeout",
            "3",
        )
        assert done.returncode == 0, tell(done)
        kept = by_task(out)
        verify, oracle = kept["verify-hangs"], kept["oracle-hangs"]
        assert (verify["error_kind"], verify["resolved"]) == ("verify-failed", False)
        assert "verify did not finish" in verify["error_detail"]
        assert "after 3 s" in verify["error_detail"]
        assert (oracle["error_kind"], oracle["resolved"]) == ("oracle-failed", False)
        assert "the oracle did not finish" in oracle["error_detail"]
        assert verify["input_tokens"] is not None
        assert oracle["cost_usd"] is not None
        assert verify["cell_wall_s"] < 300
        assert oracle["cell_wall_s"] < 300
        assert kept["control"]["resolved"] is True
        assert processes_with(token) == []
    finally:
        for pid in processes_with(token):
            subprocess.run(["kill", "-9", str(pid)], check=False)


# --- a full disk under --out -----------------------------------------------------------------


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs mounted at ``tmp_path/out`` (root only); unmounted afterwards."""
    out = tmp_path / "out"
    out.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m,mode=0755", "tmpfs", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mounted.stderr.strip()}")
    try:
        yield out
    finally:
        subprocess.run(["umount", "-l", str(out)], check=False)


def test_a_full_out_directory_fails_loudly_without_tearing_results(tmp_path, tiny_disk):
    """A 1 MiB --out fills up mid-sweep: non-zero exit, one clear message, every results.jsonl line parses."""
    bwrap_or_skip()
    make_repo(tmp_path, base_files())
    chunk = "x" * 99 + "\n"
    tasks, script_rules = [], []
    for i in range(8):
        lines = 10 if i < 2 else 3000  # two small cells, then ~300 kB patches and transcripts each
        tasks.append(impl_task(f"t{i}"))
        big = turn(write("{workspace}/big.txt", chunk * lines))
        script_rules.append(rule(f"t{i}", big, turn(say="done")))
    corpus = write_corpus(tmp_path, tasks, {"conversations": script_rules})
    done = run_sweep(corpus, tiny_disk, "--arms", "baseline", "--outage-streak", "0", "--workers", "1")
    assert done.returncode != 0, tell(done)
    assert "No space left on device" in done.stderr, tell(done)
    assert "Traceback" not in done.stderr, tell(done)
    data = (tiny_disk / "results.jsonl").read_bytes()
    assert data.endswith(b"\n"), data[-200:]
    parsed = [json.loads(line) for line in data.splitlines()]
    assert [r["task"] for r in parsed[:2]] == ["t0", "t1"]
    assert all(r["resolved"] for r in parsed[:2])
    assert len(parsed) < len(tasks)


def test_a_row_that_does_not_fit_on_the_disk_leaves_no_torn_line(tiny_disk):
    """JsonlResultStore.append on a full disk raises SweepStorageError and cuts off its partial line."""
    from wfbench.adapters.store.jsonl_store import JsonlResultStore, read_rows
    from wfbench.domain.errors import SweepStorageError
    from wfbench.domain.results.rows import Row

    store = JsonlResultStore(tiny_disk / "results.jsonl")
    row = Row.from_mapping(
        {"task": "t", "arm": "a", "run": 0, "ok": False, "resolved": False, "error_kind": "infra-error"}
    )
    store.append(row)
    fd = os.open(tiny_disk / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        with pytest.raises(OSError):  # fill the tmpfs: only the slack of results.jsonl's last page is left
            _fill(fd)
    finally:
        os.close(fd)
    big = Row.from_mapping({**row.to_mapping(), "run": 1, "error_detail": "d" * 20_000})
    with pytest.raises(SweepStorageError, match="No space left on device"):
        store.append(big)
    assert read_rows(tiny_disk / "results.jsonl") == (row,)


def _fill(fd: int) -> None:
    while True:
        os.write(fd, b"\0" * 4096)
