"""The ModelCLI adapter driving real agent processes (stand-in and real Claude Code) against the
scripted provider over loopback HTTP: only the model's words are scripted.

Real-CLI cases skip without the binary, and fail instead when WFBENCH_REQUIRE_CLAUDE=1.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import claude_binary, require_or_skip
from tests.fakes import DirectSandbox
from wfbench.adapters.agents.claude import ClaudeCLI
from wfbench.adapters.provider.script import ProviderScript
from wfbench.adapters.provider.scripted import ScriptedProvider
from wfbench.domain.errors import InputError
from wfbench.domain.results.rows import ErrorKind
from wfbench.domain.session.records import SessionRecord, SessionRequest
from wfbench.domain.workspace.sandbox import SandboxPolicy

FAKE_KEY = "sk-ant-api03-wfbench-FAKE-0123456789abcdef"
SKILL_TEXT = "---\nname: plan\ndescription: Plan before coding.\n---\n\n# Plan\nWrite PLAN.md first.\n"
EXACT_BYTES = "def median(xs):\n    return sorted(xs)[len(xs) // 2]  # naïve ✓\r\nlast line, no newline"


@pytest.fixture(params=["standin", "real"])
def agent(request: pytest.FixtureRequest) -> ClaudeCLI:
    """Each test runs once with the stand-in agent and once with the real Claude Code CLI."""
    if request.param == "standin":
        return ClaudeCLI.standin()
    binary = claude_binary()
    if binary is None:
        require_or_skip("WFBENCH_REQUIRE_CLAUDE", "the real Claude Code CLI is not installed")
    assert binary is not None
    return ClaudeCLI.real(binary)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace holding a real skill directory."""
    root = tmp_path / "ws"
    skill = root / ".claude" / "skills" / "plan"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL_TEXT)
    return root


@pytest.fixture
def sandbox(tmp_path: Path) -> DirectSandbox:
    home = tmp_path / "home"
    home.mkdir()
    return DirectSandbox(home=str(home))


@pytest.fixture
def provider_for() -> Iterator[Any]:
    started: list[ScriptedProvider] = []

    def start(script: dict[str, Any]) -> ScriptedProvider:
        provider = ScriptedProvider(ProviderScript.from_yaml(yaml.safe_dump(script))).start()
        started.append(provider)
        return provider

    yield start
    for provider in started:
        provider.stop()


def run(
    agent: ClaudeCLI,
    provider: ScriptedProvider,
    sandbox: DirectSandbox,
    workspace: Path,
    prompt: str,
    **request_fields: Any,
) -> SessionRecord:
    request = SessionRequest(
        prompt=prompt,
        allowed_tools=("Bash", "Edit", "Read", "Skill", "Write"),
        env={"ANTHROPIC_BASE_URL": provider.base_url},
        secrets={"ANTHROPIC_API_KEY": FAKE_KEY},
        **{"timeout_s": 60.0, **request_fields},
    )
    policy = SandboxPolicy(workspace=str(workspace), workspace_writable=True, network=True, timeout_s=1.0)
    return agent.run_session(request, sandbox=sandbox, policy=policy)


def write_script(usage: dict[str, int]) -> dict[str, Any]:
    return {
        "conversations": [
            {
                "when": ["Task write-median"],
                "turns": [
                    {
                        "say": "Writing.",
                        "tools": [
                            {
                                "name": "Write",
                                "input": {"file_path": "{workspace}/calc/stats.py", "content": EXACT_BYTES},
                            }
                        ],
                        "usage": usage,
                    },
                    {"say": "Done.", "usage": {"input_tokens": 10, "output_tokens": 5}},
                ],
            }
        ]
    }


def test_a_scripted_write_creates_the_file_with_the_exact_bytes(agent, provider_for, sandbox, workspace):
    """The Write the model asked for lands in the workspace byte for byte, and the session is ok."""
    provider = provider_for(write_script({"input_tokens": 1200, "output_tokens": 80}))
    record = run(agent, provider, sandbox, workspace, "Task write-median: write calc/stats.py")
    assert record.ok, record.error_detail
    assert (workspace / "calc" / "stats.py").read_bytes() == EXACT_BYTES.encode()
    assert record.num_turns == 2
    assert record.tool_use_counts == {"Write": 1}
    assert not provider.unmatched


