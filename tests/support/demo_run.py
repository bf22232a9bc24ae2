"""The built-in demo sweep, run once per test session, and small helpers over a sweep's output.

``tests/integration/conftest.py`` registers the fixtures, so every module shares one demo sweep
(``demo_out`` is session-scoped).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require_or_skip

WFBENCH = [sys.executable, "-m", "wfbench"]
#: The demo's implementation tasks and its cells: each run by workflow, baseline and
#: candidate_workflow, plus two review tasks by review, three runs each.
IMPL_TASKS = ("fix-median", "add-mode", "add-clamp", "add-variance", "add-normalize")
REVIEW_TASKS = ("review-pr-41", "review-pr-42")
DEMO_CELLS = 3 * (3 * len(IMPL_TASKS) + len(REVIEW_TASKS))


def bwrap_or_skip() -> None:
    """Skip (or fail under WFBENCH_REQUIRE_BWRAP=1) when bubblewrap cannot run here."""
    probe = shutil.which("bwrap") and subprocess.run(
        ["bwrap", "--ro-bind", "/", "/", "true"], capture_output=True, check=False
    )
    if not probe or probe.returncode != 0:
        require_or_skip("WFBENCH_REQUIRE_BWRAP", "bubblewrap cannot run here")


def wfbench(
    *args: str, timeout: float = 240, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the `wfbench` command as a subprocess (in ``env``, or this process's environment)."""
    return subprocess.run(
        [*WFBENCH, *args], capture_output=True, text=True, timeout=timeout, check=False, env=env
    )


def rows(out: Path) -> list[dict[str, Any]]:
    """Every row of ``out/results.jsonl``."""
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def row(out: Path, task: str, arm: str, run: int = 0) -> dict[str, Any]:
    """The row of one cell."""
    return next(r for r in rows(out) if (r["task"], r["arm"], r["run"]) == (task, arm, run))


@pytest.fixture(scope="session")
def demo_out(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """`wfbench run` (the offline demo) with 3 workers: its output directory and the process."""
    bwrap_or_skip()
    out = tmp_path_factory.mktemp("demo") / "out"
    return out, wfbench("run", "--out", str(out), "--workers", "3")


@pytest.fixture(scope="session")
def demo_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo corpus materialized on its own (for corpora built from its repository)."""
    from wfbench.demo import materialize

    return Path(materialize(str(tmp_path_factory.mktemp("corpus") / "demo")))


def legacy_copy(out: Path, dest: Path) -> Path:
    """A copy of the sweep ``out`` in the legacy flat layout (before ``cells/<task>/<arm>/run-<i>/``).

    Patches become ``<label>.patch``, review artifacts ``<label>.review.json`` and transcripts
    ``transcripts/<label>-<phase>-<session>.jsonl`` in the sweep root; rows name those paths and
    carry no ``patch_artifact``, as rows written before the per-cell layout did.
    """
    from wfbench.domain.sweep import layout

    shutil.copytree(out, dest, ignore=shutil.ignore_patterns("cells", ".wfbench.lock"))
    (dest / "transcripts").mkdir(exist_ok=True)
    lines = []
    for entry in rows(out):
        task, arm, run = entry["task"], entry["arm"], entry["run"]
        label = layout.legacy_label(task, arm, run)
        patch = entry.pop("patch_artifact", None)
        if patch:
            shutil.copyfile(out / patch, dest / layout.legacy_patch_path(task, arm, run))
        if entry.get("review_artifact"):
            shutil.copyfile(out / entry["review_artifact"], dest / layout.legacy_review_path(task, arm, run))
            entry["review_artifact"] = layout.legacy_review_path(task, arm, run)
        for artifact in entry.get("transcript_artifacts") or []:
            name = f"transcripts/{label}-{artifact['path'].rsplit('/', 1)[-1]}"
            shutil.copyfile(out / artifact["path"], dest / name)
            artifact["path"] = name
        lines.append(json.dumps(entry) + "\n")
    (dest / "results.jsonl").write_text("".join(lines))
    return dest
