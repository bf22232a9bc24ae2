"""`wfbench evolve` killed at every step of its loop, then run again: the same history and incumbent.

The real CLI runs under a small wrapper that prints each step the loop reports
(``EvolveServices.on_step``: after each sweep, and after every durable change of the loop's state)
and SIGKILLs itself after the chosen one. The plain CLI then runs again on the same ``OUT``. Every
trial must end with the ``evolution.jsonl`` and the ``OUT/incumbent`` bytes of an uninterrupted
run (the records compared without their timestamps and with ``OUT`` written as one placeholder),
no staging leftover, and one record per generation. The run: the scripted proposer promotes a
concise plan skill in generation 1 and an exhaustive one is kept out in generation 2
(``tests/support/evolve_kit.py``), the incumbent arm alone on one task, ``--generations 2``.
The rerun is the same command: it must finish the killed run's two generations and make no more.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest
import yaml

from tests.support.apply_kit import killed_in_git
from tests.support.demo_run import WFBENCH, bwrap_or_skip
from tests.support.evolve_kit import CONCISE, write_evolve_corpus
from tests.support.tmp_guard import scratch_env

pytestmark = [pytest.mark.bwrap]

KILL_AT_STEP = """
import os, signal, sys
import attrs
from wfbench.app.evolve import evolution
kill_at, seen = int(sys.argv[1]), []
def step(name):
    seen.append(name)
    print("STEP " + name, flush=True)
    if len(seen) == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)
