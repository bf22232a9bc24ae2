#!/usr/bin/env python3
"""The wfbench stand-in agent: ``claude -p --output-format stream-json --verbose``, offline.

A single, standard-library-only file (it runs inside bubblewrap as
``python3 -I -S /opt/wfbench/standin_agent.py``, so it imports nothing from wfbench). It reads
the prompt from stdin, loops against ``$ANTHROPIC_BASE_URL/v1/messages`` (streaming SSE) until
the model ends its turn, executes the tool calls it receives for real (Write, Edit, Read, Bash,
Skill), and prints the event lines the real CLI prints: ``system/init``, ``assistant``, ``user``
(tool results) and exactly one final ``result``. Usage is forwarded as reported: a field no turn
reported stays absent; an invalid value ends the session with an error result. An HTTP failure
ends the session with an error result, never a traceback. See docs/standin-agent.md.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import sys
import time
from collections.abc import Iterator
from typing import Any

VERSION = "wfbench-standin-agent/1"
USAGE_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
DEFAULT_TOOLS = ("Bash", "Edit", "Read", "Skill", "Write")
VALUE_FLAGS = frozenset(
    {
        "--input-format",
        "--output-format",
        "--model",
        "--permission-mode",
        "--settings",
        "--mcp-config",
        "--plugin-dir",
        "--add-dir",
        "--effort",
        "--session-id",
        "--max-turns",
        "--append-system-prompt",
        "--system-prompt",
        "--fallback-model",
    }
)
LIST_FLAGS = frozenset(
    {"--tools", "--allowedTools", "--allowed-tools", "--disallowedTools", "--disallowed-tools"}
)
#: USD per million tokens: (input, cache write, cache read, output), matched on the model name.
PRICES = (
    ("opus-4-5", (5.0, 6.25, 0.50, 25.0)),
    ("opus", (15.0, 18.75, 1.50, 75.0)),
    ("sonnet", (3.0, 3.75, 0.30, 15.0)),
    ("haiku-4-5", (1.0, 1.25, 0.10, 5.0)),
    ("haiku", (0.80, 1.0, 0.08, 4.0)),
)
MAX_TURNS = 200
BASH_ENV_KEYS = ("HOME", "PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TMPDIR", "USER", "LOGNAME", "TZ")
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|ANTHROPIC|OPENAI", re.I)
SKILL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
TOOL_OUTPUT_LIMIT = 30000
#: The real CLI's refusal of an Edit/Write of an existing file the session has not read.
NOT_READ_YET = "File has not been read yet. Read it first before writing to it."
#: Process groups of the Bash tool's commands (pgid = the bash pid), killed when the agent ends.
TOOL_GROUPS: list[int] = []


class SessionFailure(Exception):
    """Ends the session with an error result (HTTP failure, bad stream, invalid usage)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def parse_args(argv: list[str]) -> dict[str, Any]:
    """The flags the ModelCLI adapter passes; unknown flags are tolerated and ignored."""
    opts: dict[str, Any] = {"lists": {}, "plugin_dirs": [], "add_dirs": []}
    i = 0
    while i < len(argv):
        flag, _, inline = argv[i].partition("=")
        i += 1
        if flag in LIST_FLAGS:
            values = [inline] if inline else []
            while i < len(argv) and not argv[i].startswith("-"):
                values.append(argv[i])
                i += 1
            key = flag.replace("-tools", "Tools").lstrip("-")
            opts["lists"].setdefault(key, []).extend(
                v for value in values for v in re.split(r"[ ,]+", value) if v
            )
        elif flag in VALUE_FLAGS:
            value = inline
            if not inline and i < len(argv):
                value, i = argv[i], i + 1
            if flag == "--plugin-dir":
                opts["plugin_dirs"].append(value)
            elif flag == "--add-dir":
                opts["add_dirs"].append(value)
            else:
                opts[flag.lstrip("-")] = value
    return opts


