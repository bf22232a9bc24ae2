"""`wfbench provider serve` as a real subprocess: prints its URL, answers, stops cleanly on a signal."""

from __future__ import annotations

import http.client
import json
import os
import select
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

SCRIPT = """
conversations:
  - when: ["Task serve"]
    turns:
      - say: "Served."
        usage: {input_tokens: 12, output_tokens: 3, cache_read_input_tokens: 44000}
"""


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "wfbench", "provider", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def first_line(process: subprocess.Popen[str], timeout_s: float = 30.0) -> str:
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], timeout_s)
    assert ready, "the server printed no base URL"
    return process.stdout.readline().strip()


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "script.yaml"
    path.write_text(SCRIPT)
    return path


@pytest.fixture
def cleanup() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()


def post(base_url: str, text: str) -> dict[str, object]:
    url = urlsplit(base_url)
    connection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=10)
    body = {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": text}]}
    connection.request("POST", "/v1/messages?beta=true", json.dumps(body), {"x-api-key": "sk-cli-secret"})
    reply = json.loads(connection.getresponse().read())
    connection.close()
    return reply  # type: ignore[no-any-return]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_serve_prints_its_url_answers_and_exits_zero_on_a_signal(
    script: Path, tmp_path: Path, cleanup: list[subprocess.Popen[str]], sig: signal.Signals
) -> None:
    """One scripted request is answered and logged without the key; SIGINT/SIGTERM end it with 0."""
    log = tmp_path / "requests.jsonl"
    process = start(str(script), "--port", "0", "--log", str(log))
    cleanup.append(process)
    base_url = first_line(process)
    assert base_url.startswith("http://127.0.0.1:")
    reply = post(base_url, "Task serve")
    assert reply["content"] == [{"type": "text", "text": "Served."}]
    assert reply["usage"] == {"input_tokens": 12, "output_tokens": 3, "cache_read_input_tokens": 44000}
    process.send_signal(sig)
    assert process.wait(timeout=30) == 0
    (line,) = log.read_text().splitlines()
    assert json.loads(line)["rule"] == 0
    assert "sk-cli-secret" not in line
    with pytest.raises(ProcessLookupError):
        os.kill(process.pid, 0)


def test_serve_binds_the_port_it_is_given(script: Path, cleanup: list[subprocess.Popen[str]]) -> None:
    """--port N is honoured (a free port found by binding 0 first)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = start(str(script), "--port", str(port))
    cleanup.append(process)
    assert first_line(process) == f"http://127.0.0.1:{port}"
    assert post(f"http://127.0.0.1:{port}", "nothing")["stop_reason"] == "end_turn"
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=30) == 0


def test_a_bad_script_exits_2_naming_file_rule_turn_and_field(tmp_path: Path) -> None:
    """A script with a bad usage field is refused before serving: exit 2, one line naming everything."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("conversations: [{when: [a], turns: [{say: x}, {usage: {output_tokens: -1}}]}]\n")
    done = subprocess.run(
        [sys.executable, "-m", "wfbench", "provider", "serve", str(bad)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.strip() == (
        f"wfbench: error: {bad}: conversations[0].turns[1]: usage.output_tokens: "
        "must be a non-negative integer (leave it out when it is not reported)"
    )


def test_a_missing_script_or_a_non_loopback_host_exits_2(tmp_path: Path) -> None:
    """A missing file and a host that is not loopback are input errors (exit 2), nothing is served."""
    missing = subprocess.run(
        [sys.executable, "-m", "wfbench", "provider", "serve", str(tmp_path / "none.yaml")],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert missing.returncode == 2
    assert "none.yaml" in missing.stderr
    script = tmp_path / "ok.yaml"
    script.write_text("{}")
    public = subprocess.run(
        [sys.executable, "-m", "wfbench", "provider", "serve", str(script), "--host", "0.0.0.0"],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert public.returncode == 2
    assert "loopback" in public.stderr
