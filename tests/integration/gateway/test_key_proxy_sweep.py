"""The real API key never enters the sandbox: whole sweeps (``wfbench run --base-url``) under bwrap.

The sweep runs with WFBENCH_ANTHROPIC_API_KEY set to a planted key (no credential shape, so only
its value can find it) against the scripted provider on loopback, through the key proxy the
composition root always puts in front. The scripted model makes one Bash tool call that dumps
every ``/proc/*/environ`` the tool can see — with the real CLI the agent's own used to be
readable, holding the proxy's dummy token. The agent is now started non-dumpable, so the dump
holds only the tool's own environments: neither the key nor the cell's token. Meanwhile this test
watches the host's process table (as the harness's user, which may read every environment): no
command line ever holds the key, and the sandbox's processes hold the cell's token, never the key.
The tool waits until the watcher has seen them (the watcher's ``.leak`` file in the cell's
workspace, :mod:`tests.support.sandbox_watch`), so the positive control does not depend on how
long a session lasts.

Skipped with a reason unless bwrap works (required under WFBENCH_REQUIRE_BWRAP=1); the real-CLI
case also needs the CLI (required under WFBENCH_REQUIRE_CLAUDE=1).
"""

from __future__ import annotations

import json
import os
import uuid

import pytest
import yaml

from tests.conftest import claude_binary, require_or_skip
from tests.support.sandbox_watch import watching
from tests.support.sweep_kit import (
    base_files,
    bash,
    bwrap_or_skip,
    by_task,
    impl_task,
    make_repo,
    rule,
    run_sweep,
    tell,
    turn,
    write_corpus,
)
from wfbench.adapters.provider.script import ProviderScript
from wfbench.adapters.provider.scripted import ScriptedProvider

DUMP = (
    "cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' > environ.txt; cat environ.txt;"
    " for i in $(seq 300); do [ -s .leak ] && break; sleep 0.1; done; rm -f .leak"
)


def _tool_results(provider: ScriptedProvider) -> list[str]:
    """Every tool_result text the agent sent back to the model."""
    texts = []
    for request in provider.requests:
        for message in request.body.get("messages", []) if isinstance(request.body, dict) else []:
            for block in message.get("content", []) if isinstance(message.get("content"), list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    texts.append(json.dumps(block.get("content")))
    return texts


@pytest.mark.parametrize("agent", ["standin", "claude"])
def test_a_bash_tool_reading_every_proc_environ_finds_neither_the_key_nor_the_cells_token(tmp_path, agent):
    """--base-url sweep: the key in no environ, argv, request or file; the token in no environ tools read."""
    bwrap_or_skip()
    if agent == "claude" and claude_binary() is None:
        require_or_skip("WFBENCH_REQUIRE_CLAUDE", "the real Claude Code CLI is not installed")
    key = f"wfb-real-{uuid.uuid4().hex}{uuid.uuid4().hex}"
    make_repo(tmp_path, base_files())
    script = {"conversations": [rule("proc-env", turn(bash(DUMP)), turn(say="Read them."))]}
    corpus = write_corpus(tmp_path, [impl_task("proc-env")], None)
    out = tmp_path / "out"
    env = {**os.environ, "WFBENCH_ANTHROPIC_API_KEY": key}
    text = yaml.safe_dump(script, sort_keys=False)
    with (
        ScriptedProvider(ProviderScript.from_yaml(text, source="proc-env.yaml")) as provider,
        watching(key, leak=True) as seen,
    ):
        done = run_sweep(
            corpus,
            out,
            "--agent",
            agent,
            "--arms",
            "baseline",
            "--base-url",
            provider.base_url,
            "--outage-streak",
            "0",
            "--workers",
            "1",
            "--timeout",
            "120",
            env=env,
            timeout=600,
        )
    assert done.returncode == 0, tell(done)
    row = by_task(out)["proc-env"]
    assert row["session_ids"], row
    # Positive controls: the requests came through the proxy, the tool read environments (its own),
    # and the host watcher saw the sandbox's processes holding the cell's token (the tool waited for it).
    assert provider.requests
    assert all(r.headers.get("accept-encoding") == "identity" for r in provider.requests)
    results = _tool_results(provider)
    assert any("PATH=" in result for result in results), results
    assert any(b"ANTHROPIC_API_KEY=wfbench-proxy-" in environ for environ in seen.agent_environs)
    # The cell's token: in no environment the tool could read (the agent is non-dumpable).
    assert not any("wfbench-proxy-" in result for result in results), results
    # The key: nowhere.
    assert not any(key in result for result in results)
    assert not any(key in json.dumps(r.to_mapping()) for r in provider.requests)
    assert not any(key.encode() in environ for environ in seen.agent_environs)
    assert seen.cmdline_hits == []
    leaks = [str(p) for p in out.rglob("*") if p.is_file() and key.encode() in p.read_bytes()]
    assert leaks == []
    assert key not in done.stdout + done.stderr
