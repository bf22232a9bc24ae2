"""A small real-shaped library for the acceptance tests: a ``src/`` layout, a pyproject, its own test
suite, and an upstream-style bug fix (a commit that fixes the code and adds the regression test).

``intervals.merge`` fails to merge touching intervals (``[1, 2]`` and ``[2, 3]``); the fix commit
changes ``<`` to ``<=`` and adds ``test_touching_intervals_merge``. Tasks built from it: base = the
fix's parent, hidden oracle = the regression test, gold patch = the fix's source change.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any

from tests.conftest import require_or_skip
from tests.support.sweep_kit import git

PYPROJECT = """[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "intervals"
version = "1.4.0"
requires-python = ">=3.8"

[tool.setuptools.packages.find]
where = ["src"]
"""
BUGGY = '''"""Merge closed integer intervals."""


def merge(ranges):
    """Merge overlapping closed intervals ``[start, end]``; the result is sorted."""
    merged = []
    for start, end in sorted(ranges):
        if merged and start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [tuple(r) for r in merged]
'''
FIXED = BUGGY.replace("start < merged[-1][1]", "start <= merged[-1][1]")
#: Keeps the old tests green, does not fix touching intervals.
WRONG = BUGGY.replace("    for start, end in sorted(ranges):", "    for start, end in sorted(set(ranges)):")
SUITE = """from intervals import merge


def test_overlapping():
    assert merge([(1, 3), (2, 5)]) == [(1, 5)]


def test_disjoint_stay_apart():
    assert merge([(5, 6), (1, 2)]) == [(1, 2), (5, 6)]
"""
REGRESSION = """

def test_touching_intervals_merge():
    assert merge([(1, 2), (2, 3)]) == [(1, 3)]
"""
ORACLE = "from intervals import merge\n" + REGRESSION
ENVIRONMENT = {"python": "harness", "install": ["pip install -e .", "pip install pytest"]}
PYTEST = "python -m pytest -q -p no:cacheprovider"
F2P = "tests/test_merge.py::test_touching_intervals_merge"
P2P = ("tests/test_merge.py::test_overlapping", "tests/test_merge.py::test_disjoint_stay_apart")


def registry_or_skip() -> None:
    """Skip (or fail under WFBENCH_REQUIRE_REGISTRY=1) when PyPI cannot be reached from here."""
    try:
        socket.create_connection(("pypi.org", 443), timeout=5).close()
    except OSError:
        require_or_skip("WFBENCH_REQUIRE_REGISTRY", "the package registry (PyPI) is not reachable")


def make_library(root: Path) -> dict[str, str]:
    """The repository at ``root/intervals`` with the bug, then the fix; shas, diffs and the repo path."""
    repo = root / "intervals"
    (repo / "src" / "intervals").mkdir(parents=True)
    (repo / "tests").mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "pyproject.toml").write_text(PYPROJECT)
    (repo / ".gitignore").write_text("__pycache__/\n*.egg-info/\nbuild/\n")
    (repo / "src" / "intervals" / "__init__.py").write_text(BUGGY)
    (repo / "tests" / "test_merge.py").write_text(SUITE)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "intervals 1.4.0")
    base = git(repo, "rev-parse", "HEAD").strip()
    (repo / "src" / "intervals" / "__init__.py").write_text(FIXED)
    (repo / "tests" / "test_merge.py").write_text(SUITE + REGRESSION)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "merge: touching intervals are merged (fixes #12)")
    fix = git(repo, "rev-parse", "HEAD").strip()
    gold = git(repo, "diff", base, fix, "--", "src")
    tests = git(repo, "diff", base, fix, "--", "tests")
    return {"repo": str(repo), "base": base, "fix": fix, "gold": gold, "test_patch": tests}


def swebench_instance(lib: dict[str, str]) -> dict[str, Any]:
    """The fix as a SWE-bench-format instance (test lists JSON-encoded, as in the published datasets)."""
    return {
        "instance_id": "acme__intervals-12",
        "repo": "acme/intervals",
        "base_commit": lib["base"],
        "patch": lib["gold"],
        "test_patch": lib["test_patch"],
        "problem_statement": "merge() does not merge touching intervals: merge([(1, 2), (2, 3)]) returns"
        " both instead of [(1, 3)].",
        "FAIL_TO_PASS": json.dumps([F2P]),
        "PASS_TO_PASS": json.dumps(list(P2P)),
        "version": "1.4",
        "environment_setup_commit": lib["base"],
        "hints_text": "",
    }


def bare_mirror(lib: dict[str, str], repos_dir: Path) -> Path:
    """``repos_dir/acme__intervals``: a bare mirror of the library (as an offline mirror would be)."""
    dest = repos_dir / "acme__intervals"
    repos_dir.mkdir(parents=True, exist_ok=True)
    if dest.exists():
        shutil.rmtree(dest)
    subprocess.run(
        ["git", "clone", "-q", "--bare", lib["repo"], str(dest)],
        check=True,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/nonexistent"},
    )
    return dest
