"""The CodexCLI adapter driving the real Codex CLI under bwrap against the scripted provider.

Every scripted-provider fix for Codex is exercised here through the real CLI (the same fixes
through the official ``openai`` SDK are in ``test_provider_codex.py``), together with what the
adapter owns: flags, skills, the key, errors, usage. Skips without the binary or bwrap, and
fails instead under ``WFBENCH_REQUIRE_CODEX=1`` / ``WFBENCH_REQUIRE_BWRAP=1``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import codex_binary, require_or_skip
from wfbench.adapters.agents.codex import CodexCLI
from wfbench.adapters.provider.script import ProviderScript
from wfbench.adapters.provider.scripted import ReplySource, ScriptedProvider
from wfbench.adapters.sandbox.bwrap import BwrapSandbox
from wfbench.domain.errors import InputError
from wfbench.domain.results.rows import ErrorKind
from wfbench.domain.session.records import SessionRecord, SessionRequest, Usage
from wfbench.domain.workspace.sandbox import SandboxPolicy

pytestmark = [pytest.mark.codex, pytest.mark.bwrap]
KEY = "sk-proj-wfbench-FAKE-codex-0123456789"
SKILL = "---\nname: plan\ndescription: Plan the change before coding.\n---\n\n# Plan\nWrite PLAN.md first.\n"
PATCH = (
    "*** Begin Patch\n*** Add File: {workspace}/calc/stats.py\n"
    "+def median(xs):\n+    return sorted(xs)[len(xs) // 2]\n*** End Patch\n"
)
USAGE = {
    "input_tokens": 1200,
    "output_tokens": 80,
    "cache_read_input_tokens": 44000,
    "cache_creation_input_tokens": 16,
}
DONE = {"say": "Done.", "usage": {"input_tokens": 10, "output_tokens": 5}}


@pytest.fixture(scope="module")
def codex() -> CodexCLI:
    if shutil.which("bwrap") is None:
        require_or_skip("WFBENCH_REQUIRE_BWRAP", "bubblewrap is not installed")
    binary = codex_binary()
    if binary is None:
        require_or_skip("WFBENCH_REQUIRE_CODEX", "the real Codex CLI is not installed")
    assert binary is not None
    return CodexCLI.real(binary)


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

    def start(conversations: list[dict[str, Any]], **top: Any) -> ScriptedProvider:
        script = ProviderScript.from_yaml(yaml.safe_dump({"conversations": conversations, **top}))
        provider = ScriptedProvider(script).start()
        started.append(provider)
        return provider

    yield start
    for provider in started:
        provider.stop()


def run(
    codex: CodexCLI, provider: ScriptedProvider, workspace: Path, prompt: str, **fields: Any
) -> SessionRecord:
    cancel = fields.pop("cancel", None)
    request = SessionRequest(
        prompt=prompt,
        model="gpt-5.5",
        env={"ANTHROPIC_BASE_URL": provider.base_url},
        secrets={"ANTHROPIC_API_KEY": KEY},
        **{"timeout_s": 60.0, **fields},
    )
    policy = SandboxPolicy(
        workspace=str(workspace),
        workspace_writable=True,
        network=True,
        timeout_s=1.0,
        env={"PATH": "/usr/bin:/bin"},
        read_only_paths=(".claude/skills/plan",),
    )
    return codex.run_session(request, sandbox=BwrapSandbox(), policy=policy, cancel=cancel)


def shell(cmd: str, *, say: str | None = None, usage: dict[str, int] | None = None) -> dict[str, Any]:
    turn: dict[str, Any] = {
        "tools": [{"name": "exec_command", "input": {"cmd": cmd, "yield_time_ms": 30000}}]
    }
    if say is not None:
        turn["say"] = say
    if usage is not None:
        turn["usage"] = usage
    return turn


def events(record: SessionRecord) -> list[dict[str, Any]]:
    return [json.loads(line) for line in record.transcript.decode().splitlines()]


def commands(record: SessionRecord) -> list[dict[str, Any]]:
    return [
        e["item"]
        for e in events(record)
        if e["type"] == "item.completed" and e["item"]["type"] == "command_execution"
    ]


def test_a_scripted_exec_command_writes_the_file_and_usage_maps_to_wfbench_fields(
    codex: CodexCLI, provider_for: Any, workspace: Path
) -> None:
    """Two requests; the file is written for real; 1200 uncached + 44000 read + 16 written, 85 out."""
    provider = provider_for(
        [
            {
                "when": ["Task write"],
                "turns": [
                    shell("mkdir -p calc && printf 'x = 1\\n' > calc/stats.py", say="Writing.", usage=USAGE),
                    DONE,
                ],
            }
        ]
    )
    record = run(codex, provider, workspace, "Task write: the file")
    assert record.ok, record.error_detail
    assert (workspace / "calc" / "stats.py").read_text() == "x = 1\n"
    assert record.usage == Usage(
        input_tokens=1210, cache_creation_input_tokens=16, cache_read_input_tokens=44000, output_tokens=85
    )
    assert record.cost_usd is None
    assert record.tool_use_counts == {"command_execution": 1}
    assert record.session_id
    assert [(r.path, r.source, r.turn) for r in provider.requests] == [
        ("/v1/responses", ReplySource.SCRIPTED, 0),
        ("/v1/responses", ReplySource.SCRIPTED, 1),
    ]
    first = provider.requests[0]
    assert first.stream
    offered = {tool.get("name") or tool.get("type") for tool in first.body["tools"]}
    assert {"exec_command", "apply_patch"} <= offered
    assert "web_search" not in offered  # no provider-side tool reaches the network
    assert json.loads(first.headers["x-codex-turn-metadata"])["sandbox_mode"] == "danger-full-access"
    assert first.headers["authorization"] == "<redacted>"


def test_a_custom_apply_patch_call_writes_the_file_under_the_cwd_codex_states(
    codex: CodexCLI, provider_for: Any, workspace: Path
) -> None:
    """`{workspace}` comes from Codex's <cwd> (/workspace under bwrap); apply_patch is a custom tool call."""
    provider = provider_for(
        [
            {
                "when": ["Task patch"],
                "turns": [{"tools": [{"name": "apply_patch", "text": PATCH}], "usage": USAGE}, DONE],
            }
        ]
    )
    record = run(codex, provider, workspace, "Task patch: add stats")
    assert record.ok, record.error_detail
    assert (
        workspace / "calc" / "stats.py"
    ).read_text() == "def median(xs):\n    return sorted(xs)[len(xs) // 2]\n"
    assert record.tool_use_counts == {"file_change": 1}
    (change,) = [
        e["item"]
        for e in events(record)
        if e["type"] == "item.completed" and e["item"]["type"] == "file_change"
    ]
    assert change["changes"] == [{"path": "/workspace/calc/stats.py", "kind": "add"}]


