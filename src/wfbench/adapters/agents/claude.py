"""The ModelCLI adapter: one headless session of the real ``claude`` CLI or the stand-in agent.

Both run the same way (``-p --input-format text --output-format stream-json --verbose``, the
prompt over stdin, never in argv) through the :class:`~wfbench.domain.ports.Sandbox` port, and
both streams go through the same strict parser (:mod:`wfbench.domain.session.event_stream`).

What the adapter adds to the caller's :class:`SandboxPolicy` (``attrs.evolve``):

* mounts, read-only: the real CLI's resolved binary at ``/opt/claude/claude`` and a generated
  shell-prefix wrapper at ``/opt/claude/shell-prefix``; or, for the stand-in, its single file at
  ``/opt/wfbench/standin_agent.py`` and the Python runtime (``sys.base_prefix``) at its own path;
* the environment: the caller's ``policy.env`` (HOME/TMPDIR/PWD are the sandbox's own), then
  ``PATH``/``LANG`` defaults, ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1``,
  ``CLAUDE_CODE_MAX_RETRIES=0``, ``DISABLE_AUTOUPDATER=1``, the model pinned for every model slot,
  ``request.env`` (must hold a loopback-or-explicit ``ANTHROPIC_BASE_URL``), and last the secrets
  of ``request.secrets`` (they reach only the agent process: the real CLI's Bash tool runs
  through the wrapper, which starts ``env -i`` with HOME/PATH/TMPDIR/LANG/TERM only);
* the timeout of the request;
* ``non_dumpable``: the agent process is started non-dumpable (:mod:`wfbench.adapters.sandbox.nondumpable`),
  so its tools cannot write its event stream (``/proc/<pid>/fd/1``), ptrace it or read its
  memory and environment.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

import attrs

from wfbench.domain.errors import InputError, SandboxError
from wfbench.domain.ports import CancelToken, Sandbox
from wfbench.domain.redaction import REDACTED, contains_secret, redact_text
from wfbench.domain.session.event_stream import ProcessOutcome, SessionVerdict, classify_session
from wfbench.domain.session.records import SessionRecord, SessionRequest
from wfbench.domain.workspace.sandbox import ExecResult, Mount, ProcessState, SandboxPolicy

#: The Claude Code CLI version wfbench is tested with (``scripts/install-tools`` installs it).
CLAUDE_VERSION = "2.1.328"
CLAUDE_TARGET = "/opt/claude/claude"
SHELL_PREFIX_TARGET = "/opt/claude/shell-prefix"
STANDIN_TARGET = "/opt/wfbench/standin_agent.py"
TRANSCRIPT_LIMIT = 8 * 1024 * 1024
EMPTY_MCP_CONFIG = '{"mcpServers":{}}'
SENSITIVE_KEYS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "api_key",
        "anthropic-api-key",
        "anthropic_api_key",
        "token",
        "access_token",
        "refresh_token",
        "secret",
        "client_secret",
        "cookie",
        "set-cookie",
        "password",
    }
)
DEFAULT_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "CLAUDE_CODE_MAX_RETRIES": "0",
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_TELEMETRY": "1",
    "NO_COLOR": "1",
    "TERM": "dumb",
}
MODEL_SLOTS = (
    "ANTHROPIC_MODEL",
    "ANTHROPIC_DEFAULT_OPUS_MODEL",
    "ANTHROPIC_DEFAULT_SONNET_MODEL",
    "ANTHROPIC_DEFAULT_HAIKU_MODEL",
    "CLAUDE_CODE_SUBAGENT_MODEL",
)
#: The Bash tool's wrapper: exactly one argument, run by bash in an emptied environment.
SHELL_PREFIX_SCRIPT = """#!/bin/sh
# wfbench: the Bash tool's commands run here with no agent credentials in their environment.
[ "$#" -eq 1 ] || { echo "shell-prefix: expected exactly one argument" >&2; exit 64; }
exec /usr/bin/env -i HOME="$HOME" PATH="$PATH" TMPDIR="${TMPDIR:-/tmp}" LANG="${LANG:-C.UTF-8}" \\
  TERM=dumb{forwarded} /bin/bash -c "$1"
