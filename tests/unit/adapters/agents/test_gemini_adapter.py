"""The Gemini CLI adapter's command line, environment, settings and skills (no process is started)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import DirectSandbox
from wfbench.adapters.agents.gemini import (
    HOSTED_TOOLS,
    GeminiCLI,
    find_package,
    gemini_argv,
    gemini_settings,
)
from wfbench.domain.errors import InputError
from wfbench.domain.session.records import SessionRequest
from wfbench.domain.workspace.sandbox import SandboxPolicy

KEY = "AIzaSy-FAKE-key-for-the-adapter-0000"
CLI = GeminiCLI("/pkg/gemini-cli", "/usr/bin/node", "0.61.0 (Gemini CLI)")
POLICY = SandboxPolicy(
    workspace="/ws", workspace_writable=True, network=True, timeout_s=1.0, env={"PATH": "/bin"}
)


def request(**fields: Any) -> SessionRequest:
    base: dict[str, Any] = {
        "prompt": "Task: do it.",
        "model": "gemini-2.5-pro",
        "env": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:4000/v1"},
        "secrets": {"ANTHROPIC_API_KEY": KEY},
        "timeout_s": 77.0,
    }
    return SessionRequest(**{**base, **fields})


def policy_for(req: SessionRequest) -> SandboxPolicy:
    return CLI.session_policy(
        req, POLICY, sandbox=DirectSandbox(home="/h"), files=("/t/settings.json", "/t/skills.mjs")
    )


def test_the_session_runs_node_on_the_bundle_with_the_preload_and_headless_flags() -> None:
    req = request(add_dirs=("/review-output",))
    policy = policy_for(req)
    argv = CLI.argv(req, sandbox=DirectSandbox(home="/h"), policy=policy)
    assert argv == [
        "/usr/bin/node",
        "--import",
        "/t/skills.mjs",
        "/pkg/gemini-cli/bundle/gemini.js",
        "--output-format",
        "stream-json",
        "--yolo",
        "--skip-trust",
        "-m",
        "gemini-2.5-pro",
        "--include-directories",
        "/review-output",
    ]
    assert "Task" not in " ".join(argv)  # the prompt goes on stdin


def test_the_environment_names_the_endpoint_the_key_one_process_and_the_settings() -> None:
    policy = policy_for(request())
    assert policy.env["GOOGLE_GEMINI_BASE_URL"] == "http://127.0.0.1:4000"  # no /v1: the SDK adds /v1beta
    assert policy.env["GEMINI_API_KEY"] == KEY
    assert policy.env["GEMINI_CLI_NO_RELAUNCH"] == "1"
    assert policy.env["WFBENCH_GEMINI_SETTINGS"] == "/t/settings.json"
    assert (policy.env["PATH"], policy.env["TERM"]) == ("/bin", "dumb")
    assert (policy.non_dumpable, policy.timeout_s) == (True, 77.0)
    assert {m.target for m in policy.mounts} >= {
        "/opt/gemini/cli",
        "/opt/gemini/node",
        "/opt/wfbench/gemini-skills.mjs",
    }


def test_skills_are_named_to_the_preload_as_the_sandbox_sees_them() -> None:
    req = request(skill_paths={"work": ".claude/skills/work", "plan": ".claude/skills/plan"})
    assert (
        policy_for(req).env["WFBENCH_GEMINI_SKILLS"]
        == "plan=/ws/.claude/skills/plan\nwork=/ws/.claude/skills/work"
    )


@pytest.mark.parametrize(
    "skills",
    [
        {"../x": ".claude/skills/x"},
        {"plan": "/etc/skills/plan"},
        {"plan": ".claude/../../plan"},
        {"plan": "a\nb=c"},
    ],
)
def test_a_skill_that_is_no_name_or_leaves_the_workspace_is_refused(skills: dict[str, str]) -> None:
    with pytest.raises(InputError):
        policy_for(request(skill_paths=skills))


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"secrets": {}}, "secrets"),
        ({"secrets": {"GEMINI_API_KEY": "  "}}, "GEMINI_API_KEY"),
        ({"env": {}}, "GOOGLE_GEMINI_BASE_URL"),
        ({"env": {"GOOGLE_GEMINI_BASE_URL": "http://u:p@host"}}, "GOOGLE_GEMINI_BASE_URL"),
    ],
)
def test_a_request_without_a_usable_endpoint_or_key_is_refused(fields: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError) as refused:
        policy_for(request(**fields))
    assert refused.value.field == field


def test_a_secret_in_the_command_line_is_refused() -> None:
    req = request(model=KEY)
    with pytest.raises(InputError, match="secret"):
        CLI.argv(req, sandbox=DirectSandbox(home="/h"), policy=policy_for(request()))


def test_settings_turn_off_retries_hosted_tools_and_telemetry_and_redact_tool_env() -> None:
    settings: dict[str, Any] = json.loads(json.dumps(gemini_settings()))
    assert settings["security"]["auth"]["selectedType"] == "gemini-api-key"
    assert settings["security"]["environmentVariableRedaction"]["enabled"] is True
    assert "GEMINI_API_KEY" in settings["security"]["environmentVariableRedaction"]["blocked"]
    assert settings["general"]["maxAttempts"] == 1
    assert settings["general"]["retryFetchErrors"] is False
    assert settings["tools"]["exclude"] == list(HOSTED_TOOLS) == ["google_web_search", "web_fetch"]
    assert settings["telemetry"]["enabled"] is False
    assert settings["privacy"]["usageStatisticsEnabled"] is False
    assert gemini_argv(request())[-2:] == ["-m", "gemini-2.5-pro"]


def test_the_package_is_found_from_its_bin_link_or_its_root(tmp_path: Path) -> None:
    root = tmp_path / "node_modules" / "@google" / "gemini-cli"
    (root / "bundle").mkdir(parents=True)
    (root / "package.json").write_text(json.dumps({"name": "@google/gemini-cli"}))
    (root / "bundle" / "gemini.js").write_text("")
    link = tmp_path / "gemini"
    link.symlink_to(root / "bundle" / "gemini.js")
    assert find_package(str(link)) == str(root)
    assert find_package(str(root)) == str(root)
    (root / "package.json").write_text(json.dumps({"name": "other"}))
    with pytest.raises(InputError):
        find_package(str(link))