def test_reading_the_presented_skill_is_the_invocation_and_not_reading_it_is_skill_not_invoked(
    codex: CodexCLI, provider_for: Any, workspace: Path
) -> None:
    """The adapter copies the skill to $HOME/.agents/skills; Codex lists it; a `cat` of it is the evidence."""
    provider = provider_for(
        [
            {
                "when": ["Task reads"],
                "turns": [shell("cat ~/.agents/skills/plan/SKILL.md", usage=USAGE), DONE],
            },
            {"when": ["Task skips"], "turns": [shell("ls", usage=USAGE), DONE]},
        ]
    )
    skills = {"skill_paths": {"plan": ".claude/skills/plan"}, "expected_skill": "plan"}
    reads = run(codex, provider, workspace, "Task reads: use the plan skill", **skills)
    assert reads.ok, reads.error_detail
    assert reads.skill_invoked is True
    assert commands(reads)[0]["aggregated_output"] == SKILL
    listing = provider.requests[0].body["input"]
    catalog = json.dumps([m for m in listing if m.get("role") == "developer"])
    assert "plan: Plan the change before coding." in catalog
    skips = run(codex, provider, workspace, "Task skips: use the plan skill", **skills)
    assert skips.error_kind is ErrorKind.SKILL_NOT_INVOKED
    assert skips.skill_invoked is False
    assert skips.usage.output_tokens == 85


def test_a_presented_skill_cannot_be_changed_through_the_copy_or_the_workspace(
    codex: CodexCLI, provider_for: Any, workspace: Path
) -> None:
    """The HOME copy is read-only; the workspace skill is a read-only mount; the evaluated bytes stay."""
    provider = provider_for(
        [
            {
                "when": ["Task tamper"],
                "turns": [
                    shell(
                        "echo x >> ~/.agents/skills/plan/SKILL.md;"
                        " echo y >> .claude/skills/plan/SKILL.md; echo rc=$?"
                    ),
                    DONE,
                ],
            }
        ]
    )
    record = run(codex, provider, workspace, "Task tamper", skill_paths={"plan": ".claude/skills/plan"})
    output = commands(record)[0]["aggregated_output"]
    assert "Permission denied" in output
    assert "Read-only file system" in output
    assert (workspace / ".claude" / "skills" / "plan" / "SKILL.md").read_text() == SKILL