def tool_name(spec: str) -> str:
    """The tool a permission rule names: ``Bash(git:*)`` names Bash."""
    return spec.split("(", 1)[0].strip()


class ToolPolicy:
    """--tools narrows the toolset, --allowedTools pre-approves, --disallowedTools denies."""

    def __init__(self, lists: dict[str, list[str]], mode: str) -> None:
        self.available = tuple(lists.get("tools") or DEFAULT_TOOLS)
        self.allowed = {tool_name(s) for s in lists.get("allowedTools", [])}
        self.denied = {tool_name(s) for s in lists.get("disallowedTools", [])}
        self.mode = mode

    def tools(self) -> list[str]:
        """The tools the session offers (init event, request schemas)."""
        return [t for t in self.available if t not in self.denied]

    def refusal(self, name: str) -> str | None:
        """Why a call to ``name`` is refused, or None when it may run."""
        if name not in self.tools():
            return f"<tool_use_error>Error: No such tool available: {name}</tool_use_error>"
        if self.allowed and name not in self.allowed and self.mode != "bypassPermissions":
            return f"Permission to use {name} has been denied (not in --allowedTools)."
        return None


def new_id() -> str:
    """A random UUID-shaped id (``uuid`` is not imported: start-up time matters here)."""
    raw = os.urandom(16).hex()
    return f"{raw[:8]}-{raw[8:12]}-4{raw[13:16]}-{raw[16:20]}-{raw[20:]}"