"""
#: Names the agent's tools keep besides HOME/PATH/TMPDIR/LANG/TERM: the harness's command variables
#: (task variables, VIRTUAL_ENV, PYTHONDONTWRITEBYTECODE…), never a credential-like name.
TOOL_ENV_VAR = "WFBENCH_TOOL_ENV"
_TOOL_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_CREDENTIAL = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|ANTHROPIC|OPENAI", re.IGNORECASE)
_TOOL_BASE = frozenset({"HOME", "PATH", "TMPDIR", "LANG", "TERM", "PWD"})


def tool_env_names(env: Mapping[str, str]) -> tuple[str, ...]:
    """The variables of the harness's command environment the agent's tool commands keep."""
    names = (n for n in env if n not in _TOOL_BASE and _TOOL_ENV_NAME.match(n))
    return tuple(sorted(n for n in names if not _CREDENTIAL.search(n)))


def shell_prefix_script(names: Sequence[str]) -> str:
    """The Bash wrapper, forwarding each of ``names`` when set (``${N+"N=$N"}``)."""
    forwarded = "".join(f' ${{{n}+"{n}=${n}"}}' for n in names)
    return SHELL_PREFIX_SCRIPT.replace("{forwarded}", forwarded)


__all__ = [
    "ClaudeCLI",
    "build_argv",
    "check_base_url",
    "decode_events",
    "record_from_verdict",
    "redact_transcript",
    "session_record",
]


@attrs.frozen
class ClaudeCLI:
    """Runs sessions of one agent program. Build with :meth:`real` or :meth:`standin`."""

    #: The program as the sandbox sees it, before the common flags (``[python, -I, -S, file]``).
    launcher: tuple[str, ...]
    #: Read-only mounts the program needs.
    mounts: tuple[Mount, ...]
    #: True for the real CLI: its Bash tool gets the credential-free shell-prefix wrapper.
    shell_prefix: bool
    transcript_limit: int = TRANSCRIPT_LIMIT

    @classmethod
    def real(cls, binary_path: str) -> ClaudeCLI:
        """The real Claude Code CLI; ``binary_path`` may be the npm ``.bin`` symlink.

        Raises:
            InputError: the path is not an executable file.
        """
        resolved = os.path.realpath(binary_path)
        if not (os.path.isfile(resolved) and os.access(resolved, os.X_OK)):
            raise InputError("not an executable file", source=binary_path, field="claude binary")
        return cls((CLAUDE_TARGET,), (Mount(resolved, CLAUDE_TARGET),), shell_prefix=True)

    @classmethod
    def standin(cls) -> ClaudeCLI:
        """The bundled stand-in agent, run by this interpreter as ``python3 -I -S <file>``."""
        from wfbench.adapters.agents import standin as standin_agent

        source = os.path.realpath(standin_agent.__file__)
        runtime = os.path.realpath(sys.base_prefix)
        python = os.path.realpath(sys.executable)
        if not python.startswith(runtime + os.sep):
            python = os.path.join(runtime, "bin", f"python{sys.version_info.major}.{sys.version_info.minor}")
        mounts = (Mount(source, STANDIN_TARGET), Mount(runtime, runtime))
        return cls((python, "-I", "-S", STANDIN_TARGET), mounts, shell_prefix=False)

    def run_session(
        self,
        request: SessionRequest,
        *,
        sandbox: Sandbox,
        policy: SandboxPolicy,
        cancel: CancelToken | None = None,
    ) -> SessionRecord:
        """Run one session through ``sandbox`` and parse its event stream into a record.

        Raises:
            InputError: the request is unsafe (no base URL, a blank secret, a secret in argv).
            SandboxError: the sandbox could not start the agent at all.
        """
        with self._prefix_file(tool_env_names(policy.env)) as prefix_host:
            session_policy = self.session_policy(request, policy, sandbox=sandbox, prefix_host=prefix_host)
            argv = self.argv(request, sandbox=sandbox, policy=session_policy)
            result = sandbox.run(argv, policy=session_policy, stdin=request.prompt.encode(), cancel=cancel)
        if result.state is ProcessState.SPAWN_FAILURE:
            raise SandboxError(f"cannot start the agent: {result.detail}")
        return self.record(result, request)

    def argv(self, request: SessionRequest, *, sandbox: Sandbox, policy: SandboxPolicy) -> list[str]:
        """The full command line as the sandbox sees it (no prompt, no secret).

        Raises:
            InputError: a secret value occurs in the command line.
        """
        launcher = [
            sandbox.mount_path(part, policy) if part in (m.target for m in self.mounts) else part
            for part in self.launcher
        ]
        argv = [*launcher, *build_argv(request)]
        named = [*request.secrets.items(), *(("withheld", value) for value in request.withheld)]
        leaked = [name for name, value in named if value and any(value in arg for arg in argv)]
        if leaked:
            raise InputError("a secret value occurs in the agent's command line", field=leaked[0])
        return argv

    def session_policy(
        self,
        request: SessionRequest,
        policy: SandboxPolicy,
        *,
        sandbox: Sandbox,
        prefix_host: str | None = None,
    ) -> SandboxPolicy:
        """``policy`` plus the program's mounts, the session environment and the request's timeout.

        ``prefix_host`` is the host path of the Bash wrapper (real CLI only): it is mounted at
        ``/opt/claude/shell-prefix`` and named, as the sandbox sees it, in ``CLAUDE_CODE_SHELL_PREFIX``.
        """
        mounts = [*policy.mounts, *(m for m in self.mounts if m not in policy.mounts)]
        env = session_env(request, policy.env)
        env[TOOL_ENV_VAR] = " ".join(tool_env_names(policy.env))
        if prefix_host is not None:
            mounts.append(Mount(prefix_host, SHELL_PREFIX_TARGET))
        evolved = attrs.evolve(
            policy, mounts=tuple(mounts), env=env, timeout_s=request.timeout_s, non_dumpable=True
        )
        if prefix_host is not None:
            env["CLAUDE_CODE_SHELL_PREFIX"] = sandbox.mount_path(SHELL_PREFIX_TARGET, evolved)
        return evolved

    @contextlib.contextmanager
    def _prefix_file(self, names: Sequence[str] = ()) -> Iterator[str | None]:
        if not self.shell_prefix:
            yield None
            return
        root = tempfile.mkdtemp(prefix="wfbench-shell-prefix-")
        try:
            path = os.path.join(root, "shell-prefix")
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(shell_prefix_script(names))
            os.chmod(path, 0o500)
            yield path
        finally:
            shutil.rmtree(root, ignore_errors=True)

    def record(self, result: ExecResult, request: SessionRequest) -> SessionRecord:
        """The session record of a finished process (also usable on a recorded capture)."""
        return session_record(result, request, classify_session, transcript_limit=self.transcript_limit)


class Classifier(Protocol):
    """An agent's stream classifier (:func:`classify_session`, ``classify_codex_session``)."""

    def __call__(
        self,
        events: Sequence[dict[str, Any]] | None,
        *,
        process: ProcessOutcome,
        stream_error: str | None = None,
        expected_skill: str | None = None,
    ) -> SessionVerdict: ...


