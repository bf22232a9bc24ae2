"""The agent's Bash tool keeps the harness's command variables (task `env`, VIRTUAL_ENV,
PYTHONDONTWRITEBYTECODE) and still never the key: once with the stand-in, once with the real CLI."""

from __future__ import annotations

from pathlib import Path

from tests.integration.agents.test_claude_cli import FAKE_KEY, agent, provider_for, sandbox, workspace
from wfbench.domain.session.records import SessionRequest
from wfbench.domain.workspace.sandbox import SandboxPolicy

__all__ = ["agent", "provider_for", "sandbox", "workspace"]  # fixtures shared with test_claude_cli


def test_the_bash_tool_sees_task_variables_but_not_the_key(agent, provider_for, sandbox, workspace: Path):
    command = (
        'echo "mark=$WFB_MARK bytecode=$PYTHONDONTWRITEBYTECODE key=${ANTHROPIC_API_KEY:-none}" > env.txt'
    )
    script = {
        "conversations": [
            {
                "when": ["Task env"],
                "turns": [{"tools": [{"name": "Bash", "input": {"command": command}}]}, {"say": "done"}],
            }
        ]
    }
    provider = provider_for(script)
    request = SessionRequest(
        prompt="Task env",
        allowed_tools=("Bash",),
        env={"ANTHROPIC_BASE_URL": provider.base_url},
        secrets={"ANTHROPIC_API_KEY": FAKE_KEY},
        timeout_s=60.0,
    )
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "WFB_MARK": "on", "PYTHONDONTWRITEBYTECODE": "1"}
    policy = SandboxPolicy(
        workspace=str(workspace), workspace_writable=True, network=True, timeout_s=1.0, env=env
    )
    record = agent.run_session(request, sandbox=sandbox, policy=policy)
    assert record.ok, record.error_detail
    assert (workspace / "env.txt").read_text().strip() == "mark=on bytecode=1 key=none"
