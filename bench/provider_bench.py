#!/usr/bin/env python3
"""Scripted provider throughput: streaming conversations per second with 8 concurrent clients.

A conversation is two streaming ``POST /v1/messages`` requests, as an agent makes them: turn 0
answers with text and a ``Write`` tool_use, turn 1 (the request now holding one assistant
message and the tool_result) answers with text. Each client is a thread with its own keep-alive
``http.client`` connection that reads every SSE byte. The provider runs as
``wfbench provider serve`` in its own process (``--in-process`` runs it in this one instead).

Usage: bench/provider_bench.py [--clients 8] [--seconds 10] [--in-process]
Target (issue #3): >= 200 conversations/s.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

SCRIPT = """
conversations:
""" + "".join(
    f"""  - when: ["Task bench-{k}"]
    turns:
      - say: "Writing the file."
        tools: [{{name: Write, input: {{file_path: "{{workspace}}/out.txt", content: "hello\\n"}}}}]
        usage: {{input_tokens: 1200, output_tokens: 80, cache_read_input_tokens: 44000}}
      - say: "Done."
        usage: {{input_tokens: 10, output_tokens: 5}}
"""
    for k in range(8)
)


def request_body(k: int, turn: int) -> bytes:
    messages: list[dict[str, object]] = [
        {"role": "user", "content": [{"type": "text", "text": f"Task bench-{k}: write out.txt"}]}
    ]
    if turn:
        messages += [
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Write", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]},
        ]
    body = {
        "model": "bench",
        "max_tokens": 256,
        "stream": True,
        "system": "Working directory: /w",
        "messages": messages,
    }
    return json.dumps(body).encode()


def client(base_url: str, k: int, stop: threading.Event, out: list[float], errors: list[str]) -> None:
    url = urlsplit(base_url)
    connection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=30)
    bodies = [request_body(k, 0), request_body(k, 1)]
    headers = {"content-type": "application/json", "x-api-key": "bench", "anthropic-version": "2023-06-01"}
    while not stop.is_set():
        started = time.perf_counter()
        for body in bodies:
            connection.request("POST", "/v1/messages?beta=true", body, headers)
            response = connection.getresponse()
            payload = response.read()
            if response.status != 200 or b"event: message_stop" not in payload:
                errors.append(f"status {response.status}")
        out.append(time.perf_counter() - started)
    connection.close()


def start_server(script_path: Path, in_process: bool) -> tuple[str, object]:
    if in_process:
        from wfbench.adapters.provider.script import ProviderScript
        from wfbench.adapters.provider.scripted import ScriptedProvider

        provider = ScriptedProvider(ProviderScript.load(script_path)).start()
        return provider.base_url, provider
    process = subprocess.Popen(
        [sys.executable, "-m", "wfbench", "provider", "serve", str(script_path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    return process.stdout.readline().strip(), process


def stop_server(handle: object) -> None:
    if isinstance(handle, subprocess.Popen):
        os.kill(handle.pid, signal.SIGINT)
        handle.wait(30)
    else:
        handle.stop()  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--in-process", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        script_path = Path(tmp) / "bench.yaml"
        script_path.write_text(SCRIPT)
        base_url, handle = start_server(script_path, args.in_process)
        try:
            stop = threading.Event()
            samples: list[list[float]] = [[] for _ in range(args.clients)]
            errors: list[str] = []
            threads = [
                threading.Thread(target=client, args=(base_url, k % 8, stop, samples[k], errors))
                for k in range(args.clients)
            ]
            for thread in threads:
                thread.start()
            time.sleep(args.warmup)
            before = sum(len(s) for s in samples)
            started = time.perf_counter()
            time.sleep(args.seconds)
            done = sum(len(s) for s in samples) - before
            elapsed = time.perf_counter() - started
            stop.set()
            for thread in threads:
                thread.join()
        finally:
            stop_server(handle)
    latencies = sorted(x for s in samples for x in s)
    rate = done / elapsed
    where = "in-process" if args.in_process else "subprocess (wfbench provider serve)"
    print(f"scripted provider, server {where}, {args.clients} clients, 2-turn streaming conversations")
    print(f"  conversations/s: {rate:.0f}  ({done} in {elapsed:.1f} s; {2 * rate:.0f} requests/s)")
    print(
        f"  conversation latency: median {1000 * statistics.median(latencies):.1f} ms,"
        f" p95 {1000 * latencies[int(0.95 * (len(latencies) - 1))]:.1f} ms"
    )
    print(f"  errors: {len(errors)}")
    print(f"  target >= 200 conversations/s: {'met' if rate >= 200 else 'NOT met'}")
    print(f"  machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
