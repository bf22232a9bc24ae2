"""The OpenCode adapter's command line, environment, config and skills (no process is started)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fakes import DirectSandbox
from wfbench.adapters.agents.opencode import (
    KEY_ENV,
    SHELL_SCRIPT,
    OpenCodeCLI,
    endpoint_of,
    find_binary,
    opencode_config,
)
from wfbench.adapters.agents.opencode import _skills as skills_of
from wfbench.domain.errors import InputError
from wfbench.domain.session.records import SessionRequest
from wfbench.domain.workspace.sandbox import SandboxPolicy

KEY = "sk-ant-FAKE-key-for-the-adapter-0000"
CLI = OpenCodeCLI("/pkg/opencode", "1.18.33 (OpenCode)")
POLICY = SandboxPolicy(
    workspace="/ws", workspace_writable=True, network=False, timeout_s=1.0, env={"PATH": "/bin"}
)


def request(**fields: Any) -> SessionRequest:
    base: dict[str, Any] = {
        "prompt": "Task: do it.",
        "model": "claude-sonnet-4-5",
        "env": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:4000"},
        "secrets": {"ANTHROPIC_API_KEY": KEY},
        "timeout_s": 77.0,
    }
    return SessionRequest(**{**base, **fields})


def policy_for(req: SessionRequest) -> SandboxPolicy:
    return CLI.session_policy(req, POLICY, sandbox=DirectSandbox(home="/h"), files=("/t/oc.json", "/t/shell"))


def test_the_session_runs_opencode_headless_with_a_title_and_no_prompt_in_argv() -> None:
    req = request()
    argv = CLI.argv(req, sandbox=DirectSandbox(home="/h"), policy=policy_for(req))
    assert argv == [
        "/pkg/opencode",
        *("run", "--format", "json", "--title", "wfbench session", "-m", "anthropic/claude-sonnet-4-5"),
    ]


def test_the_key_is_in_the_agent_environment_only_and_its_shell_drops_it() -> None:
    policy = policy_for(request())
    assert policy.env[KEY_ENV] == KEY
    assert (policy.env["OPENCODE_CONFIG"], policy.env["SHELL"]) == ("/t/oc.json", "/t/shell")
    assert policy.env["OPENCODE_DISABLE_MODELS_FETCH"] == "1"
    assert policy.env["OPENCODE_DISABLE_PROJECT_CONFIG"] == "1"
    assert policy.non_dumpable
    assert policy.timeout_s == 77.0
    assert f"env -u {KEY_ENV} /bin/bash" in SHELL_SCRIPT


def test_the_config_points_the_anthropic_provider_at_the_endpoint_and_names_no_key() -> None:
    config = opencode_config(endpoint_of(request()), "claude-sonnet-4-5", ["/ws/.claude/skills/plan"])
    provider: Any = config["provider"]
    assert provider["anthropic"]["options"] == {
        "baseURL": "http://127.0.0.1:4000/v1",
        "apiKey": "{env:WFBENCH_OPENCODE_KEY}",
    }
    assert config["model"] == "anthropic/claude-sonnet-4-5"
    assert config["skills"] == ["/ws/.claude/skills/plan"]
    assert KEY not in str(config)
    permission: Any = config["permission"]
    assert permission["webfetch"] == "deny"


def test_an_endpoint_already_ending_in_v1_is_kept() -> None:
    req = request(env={"ANTHROPIC_BASE_URL": "http://127.0.0.1:4000/v1/"})
    assert endpoint_of(req) == "http://127.0.0.1:4000/v1"


def test_skills_are_named_as_the_sandbox_sees_them() -> None:
    req = request(skill_paths={"work": ".claude/skills/work", "plan": ".claude/skills/plan"})
    assert skills_of(req, "/workspace") == [
        "/workspace/.claude/skills/plan",
        "/workspace/.claude/skills/work",
    ]


@pytest.mark.parametrize(
    ("secrets", "field"), [({}, "secrets"), ({"ANTHROPIC_API_KEY": "  "}, "ANTHROPIC_API_KEY")]
)
def test_a_request_without_a_key_is_refused(secrets: dict[str, str], field: str) -> None:
    with pytest.raises(InputError) as raised:
        policy_for(request(secrets=secrets))
    assert raised.value.field == field


@pytest.mark.parametrize("env", [{}, {"ANTHROPIC_BASE_URL": "file:///x"}])
def test_a_request_without_a_usable_endpoint_is_refused(env: dict[str, str]) -> None:
    with pytest.raises(InputError) as raised:
        endpoint_of(request(env=env))
    assert raised.value.field == "ANTHROPIC_BASE_URL"


@pytest.mark.parametrize("rel", ["/etc/skills", "../up", ".claude/skills/a\nb"])
def test_a_skill_outside_the_workspace_is_refused(rel: str) -> None:
    with pytest.raises(InputError, match="workspace-relative"):
        skills_of(request(skill_paths={"plan": rel}), "/workspace")


def test_a_secret_in_the_command_line_is_refused() -> None:
    req = request(model=KEY)
    with pytest.raises(InputError, match="secret value occurs"):
        CLI.argv(req, sandbox=DirectSandbox(home="/h"), policy=policy_for(req))


def test_a_path_that_is_no_executable_is_no_opencode(tmp_path: Any) -> None:
    with pytest.raises(InputError, match="not an executable"):
        find_binary(str(tmp_path / "missing"))
