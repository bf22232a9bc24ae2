"""The run use case around the sweep (:func:`wfbench.app.sweep.run.claimed_sweep`), on the fakes.

The claim, the manifest and a resume's cancelled rows go through the in-memory sweep directory;
the cells run as in ``test_run_use_case`` (the stand-in agent against a scripted provider, the
host-unsafe sandbox with ``CI`` unset, a fake clock).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest

from tests.unit.app.sweep.test_run_use_case import MemoryStore, Recorder, _corpus
from wfbench.adapters.agents.claude import ClaudeCLI
from wfbench.adapters.provider.script import ProviderScript
from wfbench.adapters.provider.scripted import ScriptedProvider
from wfbench.adapters.repo.workspace import GitWorkspaces
from wfbench.adapters.sandbox.host import UnsafeHostSandbox
from wfbench.adapters.store.clock import FakeClock
from wfbench.adapters.store.memory_sweep import MemorySweepDirectory
from wfbench.app.cell.context import CellServices, RunSettings
from wfbench.app.corpus.arms import resolve_arms
from wfbench.app.corpus.corpus import load_corpus
from wfbench.app.sweep.run import PreparedSweep, SweepRequest, claimed_sweep
from wfbench.app.sweep.start import SweepStart
from wfbench.app.sweep.sweep import SweepResult
from wfbench.domain.errors import InputError
from wfbench.domain.results.rows import Row
from wfbench.domain.sweep.manifest import RunManifest

MANIFEST = RunManifest(
    started_at="2026-01-01T00:00:00+00:00",
    argv=("wfbench", "run"),
    wfbench_version="0",
    corpus_path="corpus.yaml",
    corpus_digest="sha256:0",
    demo=False,
    arms=("baseline",),
    runs=1,
    model="claude-sonnet-4-5",
    agent="standin",
    agent_version=None,
    sandbox="host-unsafe",
    provider_script=None,
    provider_script_digest=None,
    base_url=None,
    candidate_overlay=None,
    candidate_overlay_digest=None,
    reuse_results=None,
    include_expensive=False,
    session_timeout_s=60.0,
    verify_timeout_s=60.0,
    runtime_digest="sha256:runtime",
    workers=2,
    window=None,
    outage_streak=5,
)


#: Each test's corpus, made once (a test that claims twice runs the same corpus twice).
_CORPORA: dict[Path, Path] = {}


@attrs.define
class Claimed:
    result: SweepResult
    directory: MemorySweepDirectory
    store: MemoryStore
    logged: list[str]
    warned: list[str]
    prepared: int


def _claimed(tmp_path: Path, directory: MemorySweepDirectory, start: SweepStart, *, resume: bool) -> Claimed:
    corpus = load_corpus(
        str(_CORPORA.get(tmp_path) or _CORPORA.setdefault(tmp_path, _corpus(tmp_path / "corpus")))
    )
    store = MemoryStore(appended=directory.results)  # the directory's rows are the store's
    logged: list[str] = []
    warned: list[str] = []
    calls: list[int] = []
    assert corpus.provider_script is not None

    @contextmanager
    def prepare() -> Iterator[PreparedSweep]:
        calls.append(1)
        clock = FakeClock()
        with ScriptedProvider(ProviderScript.load(corpus.provider_script or "")) as provider:
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
                resume=resume,
            )
            yield PreparedSweep(
                request=request,
                start=start,
                cell=CellServices(UnsafeHostSandbox(), ClaudeCLI.standin(), GitWorkspaces(), clock),
                store=store,
                view=Recorder(),
                log=lambda event, **_fields: logged.append(event),
                warn=warned.append,
            )

    result = claimed_sweep(
        directory=directory, resume=resume, note=lambda _text: None, cancel=threading.Event(), prepare=prepare
    )
    return Claimed(result, directory, store, logged, warned, len(calls))


def _row(task: str, **fields: Any) -> Row:
    return Row.from_mapping(
        {"task": task, "arm": "baseline", "run": 0, "ok": True, "resolved": True, **fields}
    )


@pytest.fixture
def no_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    """host-unsafe is refused under CI; these tests run only the harmless stand-in on the host."""
    monkeypatch.delenv("CI", raising=False)


def test_a_directory_another_sweep_holds_is_refused_before_anything_is_built(tmp_path: Path) -> None:
    directory = MemorySweepDirectory()
    with directory.claim(resume=False, note=lambda _text: None):
        with pytest.raises(InputError, match="another wfbench run"):
            _claimed(tmp_path, directory, SweepStart(manifest=MANIFEST), resume=False)

    assert directory.writes == []


def test_a_fresh_sweep_into_a_directory_with_rows_is_refused(tmp_path: Path) -> None:
    directory = MemorySweepDirectory(results=[_row("t1")])

    with pytest.raises(InputError, match="already holds rows"):
        _claimed(tmp_path, directory, SweepStart(manifest=MANIFEST), resume=False)


@pytest.mark.usefixtures("no_ci")
def test_a_fresh_sweep_writes_its_manifest_with_the_bound_tasks_before_its_cells(tmp_path: Path) -> None:
    start = SweepStart(manifest=MANIFEST, warnings=("no candidate arm",))
    ran = _claimed(tmp_path, MemorySweepDirectory(), start, resume=False)

    manifest = ran.directory.json("manifest.json")
    assert [task["id"] for task in manifest["tasks"]] == ["t1", "t2"]
    assert ran.directory.writes[0] == "manifest.json"  # before any cell's artifact or report
    assert ran.logged.index("sweep_started") < ran.logged.index("cell_finished")
    assert ran.warned == ["wfbench: warning: no candidate arm"]
    assert ran.directory.held is None  # released


@pytest.mark.usefixtures("no_ci")
def test_a_resume_sets_cancelled_rows_aside_and_runs_only_their_cells_again(tmp_path: Path) -> None:
    kept = _row("t1")
    cancelled = _row("t2", ok=False, resolved=False, error_kind="cancelled")
    directory = MemorySweepDirectory(results=[kept, cancelled])

    ran = _claimed(tmp_path, directory, SweepStart(manifest=MANIFEST, resume=True), resume=True)

    assert directory.cancelled == [cancelled]
    assert [(row.task, row.error_kind) for row in directory.results] == [("t1", None), ("t2", None)]
    assert directory.results[0] is kept  # the kept row is not run again
    assert ran.result.exit_code == 0
    assert "sweep_started" in ran.logged  # a sweep without a manifest writes one on its resume


@pytest.mark.usefixtures("no_ci")
def test_a_resume_checks_its_manifest_instead_of_rewriting_it(tmp_path: Path) -> None:
    first = _claimed(tmp_path, MemorySweepDirectory(), SweepStart(manifest=MANIFEST), resume=False)
    recorded = RunManifest.from_mapping(first.directory.json("manifest.json"))
    directory = attrs.evolve(first.directory, writes=[])

    again = _claimed(
        tmp_path, directory, SweepStart(manifest=MANIFEST, recorded=recorded, resume=True), resume=True
    )

    assert "manifest.json" not in directory.writes
    assert "sweep_resumed" in again.logged
    assert len(directory.results) == 2  # every cell had its row: nothing ran again


@pytest.mark.usefixtures("no_ci")
def test_a_resume_that_drifted_is_refused_and_leaves_the_directory_as_it_was(tmp_path: Path) -> None:
    first = _claimed(tmp_path, MemorySweepDirectory(), SweepStart(manifest=MANIFEST), resume=False)
    recorded = RunManifest.from_mapping(first.directory.json("manifest.json"))
    drifted = attrs.evolve(MANIFEST, runtime_digest="sha256:another-runtime")
    directory = first.directory
    files = dict(directory.files)

    with pytest.raises(InputError, match="runtime"):
        _claimed(
            tmp_path, directory, SweepStart(manifest=drifted, recorded=recorded, resume=True), resume=True
        )

    assert directory.files == files
    assert directory.held is None
