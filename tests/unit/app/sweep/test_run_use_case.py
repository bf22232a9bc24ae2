"""The run use case (:func:`wfbench.app.sweep.run.sweep`) with the in-package fakes, in-process.

As cosmicpython tests its handlers: the ports are handed in (the stand-in agent against a
scripted provider on loopback, the host-unsafe sandbox with ``CI`` unset, a fake clock, an
in-memory sweep directory and result store) and the end state is asserted on them. A few
seconds; the end-to-end subprocess tests (``tests/integration/sweep/``) drive the CLI around it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest

from tests.support.sweep_kit import base_files, impl_task, make_repo, rule, turn, write, write_corpus
from wfbench.adapters.agents.claude import ClaudeCLI
from wfbench.adapters.provider.script import ProviderScript
from wfbench.adapters.provider.scripted import ScriptedProvider
from wfbench.adapters.repo.workspace import GitWorkspaces
from wfbench.adapters.sandbox.host import UnsafeHostSandbox
from wfbench.adapters.store.clock import FakeClock
from wfbench.adapters.store.memory_sweep import MemorySweepDirectory
from wfbench.app.cell.context import CellServices, RunSettings
from wfbench.app.cell.events import CellFinished, PhaseFinished, SweepEvent, SweepFinished, SweepStarted
from wfbench.app.corpus.arms import resolve_arms
from wfbench.app.corpus.binding import BoundTask
from wfbench.app.corpus.corpus import load_corpus
from wfbench.app.sweep import sweep as sweep_module
from wfbench.app.sweep.run import MAX_BACKOFF_S, SweepRequest, sweep
from wfbench.app.sweep.sweep import SweepResult
from wfbench.domain.results.rows import Row


@attrs.define
class MemoryStore:
    """The rows appended, in order."""

    appended: list[Row] = attrs.field(factory=list)

    def append(self, row: Row) -> None:
        self.appended.append(row)

    def rows(self) -> tuple[Row, ...]:
        return tuple(self.appended)


@attrs.define
class Recorder:
    """A view that keeps every event it is told (and whether it was closed)."""

    events: list[SweepEvent] = attrs.field(factory=list)
    closed: bool = False

    def notify(self, event: SweepEvent) -> None:
        self.events.append(event)

    def close(self) -> None:
        self.closed = True


@attrs.define
class Ran:
    result: SweepResult
    store: MemoryStore
    directory: MemorySweepDirectory
    view: Recorder
    logged: list[str]
    bound: list[str]


def _corpus(root: Path) -> Path:
    make_repo(root, base_files())
    script = {
        "conversations": [
            rule(task, turn(write("done.txt", "done\n")), turn(say="done")) for task in ("t1", "t2")
        ]
    }
    return write_corpus(root, [impl_task("t1"), impl_task("t2")], script)


def _run(tmp_path: Path, release_memory: Any = None, **options: Any) -> Ran:
    corpus = load_corpus(str(_corpus(tmp_path / "corpus")))
    directory, store, view = MemorySweepDirectory(), MemoryStore(), Recorder()
    logged: list[str] = []
    bound: list[str] = []
    clock = FakeClock()

    def on_bound(tasks: Sequence[BoundTask]) -> None:
        bound.extend(task.spec.id for task in tasks)

    assert corpus.provider_script is not None
    with ScriptedProvider(ProviderScript.load(corpus.provider_script)) as provider:
        settings = RunSettings(
            out_dir=str(tmp_path / "out"),
            work_dir=str(tmp_path / "work"),
            model="claude-sonnet-4-5",
            sandbox_backend="host-unsafe",
            command_env={"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"},
            agent_env={"ANTHROPIC_BASE_URL": provider.base_url},
            secrets={"ANTHROPIC_API_KEY": "offline-test-key"},
            clock=clock,
            directory=directory,
        )
        request = SweepRequest(
            corpus=corpus,
            arms=resolve_arms(["baseline"], corpus.arms),
            runs=1,
            settings=settings,
            workers=2,
            **options,
        )
        cell = CellServices(UnsafeHostSandbox(), ClaudeCLI.standin(), GitWorkspaces(), clock)
        result = sweep(
            request,
            cell=cell,
            store=store,
            view=view,
            log=lambda event, **_fields: logged.append(event),
            cancel=threading.Event(),
            on_bound=on_bound,
            release_memory=release_memory,
        )
    return Ran(result, store, directory, view, logged, bound)


@pytest.fixture
def no_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    """host-unsafe is refused under CI; this test runs only the harmless stand-in on the host."""
    monkeypatch.delenv("CI", raising=False)


@pytest.mark.usefixtures("no_ci")
def test_a_sweep_runs_every_cell_into_the_store_and_writes_its_reports_through_the_directory(
    tmp_path: Path,
) -> None:
    ran = _run(tmp_path)

    assert ran.result.exit_code == 0
    assert sorted((row.task, row.arm, row.run) for row in ran.store.appended) == [
        ("t1", "baseline", 0),
        ("t2", "baseline", 0),
    ]
    assert all(row.ok and row.error_kind is None for row in ran.store.appended)
    assert ran.result.rows == ran.store.rows()
    assert ran.bound == ["t1", "t2"]
    assert {"report.md", "report.html"} <= set(ran.directory.writes)
    assert "promotion.json" not in ran.directory.files  # no candidate arm ran


@pytest.mark.usefixtures("no_ci")
def test_the_view_and_the_log_both_hear_the_sweep(tmp_path: Path) -> None:
    ran = _run(tmp_path)

    kinds = [type(event) for event in ran.view.events]
    assert kinds.index(SweepStarted) < kinds.index(CellFinished)
    assert kinds[-1] is SweepFinished
    assert kinds.count(CellFinished) == 2
    assert ran.view.closed
    assert "sweep_plan" in ran.logged  # the log observer heard the sweep's start beside the view
    assert ran.logged.count("phase_finished") == sum(kind is PhaseFinished for kind in kinds)


@pytest.mark.usefixtures("no_ci")
def test_a_task_filter_runs_only_the_named_task(tmp_path: Path) -> None:
    ran = _run(tmp_path, tasks=("t2",))

    assert [row.task for row in ran.store.appended] == ["t2"]


@pytest.mark.usefixtures("no_ci")
def test_the_sweep_gives_memory_back_once_every_so_many_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    released: list[str] = []
    monkeypatch.setattr(sweep_module, "RELEASE_EVERY", 2)

    ran = _run(tmp_path, release_memory=lambda: released.append("trimmed"))

    assert len(ran.store.appended) == 2
    assert released == ["trimmed"]  # once per two folded rows: after the second, not the first


def test_throttled_cells_back_off_at_most_ten_minutes_unless_the_first_wait_is_longer() -> None:
    short = attrs.evolve(_pure_request(), throttle_retries=2, throttle_backoff_s=30.0).retry_policy()
    long = attrs.evolve(_pure_request(), throttle_backoff_s=900.0).retry_policy()

    assert (short.retries, short.base_delay_s, short.max_delay_s) == (2, 30.0, MAX_BACKOFF_S)
    assert long.max_delay_s == 900.0


def _pure_request() -> SweepRequest:
    settings = RunSettings(
        out_dir="unused",
        work_dir="unused",
        model="claude-sonnet-4-5",
        sandbox_backend="host-unsafe",
        command_env={},
        agent_env={},
        directory=MemorySweepDirectory(),
    )
    return SweepRequest(corpus=None, arms=(), runs=1, settings=settings, workers=1)  # type: ignore[arg-type]
