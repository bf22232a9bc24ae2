"""A task's read-only `dependencies` are mounted into its cells (a `wfbench run` subprocess under bwrap).

The dependency ``vendor/lib`` is mounted at ``deps/lib`` (a target the repository does not have)
and ``ref.txt`` at itself. The agent session reads and tries to overwrite both; verify and the
hidden oracle pass only if they can read ``deps/lib/data.txt``. A task without the declaration
is the negative control; a task declaring a missing source fails before any session.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.support.sweep_kit import (
    base_files,
    bash,
    bwrap_or_skip,
    by_task,
    impl_task,
    make_repo,
    rule,
    run_sweep,
    tell,
    turn,
    write_corpus,
)

AGENT = (
    "cat deps/lib/data.txt ref.txt > seen-dep.txt 2>&1;"
    " { echo tamper > deps/lib/data.txt; echo tamper > ref.txt; touch deps/lib/new; } 2> dep-write.txt;"
    " echo done"
)
VERIFY = "grep -q DEP- deps/lib/data.txt"
ORACLE = 'grep -q DEP- deps/lib/data.txt && test -f "$WFBENCH_ORACLE_ROOT/oracle.txt"'
DEPS: list[Any] = [{"source": "vendor/lib", "target": "deps/lib"}, "ref.txt"]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """One sweep (baseline arm, bwrap) over: dep-mounted, dep-absent (control), dep-missing."""
    bwrap_or_skip()
    root = tmp_path_factory.mktemp("deps")
    marker = f"DEP-{uuid.uuid4().hex}"
    files = {**base_files(), "vendor/lib/data.txt": f"{marker}\n", "ref.txt": "REF-FILE\n"}
    repo = make_repo(root, files)
    tasks = [
        impl_task("dep-mounted", verify=VERIFY, oracle=ORACLE, dependencies=DEPS),
        impl_task("dep-absent", verify=VERIFY, oracle=ORACLE),
        impl_task("dep-missing", dependencies=["vendor/nope"]),
    ]
    script = {
        "conversations": [rule(t, turn(bash(AGENT)), turn(say="done")) for t in ("dep-mounted", "dep-absent")]
    }
    corpus = write_corpus(root, tasks, script)
    out = root / "out"
    done = run_sweep(corpus, out, "--arms", "baseline", "--sandbox", "bwrap", "--workers", "2")
    assert done.returncode == 0, tell(done)
    return out, repo, marker


def _patch(out: Path, task: str) -> str:
    return (out / f"cells/{task}/baseline/run-0/patch.diff").read_text()


def test_a_cell_reads_its_dependencies_in_the_session_verify_and_oracle(
    sweep: tuple[Path, Path, str],
) -> None:
    """The agent saw the dependency's content at the new target; verify and the oracle read it too."""
    out, _, marker = sweep
    row = by_task(out)["dep-mounted"]
    assert (row["authored_tests_passed"], row["oracle_passed"], row["resolved"]) == (True, True, True), row
    patch = _patch(out, "dep-mounted")
    assert f"+{marker}" in patch
    assert "+REF-FILE" in patch


def test_a_cell_cannot_write_its_dependencies(sweep: tuple[Path, Path, str]) -> None:
    """Overwriting either dependency or creating a file in one fails (read-only); the repo is unchanged."""
    out, repo, marker = sweep
    patch = _patch(out, "dep-mounted")
    assert patch.count("Read-only file system") == 3, patch
    assert "+tamper" not in patch
    assert (repo / "vendor/lib/data.txt").read_text() == f"{marker}\n"
    assert (repo / "ref.txt").read_text() == "REF-FILE\n"


def test_without_the_declaration_the_dependency_is_not_there(sweep: tuple[Path, Path, str]) -> None:
    """Negative control: the same agent, verify and oracle without `dependencies` see no deps/lib/data.txt."""
    out, _, marker = sweep
    row = by_task(out)["dep-absent"]
    assert row["authored_tests_passed"] is False
    assert row["error_kind"] == "verify-failed"
    assert marker not in _patch(out, "dep-absent")


def test_a_missing_dependency_source_fails_the_task_before_any_session(sweep: tuple[Path, Path, str]) -> None:
    """A declared source absent at the bound commit: infra-error naming it, no session (no tokens)."""
    out, _, _ = sweep
    row = by_task(out)["dep-missing"]
    assert row["error_kind"] == "infra-error"
    assert "vendor/nope does not exist" in row["error_detail"]
    assert row["num_turns"] is None
