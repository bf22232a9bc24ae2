#!/usr/bin/env python3
"""Median wall time of a 2-turn scripted session, start to result: stand-in and the four real agent CLIs.

Each session goes through the real path: the adapter's ``run_session`` (``ClaudeCLI``, ``CodexCLI``, …) →
a pass-through sandbox (``run_managed``: own process group) or bubblewrap (``--bwrap``) → the
agent process → the loopback scripted provider → a real file write (``Write``; Codex:
``exec_command``; Gemini CLI: ``write_file``; OpenCode: ``write``) → the strict event-stream parser. Usage::

    python bench/agent_bench.py [--runs 15] [--real-runs 5] [--claude PATH] [--codex PATH]
        [--gemini PATH] [--opencode PATH] [--bwrap]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.conftest import claude_binary, codex_binary, gemini_binary, opencode_binary
from tests.fakes import DirectSandbox

from wfbench.adapters.agents.claude import ClaudeCLI
from wfbench.adapters.agents.codex import CodexCLI
from wfbench.adapters.agents.gemini import GeminiCLI
from wfbench.adapters.agents.opencode import OpenCodeCLI
from wfbench.adapters.provider.script import ProviderScript
from wfbench.adapters.provider.scripted import ScriptedProvider
from wfbench.domain.session.records import SessionRequest
from wfbench.domain.workspace.sandbox import SandboxPolicy

SCRIPT = {
    "conversations": [
        {
            "when": ["Task bench"],
            "turns": [
                {
                    "tools": [
                        {"name": "Write", "input": {"file_path": "{workspace}/out.txt", "content": "x\n"}}
                    ],
                    "usage": {"input_tokens": 100, "output_tokens": 10},
                },
                {"say": "Done.", "usage": {"input_tokens": 5, "output_tokens": 2}},
            ],
        },
        {
            "when": ["Task bench"],
            "protocol": "openai-responses",
            "turns": [
                {
                    "tools": [{"name": "exec_command", "input": {"cmd": "printf 'x\\n' > out.txt"}}],
                    "usage": {"input_tokens": 100, "output_tokens": 10},
                },
                {"say": "Done.", "usage": {"input_tokens": 5, "output_tokens": 2}},
            ],
        },
        {
            "when": ["Task bench"],
            "protocol": "gemini",
            "turns": [
                {
                    "tools": [
                        {
                            "name": "write_file",
                            "input": {"file_path": "{workspace}/out.txt", "content": "x\n"},
                        }
                    ],
                    "usage": {"input_tokens": 100, "output_tokens": 10},
                },
                {"say": "Done.", "usage": {"input_tokens": 5, "output_tokens": 2}},
            ],
        },
    ]
}
SCRIPT["conversations"].append(
    {
        "when": ["Task bench"],
        "protocol": "anthropic-messages",
        "offers": ["todowrite"],  # OpenCode's tools
        "turns": [
            {
                "tools": [{"name": "write", "input": {"filePath": "{workspace}/out.txt", "content": "x\n"}}],
                "usage": {"input_tokens": 100, "output_tokens": 10},
            },
            {"say": "Done.", "usage": {"input_tokens": 5, "output_tokens": 2}},
        ],
    }
)
SCRIPT["conversations"].reverse()  # the protocol-limited rules (Gemini, Codex) first
MODELS = {CodexCLI: "gpt-5.5", GeminiCLI: "gemini-2.5-pro"}


def sandbox_for(use_bwrap: bool, home: str) -> object:
    if use_bwrap:
        from wfbench.adapters.sandbox.bwrap import BwrapSandbox

        return BwrapSandbox()
    return DirectSandbox(home=home)


def measure(
    cli: ClaudeCLI | CodexCLI | GeminiCLI | OpenCodeCLI,
    runs: int,
    provider: ScriptedProvider,
    use_bwrap: bool,
) -> list[float]:
    times = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as root:
            ws, home = Path(root, "ws"), Path(root, "home")
            ws.mkdir()
            home.mkdir()
            request = SessionRequest(
                prompt="Task bench",
                model=MODELS.get(type(cli), "claude-sonnet-4-5"),
                allowed_tools=("Write",),
                env={"ANTHROPIC_BASE_URL": provider.base_url},
                secrets={"ANTHROPIC_API_KEY": "bench-key-0000"},
                timeout_s=120,
            )
            policy = SandboxPolicy(workspace=str(ws), workspace_writable=True, network=True, timeout_s=120)
            started = time.perf_counter()
            record = cli.run_session(request, sandbox=sandbox_for(use_bwrap, str(home)), policy=policy)  # type: ignore[arg-type]
            times.append(time.perf_counter() - started)
            if not record.ok or (ws / "out.txt").read_text() != "x\n":
                raise SystemExit(f"session failed: {record.error_kind} {record.error_detail}")
    return times


def report(name: str, times: list[float]) -> None:
    ms = sorted(t * 1000 for t in times)
    print(
        f"{name:<28} runs={len(ms):>3}  median={statistics.median(ms):8.1f} ms"
        f"  min={ms[0]:8.1f}  max={ms[-1]:8.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--real-runs", type=int, default=5)
    parser.add_argument("--claude", default=claude_binary())
    parser.add_argument("--codex", default=codex_binary())
    parser.add_argument("--gemini", default=gemini_binary())
    parser.add_argument("--opencode", default=opencode_binary())
    parser.add_argument("--bwrap", action="store_true", help="run inside the bubblewrap sandbox")
    args = parser.parse_args()
    where = "bwrap" if args.bwrap else "direct"
    with ScriptedProvider(ProviderScript.from_yaml(yaml.safe_dump(SCRIPT))) as provider:
        measure(ClaudeCLI.standin(), 2, provider, args.bwrap)  # warm-up
        report(f"stand-in agent ({where})", measure(ClaudeCLI.standin(), args.runs, provider, args.bwrap))
        if args.claude and os.access(args.claude, os.X_OK) and args.real_runs > 0:
            real = ClaudeCLI.real(args.claude)
            measure(real, 1, provider, args.bwrap)  # warm-up
            report(f"real claude CLI ({where})", measure(real, args.real_runs, provider, args.bwrap))
        else:
            print("real claude CLI: not installed, skipped")
        if args.codex and os.access(args.codex, os.X_OK) and args.real_runs > 0:
            codex = CodexCLI.real(args.codex)
            measure(codex, 1, provider, args.bwrap)  # warm-up
            report(f"real codex CLI ({where})", measure(codex, args.real_runs, provider, args.bwrap))
        else:
            print("real codex CLI: not installed, skipped")
        if args.gemini and os.access(args.gemini, os.X_OK) and args.real_runs > 0:
            gemini = GeminiCLI.real(args.gemini)
            measure(gemini, 1, provider, args.bwrap)  # warm-up
            report(f"real gemini CLI ({where})", measure(gemini, args.real_runs, provider, args.bwrap))
        else:
            print("real gemini CLI: not installed, skipped")
        if args.opencode and os.access(args.opencode, os.X_OK) and args.real_runs > 0:
            opencode = OpenCodeCLI.real(args.opencode)
            measure(opencode, 1, provider, args.bwrap)  # warm-up
            report(f"real opencode CLI ({where})", measure(opencode, args.real_runs, provider, args.bwrap))
        else:
            print("real opencode CLI: not installed, skipped")


if __name__ == "__main__":
    main()
