"""Malformed review labels are the corpus's error: refused at load time, before any session.

Without the load-time check, ``wfbench tasks check`` accepted such a corpus and every review
cell of the task became ``review-evidence-invalid`` at run time, blaming the agent.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

WFBENCH = [sys.executable, "-m", "wfbench"]
GOOD = {
    "id": "L1",
    "severity": "high",
    "path": "app.py",
    "line_start": 2,
    "line_end": 3,
    "category": "correctness",
}
GIT_ENV = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1", "PATH": os.environ["PATH"]}
BAD_LABELS = {
    "inverted-range": ({**GOOD, "line_start": 5, "line_end": 2}, "findings[0].line_end"),
    "missing-key": ({k: v for k, v in GOOD.items() if k != "category"}, "findings[0]"),
    "unknown-severity": ({**GOOD, "severity": "apocalyptic"}, "findings[0].severity"),
}


def _corpus(tmp_path: Path, labels: object) -> Path:
    """A corpus with one review task ``r1`` whose labels file holds ``labels`` (a document or raw text)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "app.py").write_text("a = 1\nb = 2\nc = 3\n")
    for args in (["init", "-q", "-b", "main"], ["add", "app.py"], ["commit", "-qm", "base"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, env=GIT_ENV, check=True
        )
    text = labels if isinstance(labels, str) else json.dumps(labels)
    (tmp_path / "oracles").mkdir()
    (tmp_path / "oracles" / "r1.labels.json").write_text(text)
    task = {
        "id": "r1",
        "class": "review",
        "kind": "review",
        "repo": "repo",
        "prompt": "Review it.",
        "verify": "true",
        "labels": "oracles/r1.labels.json",
    }
    path = tmp_path / "corpus.yaml"
    path.write_text(yaml.safe_dump({"tasks": [task]}))
    return path


def _wfbench(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*WFBENCH, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False, env=env
    )


@pytest.mark.parametrize("case", sorted(BAD_LABELS))
def test_tasks_check_refuses_malformed_labels_naming_corpus_task_and_field(tmp_path: Path, case: str) -> None:
    """`wfbench tasks check` exits 2 with one line: the corpus file, r1, labels, the labels file and field."""
    label, field = BAD_LABELS[case]
    _corpus(tmp_path, {"schema_version": 1, "findings": [label]})
    done = _wfbench("tasks", "check", "corpus.yaml", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"corpus.yaml: r1: labels: oracles/r1.labels.json: {field}" in done.stderr
    assert done.stderr.count("wfbench: error:") == 1
    assert "Traceback" not in done.stderr


def test_labels_that_are_not_json_are_refused_by_tasks_check(tmp_path: Path) -> None:
    """A labels file that is not JSON at all is named with the parser's reason."""
    _corpus(tmp_path, '{"findings": [')
    done = _wfbench("tasks", "check", "corpus.yaml", cwd=tmp_path)
    assert done.returncode == 2
    assert (
        "corpus.yaml: r1: labels: oracles/r1.labels.json: hidden review labels are malformed" in done.stderr
    )


def test_valid_labels_pass_the_load_time_check(tmp_path: Path) -> None:
    """Negative control: the same corpus with well-formed labels passes `tasks check` (exit 0)."""
    _corpus(tmp_path, {"schema_version": 1, "findings": [GOOD]})
    done = _wfbench("tasks", "check", "corpus.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "1 task(s) valid" in done.stdout


def test_wfbench_run_refuses_malformed_labels_before_any_session(tmp_path: Path) -> None:
    """`wfbench run` exits 2 naming the labels; the model endpoint is never contacted, no row is written."""
    _corpus(tmp_path, {"schema_version": 1, "findings": [BAD_LABELS["inverted-range"][0]]})
    sentinel = socket.create_server(("127.0.0.1", 0))
    sentinel.settimeout(0)
    try:
        url = f"http://127.0.0.1:{sentinel.getsockname()[1]}"
        env = {**os.environ, "WFBENCH_ANTHROPIC_API_KEY": "wfbench-label-test-key"}
        args = ["run", "corpus.yaml", "--sandbox", "host-unsafe", "--model", "m", "--out", "out"]
        args += ["--base-url", url, "--workers", "1"]
        done = _wfbench(*args, cwd=tmp_path, env={k: v for k, v in env.items() if k != "CI"})
        with pytest.raises(BlockingIOError):
            sentinel.accept()  # nobody connected
    finally:
        sentinel.close()
    assert done.returncode == 2, done.stdout + done.stderr
    assert "corpus.yaml: r1: labels: oracles/r1.labels.json: findings[0].line_end" in done.stderr
    assert not (tmp_path / "out" / "results.jsonl").exists()