def emit(event: dict[str, Any]) -> None:
    """One event line on stdout, flushed at once."""
    sys.stdout.write(json.dumps(event, ensure_ascii=False, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def environment_note(cwd: str) -> str:
    """The working-directory statement, worded like Claude Code's first user message."""
    return (
        "<system-reminder>\n# Environment\nYou have been invoked in the following environment: \n"
        f" - Primary working directory: {cwd}\n - Platform: linux\n - Shell: bash\n</system-reminder>"
    )


# ---------------------------------------------------------------------------------------- HTTP
def post_messages(body: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """POST one streaming request; return the assembled assistant message (SessionFailure else).

    A minimal HTTP/1.1 client on a raw socket: ``urllib.request`` alone costs more start-up time
    than a whole offline session.
    """
    base = os.environ.get("ANTHROPIC_BASE_URL", "").rstrip("/")
    if not base:
        raise SessionFailure("ANTHROPIC_BASE_URL is not set")
    headers = {
        "content-type": "application/json",
        "accept": "text/event-stream",
        "x-api-key": os.environ.get("ANTHROPIC_API_KEY", ""),
        "anthropic-version": "2023-06-01",
        "user-agent": VERSION,
    }
    try:
        with HttpResponse.post(
            base + "/v1/messages", json.dumps(body).encode(), headers, timeout_s
        ) as response:
            if response.status >= 400:
                message = error_message(response.read())
                raise SessionFailure(f"API Error: {response.status} {message}", status=response.status)
            if "text/event-stream" in response.headers.get("content-type", ""):
                return read_sse(response.lines())
            return decode_json(response.read())
    except (OSError, ValueError) as exc:  # refused, reset, timeout, bad JSON, bad framing
        raise SessionFailure(f"API Error: {type(exc).__name__}: {exc}") from None
    except (KeyError, TypeError, IndexError, AttributeError) as exc:
        raise SessionFailure(f"API Error: malformed response ({type(exc).__name__}: {exc})") from None


class HttpResponse:
    """One HTTP/1.1 exchange (``Connection: close``): status, headers and a body reader."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.file = sock.makefile("rb")
        status_line = self.file.readline(65536).decode("latin-1")
        parts = status_line.split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/"):
            raise ValueError(f"not an HTTP response: {status_line[:80]!r}")
        self.status = int(parts[1])
        self.headers: dict[str, str] = {}
        while (line := self.file.readline(65536).decode("latin-1").strip()) != "":
            name, _, value = line.partition(":")
            self.headers[name.strip().lower()] = value.strip()

    @classmethod
    def post(cls, url: str, data: bytes, headers: dict[str, str], timeout_s: float) -> HttpResponse:
        """Send the request and read the response head."""
        scheme, _, rest = url.partition("://")
        if scheme not in ("http", "https"):
            raise ValueError("ANTHROPIC_BASE_URL must be an http(s) URL")
        hostport, _, path = rest.partition("/")
        if hostport.startswith("["):  # [::1]:port
            host, _, port = hostport[1:].partition("]")
            port = port.removeprefix(":")
        else:
            host, _, port = hostport.partition(":")
        address = (host, int(port or (443 if scheme == "https" else 80)))
        sock = socket.create_connection(address, timeout=timeout_s)
        if scheme == "https":
            import ssl

            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=host)
        head = [
            f"POST /{path} HTTP/1.1",
            f"Host: {hostport}",
            f"Content-Length: {len(data)}",
            "Connection: close",
        ]
        head += [f"{name}: {value}" for name, value in headers.items()]
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data)
        return cls(sock)

    def __enter__(self) -> HttpResponse:
        return self

    def __exit__(self, *exc: object) -> None:
        self.file.close()
        self.sock.close()

    def chunks(self) -> Iterator[bytes]:
        """The body, de-chunked when chunked; a short chunk is a truncated stream."""
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            while (size := int(self.file.readline(1024).split(b";")[0].strip() or b"0", 16)) > 0:
                chunk = self.file.read(size + 2)
                if len(chunk) < size + 2:
                    raise ValueError("the response ended inside a chunk (truncated)")
                yield chunk[:size]
            return
        if "content-length" in self.headers:
            length = int(self.headers["content-length"])
            body = self.file.read(length)
            if len(body) < length:
                raise ValueError("the response ended before its Content-Length (truncated)")
            yield body
            return
        while chunk := self.file.read1(65536):
            yield chunk

    def read(self) -> bytes:
        """The whole body."""
        return b"".join(self.chunks())

    def lines(self) -> Iterator[bytes]:
        """The body split into lines (for SSE)."""
        pending = b""
        for chunk in self.chunks():
            pending += chunk
            *complete, pending = pending.split(b"\n")
            for line in complete:
                yield line + b"\n"
        if pending:
            yield pending


def error_message(raw: bytes) -> str:
    """The provider's error message, bounded."""
    try:
        return str(json.loads(raw or b"{}").get("error", {}).get("message", ""))[:500]
    except (ValueError, AttributeError):
        return ""


def decode_json(raw: bytes) -> dict[str, Any]:
    """A plain-JSON Messages response."""
    message = json.loads(raw)
    if not isinstance(message, dict) or not isinstance(message.get("content"), list):
        raise ValueError("response is not a Messages object")
    return message


def read_sse(response: Iterator[bytes]) -> dict[str, Any]:
    """Assemble a message from Messages SSE events; a stream without message_stop is truncated."""
    message: dict[str, Any] | None = None
    partial: dict[int, str] = {}
    data: list[str] = []
    for raw_line in response:
        line = raw_line.decode("utf-8").rstrip("\r\n")
        if line.startswith("data:"):
            data.append(line[5:].lstrip())
            continue
        if line or not data:
            continue
        event, data = json.loads("\n".join(data)), []
        kind = event.get("type")
        if kind == "error":
            raise SessionFailure(f"API Error: stream error {event.get('error')}")
        if kind == "message_start":
            message = dict(event["message"], content=[])
            message["usage"] = dict(message.get("usage") or {})
        elif message is None:
            raise ValueError(f"{kind} before message_start")
        elif kind == "content_block_start":
            message["content"].append(dict(event["content_block"]))
        elif kind == "content_block_delta":
            apply_delta(message["content"][event["index"]], event["delta"], partial, event["index"])
        elif kind == "content_block_stop":
            finish_block(message["content"][event["index"]], partial.pop(event["index"], None))
        elif kind == "message_delta":
            message.update(
                {k: v for k, v in event.get("delta", {}).items() if k in ("stop_reason", "stop_sequence")}
            )
            if isinstance(event.get("usage"), dict):
                message["usage"].update(event["usage"])
        elif kind == "message_stop":
            return message
    raise SessionFailure("API Error: the response stream ended before message_stop (truncated)")


def apply_delta(block: dict[str, Any], delta: dict[str, Any], partial: dict[int, str], index: int) -> None:
    """Fold one content_block_delta into its block."""
    if delta.get("type") == "text_delta":
        block["text"] = block.get("text", "") + delta["text"]
    elif delta.get("type") == "input_json_delta":
        partial[index] = partial.get(index, "") + delta["partial_json"]


def finish_block(block: dict[str, Any], partial_json: str | None) -> None:
    """A tool_use block's input is the concatenated JSON of its deltas."""
    if block.get("type") == "tool_use" and partial_json is not None:
        block["input"] = json.loads(partial_json) if partial_json.strip() else {}


# --------------------------------------------------------------------------------------- usage
def checked_usage(usage: Any) -> dict[str, int]:
    """The four fields as reported; absent stays absent, anything but a non-negative int is refused."""
    if usage is None:
        return {}
    if not isinstance(usage, dict):
        raise SessionFailure("provider reply carried a usage that is not an object; refusing to report it")
    out: dict[str, int] = {}
    for name in USAGE_FIELDS:
        if name not in usage or usage[name] is None:
            continue
        value = usage[name]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise SessionFailure(
                f"provider reported an invalid usage.{name} ({value!r}); refusing to report it"
            )
        out[name] = value
    return out


def cost_usd(model: str, usage: dict[str, int]) -> float | None:
    """Cost from the price table; None for an unpriced model or when input/output were not reported."""
    prices = next((p for key, p in PRICES if key in model.lower()), None)
    if prices is None or "input_tokens" not in usage or "output_tokens" not in usage:
        return None
    fields = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
    return round(sum(usage.get(f, 0) * p for f, p in zip(fields, prices, strict=True)) / 1_000_000, 6)


# --------------------------------------------------------------------------------------- tools
class NotReadYet(Exception):
    """Edit/Write of an existing file this session has not read (the real CLI's rule)."""


class Tools:
    """Executes tool calls for real, in the working directory.

    Like the real CLI (observed with 2.1.328), ``Edit`` and ``Write`` refuse an existing file this
    session has not read: a successful ``Read`` (even of a few lines), ``Write`` or ``Edit`` makes a
    file known; a change on disk since then does not make it unknown again.
    """

    def __init__(self, cwd: str, plugin_dirs: list[str]) -> None:
        self.cwd = cwd
        self.plugin_dirs = plugin_dirs
        self.known: set[str] = set()

    def run(self, name: str, args: dict[str, Any]) -> tuple[str, bool, str | None]:
        """(content, is_error, injected skill text)."""
        try:
            if name == "Skill":
                return self.skill(args)
            handler = {"Write": self.write, "Edit": self.edit, "Read": self.read, "Bash": self.bash}[name]
            return handler(args), False, None
        except NotReadYet:
            return f"<tool_use_error>{NOT_READ_YET}</tool_use_error>", True, None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            return f"<tool_use_error>{type(exc).__name__}: {exc}</tool_use_error>", True, None

    def require_read(self, path: str) -> None:
        if os.path.exists(path) and os.path.realpath(path) not in self.known:
            raise NotReadYet(path)

    def remember(self, path: str) -> None:
        self.known.add(os.path.realpath(path))

    def path(self, args: dict[str, Any]) -> str:
        path = args["file_path"]
        if not isinstance(path, str) or not os.path.isabs(path):
            raise ValueError(f"file_path must be an absolute path, got {path!r}")
        return path

    def write(self, args: dict[str, Any]) -> str:
        path, content = self.path(args), args.get("content", "")
        self.require_read(path)
        existed = os.path.exists(path)
        atomic_write(path, content.encode("utf-8"))
        self.remember(path)
        return f"The file {path} has been updated." if existed else f"File created successfully at: {path}"

    def edit(self, args: dict[str, Any]) -> str:
        path, old, new = self.path(args), args["old_string"], args["new_string"]
        self.require_read(path)
        if old == "" and not os.path.exists(path):  # the real CLI creates the file
            atomic_write(path, new.encode("utf-8"))
            self.remember(path)
            return f"The file {path} has been updated."
        with open(path, encoding="utf-8", newline="") as handle:
            text = handle.read()
        count = text.count(old) if old else 0
        if count == 0:
            raise ValueError(f"old_string not found in {path}")
        if count > 1 and not args.get("replace_all"):
            raise ValueError(
                f"old_string occurs {count} times in {path}; set replace_all or give more context"
            )
        atomic_write(path, text.replace(old, new).encode("utf-8"))
        self.remember(path)
        return f"The file {path} has been updated."

    def read(self, args: dict[str, Any]) -> str:
        path = self.path(args)
        with open(path, encoding="utf-8", errors="replace", newline="") as handle:
            text = handle.read()
        self.remember(path)
        # Lines end at \n (and \r\n) only, as in the real CLI: U+2028, U+0085… are text.
        lines = [line.removesuffix("\r") for line in text.split("\n")]
        if lines and lines[-1] == "":
            lines.pop()
        start = max(int(args.get("offset") or 1), 1)
        chosen = lines[start - 1 : start - 1 + int(args.get("limit") or 2000)]
        return "\n".join(f"{n:6}\t{line}" for n, line in enumerate(chosen, start))[:TOOL_OUTPUT_LIMIT]

    def bash(self, args: dict[str, Any]) -> str:
        """Runs in its own process group, with a scrubbed environment.

        A timeout kills the whole group (bash and every child it started); the agent kills every
        tool group when it ends or is terminated (:func:`kill_tool_groups`), so the session's kill
        still reaches them.
        """
        timeout_s = min(float(args.get("timeout") or 120000), 600000) / 1000
        keep = {*BASH_ENV_KEYS, *os.environ.get("WFBENCH_TOOL_ENV", "").split()}
        env = {k: v for k, v in os.environ.items() if k in keep and not SECRET_NAME.search(k)}
        import subprocess
        import tempfile

        with tempfile.TemporaryFile() as out:
            proc = subprocess.Popen(
                ["/bin/bash", "-c", str(args["command"])],
                cwd=self.cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                process_group=0,
            )
            TOOL_GROUPS.append(proc.pid)
            try:
                code = proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                kill_group(proc.pid)
                proc.wait()
                raise ValueError(f"command timed out after {timeout_s:g} s") from None
            out.seek(0)
            text = out.read(TOOL_OUTPUT_LIMIT).decode("utf-8", "replace").rstrip("\n")
        if code != 0:
            raise ValueError(f"exit code {code}\n{text}")
        return text

    def skill(self, args: dict[str, Any]) -> tuple[str, bool, str | None]:
        raw = next((args[k] for k in ("skill", "command", "name") if isinstance(args.get(k), str)), "")
        name = raw.strip().split(" ")[0].lstrip("/")
        bare = name.rpartition(":")[2]
        roots = [os.path.join(self.cwd, ".claude", "skills")] + [
            os.path.join(d, "skills") for d in self.plugin_dirs
        ]
        for root in roots if SKILL_NAME.fullmatch(bare) and ".." not in bare else []:
            skill_file = os.path.join(root, bare, "SKILL.md")
            if os.path.isfile(skill_file):
                with open(skill_file, encoding="utf-8", errors="replace") as handle:
                    body = strip_front_matter(handle.read())
                note = f"Base directory for this skill: {os.path.dirname(skill_file)}\n\n{body}"
                return f"Launching skill: {name}", False, note
        return f"<tool_use_error>Unknown skill: {name}</tool_use_error>", True, None


def strip_front_matter(text: str) -> str:
    """The skill body without its YAML front matter, as the real CLI injects it."""
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        if end != -1:
            return text[end + 4 :].lstrip("\n")
    return text


def atomic_write(path: str, data: bytes) -> None:
    """Stage next to the target, then rename (the read-only-workspace boundary must allow only this)."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    staging = f"{path}.tmp.standin"
    with open(staging, "wb") as handle:
        handle.write(data)
    os.replace(staging, path)


# ------------------------------------------------------------------------------------- session
class Session:
    """One headless session: the conversation, the usage totals and the event printer."""

    def __init__(self, opts: dict[str, Any], prompt: str) -> None:
        self.id = opts.get("session-id") or new_id()
        self.model = opts.get("model") or os.environ.get("ANTHROPIC_MODEL") or "claude-sonnet-4-5"
        self.cwd = os.getcwd()
        self.policy = ToolPolicy(opts["lists"], opts.get("permission-mode") or "default")
        self.tools = Tools(self.cwd, opts["plugin_dirs"])
        self.max_turns = int(opts.get("max-turns") or MAX_TURNS)
        self.timeout_s = float(os.environ.get("API_TIMEOUT_MS") or 600000) / 1000
        self.messages: list[dict[str, Any]] = [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": environment_note(self.cwd)},
                    {"type": "text", "text": prompt},
                ],
            }
        ]
        self.usage: dict[str, int] = {}
        self.turns = 0
        self.started = time.monotonic()
        self.api_ms = 0.0

    def event(self, kind: str, **fields: Any) -> None:
        emit({"type": kind, **fields, "session_id": self.id, "uuid": new_id()})

    def run(self) -> int:
        """Loop until end_turn; returns the exit status."""
        self.event(
            "system",
            subtype="init",
            cwd=self.cwd,
            tools=self.policy.tools(),
            mcp_servers=[],
            model=self.model,
            permissionMode=self.policy.mode,
            slash_commands=[],
            agent=VERSION,
        )
        try:
            while True:
                if self.turns >= self.max_turns:
                    return self.finish("error_max_turns", f"reached the maximum of {self.max_turns} turns")
                message = self.call_model()
                tool_calls = [b for b in message["content"] if b.get("type") == "tool_use"]
                if not tool_calls:
                    texts = [b.get("text", "") for b in message["content"] if b.get("type") == "text"]
                    return self.finish("success", "".join(texts))
                self.run_tools(tool_calls)
        except SessionFailure as exc:
            return self.finish("error_during_execution", str(exc), status=exc.status)
        except Exception as exc:  # the contract is one result event, never a traceback
            return self.finish(
                "error_during_execution", f"stand-in agent failure: {type(exc).__name__}: {exc}"
            )

    def call_model(self) -> dict[str, Any]:
        body = {
            "model": self.model,
            "max_tokens": 32000,
            "stream": True,
            "messages": self.messages,
            "system": [{"type": "text", "text": "You are a headless coding agent (wfbench stand-in)."}],
            "tools": [
                {"name": t, "description": t, "input_schema": {"type": "object"}} for t in self.policy.tools()
            ],
        }
        self.turns += 1
        started = time.monotonic()
        try:
            message = post_messages(body, self.timeout_s)
        finally:
            self.api_ms += (time.monotonic() - started) * 1000
        turn_usage = checked_usage(message.get("usage"))
        for name, value in turn_usage.items():
            self.usage[name] = self.usage.get(name, 0) + value
        self.messages.append({"role": "assistant", "content": message["content"]})
        self.event(
            "assistant",
            message={**message, "model": message.get("model") or self.model},
            parent_tool_use_id=None,
        )
        return message

    def run_tools(self, calls: list[dict[str, Any]]) -> None:
        results: list[dict[str, Any]] = []
        notes: list[dict[str, Any]] = []
        for call in calls:
            refusal = self.policy.refusal(str(call.get("name")))
            if refusal is not None:
                content, is_error, note = refusal, True, None
            else:
                raw_input = call.get("input")
                args: dict[str, Any] = raw_input if isinstance(raw_input, dict) else {}
                content, is_error, note = self.tools.run(str(call["name"]), args)
            results.append(
                {
                    "type": "tool_result",
                    "tool_use_id": call.get("id"),
                    "content": content,
                    "is_error": is_error,
                }
            )
            if note is not None:
                notes.append({"type": "text", "text": note})
        self.event("user", message={"role": "user", "content": results}, parent_tool_use_id=None)
        if notes:
            self.event(
                "user", message={"role": "user", "content": notes}, parent_tool_use_id=None, isSynthetic=True
            )
        self.messages.append({"role": "user", "content": results + notes})

    def finish(self, subtype: str, text: str, status: int | None = None) -> int:
        is_error = subtype != "success"
        result: dict[str, Any] = {
            "subtype": subtype,
            "is_error": is_error,
            "duration_ms": round((time.monotonic() - self.started) * 1000),
            "duration_api_ms": round(self.api_ms),
            "num_turns": self.turns,
            "result": text,
            "stop_reason": None if is_error else "end_turn",
            "api_error_status": status,
            "usage": dict(self.usage),
        }
        cost = cost_usd(self.model, self.usage)
        if cost is not None:
            result["total_cost_usd"] = cost
        self.event("result", **result)
        return 1 if is_error else 0


def kill_group(pgid: int) -> None:
    """SIGKILL one process group (gone already is fine)."""
    with contextlib.suppress(OSError):
        os.killpg(pgid, signal.SIGKILL)


def kill_tool_groups() -> None:
    """SIGKILL every Bash tool group this agent started (background children included)."""
    while TOOL_GROUPS:
        kill_group(TOOL_GROUPS.pop())


def _terminated(signum: int, _frame: object) -> None:
    """On SIGTERM/SIGHUP/SIGINT: end the tool groups, then die of the same signal."""
    kill_tool_groups()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def hide_secrets_from_children() -> None:
    """Best effort: keep tool children from reading credentials out of this process.

    Python has already copied the environment into ``os.environ``; the kernel still serves the
    original block as ``/proc/<pid>/environ``. Secret-named values are overwritten in place there
    and the process is marked non-dumpable (``PR_SET_DUMPABLE`` 0), so a Bash child running as
    the same user reads neither. Skipped silently where ctypes or prctl is unavailable.
    """
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
        table = ctypes.POINTER(ctypes.c_void_p).in_dll(libc, "environ")
        index = 0
        while (address := table[index]) is not None:
            entry = ctypes.string_at(address)
            name, sep, value = entry.partition(b"=")
            if sep and value and SECRET_NAME.search(name.decode("ascii", "replace")):
                ctypes.memset(address + len(name) + 1, ord("*"), len(value))
            index += 1
    except (OSError, AttributeError, ValueError, ImportError):
        return


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``wfbench-standin-agent``: prompt on stdin, events on stdout."""
    hide_secrets_from_children()
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, _terminated)
    opts = parse_args(list(sys.argv[1:] if argv is None else argv))
    prompt = sys.stdin.buffer.read().decode("utf-8", errors="replace")
    try:
        return Session(opts, prompt).run()
    except Exception as exc:  # the contract is one result event, never a traceback
        emit(
            {
                "type": "result",
                "subtype": "error_during_execution",
                "is_error": True,
                "num_turns": 0,
                "result": f"stand-in agent failure: {type(exc).__name__}: {exc}",
                "session_id": "unknown",
            }
        )
        return 1
    finally:
        kill_tool_groups()  # a background child of a Bash call does not outlive the session


if __name__ == "__main__":
    sys.exit(main())
