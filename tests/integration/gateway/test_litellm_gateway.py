"""The model gateway end to end: the real Claude CLI → bridge → key proxy → real LiteLLM → upstream meter →
the scripted provider speaking OpenAI Responses, through ``wfbench run --gateway openai``.

The provider's rule answers Responses only (as an OpenAI model would): a ``Write`` tool call with
48,000 prompt tokens of which 44,000 were cached, then a final answer. The row must carry the
native usage exactly (4,000 + 300 ordinary input tokens, 44,000 cache reads, no cache writes:
the upstream reported none), priced at gpt-5.5's prices, with LiteLLM's translated figure beside
it, and no secret of the gateway anywhere in the sweep directory.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require_or_skip
from tests.support.sweep_kit import (
    base_files,
    bwrap_or_skip,
    impl_task,
    make_repo,
    rows,
    run_sweep,
    tell,
    write_corpus,
)
from tests.support.sweep_kit import write as write_tool
from wfbench.adapters.gateway import litellm_gateway
from wfbench.adapters.gateway.litellm_gateway import LiteLLMProcess, find_litellm

MODEL = "gpt-5.5"


def _claude() -> str:
    path = os.environ.get("WFBENCH_CLAUDE_BIN") or os.path.expanduser(
        "~/.cache/wfbench/claude/node_modules/.bin/claude"
    )
    if not os.access(path, os.X_OK):
        require_or_skip("WFBENCH_REQUIRE_CLAUDE", "the real Claude CLI is not installed")
    return path


def _litellm() -> str:
    path = find_litellm()
    if path is None:
        require_or_skip("WFBENCH_REQUIRE_GATEWAY", "LiteLLM is not installed (the gateway extra)")
    assert path is not None
    return path


def _corpus(root: Path) -> Path:
    make_repo(root, base_files(skills=()))
    turns: list[dict[str, Any]] = [
        {
            "say": "Writing the note.",
            "tools": [write_tool("{workspace}/note.txt", "written through the gateway\n")],
            "usage": {"input_tokens": 4000, "output_tokens": 80, "cache_read_input_tokens": 44000},
        },
        {"say": "Done.", "usage": {"input_tokens": 300, "output_tokens": 20}},
    ]
    script = {"conversations": [{"when": ["CASE gw:"], "protocol": "openai-responses", "turns": turns}]}
    return write_corpus(root, [impl_task("gw")], script)


@pytest.mark.slow
@pytest.mark.claude
@pytest.mark.bwrap
def test_claude_code_runs_on_an_openai_model_through_litellm_with_native_usage_exact(tmp_path: Path) -> None:
    claude, litellm = _claude(), _litellm()
    bwrap_or_skip()
    corpus = _corpus(tmp_path / "corpus")
    out = tmp_path / "out"
    env = {**os.environ, "WFBENCH_CLAUDE_BIN": claude, "WFBENCH_LITELLM_BIN": litellm}

    done = run_sweep(
        corpus,
        out,
        "--agent",
        "claude",
        "--model",
        MODEL,
        "--gateway",
        "openai",
        "--arms",
        "baseline",
        env=env,
        timeout=600,
    )

    assert done.returncode == 0, tell(done)
    (row,) = rows(out)
    assert (row["ok"], row["resolved"], row["error_kind"]) == (True, True, None), row.get("error_detail")
    assert row["usage_source"] == "wire"
    assert row["wire_requests"] == 2
    native = {k: row[k] for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")}
    assert native == {
        "input_tokens": 4300,
        "cache_read_input_tokens": 44000,
        "cache_creation_input_tokens": None,
    }
    assert row["output_tokens"] == 100
    assert row["cost_usd"] == pytest.approx((4300 * 5.0 + 44000 * 0.5 + 100 * 30.0) / 1e6)
    # LiteLLM's figure beside it: the same where the upstream reported, its own 0 where it did not.
    assert row["gateway_usage"] == {
        "input_tokens": 4300,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 44000,
        "output_tokens": 100,
    }
    assert row["gateway_usage_disagreement"] is None
    assert "note.txt" in (out / row["patch_artifact"]).read_text()
    written = b"".join(p.read_bytes() for p in out.rglob("*") if p.is_file())
    assert b"sk-wfbench-" not in written  # LiteLLM's master key never reaches a file of the sweep


def test_litellm_gets_its_keys_in_its_environment_never_in_its_argv(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    seen: dict[str, Any] = {}

    class Recorded:
        pid = 0

        def __init__(self, argv: list[str], **kwargs: Any) -> None:
            seen["argv"], seen["env"] = argv, kwargs["env"]
            seen["config"] = Path(argv[argv.index("--config") + 1]).read_text()

        def poll(self) -> int:
            return 1

        returncode = 1

    monkeypatch.setattr(subprocess, "Popen", Recorded)
    gateway = LiteLLMProcess(MODEL, "http://127.0.0.1:9", "upstream-token-123", binary="/bin/true")
    with pytest.raises(litellm_gateway.WfbenchError, match="LiteLLM exited"):
        gateway.start(timeout_s=5)
    argv = " ".join(seen["argv"])
    for secret in (gateway.master_key, "upstream-token-123"):
        assert secret not in argv
        assert secret not in seen["config"]  # the config names environment variables only
        assert secret in seen["env"].values()
    assert seen["env"]["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"  # no price-map fetch from the internet
