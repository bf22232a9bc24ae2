"""``wfbench.app.evolve.run``: the run file that makes ``--generations N`` count across a kill.

The file lives in the loop's output directory, so each test gives it a temporary one.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from wfbench.adapters.store.sweep_files import FileSweepDirectory
from wfbench.app.evolve.run import RUN_FILE, RunPlan, begin_run, end_run, run_started_at
from wfbench.domain.errors import InputError

FIRST = "2026-03-01T10:00:00+00:00"
LATER = "2026-03-01T11:30:00+00:00"


def test_a_new_run_counts_from_the_last_record_and_writes_its_plan(tmp_path: Path) -> None:
    plan = begin_run(
        str(tmp_path),
        directory=FileSweepDirectory(str(tmp_path)),
        last_recorded=3,
        generations=2,
        started_at=FIRST,
    )

    assert plan == RunPlan(after=3, generations=2, resumed=False)
    assert plan.last == 5
    assert json.loads((tmp_path / RUN_FILE).read_text()) == {
        "schema": 1,
        "after_generation": 3,
        "generations": 2,
        "started_at": FIRST,
    }
    assert not (tmp_path / f"{RUN_FILE}.tmp").exists()


def test_a_run_that_finds_the_file_resumes_it_from_where_it_began(tmp_path: Path) -> None:
    begin_run(
        str(tmp_path),
        directory=FileSweepDirectory(str(tmp_path)),
        last_recorded=3,
        generations=2,
        started_at=FIRST,
    )

    plan = begin_run(
        str(tmp_path),
        directory=FileSweepDirectory(str(tmp_path)),
        last_recorded=4,
        generations=2,
        started_at=LATER,
    )

    assert plan == RunPlan(after=3, generations=2, resumed=True)
    assert plan.last == 5
    assert run_started_at(str(tmp_path)) == dt.datetime.fromisoformat(FIRST)  # the start is kept


def test_a_resumed_run_with_another_n_counts_it_from_the_same_start(tmp_path: Path) -> None:
    begin_run(
        str(tmp_path),
        directory=FileSweepDirectory(str(tmp_path)),
        last_recorded=0,
        generations=2,
        started_at=FIRST,
    )

    plan = begin_run(
        str(tmp_path),
        directory=FileSweepDirectory(str(tmp_path)),
        last_recorded=1,
        generations=5,
        started_at=LATER,
    )

    assert (plan.after, plan.last) == (0, 5)
    assert json.loads((tmp_path / RUN_FILE).read_text())["generations"] == 5


def test_an_ended_run_leaves_no_file_and_the_next_counts_afresh(tmp_path: Path) -> None:
    begin_run(
        str(tmp_path),
        directory=FileSweepDirectory(str(tmp_path)),
        last_recorded=0,
        generations=2,
        started_at=FIRST,
    )
    end_run(str(tmp_path))
    end_run(str(tmp_path))  # idempotent

    plan = begin_run(
        str(tmp_path),
        directory=FileSweepDirectory(str(tmp_path)),
        last_recorded=2,
        generations=2,
        started_at=LATER,
    )

    assert plan == RunPlan(after=2, generations=2, resumed=False)
    assert run_started_at(str(tmp_path)) == dt.datetime.fromisoformat(LATER)


PLAN = '"schema": 1, "after_generation": 0, "generations": 1'


@pytest.mark.parametrize(
    "content",
    [
        None,
        "{",
        f"{{{PLAN}}}",
        f'{{{PLAN}, "started_at": "noon"}}',
        f'{{{PLAN}, "started_at": "2026-03-01T10:00:00"}}',
    ],
)
def test_the_start_is_unknown_without_a_readable_zoned_timestamp(tmp_path: Path, content: str | None) -> None:
    if content is not None:
        (tmp_path / RUN_FILE).write_text(content)

    assert run_started_at(str(tmp_path)) is None


def test_a_file_naming_a_generation_after_the_last_record_is_refused(tmp_path: Path) -> None:
    begin_run(
        str(tmp_path),
        directory=FileSweepDirectory(str(tmp_path)),
        last_recorded=4,
        generations=1,
        started_at=FIRST,
    )

    with pytest.raises(InputError) as caught:
        begin_run(
            str(tmp_path),
            directory=FileSweepDirectory(str(tmp_path)),
            last_recorded=2,
            generations=1,
            started_at=LATER,
        )

    assert caught.value.field == "after_generation"
    assert "began after generation 4, but evolution.jsonl ends at generation 2" in str(caught.value)