@pytest.mark.parametrize(
    ("turn", "expected"),
    [
        pytest.param({"status": 529}, "529", id="529"),
        pytest.param({"status": 429}, "429", id="429"),
        pytest.param({"status": 500}, "temporary errors", id="500"),
        pytest.param({"say": "cut", "truncate_after_events": 3}, "stream", id="truncated"),
        pytest.param({"reset": True}, "turn.failed", id="reset"),
        pytest.param(
            {"say": "cut", "stop_reason": "max_tokens", "usage": {"input_tokens": 5, "output_tokens": 1}},
            "max_output_tokens",
            id="incomplete",
        ),
    ],
)
def test_provider_failures_end_as_session_errors_never_success(
    codex: CodexCLI, provider_for: Any, workspace: Path, turn: dict[str, Any], expected: str
) -> None:
    """Retries are off: one request, Codex exits 1 with turn.failed; usage is not a measurement."""
    provider = provider_for([{"when": ["Task fail"], "turns": [turn]}])
    record = run(codex, provider, workspace, "Task fail")
    assert record.error_kind is ErrorKind.SESSION_ERROR
    assert not record.ok
    assert "agent process exited (returncode 1)" in (record.error_detail or "")
    assert expected in (record.error_detail or "")
    assert record.usage == Usage()
    assert len(provider.requests) == 1


def test_a_malformed_event_is_skipped_by_codex_and_the_session_is_recorded_as_it_ran(
    codex: CodexCLI, provider_for: Any, workspace: Path
) -> None:
    """The cut event is an output_item.added; the item arrives whole in .done: the turn completes (ok)."""
    provider = provider_for(
        [
            {
                "when": ["Task malformed"],
                "turns": [{**shell("echo ran > ran.txt"), "malformed": True, "usage": USAGE}, DONE],
            }
        ]
    )
    record = run(codex, provider, workspace, "Task malformed")
    assert record.ok, record.error_detail
    assert (workspace / "ran.txt").read_text() == "ran\n"
    assert record.usage.output_tokens == 85


def test_usage_the_provider_did_not_report_stays_unknown(
    codex: CodexCLI, provider_for: Any, workspace: Path
) -> None:
    """No usage scripted: the wire says `usage: null`, Codex prints zeros, the record says None."""
    provider = provider_for([{"when": ["Task quiet"], "turns": [{"say": "Done."}]}])
    record = run(codex, provider, workspace, "Task quiet")
    assert record.ok, record.error_detail
    assert record.usage == Usage()
    assert events(record)[-1]["usage"]["input_tokens"] == 0


def test_a_compaction_is_answered_with_a_summary_and_the_script_goes_on(
    codex: CodexCLI, provider_for: Any, workspace: Path
) -> None:
    """300k reported tokens make Codex compact; the summary's marker resumes turn 1 (no loop)."""
    big = {"input_tokens": 300000, "output_tokens": 80}
    provider = provider_for(
        [
            {
                "when": ["Task compact"],
                "turns": [
                    shell("echo one >> log.txt", usage=big),
                    shell("echo two >> log.txt", usage=USAGE),
                    DONE,
                ],
            }
        ],
        compaction={"say": "Summary: one line was logged."},
    )
    record = run(codex, provider, workspace, "Task compact")
    assert record.ok, record.error_detail
    assert (workspace / "log.txt").read_text() == "one\ntwo\n"
    assert [(r.source, r.turn) for r in provider.requests] == [
        (ReplySource.SCRIPTED, 0),
        (ReplySource.COMPACTION, 1),
        (ReplySource.SCRIPTED, 1),
        (ReplySource.SCRIPTED, 2),
    ]


def test_a_long_command_is_polled_with_the_exec_session_placeholder(
    codex: CodexCLI, provider_for: Any, workspace: Path
) -> None:
    """yield_time_ms 300 returns early with a random session id; write_stdin polls it to the end."""
    slow = {
        "tools": [
            {
                "name": "exec_command",
                "input": {"cmd": "sleep 1.5; echo finished > slow.txt; echo finished", "yield_time_ms": 300},
            }
        ]
    }
    poll = {
        "tools": [
            {
                "name": "write_stdin",
                "input": {"session_id": "{exec_session_id}", "chars": "", "yield_time_ms": 10000},
            }
        ]
    }
    provider = provider_for([{"when": ["Task slow"], "turns": [slow, poll, DONE]}])
    record = run(codex, provider, workspace, "Task slow")
    assert record.ok, record.error_detail
    assert (workspace / "slow.txt").read_text() == "finished\n"
    outputs = [
        item
        for r in provider.requests
        for item in r.body["input"]
        if item.get("type") == "function_call_output"
    ]
    assert "Process running with session ID" in outputs[0]["output"]
    assert "finished" in outputs[-1]["output"]


