"""The OpenCodeCLI adapter driving the real OpenCode under bwrap against the scripted provider.

What the adapter owns, through the real CLI: the Anthropic wire through the overridden built-in
provider (no title request), usage summed over the steps, a skill listed and loaded, and the key
unreadable by tools (a shell without it, a non-dumpable agent process). Skips without the CLI or
bwrap, and fails instead under ``WFBENCH_REQUIRE_OPENCODE=1`` / ``WFBENCH_REQUIRE_BWRAP=1``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import opencode_binary, require_or_skip
from wfbench.adapters.agents.opencode import OpenCodeCLI
from wfbench.adapters.provider.script import ProviderScript
from wfbench.adapters.provider.scripted import ScriptedProvider
from wfbench.adapters.sandbox.bwrap import BwrapSandbox
from wfbench.domain.session.records import SessionRecord, SessionRequest, Usage
from wfbench.domain.workspace.sandbox import SandboxPolicy

pytestmark = [pytest.mark.opencode, pytest.mark.bwrap, pytest.mark.slow]
KEY = "sk-ant-wfbench-FAKE-opencode-0123456789abcdef"
SKILL = "---\nname: plan\ndescription: Plan the change before coding.\n---\n\n# Plan\nWrite PLAN.md first.\n"
USAGE = {
    "input_tokens": 1200,
    "output_tokens": 80,
    "cache_read_input_tokens": 4000,
    "cache_creation_input_tokens": 16,
}
#: Every way a tool could find the key: its own environment and every process's.
PROBE = (
    "env; for p in /proc/[0-9]*; do cat $p/environ; tr '\\0' '\\n' < $p/cmdline; done 2>&1 | tr '\\0' '\\n'"
)
TURNS = [
    {"say": "Planning.", "tools": [{"name": "skill", "input": {"name": "plan"}}], "usage": USAGE},
    {"tools": [{"name": "bash", "input": {"command": PROBE, "description": "probe"}}], "usage": USAGE},
    {"say": "Done.", "usage": {"input_tokens": 10, "output_tokens": 5}},
]


@pytest.fixture(scope="module")
def opencode() -> OpenCodeCLI:
    if shutil.which("bwrap") is None:
        require_or_skip("WFBENCH_REQUIRE_BWRAP", "bubblewrap is not installed")
    binary = opencode_binary()
    if binary is None:
        require_or_skip("WFBENCH_REQUIRE_OPENCODE", "the real OpenCode CLI is not installed")
    assert binary is not None
    return OpenCodeCLI.real(binary)


def test_a_skill_is_loaded_usage_is_summed_and_no_tool_can_read_the_key(
    opencode: OpenCodeCLI, tmp_path: Path
) -> None:
    """skill loads SKILL.md; env and every /proc/*/environ show no key; 3 requests, no title one."""
    workspace = tmp_path / "ws"
    (workspace / ".claude" / "skills" / "plan").mkdir(parents=True)
    (workspace / ".claude" / "skills" / "plan" / "SKILL.md").write_text(SKILL)
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    script = {"conversations": [{"when": ["Task"], "offers": ["todowrite"], "turns": TURNS}]}
    with ScriptedProvider(ProviderScript.from_yaml(yaml.safe_dump(script))) as provider:
        record = run(opencode, provider, workspace)
        sent = list(provider.requests)
    assert record.ok, record.error_detail
    assert (record.skill_invoked, record.num_turns) == (True, 3)
    assert record.tool_use_counts == {"skill": 1, "bash": 1}
    assert record.usage == Usage(2410, 32, 8000, 165)
    assert [r.path for r in sent] == ["/v1/messages"] * 3  # no title request
    bodies = [json.dumps(r.body) for r in sent]
    assert "Write PLAN.md first." in bodies[1]  # the skill's body went back to the model
    assert "HOME=" in bodies[2]  # the probe ran and reported
    assert not any(KEY in body for body in bodies)
    assert "WFBENCH_OPENCODE_KEY" not in bodies[2]
    assert KEY not in record.transcript.decode()


def run(opencode: OpenCodeCLI, provider: ScriptedProvider, workspace: Path) -> SessionRecord:
    request = SessionRequest(
        prompt="Task: do it.",
        model="claude-sonnet-4-5",
        env={"ANTHROPIC_BASE_URL": provider.base_url},
        secrets={"ANTHROPIC_API_KEY": KEY},
        skill_paths={"plan": ".claude/skills/plan"},
        expected_skill="plan",
        timeout_s=180.0,
    )
    policy = SandboxPolicy(
        workspace=str(workspace),
        workspace_writable=True,
        network=True,
        timeout_s=1.0,
        env={"PATH": "/usr/bin:/bin"},
        read_only_paths=(".claude/skills/plan",),
    )
    return opencode.run_session(request, sandbox=BwrapSandbox(), policy=policy)