def test_scripted_usage_arrives_exactly_and_an_unscripted_cache_field_is_none(
    agent, provider_for, sandbox, workspace
):
    """cache_read 44000 survives the agent and the parser; cache_creation was never sent: None."""
    usage = {"input_tokens": 1200, "output_tokens": 80, "cache_read_input_tokens": 44000}
    provider = provider_for(write_script(usage))
    record = run(agent, provider, sandbox, workspace, "Task write-median")
    assert record.ok, record.error_detail
    assert record.usage.cache_read_input_tokens == 44000
    assert record.usage.cache_creation_input_tokens is None
    assert record.usage.input_tokens == 1210
    assert record.usage.output_tokens == 85
    # Sonnet list prices: 1210 * 3 + 44000 * 0.30 + 85 * 15 per million tokens.
    assert record.cost_usd == pytest.approx(0.018105)


def test_a_529_is_a_session_error_whose_usage_is_not_a_measurement(agent, provider_for, sandbox, workspace):
    """An overloaded provider ends the session at once; no usage or cost is claimed."""
    provider = provider_for({"conversations": [{"when": ["Task flaky"], "turns": [{"status": 529}]}]})
    started = time.monotonic()
    record = run(agent, provider, sandbox, workspace, "Task flaky")
    assert time.monotonic() - started < 30
    assert not record.ok
    assert record.error_kind is ErrorKind.SESSION_ERROR
    assert "529" in (record.error_detail or "")
    assert record.usage.input_tokens is None
    assert record.usage.output_tokens is None
    assert record.usage.cache_read_input_tokens is None
    assert record.cost_usd is None


def skill_script(call_skill: bool) -> dict[str, Any]:
    first: dict[str, Any] = {"say": "Planning.", "usage": {"input_tokens": 100, "output_tokens": 10}}
    if call_skill:
        first["tools"] = [{"name": "Skill", "input": {"skill": "plan"}}]
    return {"conversations": [{"when": ["Use the plan skill"], "turns": [first, {"say": "Planned."}]}]}


def test_a_scripted_skill_call_on_a_real_skill_directory_is_recorded_as_invoked(
    agent, provider_for, sandbox, workspace
):
    """The Skill tool loads .claude/skills/plan and its non-error result proves the invocation."""
    provider = provider_for(skill_script(call_skill=True))
    record = run(agent, provider, sandbox, workspace, "Use the plan skill for: fix it", expected_skill="plan")
    assert record.ok, record.error_detail
    assert record.skill_invoked is True
    second = provider.requests[-1].body
    assert "Write PLAN.md first." in str(second["messages"])


def test_a_session_that_never_calls_the_skill_is_skill_not_invoked(agent, provider_for, sandbox, workspace):
    """Negative control: the same session without the Skill call fails the evidence check."""
    provider = provider_for(skill_script(call_skill=False))
    record = run(agent, provider, sandbox, workspace, "Use the plan skill for: fix it", expected_skill="plan")
    assert record.skill_invoked is False
    assert record.error_kind is ErrorKind.SKILL_NOT_INVOKED
    assert not record.ok
    assert record.usage.input_tokens == 100  # the session ran and was billed: usage still counts


def test_a_call_of_a_missing_skill_is_not_an_invocation(agent, provider_for, sandbox, workspace):
    """A Skill call whose result is an error (no such skill directory) does not count."""
    script = skill_script(call_skill=True)
    script["conversations"][0]["turns"][0]["tools"] = [{"name": "Skill", "input": {"skill": "nosuch"}}]
    script["conversations"][0]["when"] = ["Use the nosuch skill"]
    provider = provider_for(script)
    record = run(agent, provider, sandbox, workspace, "Use the nosuch skill", expected_skill="nosuch")
    assert record.error_kind is ErrorKind.SKILL_NOT_INVOKED


def test_the_prompt_the_harness_meant_is_the_prompt_that_arrived(agent, provider_for, sandbox, workspace):
    """The prompt goes over stdin verbatim: flag-like text, quotes and newlines included."""
    prompt = "Task fidelity --model evil \"quoted\" 'single'\n-p second line ✓"
    provider = provider_for({"conversations": [{"when": ["Task fidelity"], "turns": [{"say": "ok"}]}]})
    record = run(agent, provider, sandbox, workspace, prompt)
    assert record.ok, record.error_detail
    first_user = provider.requests[0].body["messages"][0]["content"]
    texts = [block["text"] for block in first_user if block.get("type") == "text"]
    assert any(text.rstrip("\n") == prompt for text in texts)
    assert all(prompt not in arg for arg in sandbox.calls[0].argv)


def hang_script(marker: str) -> dict[str, Any]:
    """Turn 1 starts a background child named ``marker``; turn 2 stalls far past the timeout."""
    command = f"cp /usr/bin/tail ./{marker} && (./{marker} -f /dev/null &) ; echo started"
    turns = [{"tools": [{"name": "Bash", "input": {"command": command}}]}, {"stall_s": 120}]
    return {"conversations": [{"when": ["Task hang"], "turns": turns}]}


