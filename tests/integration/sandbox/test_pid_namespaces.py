"""Two sweeps in different PID namespaces over one ``/tmp`` (issue 26): neither disturbs the other.

A sweep inside a PID namespace (a container, Ray nodes started in one) used to remove a live host
sweep's model-socket directory at its start (its pid is not visible there), and the other way
round: a cell lost its model socket (``session-error``). Here the demo runs on the host while a
second demo starts inside ``unshare --pid --fork --mount-proc`` (root only) once the host's cells
are running; both have a ``TMPDIR`` too deep for a UNIX socket path, so sockets that do not fit
under a cell's scratch directory fall back to the shared ``/tmp`` (as on a Ray test kit's nodes);
both must finish with the rows the demo gives when run alone. One run of every task and arm
(``--runs 1``, a third of the demo) is enough to overlap the two sweeps.

This is the issue's acceptance run, not its regression test: the old cleanup hurt a cell only when
it removed the socket between the lease's creation and the sandbox's start (a bound mount keeps
working), so the run passed on the old code here too. The deterministic regression test is
``test_stale_sockets.py::test_cleanups_in_two_pid_namespaces_sharing_one_root_leave_each_others_live_sockets``.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.demo_run import WFBENCH, bwrap_or_skip, rows


def outcome(out: Path) -> list[tuple[object, ...]]:
    """Each first-run cell's outcome (the sweeps here run ``--runs 1``)."""
    return sorted(
        (r["task"], r["arm"], r["run"], r["resolved"], r.get("error_kind"))
        for r in rows(out)
        if r["run"] == 0
    )


def _first_row(out: Path, proc: subprocess.Popen[str], seconds: float = 300) -> None:
    """Wait until the sweep in ``out`` has a row: its cells have been running, holding live sockets."""
    deadline = time.monotonic() + seconds
    results = out / "results.jsonl"
    while time.monotonic() < deadline and proc.poll() is None:
        if results.exists() and results.read_text().strip():
            return
        time.sleep(0.1)


def test_two_demo_sweeps_in_two_pid_namespaces_sharing_tmp_both_finish_as_when_alone(tmp_path, demo_out):
    bwrap_or_skip()
    unshare = ["unshare", "--pid", "--fork", "--mount-proc"]
    if os.geteuid() != 0 or subprocess.run([*unshare, "true"], capture_output=True, check=False).returncode:
        pytest.skip("a new PID namespace needs root and unshare(1)")
    alone, done = demo_out
    assert done.returncode == 0, done.stderr[-2000:]
    deep = {}
    for name in ("host", "inside"):
        deep[name] = tmp_path / name / ("d" * 60)
        deep[name].mkdir(parents=True)
    host = subprocess.Popen(  # noqa: S603
        [*WFBENCH, "run", "--out", str(tmp_path / "host" / "out"), "--runs", "1", "--workers", "2"],
        env={**os.environ, "TMPDIR": str(deep["host"])},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    _first_row(tmp_path / "host" / "out", host)  # the host sweep's cells hold live sockets from here on
    assert host.poll() is None, "the host sweep ended before the other one started"
    inside = subprocess.run(
        [
            *unshare,
            *WFBENCH,
            "run",
            "--out",
            str(tmp_path / "inside" / "out"),
            "--runs",
            "1",
            "--workers",
            "2",
        ],
        env={**os.environ, "TMPDIR": str(deep["inside"])},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    _, host_err = host.communicate(timeout=900)
    assert host.returncode == 0, host_err[-2000:]
    assert inside.returncode == 0, inside.stderr[-2000:]
    assert outcome(tmp_path / "host" / "out") == outcome(alone)
    assert outcome(tmp_path / "inside" / "out") == outcome(alone)