def test_rules_never_match_on_agents_md_or_an_injected_skill_body(
    codex: CodexCLI, provider_for: Any, workspace: Path
) -> None:
    """A marker only in AGENTS.md and in the skill's body matches nothing: the default answers."""
    (workspace / "AGENTS.md").write_text("Always be terse. MARKER-AGENTS\n")
    (workspace / ".claude" / "skills" / "plan" / "SKILL.md").write_text(SKILL + "MARKER-SKILL\n")
    provider = provider_for(
        [
            {"when": ["MARKER-AGENTS"], "turns": [{"say": "matched agents"}]},
            {"when": ["MARKER-SKILL"], "turns": [{"say": "matched skill"}]},
            {"when": ["Task plain"], "turns": [{"say": "matched prompt"}]},
        ]
    )
    record = run(
        codex, provider, workspace, "Task plain: use $plan", skill_paths={"plan": ".claude/skills/plan"}
    )
    assert record.ok, record.error_detail
    (request,) = provider.requests
    assert request.rule == 2
    sent = json.dumps(request.body)
    assert "MARKER-AGENTS" in sent  # Codex did send both; the rules did not match them
    assert "MARKER-SKILL" in sent


def test_the_key_is_unreadable_by_tools_and_in_nothing_the_session_yields(
    codex: CodexCLI, provider_for: Any, workspace: Path
) -> None:
    """env, every /proc/*/environ and cmdline, HOME and /tmp: no key; the transcript holds none either."""
    hunt = (
        "env; for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline;"
        " do echo \"== $f\"; tr '\\0' '\\n' < $f; done; "
        "grep -r -a -l -- 'wfbench-FAKE' ~ /tmp /workspace 2>/dev/null; echo hunted"
    )
    provider = provider_for(
        [{"when": ["Task hunt"], "turns": [shell(hunt), {"say": f"I found nothing. {KEY}"}]}]
    )
    record = run(codex, provider, workspace, "Task hunt")
    output = commands(record)[0]["aggregated_output"]
    assert "hunted" in output
    assert "== /proc/1/environ" in output
    assert "Permission denied" in output  # the positive control: Codex's own environ is closed
    assert KEY not in output
    assert "WFBENCH_API_KEY=" not in output  # the name is in argv (env_key); never a value
    assert KEY not in record.transcript.decode()
    assert "[REDACTED]" in record.transcript.decode()
    assert not list(workspace.rglob("*FAKE*"))


def test_the_adapter_refuses_a_missing_endpoint_or_key_and_keeps_the_prompt_out_of_argv(
    codex: CodexCLI, workspace: Path
) -> None:
    sandbox = BwrapSandbox()
    policy = SandboxPolicy(workspace=str(workspace), workspace_writable=True, network=True, timeout_s=1.0)
    with pytest.raises(InputError, match="OPENAI_BASE_URL"):
        codex.run_session(
            SessionRequest(prompt="x", secrets={"OPENAI_API_KEY": KEY}), sandbox=sandbox, policy=policy
        )
    with pytest.raises(InputError, match="no model API key"):
        codex.run_session(
            SessionRequest(prompt="x", env={"OPENAI_BASE_URL": "http://127.0.0.1:9"}),
            sandbox=sandbox,
            policy=policy,
        )
    request = SessionRequest(
        prompt="SECRET PROMPT",
        env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"},
        secrets={"OPENAI_API_KEY": KEY},
    )
    argv = codex.argv(
        request, sandbox=sandbox, policy=codex.session_policy(request, policy, launcher_host=str(workspace))
    )
    assert not any("SECRET PROMPT" in arg or KEY in arg for arg in argv)
    assert argv[-1] == "-"
    assert 'base_url="http://127.0.0.1:9/v1"' in " ".join(argv)
    with pytest.raises(InputError, match="a secret value occurs"):
        codex.argv(
            SessionRequest(
                prompt="x",
                model=KEY,
                env={"OPENAI_BASE_URL": "http://127.0.0.1:9"},
                secrets={"OPENAI_API_KEY": KEY},
            ),
            sandbox=sandbox,
            policy=policy,
        )


def test_the_binary_runs_execute_only_and_the_version_is_recorded(codex: CodexCLI) -> None:
    assert os.stat(codex.binary).st_mode & 0o777 == 0o111
    assert codex.version == "codex-cli 0.171.0"


def test_a_cancelled_session_is_cancelled(codex: CodexCLI, provider_for: Any, workspace: Path) -> None:
    provider = provider_for([{"when": ["Task stall"], "turns": [{"say": "late", "stall_s": 30}]}])
    cancel = threading.Event()
    threading.Timer(1.0, cancel.set).start()
    record = run(codex, provider, workspace, "Task stall", cancel=cancel)
    assert record.error_kind is ErrorKind.CANCELLED