def session_record(
    result: ExecResult, request: SessionRequest, classify: Classifier, *, transcript_limit: int
) -> SessionRecord:
    """The session record of a finished agent process, its JSON-lines stdout read by ``classify``.

    The stream is decoded (:func:`decode_events`), the process's outcome and tails handed to the
    classifier with it, and the transcript redacted of every secret and withheld value.
    """
    secrets = (*request.secrets.values(), *request.withheld)
    events, stream_error = decode_events(result.stdout, overflow=result.stdout_overflow)
    process = ProcessOutcome(
        state=result.state,
        returncode=result.returncode,
        detail=result.detail,
        stderr_tail=result.stderr_tail.decode("utf-8", "replace"),
        stdout_tail=result.stdout[-2000:].decode("utf-8", "replace"),
        wall_s=result.duration_s,
    )
    verdict = classify(
        events, process=process, stream_error=stream_error, expected_skill=request.expected_skill
    )
    transcript, truncated = redact_transcript(result.stdout, secrets, limit=transcript_limit)
    return record_from_verdict(verdict, transcript, truncated or result.stdout_overflow, secrets)


def record_from_verdict(
    verdict: SessionVerdict, transcript: bytes, truncated: bool, secrets: Sequence[str]
) -> SessionRecord:
    """The record of a parsed session: the verdict, the redacted transcript, details redacted again."""
    detail = redact_text(verdict.error_detail, secrets) if verdict.error_detail is not None else None
    return SessionRecord(
        ok=verdict.ok,
        error_kind=verdict.error_kind,
        error_detail=detail,
        usage=verdict.usage,
        cost_usd=verdict.cost_usd,
        num_turns=verdict.num_turns,
        duration_s=verdict.duration_s,
        session_id=verdict.session_id,
        skill_invoked=verdict.skill_invoked,
        transcript=transcript,
        transcript_sha256=hashlib.sha256(transcript).hexdigest(),
        transcript_truncated=truncated,
        transcript_missing=bool(verdict.diagnostics),
        evidence_diagnostics=tuple(redact_text(d, secrets) for d in verdict.diagnostics),
        tool_use_counts=dict(verdict.tool_use_counts),
    )


