"""`wfbench report`'s memory is bounded by the aggregates, not by the rows it reads (#18).

The same sweep twice: once with rows of ~2 KB, once with every row carrying 20 KB more (an
``oracle_output``, kept verbatim in each row). A report that held its rows, or the file, would
need the extra 90 MB; one that keeps only what the aggregates and the pages need has the same
peak for both. The peak is the child's own ``ru_maxrss`` (``os.wait4``), a memory figure that
does not move with the machine's load; no time is asserted. A positive control shows that the
same measure sees a process that does hold the rows.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_gate_cmd import reference_row

TASKS, RUNS = 160, 5
ARMS = ("baseline", "workflow", "candidate_workflow", "review", "candidate_review")
PADDING = 24_000


def _write_sweep(directory: Path, padding: int) -> Path:
    """TASKS × ARMS × RUNS rows (the same values for every padding), each with ``padding`` more bytes."""
    rng = random.Random(18)
    directory.mkdir()
    path = directory / "results.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for t in range(TASKS):
            for run in range(RUNS):
                for arm in ARMS:
                    resolved = rng.random() < 0.8
                    fields = {
                        "cost_usd": round(rng.uniform(0.2, 2.0), 4),
                        "resolved": resolved,
                        "oracle_passed": resolved,
                        "error_kind": None if resolved else "oracle-failed",
                        "cell_wall_s": round(rng.uniform(30, 600), 1),
                        "oracle_output": "x" * padding,
                    }
                    if arm.endswith("review"):
                        fields |= {"review_evidence_valid": True, "review_weighted_f1": rng.random()}
                    out.write(json.dumps(reference_row(f"task-{t:04d}", arm, run, **fields)) + "\n")
    return path


#: Runs argv[1:] and prints its peak RSS in KiB. A child's ``ru_maxrss`` counts the memory image it
#: was forked from until it execs (Linux keeps the larger figure), so a child of a large pytest
#: process would report at least pytest's size: this small launcher forks it instead.
_LAUNCHER = """
import os, subprocess, sys
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(child.pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)
"""


def _peak_mib(argv: list[str]) -> float:
    """Peak RSS (MiB) of one child process, from its own rusage."""
    import wfbench

    src = str(Path(wfbench.__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": src}
    done = subprocess.run(
        [sys.executable, "-c", _LAUNCHER, *argv], env=env, capture_output=True, text=True, check=True
    )
    status, peak_kib = done.stdout.split()
    assert status == "0", done.stderr
    return int(peak_kib) / 1024


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("report-memory")
    return _write_sweep(root / "short", 0), _write_sweep(root / "long", PADDING)


def test_ten_times_longer_rows_leave_the_reports_peak_memory_where_it_was(sweeps: tuple[Path, Path]) -> None:
    """Same tasks, arms and runs; rows 10× longer (a 90 MB larger file): peak RSS within 15%."""
    short, long = sweeps
    assert long.stat().st_size > 10 * short.stat().st_size
    added_mib = (long.stat().st_size - short.stat().st_size) / 2**20

    peaks = {}
    for name, path in (("short", short), ("long", long)):
        peaks[name] = _peak_mib([sys.executable, "-m", "wfbench", "report", str(path)])
        assert (path.parent / "report.md").read_text(encoding="utf-8").startswith("# ")

    assert (short.parent / "report.md").read_text() == (long.parent / "report.md").read_text()
    assert peaks["long"] <= 1.15 * peaks["short"], (peaks, f"the file grew by {added_mib:.0f} MiB")


def test_the_measure_sees_a_process_that_holds_the_rows(sweeps: tuple[Path, Path]) -> None:
    """Positive control: holding the decoded long rows raises the same peak by most of the file."""
    short, long = sweeps
    hold = "import json, sys; rows = [json.loads(line) for line in open(sys.argv[1], encoding='utf-8')]"
    held = {path: _peak_mib([sys.executable, "-c", hold, str(path)]) for path in (short, long)}
    added_mib = (long.stat().st_size - short.stat().st_size) / 2**20

    assert held[long] - held[short] > 0.8 * added_mib
    assert held[long] > 1.15 * _peak_mib([sys.executable, "-m", "wfbench", "report", str(short)])
