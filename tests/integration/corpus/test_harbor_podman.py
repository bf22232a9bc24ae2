"""Imported Harbor tasks under podman, through the commands a user runs.

``wfbench tasks import harbor`` builds each test task's image from the local base image and
captures its ``/app``; ``wfbench tasks validate --sandbox podman`` finds every oracle (test.sh and
its reward file) failing at the base and passing after ``solve.sh``, and the task whose tests
already pass invalid; ``wfbench run --sandbox podman`` resolves ``calc-fix`` with a correct
scripted fix and not with a wrong one, with the stand-in and with the real Claude Code CLI.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import claude_binary, require_or_skip
from tests.support.demo_run import WFBENCH, rows
from tests.support.podman_kit import podman_env

pytestmark = pytest.mark.slow

SUPPORT = Path(__file__).resolve().parents[2] / "support"
FIXED = "def mean(values):\n    return sum(values) / len(values) if values else 0.0\n"
WRONG = "def mean(values):\n    return 0.0\n"


def _wfbench(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*WFBENCH, *args], capture_output=True, text=True, timeout=600, check=False, env=env
    )


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The test tasks and the invalid one, imported once: the corpus and the podman environment."""
    env = podman_env()
    out = tmp_path_factory.mktemp("harbor") / "corpus"
    tasks = [str(p) for p in sorted((SUPPORT / "harbor_tasks").iterdir())]
    done = _wfbench("tasks", "import", "harbor", *tasks, str(SUPPORT / "harbor_invalid" / "already-done"),
                    "--out", str(out), env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return out / "corpus.yaml", env


def test_every_imported_oracle_fails_at_the_base_and_passes_after_solve_sh_and_a_passing_one_is_invalid(
    imported,
):
    corpus, env = imported
    done = _wfbench("tasks", "validate", str(corpus), "--sandbox", "podman", "--json", env=env)
    assert done.returncode == 1, done.stderr  # already-done is invalid
    found = {t["task"]: t for t in json.loads(done.stdout)["tasks"]}
    for task in ("csv-total", "calc-fix", "greet-sh"):
        assert found[task]["problems"] == [], found[task]
        assert (found[task]["oracle_at_base"], found[task]["gold_oracle"]) == (False, True)
    assert found["already-done"]["oracle_at_base"] is True
    assert json.loads(done.stdout)["invalid"] == ["already-done"]
    # csv-total's [environment] cpus = 1, memory_mb = 512: its test.sh and solve.sh ran under them.
    spec = next(t for t in yaml.safe_load(corpus.read_text())["tasks"] if t["id"] == "csv-total")
    assert spec["limits"] == {
        "agent_timeout": 600.0,
        "cpus": 1.0,
        "memory": "512M",
        "verifier_timeout": 120.0,
    }


def _script(path: Path, content: str) -> Path:
    usage = {"input_tokens": 100, "output_tokens": 50}
    read = {"name": "Read", "input": {"file_path": "/app/calc/__init__.py"}}
    write = {"name": "Write", "input": {"file_path": "/app/calc/__init__.py", "content": content}}
    turns = [
        {"usage": usage, "tools": [read]},
        {"usage": usage, "tools": [write]},
        {"usage": usage, "say": "done"},
    ]
    path.write_text(yaml.safe_dump({"conversations": [{"when": ["mean([])"], "turns": turns}]}))
    return path


@pytest.mark.parametrize("agent", ["standin", pytest.param("claude", marks=pytest.mark.claude)])
def test_an_imported_task_resolves_with_a_correct_scripted_fix_and_fails_with_a_wrong_one(
    imported, agent, tmp_path
):
    corpus, env = imported
    if agent == "claude":
        binary = claude_binary()
        if binary is None:
            require_or_skip("WFBENCH_REQUIRE_CLAUDE", "the real Claude Code CLI is not installed")
        env = {**env, "WFBENCH_CLAUDE_BIN": str(binary)}
    found = {}
    for name, content in (("fixed", FIXED), ("wrong", WRONG)):
        out = tmp_path / name
        done = _wfbench("run", str(corpus), "--sandbox", "podman", "--agent", agent, "--tasks", "calc-fix",
                        "--arms", "baseline", "--runs", "1", "--model", "claude-sonnet-4-5",
                        "--provider-script", str(_script(tmp_path / f"{name}.yaml", content)),
                        "--out", str(out), env=env)  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        (found[name],) = rows(out)
    assert found["fixed"]["resolved"] is True, found["fixed"].get("error_detail")
    assert found["fixed"]["oracle_reward"] == 1.0
    assert found["wrong"]["resolved"] is False
    assert (found["wrong"]["oracle_reward"], found["wrong"]["oracle_outcome"]) == (
        0.0,
        "reward-not-above-threshold",
    )
    assert found["wrong"]["agent"] == ("claude" if agent == "claude" else "standin")
    assert os.path.isfile(tmp_path / "fixed" / found["fixed"]["patch_artifact"])
