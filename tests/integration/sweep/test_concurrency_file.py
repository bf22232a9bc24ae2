"""concurrency.json: written beside the results only when the limit moved or a cell ran again."""

from __future__ import annotations

import json
from pathlib import Path

from wfbench.adapters.store.sweep_files import FileSweepDirectory
from wfbench.app.sweep import concurrency
from wfbench.app.sweep.scheduler import LimitEvent
from wfbench.domain.sweep.pacing import LimitChanged
from wfbench.domain.sweep.scheduling import Cell

EVENT = LimitEvent(at=1.5, change=LimitChanged(8, 4, "throttled", 3, 529), cell=Cell("t1", "review", 2))


def test_the_history_is_written_only_when_something_happened_and_reads_back(tmp_path: Path) -> None:
    concurrency.write_history(FileSweepDirectory(str(tmp_path)), [], workers=4, retries=0)
    assert not (tmp_path / concurrency.CONCURRENCY_NAME).exists()
    assert concurrency.read_history(str(tmp_path)) is None

    record = concurrency.limit_record(EVENT)
    concurrency.write_history(FileSweepDirectory(str(tmp_path)), [record], workers=4, retries=1)

    assert concurrency.read_history(str(tmp_path)) == {"workers": 4, "retries": 1, "limit_history": [record]}


def test_an_unreadable_or_foreign_history_file_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / concurrency.CONCURRENCY_NAME
    path.write_text("{not json")
    assert concurrency.read_history(str(tmp_path)) is None
    path.write_text(json.dumps({"limit_history": "nope"}))
    assert concurrency.read_history(str(tmp_path)) is None