def build_argv(request: SessionRequest) -> list[str]:
    """The agent flags, in the reference's order (variadic tool lists end at the next flag)."""
    argv = ["-p", "--input-format", "text", "--output-format", "stream-json", "--verbose"]
    for directory in request.plugin_dirs:
        argv += ["--plugin-dir", directory]
    if request.settings_json is not None:
        argv += ["--settings", request.settings_json]
    if request.strict_mcp_config:
        argv += ["--strict-mcp-config", "--mcp-config", request.mcp_config_json or EMPTY_MCP_CONFIG]
    elif request.mcp_config_json is not None:
        argv += ["--mcp-config", request.mcp_config_json]
    if request.allowed_tools:
        names = list(dict.fromkeys(tool.split("(", 1)[0] for tool in request.allowed_tools))
        argv += ["--tools", *names, "--allowedTools", *request.allowed_tools]
    argv += ["--permission-mode", request.permission_mode, "--model", request.model]
    if request.effort is not None:
        argv += ["--effort", request.effort]
    for tool in request.disallowed_tools:
        argv += ["--disallowedTools", tool]
    for directory in request.add_dirs:
        argv += ["--add-dir", directory]
    return argv


def session_env(request: SessionRequest, base: Mapping[str, str]) -> dict[str, str]:
    """The agent's whole environment: defaults, the caller's env, the request's env, then secrets.

    Raises:
        InputError: no usable ``ANTHROPIC_BASE_URL``, or a blank secret.
    """
    env = {**DEFAULT_ENV, **base, **dict.fromkeys(MODEL_SLOTS, request.model), **request.env}
    check_base_url(env.get("ANTHROPIC_BASE_URL", ""))
    for name, value in request.secrets.items():
        if not value.strip():
            raise InputError("secret is blank", field=name)
        env[name] = value.strip()
    return env


def check_base_url(url: str, field: str = "ANTHROPIC_BASE_URL") -> None:
    """Refuse a model endpoint that is not a plain http(s) URL with a host name.

    Raises:
        InputError: naming ``field``.
    """
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError("must be an http(s) URL with a host name", field=field)
    if parts.username or parts.password or parts.query or parts.fragment:
        raise InputError("must not carry credentials, a query or a fragment", field=field)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name}")


def decode_events(stdout: bytes, *, overflow: bool = False) -> tuple[list[dict[str, Any]] | None, str | None]:
    """Strictly decode the captured stdout: UTF-8, one JSON object per non-blank line, no NaN.

    Lines end at ``\n`` only: JSON text may hold U+2028, U+2029, U+0085 or a form feed raw (the
    real CLI's ``JSON.stringify`` does not escape them), and ``str.splitlines`` would cut there.
    """
    if overflow:
        return None, "the parent-captured event stream exceeds the capture limit"
    try:
        text = stdout.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"the event stream is not UTF-8 ({exc.reason} at byte {exc.start})"
    events: list[dict[str, Any]] = []
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line, parse_constant=_reject_constant)
        except (ValueError, RecursionError):  # RecursionError: nesting too deep for the decoder
            return None, f"malformed parent-captured event JSON at line {number}"
        if not isinstance(event, dict):
            return None, f"event at line {number} is not a JSON object"
        events.append(event)
    return events, None


def _redact_value(value: Any, secrets: Sequence[str]) -> Any:
    if isinstance(value, str):
        return redact_text(value, secrets)
    if isinstance(value, list):
        return [_redact_value(item, secrets) for item in value]
    if isinstance(value, dict):
        return {
            redact_text(str(key), secrets): REDACTED
            if str(key).strip().casefold() in SENSITIVE_KEYS
            else _redact_value(item, secrets)
            for key, item in value.items()
        }
    return value


def _redact_line(line: str, secrets: Sequence[str]) -> str:
    try:
        event = json.loads(line, parse_constant=_reject_constant)
        clean = json.dumps(_redact_value(event, secrets), ensure_ascii=False, separators=(",", ":"))
    except RecursionError:  # too deep to decode or to walk key by key: keep nothing of it
        return json.dumps({"type": "wfbench_redacted_line", "reason": "nested too deeply to redact"})
    except ValueError:
        clean = redact_text(line, secrets)
    if contains_secret(clean, secrets):
        return json.dumps({"type": "wfbench_redacted_line", "reason": "a secret value survived redaction"})
    return clean


def redact_transcript(stdout: bytes, secrets: Sequence[str], *, limit: int) -> tuple[bytes, bool]:
    """The captured stream, redacted line by line and bounded to ``limit`` bytes of whole lines."""
    out = bytearray()
    for line in stdout.decode("utf-8", "replace").split("\n"):  # \n only: see decode_events
        if not line.strip():
            continue
        clean = (_redact_line(line, secrets) + "\n").encode("utf-8")
        if len(out) + len(clean) > limit:
            return bytes(out), True
        out += clean
    return bytes(out), False
