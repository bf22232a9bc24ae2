"""Every durable writer, killed mid-write, leaves the previous file intact.

Each case runs one real writer in a child process whose ``os.replace`` SIGKILLs the process: the
temporary is fully written and fsynced, the rename never happens. The target must still hold its
previous bytes, and what the kill left behind must be a hidden ``.<name>.*.tmp`` that the resume's
cleanup removes, never a file a reader takes for data.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from wfbench.adapters.store import claim as stale

KILL_ON_RENAME = """
import os, signal
os.replace = lambda *_a, **_k: os.kill(os.getpid(), signal.SIGKILL)
"""

#: writer → (the file it replaces, relative to the sweep directory; the code that writes it).
WRITERS: dict[str, tuple[str, str]] = {
    "cell artifact": (
        "cells/t1/workflow/run-0/patch.diff",
        """
        from types import SimpleNamespace
        from wfbench.adapters.store.sweep_files import FileSweepDirectory
        from wfbench.app.cell.cell import _write_artifact
        ctx = SimpleNamespace(settings=SimpleNamespace(directory=FileSweepDirectory(ROOT)))
        _write_artifact(ctx, "cells/t1/workflow/run-0/patch.diff", b"new")
        """,
    ),
    "reports": (
        "report.md",
        """
        from wfbench.adapters.store.sweep_files import FileSweepDirectory
        from wfbench.app.sweep.finish import write_reports
        write_reports([], FileSweepDirectory(ROOT), promotion=None)
        """,
    ),
    "concurrency history": (
        "concurrency.json",
        """
        from wfbench.adapters.store.sweep_files import FileSweepDirectory
        from wfbench.app.sweep.concurrency import write_history
        write_history(FileSweepDirectory(ROOT), [], workers=2, retries=1)
        """,
    ),
    "evolution journal": (
        "gen-001/generation.json",
        """
        from wfbench.adapters.store.sweep_files import FileSweepDirectory
        from wfbench.app.evolve import state
        state.write_journal(FileSweepDirectory(ROOT), SimpleRecord())
        """,
    ),
    "evolution run file": (
        "evolution-run.json",
        """
        from wfbench.adapters.store.sweep_files import FileSweepDirectory
        from wfbench.app.evolve.run import begin_run
        begin_run(ROOT, directory=FileSweepDirectory(ROOT), last_recorded=0, generations=1,
                  started_at="2026-01-01T00:00:00+00:00")
        """,
    ),
    "ray driver artifact": (
        "cells/t1/workflow/run-0/transcript.jsonl",
        """
        from wfbench.cli.bootstrap import sweep_directory
        sweep_directory(ROOT).write("cells/t1/workflow/run-0/transcript.jsonl", b"new")
        """,
    ),
    "reused artifact": (
        "cells/t1/workflow/run-0/patch.diff",
        """
        import hashlib, os
        from wfbench.adapters.store.prior_results import PriorResultsDir
        prior = os.path.join(os.path.dirname(ROOT), "prior")
        os.makedirs(prior, exist_ok=True)
        with open(os.path.join(prior, "p.diff"), "wb") as handle:
            handle.write(b"new")
        PriorResultsDir(prior).copy_artifacts(
            [("p.diff", "cells/t1/workflow/run-0/patch.diff", hashlib.sha256(b"new").hexdigest(), 3, True)],
            ROOT,
        )
        """,
    ),
    "static page": (
        "index.html",
        """
        from wfbench.adapters.store.sweep_dir import StaticTree
        StaticTree(ROOT).write("index.html", b"new")
        """,
    ),
    "results companion (jsonl store)": (
        "promotion.json",
        """
        from pathlib import Path
        from wfbench.adapters.store.jsonl_store import write_json_atomic
        write_json_atomic(Path(ROOT) / "promotion.json", {"new": True})
        """,
    ),
}

#: What each target held before (a resumed run file must be one ``begin_run`` accepts).
PREVIOUS: dict[str, bytes] = {
    "evolution run file": b'{"schema": 1, "after_generation": 0, "generations": 3, "started_at": ""}\n',
}

RECORD = """
class SimpleRecord:
    generation = 1
    def to_mapping(self):
        return {"generation": 1}
"""


def _killed_writer(root: Path, code: str) -> int:
    script = KILL_ON_RENAME + f"ROOT = {str(root)!r}\n" + RECORD + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", script], check=False, capture_output=True).returncode


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_writer_killed_before_its_rename_leaves_the_previous_file_intact(
    tmp_path: Path, writer: str
) -> None:
    rel, code = WRITERS[writer]
    root = tmp_path / "sweep"
    target = root / rel
    target.parent.mkdir(parents=True)
    previous = PREVIOUS.get(writer, b"previous")
    target.write_bytes(previous)

    assert _killed_writer(root, code) == -signal.SIGKILL

    assert target.read_bytes() == previous
    leftovers = [p for p in target.parent.iterdir() if p != target]
    assert leftovers, "the kill came after the temporary was written"
    assert all(p.name.startswith(f".{target.name}.") and p.name.endswith(".tmp") for p in leftovers)


def test_what_a_killed_writer_leaves_is_removed_when_the_sweep_resumes(tmp_path: Path) -> None:
    rel, code = WRITERS["cell artifact"]
    root = tmp_path / "sweep"
    (root / rel).parent.mkdir(parents=True)
    (root / rel).write_bytes(b"previous")
    _killed_writer(root, code)
    (leftover,) = [p for p in (root / rel).parent.iterdir() if p.name.endswith(".tmp")]

    assert stale._partial_files(str(root)) == [str(leftover)]


def test_two_writers_of_one_file_never_share_a_temporary(tmp_path: Path) -> None:
    root = tmp_path / "sweep"
    root.mkdir()
    for _ in range(2):
        _killed_writer(root, WRITERS["concurrency history"][1])

    assert len([p for p in root.iterdir() if p.name.endswith(".tmp")]) == 2
    assert os.listdir(root).count("concurrency.json") == 0
