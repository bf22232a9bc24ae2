"""The run manifest and resume-by-manifest, through ``python -m wfbench run`` (real sweeps under bwrap).

Each sweep is a small corpus (two implementation tasks, the ``baseline`` arm, the stand-in agent
and a scripted provider). The traps closed here: ``--resume`` of a mistyped directory, a resume
with other options (two configurations mixed in one ``results.jsonl``), ``--resume A --out B``,
a corpus edited between the start and the resume, and a run failing before its first cell
leaving a directory and a lock file behind.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.sweep_kit import (
    MODEL,
    WFBENCH,
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


@pytest.fixture(autouse=True)
def _bwrap() -> None:
    bwrap_or_skip()


def _corpus(root: Path) -> Path:
    make_repo(root, base_files())
    tasks = [impl_task("t1"), impl_task("t2")]
    script = {
        "conversations": [rule(t["id"], turn(write("notes.txt", "done\n")), turn(say="done")) for t in tasks]
    }
    return write_corpus(root, tasks, script)


def _wfbench(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*WFBENCH, *map(str, args)], capture_output=True, text=True, timeout=300, check=False
    )


def _error_lines(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.startswith("wfbench: error:")]


def _finished_sweep(root: Path) -> tuple[Path, Path]:
    """A finished sweep of 2 tasks × baseline × 2 runs under ``root``: (corpus, out)."""
    corpus = _corpus(root / "corpus")
    out = root / "out"
    done = run_sweep(corpus, out, "--arms", "baseline", "--runs", "2", "--workers", "2")
    assert done.returncode == 0, tell(done)
    return corpus, out


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The module's finished sweep, run once (tests get copies of its output directory)."""
    bwrap_or_skip()
    return _finished_sweep(tmp_path_factory.mktemp("manifest"))


