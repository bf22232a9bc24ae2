"""The GeminiCLI adapter driving the real Gemini CLI under bwrap against the scripted provider.

What the adapter owns, through the real CLI: the Gemini wire (path, key header, streaming), the
usage mapping, a skill presented and activated, the key unreadable by tools (environment
redaction and a non-dumpable agent process), and injected failures ending the session. Skips
without the CLI or bwrap, and fails instead under ``WFBENCH_REQUIRE_GEMINI=1`` /
``WFBENCH_REQUIRE_BWRAP=1``. About 10 s a session on a loaded machine (Node's start-up).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import gemini_binary, require_or_skip
from wfbench.adapters.agents.gemini import GeminiCLI
from wfbench.adapters.provider.script import ProviderScript
from wfbench.adapters.provider.scripted import ScriptedProvider
from wfbench.adapters.sandbox.bwrap import BwrapSandbox
from wfbench.domain.results.rows import ErrorKind
from wfbench.domain.session.records import SessionRecord, SessionRequest, Usage
from wfbench.domain.workspace.sandbox import SandboxPolicy

pytestmark = [pytest.mark.gemini, pytest.mark.bwrap]
KEY = "AIzaSy-wfbench-FAKE-gemini-0123456789abcdef"
SKILL = "---\nname: plan\ndescription: Plan the change before coding.\n---\n\n# Plan\nWrite PLAN.md first.\n"
USAGE = {"input_tokens": 1200, "output_tokens": 80, "cache_read_input_tokens": 44000, "thinking_tokens": 7}
DONE = {"say": "Done.", "usage": {"input_tokens": 10, "output_tokens": 5}}
#: Every way a tool could find the key: its own environment and every process's.
PROBE = (
    "env; for p in /proc/[0-9]*; do cat $p/environ; tr '\\0' '\\n' < $p/cmdline; done 2>&1 | tr '\\0' '\\n'"
)


@pytest.fixture(scope="module")
def gemini() -> GeminiCLI:
    if shutil.which("bwrap") is None:
        require_or_skip("WFBENCH_REQUIRE_BWRAP", "bubblewrap is not installed")
    binary = gemini_binary()
    if binary is None:
        require_or_skip("WFBENCH_REQUIRE_GEMINI", "the real Gemini CLI is not installed")
    assert binary is not None
    return GeminiCLI.real(binary)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".claude" / "skills" / "plan").mkdir(parents=True)
    (root / ".claude" / "skills" / "plan" / "SKILL.md").write_text(SKILL)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


@pytest.fixture
def provider_for() -> Iterator[Any]:
    started: list[ScriptedProvider] = []

    def start(turns: list[dict[str, Any]]) -> ScriptedProvider:
        conversations = [{"when": ["Task"], "protocol": "gemini", "turns": turns}]
        provider = ScriptedProvider(
            ProviderScript.from_yaml(yaml.safe_dump({"conversations": conversations}))
        )
        started.append(provider.start())
        return provider

    yield start
    for provider in started:
        provider.stop()


def run(gemini: GeminiCLI, provider: ScriptedProvider, workspace: Path, **fields: Any) -> SessionRecord:
    request = SessionRequest(
        prompt="Task: do it.",
        model="gemini-2.5-pro",
        env={"ANTHROPIC_BASE_URL": provider.base_url},
        secrets={"GEMINI_API_KEY": KEY},
        skill_paths={"plan": ".claude/skills/plan"},
        **{"timeout_s": 120.0, **fields},
    )
    policy = SandboxPolicy(
        workspace=str(workspace),
        workspace_writable=True,
        network=True,
        timeout_s=1.0,
        env={"PATH": "/usr/bin:/bin"},
        read_only_paths=(".claude/skills/plan",),
    )
    return gemini.run_session(request, sandbox=BwrapSandbox(), policy=policy)


def test_a_scripted_write_file_runs_for_real_and_usage_maps_to_wfbench_fields(
    gemini: GeminiCLI, provider_for: Any, workspace: Path
) -> None:
    """Two streamed requests; 1200+10 uncached, 44000 cache reads, 80+7+5 out (thinking is output)."""
    write = {"name": "write_file", "input": {"file_path": "{workspace}/out.txt", "content": "hi\n"}}
    provider = provider_for([{"say": "Writing.", "tools": [write], "usage": USAGE}, DONE])
    record = run(gemini, provider, workspace)
    assert record.ok, record.error_detail
    assert (workspace / "out.txt").read_text() == "hi\n"
    assert record.usage == Usage(1210, None, 44000, 92)
    assert record.tool_use_counts == {"write_file": 1}
    sent = provider.requests
    assert [r.path for r in sent] == ["/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"] * 2
    assert all(r.headers["x-goog-api-key"] == "<redacted>" and r.stream for r in sent)
    assert KEY not in record.transcript.decode()


def test_a_skill_is_activated_and_no_tool_can_read_the_key(
    gemini: GeminiCLI, provider_for: Any, workspace: Path
) -> None:
    """activate_skill loads the copied SKILL.md; env and every /proc/*/environ show no key."""
    provider = provider_for(
        [
            {"tools": [{"name": "activate_skill", "input": {"name": "plan"}}]},
            {"tools": [{"name": "run_shell_command", "input": {"command": PROBE}}]},
            DONE,
        ]
    )
    record = run(gemini, provider, workspace, expected_skill="plan")
    assert record.ok, record.error_detail
    assert record.skill_invoked
    bodies = [json.dumps(r.body) for r in provider.requests]
    assert "Write PLAN.md first." in bodies[1]  # the skill's body went back to the model
    assert "HOME=/home/agent" in bodies[2]  # the probe ran and reported
    assert not any(KEY in body for body in bodies)
    assert "GEMINI_API_KEY" not in bodies[2].split("</session_context>")[-1]


@pytest.mark.slow
@pytest.mark.parametrize(
    "fault",
    [{"status": 429}, {"status": 503}, {"say": "cut", "truncate_after_events": 1}],
    ids=["429", "503", "truncated"],
)
def test_an_injected_failure_ends_the_session_as_a_session_error_at_once(
    gemini: GeminiCLI, provider_for: Any, workspace: Path, fault: dict[str, Any]
) -> None:
    provider = provider_for([fault])
    record = run(gemini, provider, workspace)
    assert record.error_kind is ErrorKind.SESSION_ERROR
    assert record.usage == Usage()
    assert len(provider.requests) == 1  # no retry
