"""docs/arms.md's "A repository with one skill", built exactly as written: its corpus.yaml is
taken from the page, beside a repository that has only a work skill and an overlay changing it.
The corpus's own arm pair plans and runs without any preset arm; the presets that cannot run
there are neither required nor silently accepted."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.support.demo_run import wfbench

DOC = Path(__file__).resolve().parents[3] / "docs" / "arms.md"


def _doc_corpus() -> str:
    section = DOC.read_text().split("## A repository with one skill", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```yaml\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 1
    return blocks[0]


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """``root/my-repo`` (one skill, a parser, its tests) and ``root/corpus`` (the page's corpus.yaml)."""
    root = tmp_path_factory.mktemp("one-skill")
    repo = root / "my-repo"
    (repo / ".claude/skills/work").mkdir(parents=True)
    (repo / ".claude/skills/work/SKILL.md").write_text("---\nname: work\n---\nFix the bug, then test.\n")
    (repo / "parser.py").write_text("def parse(line):\n    return line.split(',')[:-1]\n")
    (repo / "tests").mkdir()
    (repo / "tests/test_parser.py").write_text(
        "from parser import parse\n\ndef test_a():\n    assert parse('a')\n"
    )
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init")
    home = root / "corpus"
    (home / "oracles").mkdir(parents=True)
    (home / "oracles/test_parser_hidden.py").write_text("def test_hidden():\n    assert True\n")
    (home / "overlay/.claude/skills/work").mkdir(parents=True)
    (home / "overlay/.claude/skills/work/SKILL.md").write_text("---\nname: work\n---\nRead first.\n")
    (home / "corpus.yaml").write_text(_doc_corpus())
    return home / "corpus.yaml"


def test_the_docs_one_skill_corpus_runs_its_own_pair_without_preset_arms(corpus, tmp_path):
    done = wfbench("run", str(corpus), "--out", str(tmp_path / "out"), "--dry-run", timeout=120)
    assert done.returncode == 0, done.stderr
    assert "arms: baseline, fix, candidate_fix;" in done.stdout
    assert "cells: 9 planned" in done.stdout  # 1 task x 3 arms x 3 runs
    assert "warnings: none" in done.stdout


def test_a_missing_preset_is_named_with_the_arms_to_run_and_an_unrunnable_arm_is_warned_of(corpus, tmp_path):
    """Choosing candidate_workflow for a work change is refused with the --arms that would run it
    (candidate_workflow_direct; never candidate_workflow's plan phase, which the repository cannot
    run), and --dry-run warns about an arm whose skill the repository lacks."""
    out = str(tmp_path / "out")
    wrong = wfbench("run", str(corpus), "--out", out, "--arms", "workflow,candidate_workflow", "--dry-run")
    assert wrong.returncode == 2
    assert "it must be evaluated in candidate_workflow_direct too" in wrong.stderr
    assert "--arms workflow,candidate_workflow,workflow_direct,candidate_workflow_direct" in wrong.stderr
    warned = wfbench(
        "run",
        str(corpus),
        "--out",
        out,
        "--arms",
        "workflow,workflow_direct,candidate_workflow_direct",
        "--dry-run",
    )
    assert warned.returncode == 0, warned.stderr
    assert "warning: arm workflow evaluates plan, which the repository does not have" in warned.stdout
