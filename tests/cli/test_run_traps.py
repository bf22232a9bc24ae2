"""``wfbench run`` refusals and warnings that need no session, through the real console script.

Mostly ``--dry-run`` over the demo corpus (materialized once): it resolves everything a real run
would and prints the plan and the warnings, creating nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

WFBENCH = [sys.executable, "-m", "wfbench"]


def wfbench(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    return subprocess.run(
        [*WFBENCH, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        env=env,
        cwd=cwd,
    )


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo corpus, without its ``defaults.runs`` (so the default rule shows)."""
    from wfbench.demo import materialize

    path = Path(materialize(str(tmp_path_factory.mktemp("demo") / "corpus")))
    path.write_text(path.read_text().replace("  runs: 3\n", ""))
    return path


def _error_lines(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.strip()]


def test_with_a_candidate_arm_the_default_runs_is_the_gates_minimum(demo: Path, tmp_path: Path) -> None:
    done = wfbench("run", demo, "--out", tmp_path / "o", "--dry-run")

    assert done.returncode == 0, done.stderr
    assert "runs: 3;" in done.stdout
    assert "warnings: none" in done.stdout
    assert not (tmp_path / "o").exists()


def test_without_a_candidate_the_default_runs_is_one(demo: Path, tmp_path: Path) -> None:
    done = wfbench("run", demo, "--out", tmp_path / "o", "--arms", "workflow,baseline", "--dry-run")

    assert done.returncode == 0, done.stderr
    assert "runs: 1;" in done.stdout


def test_fewer_runs_than_the_gate_needs_warns_before_anything_runs(demo: Path, tmp_path: Path) -> None:
    done = wfbench("run", demo, "--out", tmp_path / "o", "--runs", "2", "--dry-run")

    assert done.returncode == 0, done.stderr
    assert (
        "warning: --runs 2: the gate needs 3 paired runs per task and arm; this sweep can only end"
        " insufficient_evidence for candidate_workflow" in done.stdout
    )


def test_an_unpriced_model_warns_that_cost_will_be_n_a(demo: Path, tmp_path: Path) -> None:
    done = wfbench("run", demo, "--out", tmp_path / "o", "--model", "acme-model-7", "--dry-run")

    assert done.returncode == 0, done.stderr
    assert "warning: model acme-model-7 has no price (built-in tables or --prices FILE)" in done.stdout
    assert "cost_usd will be n/a for arm(s) workflow (standin)" in done.stdout
    assert "the cost gate can only answer insufficient_evidence" in done.stdout


@pytest.mark.parametrize(
    "model", ["", "  ", "latest", "auto", "claude-sonnet@LATEST", "claude-latest", "x:auto"]
)
def test_a_blank_or_mutable_model_is_refused_before_anything_is_created(
    demo: Path, tmp_path: Path, model: str
) -> None:
    out = tmp_path / "o"

    done = wfbench("run", demo, "--out", out, "--model", model)

    assert done.returncode == 2
    (line,) = _error_lines(done)
    assert line.startswith("wfbench: error: --model: ")
    assert not out.exists()


def test_out_naming_a_file_or_an_unwritable_path_is_one_line_exit_2(demo: Path, tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    unwritable = Path("/proc/wfbench-test-no-such-dir/out")  # not creatable, even by root

    as_file = wfbench("run", demo, "--out", afile)
    under_file = wfbench("run", demo, "--out", afile / "sub")
    cannot = wfbench("run", demo, "--out", unwritable)

    assert [d.returncode for d in (as_file, under_file, cannot)] == [2, 2, 2]
    assert _error_lines(as_file) == [f"wfbench: error: {afile}: --out: is a file, not a directory"]
    assert _error_lines(under_file) == [f"wfbench: error: {afile}/sub: --out: is under a file ({afile})"]
    assert _error_lines(cannot) == [
        f"wfbench: error: {unwritable}: --out: cannot use it as the output directory:"
        " No such file or directory"
    ]
    assert "Traceback" not in as_file.stderr + under_file.stderr + cannot.stderr


def test_fail_on_refuses_an_unknown_decision_on_run_too(demo: Path, tmp_path: Path) -> None:
    done = wfbench("run", demo, "--out", tmp_path / "o", "--fail-on", "keep-incumbent")

    assert done.returncode == 2
    assert "--fail-on: unknown decision 'keep-incumbent'" in done.stderr
    assert not (tmp_path / "o").exists()


def test_provider_log_without_a_provider_script_is_refused(demo: Path, tmp_path: Path) -> None:
    corpus = demo.parent / "no-script.yaml"
    corpus.write_text(demo.read_text().replace("provider_script: provider.yaml\n", ""))
    env_done = subprocess.run(
        [
            *WFBENCH,
            "run",
            str(corpus),
            "--out",
            str(tmp_path / "o"),
            "--base-url",
            "http://127.0.0.1:9",
            "--provider-log",
            str(tmp_path / "p.jsonl"),
            "--sandbox",
            "host-unsafe",
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        env={**{k: v for k, v in os.environ.items() if k != "CI"}, "WFBENCH_ANTHROPIC_API_KEY": "k-test"},
    )

    assert env_done.returncode == 2, env_done.stderr
    assert "--provider-log: records the scripted provider's requests; this run has none" in env_done.stderr
    assert not (tmp_path / "o").exists()