real = evolution.evolve
evolution.evolve = lambda config, services: real(config, attrs.evolve(services, on_step=step))
from wfbench.cli.main import main
main(sys.argv[2:])
"""

#: The steps of one uninterrupted run: the baseline, a promoting generation, a keeping one.
STEPS = [
    "run-started",
    "swept",
    "journal",
    "recorded",
    "swept",
    "journal",
    "incumbent-staged",
    "incumbent-swapped",
    "recorded",
    "swept",
    "journal",
    "recorded",
]
VOLATILE = ("started_at", "finished_at")


@attrs.frozen
class State:
    records: list[dict[str, Any]]
    incumbent: dict[str, bytes]
    leftovers: list[str]


def _argv(corpus: Path, out: Path) -> list[str]:
    return [
        "evolve",
        str(corpus),
        "--generations",
        "2",
        "--out",
        str(out),
        "--arms",
        "workflow",
        "--workers",
        "3",
    ]


def _killed(corpus: Path, out: Path, kill_at: int) -> subprocess.CompletedProcess[str]:
    """The real CLI, SIGKILLed after its ``kill_at``-th step (0: never); its TMPDIR removed after."""
    with scratch_env() as env:
        return subprocess.run(
            [sys.executable, "-c", KILL_AT_STEP, str(kill_at), *_argv(corpus, out)],
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
            env=env,
        )


def _steps(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line[5:] for line in done.stdout.splitlines() if line.startswith("STEP ")]


def _state(out: Path) -> State:
    def placeholder(value: Any) -> Any:
        if isinstance(value, str):
            return value.replace(str(out), "<OUT>")
        if isinstance(value, dict):
            return {k: placeholder(v) for k, v in value.items()}
        if isinstance(value, list):
            return [placeholder(v) for v in value]
        return value

    lines = (out / "evolution.jsonl").read_text().splitlines()
    records = [
        placeholder({k: v for k, v in json.loads(line).items() if k not in VOLATILE}) for line in lines
    ]
    root = out / "incumbent"
    incumbent = {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
    leftovers = sorted(p.name for p in out.iterdir() if p.name.startswith("incumbent."))
    return State(records, incumbent, leftovers)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The evolve corpus with one task (fix-median): three cells per arm keep each trial short."""
    bwrap_or_skip()
    path = write_evolve_corpus(tmp_path_factory.mktemp("evolve-crash"))
    raw = yaml.safe_load(path.read_text())
    raw["tasks"] = [task for task in raw["tasks"] if task["id"] == "fix-median"]
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def reference(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> State:
    """An uninterrupted run (under the wrapper, which never kills): its steps and end state."""
    out = tmp_path_factory.mktemp("reference") / "out"
    done = _killed(corpus, out, 0)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert _steps(done) == STEPS
    return _state(out)


def test_the_uninterrupted_run_promotes_then_keeps_the_incumbent(reference: State) -> None:
    """The reference itself: baseline, promote, keep_incumbent; the concise skill is the incumbent."""
    assert [r["outcome"] for r in reference.records] == ["baseline", "promote", "keep_incumbent"]
    assert reference.incumbent == {".claude/skills/plan/SKILL.md": CONCISE.encode()}
    assert reference.leftovers == []
    assert reference.records[2]["incumbent_digest"] == reference.records[1]["candidate_overlay_digest"]


def _trial(corpus: Path, out: Path, kill_at: int) -> subprocess.CompletedProcess[str]:
    killed = _killed(corpus, out, kill_at)
    assert killed.returncode == -9, killed.stdout[-3000:] + killed.stderr[-3000:]
    assert _steps(killed) == STEPS[:kill_at]
    again = subprocess.run(
        [*WFBENCH, *_argv(corpus, out)], capture_output=True, text=True, timeout=900, check=False
    )
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    return again


@pytest.mark.parametrize("kill_at", range(1, len(STEPS) + 1), ids=lambda k: f"{k}-{STEPS[k - 1]}")
def test_a_run_killed_after_any_step_then_run_again_ends_as_an_uninterrupted_one(
    corpus: Path, reference: State, tmp_path: Path, kill_at: int
) -> None:
    """Killed after a sweep: the generation is redone. After its journal: it is finished from it."""
    again = _trial(corpus, tmp_path / "out", kill_at)

    assert _state(tmp_path / "out") == reference
    decided = STEPS[kill_at - 1] not in ("run-started", "swept", "recorded")
    assert ("finishing it from its journal" in again.stdout) is decided, again.stdout[-2000:]
    assert "finishing the run that was interrupted" in again.stdout, again.stdout[-2000:]
    assert not (tmp_path / "out" / "evolution-run.json").exists()


def test_a_run_killed_again_while_finishing_a_generation_still_ends_as_an_uninterrupted_one(
    corpus: Path, reference: State, tmp_path: Path
) -> None:
    """Killed after generation 1's journal, then again after the recovery's first step (the staged
    incumbent), then run to the end."""
    out = tmp_path / "out"
    first = _killed(corpus, out, STEPS.index("incumbent-staged"))
    assert first.returncode == -9
    second = _killed(corpus, out, 1)
    assert second.returncode == -9
    assert _steps(second) == ["incumbent-staged"]
    assert "finishing it from its journal" in second.stdout
    again = subprocess.run(
        [*WFBENCH, *_argv(corpus, out)], capture_output=True, text=True, timeout=900, check=False
    )

    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert _state(out) == reference


KILL_IN_APPLY = """
import os, signal, sys
from wfbench.adapters.repo import skill_transaction as transaction
def step(self, name):
    if name == sys.argv[1]:
        os.kill(os.getpid(), signal.SIGKILL)
transaction.SkillTransaction._step = step
from wfbench.cli.main import main
main(sys.argv[2:])
"""


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("kill_at", ["journal-prepared", "committed", "cleaned"])
def test_a_run_killed_inside_apply_applies_the_generation_once(
    corpus: Path, tmp_path: Path, kill_at: str
) -> None:
    """--apply killed inside the target's transaction (before its commit point, at it, or once it had
    committed and cleaned up): the next run finishes the target's transaction, sees whether HEAD is
    the apply of this generation's evidence, applies it only if not, and records it applied."""
    target, out = tmp_path / "target", tmp_path / "out"
    subprocess.run(["git", "clone", "-q", str(corpus.parent / "repo"), str(target)], check=True)
    argv = [*_argv(corpus, out), "--apply", str(target), "--branch", "evolved"]
    with scratch_env() as env:
        killed = subprocess.run(
            [sys.executable, "-c", KILL_IN_APPLY, kill_at, *argv],
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
            env=env,
        )
    assert killed.returncode == -9, killed.stdout[-3000:] + killed.stderr[-3000:]
    assert not (out / "evolution.jsonl").read_text().count("\n") > 1  # only the baseline's line

    again = subprocess.run([*WFBENCH, *argv], capture_output=True, text=True, timeout=900, check=False)

    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert "finishing it from its journal" in again.stdout
    records = _state(out).records
    assert [r["outcome"] for r in records] == ["baseline", "promote", "keep_incumbent"]
    applied = records[1]["applied"]
    assert applied["applied"] is True, applied
    assert applied["branch"] == "evolved"
    assert applied["commit"] == _git(target, "rev-parse", "HEAD").strip()
    assert applied["files"] == [".claude/skills/plan/SKILL.md"]
    assert _git(target, "rev-parse", "--abbrev-ref", "HEAD").strip() == "evolved"
    assert _git(target, "log", "--format=%s").count("Promote candidate skill overlay") == 1
    assert _git(target, "show", "HEAD:.claude/skills/plan/SKILL.md") == CONCISE
    assert _git(target, "status", "--porcelain") == ""


@pytest.mark.parametrize("branch", [None, "evolved"])
def test_a_run_killed_inside_git_s_commit_of_its_apply_commits_once_on_one_branch(
    corpus: Path, tmp_path: Path, branch: str | None
) -> None:
    """--apply killed right after git created the branch at the generation's commit, before HEAD
    moved to it: the same command commits nothing more and makes no second branch, with the default
    branch name (named after the run's start, which the finishing run keeps) or a given one."""
    target, out = tmp_path / "target", tmp_path / "out"
    subprocess.run(["git", "clone", "-q", str(corpus.parent / "repo"), str(target)], check=True)
    argv = [*_argv(corpus, out), "--apply", str(target), *(["--branch", branch] if branch else [])]
    killed = killed_in_git(argv, "update-ref", timeout=900)
    assert killed.returncode == -9, killed.stdout[-3000:] + killed.stderr[-3000:]
    made = _git(target, "for-each-ref", "--format=%(refname:short)", "refs/heads/").split()
    pattern = branch or "wfbench/evolve-"
    assert [name for name in made if name.startswith(pattern)] != [], made
    assert not _git(target, "rev-parse", "--abbrev-ref", "HEAD").strip().startswith(pattern)

    again = subprocess.run([*WFBENCH, *argv], capture_output=True, text=True, timeout=900, check=False)

    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    records = _state(out).records
    assert [r["outcome"] for r in records] == ["baseline", "promote", "keep_incumbent"]
    branches = _git(target, "for-each-ref", "--format=%(refname:short)", "refs/heads/").split()
    evolved = [name for name in branches if name.startswith(pattern)]
    assert len(evolved) == 1, branches
    assert records[1]["applied"]["branch"] == evolved[0]
    assert records[1]["applied"]["commit"] == _git(target, "rev-parse", "HEAD").strip()
    assert _git(target, "rev-parse", "--abbrev-ref", "HEAD").strip() == evolved[0]
    assert _git(target, "log", "--all", "--format=%s").count("Promote candidate skill overlay") == 1
    assert _git(target, "show", "HEAD:.claude/skills/plan/SKILL.md") == CONCISE
    assert _git(target, "status", "--porcelain") == ""