def hang_timeout_s(request: pytest.FixtureRequest) -> float:
    """The hang tests' session timeout: room for the agent to reach its first tool call.

    The real CLI (Node) can take several seconds to start on a loaded machine; the timeout must
    leave it time to start the background child, or nothing is there to kill (or to miss).
    """
    return 20.0 if request.node.callspec.params["agent"] == "real" else 6.0


def processes_named(marker: str) -> list[int]:
    """Host pids (not zombies) whose command line mentions ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline and running(int(entry.name)):
                found.append(int(entry.name))
    return found


def assert_timeout_killed_everything(record: SessionRecord, marker: str, workspace: Path) -> None:
    assert (workspace / marker).exists(), "the Bash tool call never ran: nothing was there to kill"
    assert record.error_kind is ErrorKind.SESSION_ERROR
    assert "timeout" in (record.error_detail or "") or "forced-kill" in (record.error_detail or "")
    leaked = processes_named(marker)
    for pid in leaked:  # clean up what this test started before failing
        os.kill(pid, signal.SIGKILL)
    assert leaked == []


#: The real CLI on a host backend: a known limitation, pinned by a strict xfail in the nightly tier
#: (it waits out a 20 s session timeout). CI keeps the rule with the stand-in here and with the real
#: CLI under bwrap (test_under_bwrap_a_timed_out_session_leaves_no_process_behind).
REAL_CLI_MISSES_ITS_BASH_GROUP = pytest.param(
    "real",
    marks=[
        pytest.mark.nightly,
        pytest.mark.xfail(
            strict=True,
            reason="known limitation: the real CLI starts Bash commands in their own process group, "
            "so a process-group kill (host backends) misses them; bwrap's PID namespace does not "
            "(see the bwrap variant of this test)",
        ),
    ],
)


@pytest.mark.parametrize("agent", ["standin", REAL_CLI_MISSES_ITS_BASH_GROUP], indirect=True)
def test_a_session_past_its_timeout_is_killed_with_its_whole_process_group(
    agent, provider_for, sandbox, workspace, request
):
    """A background child of a Bash tool call dies with the session when the session times out."""
    marker = f"wfbench-hang-{uuid.uuid4().hex[:12]}"
    timeout_s = hang_timeout_s(request)
    started = time.monotonic()
    script = provider_for(hang_script(marker))
    record = run(agent, script, sandbox, workspace, "Task hang", timeout_s=timeout_s)
    assert time.monotonic() - started < timeout_s + 14
    assert_timeout_killed_everything(record, marker, workspace)


def running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie waiting for a reaper."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_the_api_key_reaches_no_argv_transcript_record_or_tool_subprocess(
    agent, provider_for, sandbox, workspace
):
    """The key is in the agent's environment only: Bash children, argv, transcript and record lack it."""
    command = "env > bash-env.txt"
    script = {
        "conversations": [
            {
                "when": ["Task secrets"],
                "turns": [
                    {"tools": [{"name": "Bash", "input": {"command": command}}]},
                    {"say": f"The key might be {FAKE_KEY}"},
                ],
            }
        ]
    }
    provider = provider_for(script)
    record = run(agent, provider, sandbox, workspace, "Task secrets")
    assert record.ok, record.error_detail
    bash_env = (workspace / "bash-env.txt").read_text()
    assert "PATH=" in bash_env
    assert FAKE_KEY not in bash_env
    assert "ANTHROPIC_API_KEY" not in bash_env
    assert all(FAKE_KEY not in arg for arg in sandbox.calls[0].argv)
    assert FAKE_KEY.encode() not in record.transcript
    assert b"[REDACTED]" in record.transcript
    assert FAKE_KEY not in repr(record)


def test_a_request_without_a_base_url_is_refused_before_any_process_starts(agent, sandbox, workspace):
    """Without ANTHROPIC_BASE_URL the CLI would call the public API: refused, nothing runs."""
    request = SessionRequest(prompt="x", secrets={"ANTHROPIC_API_KEY": FAKE_KEY})
    policy = SandboxPolicy(workspace=str(workspace), workspace_writable=True, network=True, timeout_s=5)
    with pytest.raises(InputError, match="ANTHROPIC_BASE_URL"):
        agent.run_session(request, sandbox=sandbox, policy=policy)
    assert sandbox.calls == []