@pytest.fixture
def sweep(finished: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the finished sweep's output for this test, and the corpus it recorded (read only)."""
    corpus, out = finished
    copy = tmp_path / "out"
    shutil.copytree(out, copy, symlinks=True)
    return corpus, copy


def test_every_sweep_records_its_configuration_before_its_first_cell(sweep: tuple[Path, Path]) -> None:
    corpus, out = sweep

    manifest = json.loads((out / "manifest.json").read_text())

    assert manifest["schema_version"] == 1
    assert manifest["argv"][:3] == ["wfbench", "run", str(corpus)]
    assert manifest["corpus_path"] == str(corpus)
    assert manifest["corpus_digest"].startswith("sha256:")
    assert (manifest["arms"], manifest["runs"], manifest["model"]) == (["baseline"], 2, MODEL)
    assert (manifest["agent"], manifest["sandbox"]) == ("standin", "bwrap")
    assert manifest["agent_version"].startswith("standin ")
    assert [task["id"] for task in manifest["tasks"]] == ["t1", "t2"]
    assert all(len(task["sha"]) == 40 for task in manifest["tasks"])
    assert manifest["environment_digests"] == {}
    log = [json.loads(line) for line in (out / "wfbench.log").read_text().splitlines()]
    started = next(event for event in log if event["event"] == "sweep_started")
    assert started["manifest"] == manifest
    first_cell = next(i for i, event in enumerate(log) if event["event"] == "cell_finished")
    assert log.index(started) < first_cell


def test_resume_runs_exactly_the_recorded_configuration(sweep: tuple[Path, Path]) -> None:
    """``--resume DIR`` alone: the manifest's arms and runs, not the defaults (which would add arms)."""
    _, out = sweep
    lines = (out / "results.jsonl").read_text().splitlines(keepends=True)
    (out / "results.jsonl").write_text("".join(lines[:1]))

    done = _wfbench("run", "--resume", out, "--workers", "1")

    assert done.returncode == 0, tell(done)
    cells = sorted((r["task"], r["arm"], r["run"]) for r in rows(out))
    assert cells == [(t, "baseline", r) for t in ("t1", "t2") for r in (0, 1)]


@pytest.mark.parametrize(
    ("option", "value", "recorded"),
    [
        ("--runs", "3", "2"),
        ("--arms", "workflow,baseline", "baseline"),
        ("--model", "claude-opus-4-5", MODEL),
        ("--sandbox", "host-unsafe", "bwrap"),
        ("--timeout", "60", "5400"),
    ],
)
def test_a_resume_option_that_contradicts_the_manifest_is_refused_naming_both_values(
    sweep: tuple[Path, Path], option: str, value: str, recorded: str
) -> None:
    _, out = sweep
    before = (out / "results.jsonl").read_bytes()

    done = _wfbench("run", "--resume", out, option, value)

    assert done.returncode == 2, tell(done)
    assert _error_lines(done) == [
        f"wfbench: error: {out}/manifest.json: {option} {value} contradicts this sweep's {option} {recorded};"
        " omit it to resume this sweep as it was started, or start a new sweep with --out"
    ]
    assert (out / "results.jsonl").read_bytes() == before


def test_resume_with_another_out_is_refused(sweep: tuple[Path, Path], tmp_path: Path) -> None:
    _, out = sweep
    other = tmp_path / "elsewhere"

    done = _wfbench("run", "--resume", out, "--out", other)

    assert done.returncode == 2
    assert "--out" in done.stderr
    assert f"contradicts --resume {out}" in done.stderr
    assert not other.exists()


def test_a_corpus_edited_since_the_start_is_refused(tmp_path: Path) -> None:
    corpus, out = _finished_sweep(tmp_path)  # its own: the corpus the manifest names is edited
    corpus.write_text(corpus.read_text().replace("do the task", "do another task"))

    done = _wfbench("run", "--resume", out)

    assert done.returncode == 2
    assert len(_error_lines(done)) == 1
    assert "the corpus file changed since the sweep started" in done.stderr
    assert "start a new sweep with --out" in done.stderr


@pytest.mark.parametrize("where", ["missing", "empty", "file"])
def test_resume_of_a_directory_that_is_no_sweep_is_refused_and_runs_nothing(
    tmp_path: Path, where: str
) -> None:
    """A typo'd ``--resume`` never starts a fresh full sweep."""
    target = tmp_path / "results" / "wfbench-typo"
    if where == "empty":
        target.mkdir(parents=True)
    elif where == "file":
        target.parent.mkdir(parents=True)
        target.write_text("x")

    done = _wfbench("run", "--resume", target)

    assert done.returncode == 2
    assert len(_error_lines(done)) == 1
    assert "nothing to resume" in done.stderr
    if where == "missing":
        assert not target.exists()
    elif where == "empty":
        assert list(target.iterdir()) == []


def test_a_run_that_fails_before_its_first_cell_leaves_no_litter(tmp_path: Path) -> None:
    """A bad ref fails at binding: the new output directory (lock, log, manifest) is removed again."""
    corpus = _corpus(tmp_path / "corpus")
    corpus.write_text(corpus.read_text().replace("ref: main", "ref: no-such-branch"))
    out = tmp_path / "results" / "wfbench-x"
    existing = tmp_path / "existing"
    existing.mkdir()
    (existing / "keep.txt").write_text("mine")

    fresh = run_sweep(corpus, out, "--arms", "baseline")
    into_existing = run_sweep(corpus, existing, "--arms", "baseline")

    assert fresh.returncode == into_existing.returncode == 2, tell(fresh)
    assert "no-such-branch" in fresh.stderr
    assert not out.exists()
    assert sorted(p.name for p in existing.iterdir()) == ["keep.txt"]


def test_a_finished_sweep_leaves_no_lock_file(sweep: tuple[Path, Path]) -> None:
    _, out = sweep

    assert not (out / ".wfbench.lock").exists()


def test_a_sweep_without_a_manifest_resumes_only_under_the_configuration_its_rows_name(
    sweep: tuple[Path, Path],
) -> None:
    """Rows from before run manifests: the options given must agree with what the rows say."""
    corpus, out = sweep
    (out / "manifest.json").unlink()
    lines = (out / "results.jsonl").read_text().splitlines(keepends=True)
    (out / "results.jsonl").write_text("".join(lines[:2]))

    wrong = _wfbench(
        "run", corpus, "--resume", out, "--arms", "baseline", "--runs", "2", "--model", "claude-opus-4-5"
    )
    right = _wfbench("run", corpus, "--resume", out, "--arms", "baseline", "--runs", "2")

    assert wrong.returncode == 2, tell(wrong)
    assert "--model claude-opus-4-5 contradicts this sweep's --model claude-sonnet-4-5" in wrong.stderr
    assert right.returncode == 0, tell(right)
    assert len(rows(out)) == 4
    assert json.loads((out / "manifest.json").read_text())["runs"] == 2


def test_dry_run_prints_the_plan_after_resume_and_writes_nothing(sweep: tuple[Path, Path]) -> None:
    _, out = sweep
    lines = (out / "results.jsonl").read_text().splitlines(keepends=True)
    (out / "results.jsonl").write_text("".join(lines[:3]))
    before = sorted(str(p) for p in out.rglob("*"))

    done = _wfbench("run", "--resume", out, "--dry-run")

    assert done.returncode == 0, tell(done)
    assert "cells: 4 planned, 3 already have a row (resume), 0 reused" in done.stdout
    assert "1 to run" in done.stdout
    assert "estimated spend: $" in done.stdout
    assert sorted(str(p) for p in out.rglob("*")) == before


def test_resume_keeps_the_task_selection_and_refuses_another(tmp_path: Path) -> None:
    """``--tasks t1`` is part of the configuration: a bare resume runs t1 only, ``--tasks t2`` is refused."""
    corpus = _corpus(tmp_path / "corpus")
    out = tmp_path / "out"
    first = run_sweep(corpus, out, "--arms", "baseline", "--runs", "2", "--tasks", "t1")
    assert first.returncode == 0, tell(first)
    assert json.loads((out / "manifest.json").read_text())["task_filter"] == ["t1"]
    lines = (out / "results.jsonl").read_text().splitlines(keepends=True)
    (out / "results.jsonl").write_text(lines[0])

    other = _wfbench("run", "--resume", out, "--tasks", "t2")
    resumed = _wfbench("run", "--resume", out)

    assert other.returncode == 2, tell(other)
    assert _error_lines(other) == [
        f"wfbench: error: {out}/manifest.json: --tasks t2 contradicts this sweep's --tasks t1;"
        " omit it to resume this sweep as it was started, or start a new sweep with --out"
    ]
    assert resumed.returncode == 0, tell(resumed)
    assert sorted((r["task"], r["run"]) for r in rows(out)) == [("t1", 0), ("t1", 1)]
