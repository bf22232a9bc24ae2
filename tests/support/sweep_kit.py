"""Small corpora for whole-sweep tests: a tiny git repository, tasks and a provider script on disk.

Used by the fault-matrix and hostile-sweep suites (tests/integration/sweep/test_fault_matrix.py,
tests/integration/sandbox/test_hostile_sweeps.py). Each sweep runs as a subprocess: ``python -m wfbench
run CORPUS --out OUT ...``; the helpers here only write files and read what the sweep wrote.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import require_or_skip

WFBENCH = [sys.executable, "-m", "wfbench"]
MODEL = "claude-sonnet-4-5"
GIT_ENV = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/nonexistent",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
}
#: Usage every scripted turn reports (so a success row has measured tokens and a cost).
USAGE = {
    "input_tokens": 100,
    "output_tokens": 20,
    "cache_read_input_tokens": 0,
    "cache_creation_input_tokens": 0,
}
SKILL_MD = "---\nname: {name}\ndescription: {name} skill\n---\n# {name}\n\nDo the task carefully.\n"


def bwrap_or_skip() -> None:
    """Skip (or fail under WFBENCH_REQUIRE_BWRAP=1) when bubblewrap cannot run here."""
    probe = shutil.which("bwrap") and subprocess.run(
        ["bwrap", "--ro-bind", "/", "/", "true"], capture_output=True, check=False
    )
    if not probe or probe.returncode != 0:
        require_or_skip("WFBENCH_REQUIRE_BWRAP", "bubblewrap cannot run here")


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` with a neutral configuration; its stdout."""
    done = subprocess.run(["git", *args], cwd=repo, env=GIT_ENV, check=True, capture_output=True, text=True)
    return done.stdout


def make_repo(root: Path, files: Mapping[str, str], *, history: Mapping[str, str] | None = None) -> Path:
    """A git repository at ``root/repo`` with ``files`` committed on ``main``.

    ``history`` (optional) is committed first and removed by the second commit, so it lives
    only in the repository's history (a snapshot must never carry it).
    """
    repo = root / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    if history:
        _write(repo, history)
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "history")
        git(repo, "rm", "-rq", *history)
    _write(repo, files)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "task")
    return repo


def _write(root: Path, files: Mapping[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def base_files(skills: Iterable[str] = ("work", "review")) -> dict[str, str]:
    """A tiny Python project with a passing test and the named skills."""
    files = {
        "app.py": "def answer():\n    return 42\n",
        "tests/test_app.py": "from app import answer\n\n\ndef test_answer():\n    assert answer() == 42\n",
    }
    for name in skills:
        files[f".claude/skills/{name}/SKILL.md"] = SKILL_MD.format(name=name)
    return files


def impl_task(
    task_id: str,
    *,
    prompt: str | None = None,
    verify: str = "true",
    oracle: str = "test -f $WFBENCH_ORACLE_ROOT/oracle.txt",
    oracle_source: str = "oracle.txt",
    **extra: Any,
) -> dict[str, Any]:
    """An implementation task over ``repo`` whose prompt carries ``CASE <id>`` (what the script matches)."""
    return {
        "id": task_id,
        "class": "fault",
        "kind": "implementation",
        "repo": "repo",
        "ref": "main",
        "prompt": prompt or f"CASE {task_id}: do the task.",
        "verify": verify,
        "oracle": {"command": oracle, "files": [{"source": oracle_source, "target": "oracle.txt"}]},
        **extra,
    }


def review_task(task_id: str, *, labels: str = "labels.json", **extra: Any) -> dict[str, Any]:
    """A review task over ``repo``; its prompt carries ``CASE <id>``."""
    return {
        "id": task_id,
        "class": "review-defect",
        "kind": "review",
        "repo": "repo",
        "ref": "main",
        "prompt": f"CASE {task_id}: review the change.",
        "verify": 'test -s "$WFBENCH_REVIEW_OUTPUT"',
        "labels": labels,
        **extra,
    }


LABELS = {
    "schema_version": 1,
    "findings": [
        {
            "id": "L1",
            "path": "app.py",
            "line_start": 2,
            "line_end": 2,
            "category": "correctness",
            "severity": "high",
        }
    ],
}


def write_corpus(
    root: Path,
    tasks: Sequence[Mapping[str, Any]],
    script: Mapping[str, Any] | None,
    *,
    oracle_text: str = "oracle\n",
) -> Path:
    """Write ``corpus.yaml`` (and ``script.yaml`` unless None, then no provider script) under ``root``."""
    (root / "oracle.txt").write_text(oracle_text)
    (root / "labels.json").write_text(json.dumps(LABELS))
    corpus: dict[str, Any] = {"name": root.name, "defaults": {"model": MODEL}, "tasks": list(tasks)}
    if script is not None:
        (root / "script.yaml").write_text(yaml.safe_dump(dict(script), sort_keys=False, width=10_000))
        corpus["provider_script"] = "script.yaml"
    path = root / "corpus.yaml"
    path.write_text(yaml.safe_dump(corpus, sort_keys=False, width=10_000))
    return path


def rule(task_id: str, *turns: Mapping[str, Any]) -> dict[str, Any]:
    """A provider-script rule answering the task whose prompt holds ``CASE <task_id>:``."""
    return {"when": [f"CASE {task_id}:"], "turns": [dict(t) for t in turns]}


def bash(command: str) -> dict[str, Any]:
    """A scripted Bash tool call."""
    return {"name": "Bash", "input": {"command": command}}


def write(path: str, content: str) -> dict[str, Any]:
    """A scripted Write tool call."""
    return {"name": "Write", "input": {"file_path": path, "content": content}}


def turn(*tools: Mapping[str, Any], say: str | None = None, **fields: Any) -> dict[str, Any]:
    """One scripted turn with usage (tools, text and any fault fields)."""
    out: dict[str, Any] = {"usage": dict(USAGE), **fields}
    if tools:
        out["tools"] = [dict(t) for t in tools]
    if say is not None:
        out["say"] = say
    return out


def run_sweep(
    corpus: Path,
    out: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """``python -m wfbench run CORPUS --out OUT ARGS...`` (a subprocess); never raises on exit code."""
    return subprocess.run(
        [*WFBENCH, "run", str(corpus), "--out", str(out), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=None if env is None else dict(env),
    )


def rows(out: Path) -> list[dict[str, Any]]:
    """Every row of ``out/results.jsonl`` (each line must parse)."""
    return [json.loads(line) for line in (out / "results.jsonl").read_text().split("\n") if line.strip()]


def by_task(out: Path) -> dict[str, dict[str, Any]]:
    """Rows keyed by task id (one run, one arm per task)."""
    return {r["task"]: r for r in rows(out)}


def tell(done: subprocess.CompletedProcess[str]) -> str:
    """The tails of a finished sweep's output, for assertion messages."""
    return f"exit {done.returncode}\nstdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"


def processes_with(token: str) -> list[int]:
    """Pids of live processes whose command line holds ``token``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if token.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(int(entry))
            except OSError:
                continue
    return found