def test_a_bash_child_cannot_read_the_key_from_its_parent_agents_proc_environ(
    agent, provider_for, sandbox, workspace, request
):
    """Reading /proc/$PPID/environ (the agent's initial environment) does not reveal the key."""
    if request.node.callspec.params["agent"] == "real":
        request.applymarker(
            pytest.mark.xfail(
                strict=True,
                reason="known limitation of this pass-through sandbox: the real CLI keeps the key in its "
                "environment block, and a same-user Bash child can read /proc/$PPID/environ (the stand-in "
                "scrubs its own); bwrap and host-unsafe start the agent non-dumpable (see the bwrap "
                "variant below), and the sweep gives the CLI only a cell's dummy token anyway",
            )
        )
    command = "tr '\\0' '\\n' < /proc/$PPID/environ > parent-env.txt 2>&1; true"
    script = {
        "conversations": [
            {
                "when": ["Task proc"],
                "turns": [{"tools": [{"name": "Bash", "input": {"command": command}}]}, {"say": "Read it."}],
            }
        ]
    }
    record = run(agent, provider_for(script), sandbox, workspace, "Task proc")
    assert record.ok, record.error_detail
    assert FAKE_KEY not in (workspace / "parent-env.txt").read_text()


@pytest.fixture
def bwrap_sandbox() -> Any:
    """G's bubblewrap backend (skip without bwrap; WFBENCH_REQUIRE_BWRAP=1 makes it a failure)."""
    if shutil.which("bwrap") is None:
        require_or_skip("WFBENCH_REQUIRE_BWRAP", "bubblewrap is not installed")
    from wfbench.adapters.sandbox.bwrap import BwrapSandbox

    sandbox = BwrapSandbox()
    sandbox.preflight()
    return sandbox


def test_under_bwrap_a_scripted_write_lands_and_usage_arrives(agent, provider_for, bwrap_sandbox, workspace):
    """Inside bubblewrap the agent sees /workspace; the Write lands in the host workspace exactly."""
    usage = {"input_tokens": 1200, "output_tokens": 80, "cache_read_input_tokens": 44000}
    provider = provider_for(write_script(usage))
    record = run(agent, provider, bwrap_sandbox, workspace, "Task write-median")
    assert record.ok, record.error_detail
    assert (workspace / "calc" / "stats.py").read_bytes() == EXACT_BYTES.encode()
    assert record.usage.cache_read_input_tokens == 44000
    assert record.usage.cache_creation_input_tokens is None


def test_under_bwrap_a_timed_out_session_leaves_no_process_behind(
    agent, provider_for, bwrap_sandbox, workspace, request
):
    """The PID namespace takes every descendant with it, even ones in another process group."""
    marker = f"wfbench-hang-{uuid.uuid4().hex[:12]}"
    script, timeout_s = provider_for(hang_script(marker)), hang_timeout_s(request)
    record = run(agent, script, bwrap_sandbox, workspace, "Task hang", timeout_s=timeout_s)
    assert_timeout_killed_everything(record, marker, workspace)


def test_under_bwrap_a_bash_child_sees_no_api_key(agent, provider_for, bwrap_sandbox, workspace):
    """The credential-free Bash environment holds inside the sandbox too."""
    script = {
        "conversations": [
            {
                "when": ["Task secrets"],
                "turns": [
                    {"tools": [{"name": "Bash", "input": {"command": "env > bash-env.txt"}}]},
                    {"say": "ok"},
                ],
            }
        ]
    }
    record = run(agent, provider_for(script), bwrap_sandbox, workspace, "Task secrets")
    assert record.ok, record.error_detail
    bash_env = (workspace / "bash-env.txt").read_text()
    assert "PATH=" in bash_env
    assert FAKE_KEY not in bash_env


def test_under_bwrap_the_agent_is_non_dumpable_so_a_bash_child_reads_none_of_it(
    agent, provider_for, bwrap_sandbox, workspace
):
    """/proc/$PPID/environ, mem and fd/1 of the agent are refused to its tools (its own /proc/self is not)."""
    command = (
        'for f in environ mem fd/1; do if : < /proc/$PPID/$f 2> /dev/null; then echo "open $f";'
        ' else echo "denied $f"; fi; done > parent.txt;'
        " head -c1 /proc/self/environ > /dev/null && echo self-ok >> parent.txt"
    )
    script = {
        "conversations": [
            {
                "when": ["Task proc"],
                "turns": [{"tools": [{"name": "Bash", "input": {"command": command}}]}, {"say": "ok"}],
            }
        ]
    }
    record = run(agent, provider_for(script), bwrap_sandbox, workspace, "Task proc")
    assert record.ok, record.error_detail
    assert (workspace / "parent.txt").read_text().split("\n")[:4] == [
        "denied environ",
        "denied mem",
        "denied fd/1",
        "self-ok",
    ]
