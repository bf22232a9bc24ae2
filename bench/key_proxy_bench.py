#!/usr/bin/env python3
"""Latency the loopback key proxy adds: the same requests straight to the scripted provider and through it.

Plain and streaming ``POST /v1/messages`` over a fresh ``http.client`` connection each (what an
agent's first request pays), plus time to the first SSE byte for streams. Usage::

    python bench/key_proxy_bench.py [--requests 200] [--history-kb 0] [--budget USD]

``--history-kb`` puts a conversation of about that many kilobytes (text, tool use and tool
result blocks, as an agent's later turns carry) before the prompt, so the body checks have
something to read; ``--budget`` sets ``--max-cost`` (each request then reserves its worst case).
Run it against two checkouts (``PYTHONPATH=<other>/src``) for a side-by-side ratio.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import time
from urllib.parse import urlsplit

from wfbench.adapters.gateway.key_proxy import KeyProxy
from wfbench.adapters.provider.script import ProviderScript
from wfbench.adapters.provider.scripted import ScriptedProvider

SCRIPT = """
default: {say: "A reply of a few words.", usage: {input_tokens: 9, output_tokens: 9}}
conversations:
  - when: ["bench"]
    turns: [{say: "A reply of a few words.", usage: {input_tokens: 9, output_tokens: 9}}]
"""


def history(kilobytes: int) -> list[dict[str, object]]:
    """About ``kilobytes`` of earlier turns: a tool call and its result per pair of messages."""
    turns: list[dict[str, object]] = []
    text = "x" * 900
    for n in range(kilobytes):
        use = {"type": "tool_use", "id": f"t{n}", "name": "Bash", "input": {"command": "ls"}}
        turns.append({"role": "assistant", "content": [{"type": "text", "text": "ok"}, use]})
        result = {"type": "tool_result", "tool_use_id": f"t{n}", "content": [{"type": "text", "text": text}]}
        turns.append({"role": "user", "content": [result]})
    return turns


HISTORY: list[dict[str, object]] = []


def timed(base_url: str, key: str, *, stream: bool) -> tuple[float, float]:
    """Seconds to the first body byte and to the last one."""
    url = urlsplit(base_url)
    body = json.dumps(
        {
            "model": "claude-sonnet-4-5",
            "max_tokens": 9,
            "stream": stream,
            "messages": [*HISTORY, {"role": "user", "content": "bench"}],
        }
    )
    started = time.perf_counter()
    connection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=30)
    connection.request("POST", "/v1/messages", body, {"x-api-key": key, "content-type": "application/json"})
    response = connection.getresponse()
    response.read1(1)
    first = time.perf_counter() - started
    response.read()
    connection.close()
    return first, time.perf_counter() - started


def report(label: str, samples: list[tuple[float, float]]) -> None:
    firsts = sorted(s[0] * 1000 for s in samples)
    totals = sorted(s[1] * 1000 for s in samples)
    p95 = totals[int(len(totals) * 0.95) - 1]
    print(
        f"{label:<22} first byte median {statistics.median(firsts):6.2f} ms   "
        f"total median {statistics.median(totals):6.2f} ms   p95 {p95:6.2f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--history-kb", type=int, default=0)
    parser.add_argument("--budget", type=float, default=None)
    args = parser.parse_args()
    HISTORY[:] = history(args.history_kb)
    with (
        ScriptedProvider(ProviderScript.from_yaml(SCRIPT, source="bench"), keep_requests=False) as provider,
        KeyProxy(
            provider.base_url,
            "sk-bench-real-key-0123456789",
            model="claude-sonnet-4-5",
            budget_usd=args.budget,
        ) as proxy,
    ):
        for stream in (False, True):
            kind = "stream" if stream else "plain"
            direct = [timed(provider.base_url, "x", stream=stream) for _ in range(args.requests)]
            through = [timed(proxy.base_url, proxy.dummy_token, stream=stream) for _ in range(args.requests)]
            report(f"{kind} direct", direct)
            report(f"{kind} via proxy", through)
        print(f"forwarded {proxy.forwarded}, refused {proxy.refused}")


if __name__ == "__main__":
    main()
