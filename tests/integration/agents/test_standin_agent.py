"""The stand-in agent as a real process against the scripted provider over loopback HTTP."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from wfbench.adapters.agents import standin as standin_agent
from wfbench.adapters.provider.script import ProviderScript
from wfbench.adapters.provider.scripted import ScriptedProvider

AGENT = os.path.realpath(standin_agent.__file__)
FLAGS = ["-p", "--input-format", "text", "--output-format", "stream-json", "--verbose"]


@pytest.fixture
def start() -> Iterator[Any]:
    providers: list[ScriptedProvider] = []

    def begin(*turns: dict[str, Any]) -> ScriptedProvider:
        script = {"conversations": [{"when": ["Task"], "turns": list(turns)}]}
        provider = ScriptedProvider(ProviderScript.from_yaml(yaml.safe_dump(script))).start()
        providers.append(provider)
        return provider

    yield begin
    for provider in providers:
        provider.stop()


def agent(
    provider: ScriptedProvider, cwd: Path, *extra: str, env: dict[str, str] | None = None
) -> tuple[int, list[dict[str, Any]]]:
    """Run the stand-in exactly as the adapter does (isolated, no site) and parse its events."""
    full_env = {
        "PATH": "/usr/bin:/bin",
        "ANTHROPIC_BASE_URL": provider.base_url,
        "ANTHROPIC_API_KEY": "k-123456",
    }
    proc = subprocess.run(
        [sys.executable, "-I", "-S", AGENT, *FLAGS, *extra],
        input=b"Task: do it",
        capture_output=True,
        cwd=cwd,
        env={**full_env, **(env or {})},
        timeout=60,
        check=False,
    )
    assert proc.stderr == b""
    return proc.returncode, [json.loads(line) for line in proc.stdout.decode().splitlines()]


def the_result(events: list[dict[str, Any]]) -> dict[str, Any]:
    results = [event for event in events if event["type"] == "result"]
    assert len(results) == 1
    assert events[-1] is results[0]
    return results[0]


def tool_results(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        b
        for e in events
        if e["type"] == "user"
        for b in e["message"]["content"]
        if b["type"] == "tool_result"
    ]


def call(name: str, **tool_input: Any) -> dict[str, Any]:
    return {"tools": [{"name": name, "input": tool_input}]}


@pytest.mark.parametrize(
    ("turn", "status"),
    [
        ({"status": 429}, 429),
        ({"status": 500}, 500),
        ({"status": 529}, 529),
        ({"say": "partial", "truncate_after_events": 2}, None),
        ({"malformed": True}, None),
        ({"reset": True}, None),
    ],
)
def test_http_failures_end_the_session_with_one_error_result_not_a_crash(start, tmp_path, turn, status):
    """Every provider failure is an error result with the status, exit 1, and no traceback."""
    code, events = agent(start(turn), tmp_path)
    result = the_result(events)
    assert code == 1
    assert result["is_error"] is True
    assert result["subtype"] == "error_during_execution"
    assert result["api_error_status"] == status
    assert events[0]["subtype"] == "init"


def test_a_stalled_provider_times_out_into_an_error_result(start, tmp_path):
    """API_TIMEOUT_MS bounds each model call."""
    code, events = agent(start({"stall_s": 30}), tmp_path, env={"API_TIMEOUT_MS": "500"})
    assert code == 1
    assert the_result(events)["is_error"] is True


@pytest.mark.parametrize("bad", [-5, True, "1200", 1.5])
def test_invalid_usage_is_refused(start, tmp_path, bad):
    """A nonsense usage value ends the session with an error, never a zero-filled success."""
    turn = {"say": "x", "raw_usage": {"input_tokens": 1, "output_tokens": 1, "cache_read_input_tokens": bad}}
    code, events = agent(start(turn), tmp_path)
    assert code == 1
    assert "usage" in the_result(events)["result"]


def test_absent_usage_stays_absent_and_the_cost_is_then_unknown(start, tmp_path):
    """Only reported fields are forwarded; without input/output counts no cost is claimed."""
    code, events = agent(start({"say": "x", "usage": {"cache_read_input_tokens": 7}}), tmp_path)
    result = the_result(events)
    assert code == 0
    assert result["usage"] == {"cache_read_input_tokens": 7}
    assert "total_cost_usd" not in result


def test_cost_comes_from_the_documented_price_table(start, tmp_path):
    """Haiku 4.5: 1 / 1.25 / 0.10 / 5 USD per million input / cache-write / cache-read / output."""
    usage = {"input_tokens": 1000, "output_tokens": 100, "cache_creation_input_tokens": 2000}
    code, events = agent(start({"say": "x", "usage": usage}), tmp_path, "--model", "claude-haiku-4-5")
    assert the_result(events)["total_cost_usd"] == pytest.approx((1000 * 1 + 2000 * 1.25 + 100 * 5) / 1e6)


def test_edit_and_read_run_for_real(start, tmp_path):
    """Read returns numbered lines; Edit (of the file read) replaces the unique occurrence."""
    target = tmp_path / "f.txt"
    target.write_text("alpha\nbeta\n")
    provider = start(
        call("Read", file_path=str(target)),
        call("Edit", file_path=str(target), old_string="beta", new_string="gamma"),
        call("Read", file_path=str(target)),
        {"say": "done"},
    )
    code, events = agent(provider, tmp_path)
    assert code == 0
    assert target.read_text() == "alpha\ngamma\n"
    results = tool_results(events)
    assert [r["is_error"] for r in results] == [False, False, False]
    assert "2\tgamma" in results[2]["content"]


@pytest.mark.parametrize(
    ("turn", "flags", "needle"),
    [
        (call("Frobnicate"), (), "No such tool available"),
        (call("Write", file_path="relative.txt", content="x"), (), "absolute"),
        (call("Bash", command="true"), ("--disallowedTools", "Bash"), "No such tool available"),
        (call("Bash", command="true"), ("--allowedTools", "Read", "Write"), "denied"),
        (call("Bash", command="exit 3"), (), "exit code 3"),
        (call("Skill", skill="nosuch"), (), "Unknown skill: nosuch"),
    ],
)
def test_refused_or_failing_tools_are_error_tool_results_and_the_session_goes_on(
    start, tmp_path, turn, flags, needle
):
    """Unknown, disallowed, unapproved or failing tools give is_error results, not a crash."""
    code, events = agent(start(turn, {"say": "ok"}), tmp_path, *flags)
    assert code == 0
    (result,) = tool_results(events)
    assert result["is_error"] is True
    assert needle in result["content"]


def test_skill_launches_and_injects_the_skill_text(start, tmp_path):
    """Like the real CLI: "Launching skill: plan", then the skill body goes into the conversation."""
    skill = tmp_path / ".claude" / "skills" / "plan"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: plan\n---\n\nWrite PLAN.md first.\n")
    provider = start(call("Skill", skill="plan"), {"say": "ok"})
    code, events = agent(provider, tmp_path)
    (result,) = tool_results(events)
    assert result == {**result, "is_error": False, "content": "Launching skill: plan"}
    assert "Write PLAN.md first." in json.dumps(provider.requests[-1].body["messages"][-1])
    assert "name: plan" not in json.dumps(provider.requests[-1].body["messages"][-1])


def test_bash_runs_in_the_working_directory_with_a_scrubbed_environment(start, tmp_path):
    """No key, token or secret variable reaches a Bash child; PATH and HOME do."""
    provider = start(call("Bash", command="pwd; env"), {"say": "ok"})
    env = {"GITHUB_TOKEN": "ghp_x", "MY_SECRET": "s", "HOME": str(tmp_path)}
    code, events = agent(provider, tmp_path, env=env)
    (result,) = tool_results(events)
    assert result["content"].startswith(str(tmp_path))
    for name in ("ANTHROPIC_API_KEY", "GITHUB_TOKEN", "MY_SECRET", "ANTHROPIC_BASE_URL"):
        assert name not in result["content"]
    assert "PATH=" in result["content"]
    assert f"HOME={tmp_path}" in result["content"]


def test_the_first_request_states_the_working_directory_and_carries_the_key_header(start, tmp_path):
    """The provider expands {workspace} from it; the key travels as x-api-key (recorded redacted)."""
    provider = start(call("Write", file_path="{workspace}/out.txt", content="hi"), {"say": "ok"})
    code, events = agent(provider, tmp_path, "--some-future-flag", "--effort", "high")
    assert code == 0
    assert (tmp_path / "out.txt").read_text() == "hi"
    first = provider.requests[0]
    assert f"Primary working directory: {tmp_path}" in json.dumps(first.body["messages"][0])
    assert first.headers["anthropic-version"] == "2023-06-01"
    assert "x-api-key" in first.headers
    assert events[0]["cwd"] == str(tmp_path)


def test_the_console_script_is_installed_and_the_file_is_executable():
    """`wfbench-standin-agent` exists on PATH and the module file carries its executable bit."""
    assert os.access(AGENT, os.X_OK)
    assert shutil.which("wfbench-standin-agent") is not None
