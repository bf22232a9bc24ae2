"""The `wfbench run` / `doctor` / `tasks check` command line, as a subprocess."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

WFBENCH = [sys.executable, "-m", "wfbench"]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*WFBENCH, *args], capture_output=True, text=True, timeout=120, check=False)


def test_workers_outside_one_to_sixty_four_are_refused_before_anything_runs(tmp_path):
    """--workers 0 and 65 are usage errors (exit 2) and create no output directory."""
    for value in ("0", "65"):
        done = cli("run", "--workers", value, "--out", str(tmp_path / value))
        assert done.returncode == 2, done.stderr
        assert not (tmp_path / value).exists()


def test_a_negative_outage_streak_is_refused(tmp_path):
    """--outage-streak below 0 would trip at once in the reference; here it is a usage error."""
    done = cli("run", "--outage-streak", "-1", "--out", str(tmp_path / "o"))
    assert done.returncode == 2


def test_a_missing_corpus_names_the_file_and_exits_2(tmp_path):
    """A corpus path that does not exist is one message naming it, exit 2."""
    missing = tmp_path / "nope.yaml"
    done = cli("tasks", "check", str(missing))
    assert done.returncode == 2
    assert f"{missing}: corpus file does not exist" in done.stderr


def test_a_bad_prices_file_is_one_message_naming_file_line_and_field_and_exits_2(tmp_path):
    """`--prices` with a bad price: refused before any cell (and before a dry run plans one)."""
    prices = tmp_path / "ours.csv"
    prices.write_text(
        "provider,model,input,cache_write,cache_read,output,source,as_of\n"
        "openai,gpt-5.5,5,5,0.5,abc,contract,2026-11-01\n"
    )
    for extra in (("--dry-run",), ()):
        done = cli("run", "--prices", str(prices), "--out", str(tmp_path / "out"), *extra)
        assert done.returncode == 2, done.stderr
        assert f"wfbench: error: {prices}: line 2: output: 'abc' is not a price" in done.stderr
        assert "Traceback" not in done.stderr


def test_doctor_reports_bwrap_claude_node_and_python():
    """`wfbench doctor` prints one line for each capability it checks."""
    done = cli("doctor")
    assert done.returncode in (0, 1), done.stderr
    for prefix in (
        "python:",
        "git:",
        "bwrap:",
        "disk (results):",
        "disk (TMPDIR):",
        "api key:",
        "claude:",
        "codex:",
        "gemini:",
        "opencode:",
        "node:",
    ):
        assert prefix in done.stdout


def _doctor(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {"PATH": os.environ["PATH"], "PYTHONPATH": os.pathsep.join(sys.path), "HOME": str(tmp_path)}
    return subprocess.run(
        [*WFBENCH, "doctor"], capture_output=True, text=True, timeout=120, check=False, env={**base, **env}
    )


def _line(done: subprocess.CompletedProcess[str], name: str) -> str:
    return next(line for line in done.stdout.splitlines() if line.startswith(f"{name}: "))


def test_doctor_exits_1_when_git_is_missing(tmp_path):
    """git is required (every workspace is a git snapshot): without it, a FAIL line and exit 1."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bwrap", "node"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)

    done = _doctor(tmp_path, PATH=str(bin_dir))

    assert done.returncode == 1, done.stdout
    assert _line(done, "git").startswith("git: FAIL — not found on PATH")
    assert "requirement(s) failed: git" in done.stdout


def test_doctor_checks_the_api_key_variable_and_says_the_standard_one_is_not_read(tmp_path):
    unset = _doctor(tmp_path, ANTHROPIC_API_KEY="sk-other-tool")
    set_ = _doctor(tmp_path, WFBENCH_ANTHROPIC_API_KEY="sk-doctor-test")

    assert _line(unset, "api key").startswith("api key: warn — WFBENCH_ANTHROPIC_API_KEY is not set")
    assert "ANTHROPIC_API_KEY is set but wfbench never reads it" in _line(unset, "api key")
    assert _line(set_, "api key").startswith("api key: ok — WFBENCH_ANTHROPIC_API_KEY is set")
    assert "sk-doctor-test" not in set_.stdout + set_.stderr


def test_doctor_compares_the_installed_agent_with_the_pinned_version(tmp_path):
    """A claude CLI that is not the pinned version is a warning naming both versions (not a failure)."""
    from wfbench.adapters.agents.claude import CLAUDE_VERSION

    fake = tmp_path / "claude"
    fake.write_text("#!/bin/sh\necho '2.0.1 (Claude Code)'\n")
    fake.chmod(0o755)

    done = _doctor(tmp_path, WFBENCH_CLAUDE_BIN=str(fake))

    line = _line(done, "claude")
    assert line.startswith("claude: warn — ")
    assert "2.0.1 (Claude Code)" in line
    assert f"not the pinned {CLAUDE_VERSION}" in line


def test_the_pinned_claude_version_is_the_one_install_tools_installs():
    from wfbench.adapters.agents.claude import CLAUDE_VERSION
    from wfbench.adapters.agents.codex import CODEX_VERSION

    script = (Path(__file__).resolve().parents[2] / "scripts" / "install-tools").read_text()

    assert f'CLAUDE_VERSION="{CLAUDE_VERSION}"' in script
    assert f'CODEX_VERSION="{CODEX_VERSION}"' in script
