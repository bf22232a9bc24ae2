"""The real CLI's read-before-edit rule, held by the stand-in too: each case runs once with the
stand-in agent and once with the real Claude Code CLI (required in CI), and both must agree.

Observed with 2.1.328: ``Edit`` or ``Write`` of an existing file the session has not read is refused
with ``File has not been read yet. Read it first before writing to it.``; a ``Read`` (even of a few
lines), a ``Write`` or an ``Edit`` makes the file known; a change on disk since does not undo that.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.integration.agents.test_claude_cli import FAKE_KEY, agent, provider_for, sandbox, workspace
from wfbench.domain.session.records import SessionRecord, SessionRequest
from wfbench.domain.workspace.sandbox import SandboxPolicy

__all__ = ["agent", "provider_for", "sandbox", "workspace"]  # fixtures shared with test_claude_cli
NOT_READ = "File has not been read yet. Read it first before writing to it."
TARGET = "{workspace}/notes.txt"


def session(agent, provider_for, sandbox, workspace: Path, *turns: list[dict[str, Any]]) -> SessionRecord:
    """One session whose model makes the given tool calls, one turn each, over notes.txt."""
    (workspace / "notes.txt").write_text("one\ntwo\nthree\n")
    usage = {"input_tokens": 10, "output_tokens": 5}
    script = {
        "conversations": [
            {
                "when": ["Task notes"],
                "turns": [*({"tools": t, "usage": usage} for t in turns), {"say": "done", "usage": usage}],
            }
        ]
    }
    provider = provider_for(script)
    request = SessionRequest(
        prompt="Task notes",
        allowed_tools=("Bash", "Edit", "Read", "Write"),
        env={"ANTHROPIC_BASE_URL": provider.base_url},
        secrets={"ANTHROPIC_API_KEY": FAKE_KEY},
        timeout_s=60.0,
    )
    policy = SandboxPolicy(workspace=str(workspace), workspace_writable=True, network=True, timeout_s=1.0)
    record = agent.run_session(request, sandbox=sandbox, policy=policy)
    assert record.ok, record.error_detail
    return record


def results(record: SessionRecord) -> list[tuple[bool, str]]:
    """(is_error, text) of every tool result, in order."""
    found = []
    for line in record.transcript.decode().splitlines():
        event = json.loads(line)
        if event.get("type") != "user":
            continue
        for block in event["message"]["content"]:
            if block.get("type") == "tool_result":
                content = block["content"]
                text = content if isinstance(content, str) else str(content)
                found.append((bool(block.get("is_error")), text))
    return found


def edit(old: str, new: str, path: str = TARGET) -> dict[str, Any]:
    return {"name": "Edit", "input": {"file_path": path, "old_string": old, "new_string": new}}


def test_an_edit_of_a_file_the_session_never_read_is_refused(agent, provider_for, sandbox, workspace):
    record = session(agent, provider_for, sandbox, workspace, [edit("one", "ONE")])
    [(is_error, text)] = results(record)
    assert is_error
    assert NOT_READ in text
    assert (workspace / "notes.txt").read_text() == "one\ntwo\nthree\n"


def test_a_write_over_a_file_the_session_never_read_is_refused(agent, provider_for, sandbox, workspace):
    write = {"name": "Write", "input": {"file_path": TARGET, "content": "replaced\n"}}
    record = session(agent, provider_for, sandbox, workspace, [write])
    [(is_error, text)] = results(record)
    assert is_error
    assert NOT_READ in text
    assert (workspace / "notes.txt").read_text() == "one\ntwo\nthree\n"


def test_reading_a_few_lines_is_enough_and_a_later_change_on_disk_does_not_undo_it(
    agent, provider_for, sandbox, workspace
):
    """Positive control: Read (offset 2, limit 1), the file changes under Bash, the Edit lands."""
    read = {"name": "Read", "input": {"file_path": TARGET, "offset": 2, "limit": 1}}
    append = {"name": "Bash", "input": {"command": "echo four >> notes.txt"}}
    record = session(agent, provider_for, sandbox, workspace, [read], [append], [edit("one", "ONE")])
    assert [is_error for is_error, _ in results(record)] == [False, False, False]
    assert (workspace / "notes.txt").read_text() == "ONE\ntwo\nthree\nfour\n"


def test_a_file_the_session_wrote_or_edited_is_known(agent, provider_for, sandbox, workspace):
    created = "{workspace}/new.txt"
    write = {"name": "Write", "input": {"file_path": created, "content": "alpha\n"}}
    read = {"name": "Read", "input": {"file_path": TARGET}}
    record = session(
        agent,
        provider_for,
        sandbox,
        workspace,
        [write],
        [edit("alpha", "beta", created)],
        [read],
        [edit("one", "ONE")],
        [edit("two", "TWO")],
    )
    assert [is_error for is_error, _ in results(record)] == [False] * 5
    assert (workspace / "new.txt").read_text() == "beta\n"
    assert (workspace / "notes.txt").read_text() == "ONE\nTWO\nthree\n"
