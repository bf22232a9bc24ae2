"""The listed fixes of issue 11, through the `wfbench` command: `repo:` must be a repository's top level,
hidden files inside the repository are refused, `--base-url` never silently loses to a provider script,
`--tasks` selects (an unknown id is exit 2), task variables are checked, plugin directories are mounted
where the agent is told they are, and a plan phase that merely runs Python stays valid."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.support.sweep_kit import (
    MODEL,
    WFBENCH,
    base_files,
    bash,
    bwrap_or_skip,
    by_task,
    git,
    impl_task,
    make_repo,
    rule,
    run_sweep,
    tell,
    turn,
    write,
    write_corpus,
)


def wfbench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*WFBENCH, *args], capture_output=True, text=True, timeout=300, check=False)


def test_a_repo_inside_another_repository_is_refused_naming_the_enclosing_one(tmp_path):
    """The corpus lives in a repository and names a plain subdirectory as `repo:`: refused, exit 2."""
    outer = make_repo(tmp_path, {"project/app.py": "x = 1\n", "corpus/oracle.txt": "hidden\n"})
    corpus = write_corpus(outer / "corpus", [impl_task("t", repo="../project")], None)
    done = wfbench("tasks", "check", str(corpus))
    assert done.returncode == 2, tell(done)
    assert "t: repo:" in done.stderr
    assert "not the top level of a git repository" in done.stderr
    assert str(outer) in done.stderr


def test_an_oracle_file_inside_the_repository_is_refused(tmp_path):
    root = tmp_path / "c"
    repo = make_repo(root, {**base_files(), "hidden/oracle.txt": "x\n"})
    task = impl_task("t", oracle_source="repo/hidden/oracle.txt")
    corpus = write_corpus(root, [task], None)
    done = wfbench("tasks", "check", str(corpus))
    assert done.returncode == 2, tell(done)
    assert "oracle.files[0].source" in done.stderr
    assert f"inside the task's repository {repo}" in done.stderr


def test_a_corpus_oracle_outside_the_repository_is_accepted(tmp_path):
    """Positive control for the two refusals above."""
    root = tmp_path / "c"
    make_repo(root, base_files())
    done = wfbench("tasks", "check", str(write_corpus(root, [impl_task("t")], None)))
    assert done.returncode == 0, tell(done)


def test_base_url_with_a_corpus_provider_script_is_refused_naming_both(tmp_path):
    root = tmp_path / "c"
    make_repo(root, base_files())
    corpus = write_corpus(root, [impl_task("t")], {"conversations": []})
    done = wfbench("run", str(corpus), "--out", str(tmp_path / "out"), "--base-url", "http://127.0.0.1:9")
    assert done.returncode == 2, tell(done)
    assert "--base-url" in done.stderr
    assert "provider_script" in done.stderr
    assert "--no-provider-script" in done.stderr
    lone = wfbench("run", str(corpus), "--out", str(tmp_path / "out2"), "--no-provider-script")
    assert lone.returncode == 2
    assert "--no-provider-script needs --base-url" in lone.stderr


def test_an_unknown_task_id_is_exit_2_and_globs_select(tmp_path):
    root = tmp_path / "c"
    make_repo(root, base_files())
    corpus = write_corpus(root, [impl_task("fix-a"), impl_task("fix-b"), impl_task("feat-c")], None)
    bad = wfbench("tasks", "check", str(corpus), "--tasks", "fix-a,nosuch")
    assert bad.returncode == 2
    assert "--tasks: 'nosuch' matches no task" in bad.stderr
    good = wfbench("tasks", "check", str(corpus), "--tasks", "fix-*")
    assert good.returncode == 0, tell(good)
    assert "fix-a" in good.stdout
    assert "fix-b" in good.stdout
    assert "feat-c" not in good.stdout


def test_task_variables_with_harness_or_credential_names_are_refused(tmp_path):
    root = tmp_path / "c"
    make_repo(root, base_files())
    for name, reason in (
        ("PATH", "is set by the harness"),
        ("DB_PASSWORD", "looks like a credential"),
        ("WFBENCH_X", "is in a namespace the harness owns"),
    ):
        corpus = write_corpus(root, [impl_task("t", env={name: "v"})], None)
        done = wfbench("tasks", "check", str(corpus))
        assert done.returncode == 2, (name, done.stderr)
        assert f"t: env.{name}: {reason}" in done.stderr


def _arm_corpus(
    root: Path, arms: dict[str, Any], tasks: list[dict[str, Any]], script: dict[str, Any]
) -> Path:
    path = write_corpus(root, tasks, script)
    corpus = yaml.safe_load(path.read_text())
    corpus["arms"] = arms
    corpus["defaults"] = {"model": MODEL, "workers": 1}
    path.write_text(yaml.safe_dump(corpus, sort_keys=False, width=10_000))
    return path


def test_a_plugin_skill_is_found_in_the_mounted_plugin_dir(tmp_path):
    """`plugin_dirs` are mounted read-only at the path the agent is given: the Skill call succeeds."""
    bwrap_or_skip()
    root = tmp_path / "c"
    make_repo(root, base_files(skills=()))
    skill = root / "plugin" / "skills" / "helper"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: helper\ndescription: h\n---\n# Helper\n")
    arms = {"plug": {"phases": [{"prompt": "{task}", "skill": "helper", "plugin_dirs": ["plugin"]}]}}
    script = {
        "conversations": [rule("t", turn({"name": "Skill", "input": {"skill": "helper"}}), turn(say="ok"))]
    }
    done = run_sweep(_arm_corpus(root, arms, [impl_task("t")], script), tmp_path / "out", "--arms", "plug")
    row = by_task(tmp_path / "out")["t"]
    assert row["skill_invoked"] is True, tell(done)
    assert row["error_kind"] is None


def test_a_plan_phase_that_runs_python_is_not_plan_evidence_invalid(tmp_path):
    """Planning imports the project: no __pycache__ (PYTHONDONTWRITEBYTECODE reaches the agent's Bash),
    and files the base commit's .gitignore ignores (build/) do not count; editing source still does."""
    bwrap_or_skip()
    root = tmp_path / "c"
    files = {**base_files(skills=()), ".gitignore": "__pycache__/\nbuild/\n"}
    make_repo(root, files)
    arms = {"planner": {"phases": [{"role": "plan", "prompt": "{task}"}, {"prompt": "{task} {plan}"}]}}
    plan = write("{workspace}/docs/plans/p.md", "# Plan\n")
    python = bash("python3 -c 'import app; print(app.answer())' && mkdir -p build && echo x > build/out.txt")
    tasks = [impl_task("runs-python"), impl_task("edits-source")]
    read_app = {"name": "Read", "input": {"file_path": "{workspace}/app.py"}}
    script = {
        "conversations": [
            {"when": ["CASE runs-python:", "docs/plans/p.md"], "turns": [turn(say="done")]},
            rule("runs-python", turn(python), turn(plan), turn(say="planned")),
            {"when": ["CASE edits-source:", "docs/plans/p.md"], "turns": [turn(say="done")]},
            rule("edits-source", turn(read_app, write("{workspace}/app.py", "x = 2\n")), turn(plan), turn()),
        ]
    }
    done = run_sweep(_arm_corpus(root, arms, tasks, script), tmp_path / "out", "--arms", "planner")
    rows = by_task(tmp_path / "out")
    assert rows["runs-python"]["error_kind"] is None, tell(done) + str(rows["runs-python"])
    assert rows["edits-source"]["error_kind"] == "plan-evidence-invalid"  # control: the boundary still holds
    assert git  # the kit's git is what made the repositories
