"""The ModelCLI adapter for the OpenAI Codex CLI: one ``codex exec --json`` session in a sandbox.

The npm package ``@openai/codex`` ships a static musl binary (its ``bin/codex.js`` only
``execve``\\ s it): the adapter mounts that binary's ``vendor/<target>`` directory read-only at
``/opt/codex`` (``codex-path/rg`` comes with it); no Node runs in the sandbox. The stream goes
through :mod:`wfbench.domain.session.codex_stream`; decoding, redaction and the record are the
Claude adapter's (:mod:`wfbench.adapters.agents.claude`).

What a session runs with (``docs/agents.md``, "Codex"):

* ``codex exec --json --ephemeral --skip-git-repo-check --ignore-user-config --strict-config
  --color never -s danger-full-access -m <model>``: Codex's own sandbox is off because it cannot
  nest inside bwrap (its bubblewrap needs a nested user namespace): wfbench's sandbox is the
  boundary. ``exec`` never asks for approval;
* one model provider ``wfbench`` (``wire_api="responses"``, ``request_max_retries=0``,
  ``stream_max_retries=0``) at the sweep's endpoint plus ``/v1`` — the key proxy in front of the
  scripted provider or of ``--base-url`` — with the key in ``WFBENCH_API_KEY``;
* ``analytics.enabled=false`` and ``features.plugins=false`` (otherwise Codex contacts analytics
  and plugin-sync hosts), ``web_search="disabled"`` (no hosted web-search tool: the provider
  would reach the network on the agent's behalf), ``shell_environment_policy`` ``inherit=all``
  excluding ``WFBENCH_*`` and ``*_API_KEY*`` (tool commands get the command environment, never
  the key), the reasoning effort when set;
* the prompt on stdin (``-``), never in argv; the environment PATH/LANG/TERM/NO_COLOR, the
  caller's ``policy.env`` and the key, nothing else (HOME/TMPDIR/PWD are the sandbox's own);
* **the key is unreadable by tools**: the binary is run from an *execute-only* copy (mode
  0111, made once per binary under the wfbench cache). Executing a file its user cannot read
  makes the kernel mark the process non-dumpable, so ``/proc/<codex>/environ`` and ``mem`` are
  closed to every other process of the sandbox (no capability can reopen them: bwrap drops
  all). Without it, ``cat /proc/1/environ`` from a tool prints the key;
* a launcher (``/opt/wfbench/codex-launch``, generated, read-only) first copies the arm's
  skills (``request.skill_paths``, in the workspace) to ``$HOME/.agents/skills/<name>`` where
  Codex discovers them, then ``exec``\\ s Codex, which stays PID 1.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator

import attrs

from wfbench.adapters.agents.claude import (
    TRANSCRIPT_LIMIT,
    check_base_url,
    session_record,
)
from wfbench.domain.errors import InputError, SandboxError
from wfbench.domain.ports import CancelToken, Sandbox
from wfbench.domain.session.codex_stream import classify_codex_session
from wfbench.domain.session.records import SessionRecord, SessionRequest
from wfbench.domain.workspace.sandbox import ExecResult, Mount, ProcessState, SandboxPolicy

__all__ = ["CODEX_VERSION", "CodexCLI", "codex_argv", "find_vendor_binary"]

#: The pinned ``@openai/codex`` version (``scripts/install-tools`` installs it).
CODEX_VERSION = "0.171.0"
VENDOR_TARGET = "/opt/codex"
BINARY_TARGET = "/opt/codex/bin/codex"
LAUNCHER_TARGET = "/opt/wfbench/codex-launch"
KEY_ENV = "WFBENCH_API_KEY"
PROVIDER = "wfbench"
#: Where the sweep's endpoint is found in ``request.env`` (the first one set wins).
BASE_URL_VARS = ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")
#: Secret names the adapter accepts for the key (the first one set wins).
KEY_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", KEY_ENV)
DEFAULT_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "TERM": "dumb", "NO_COLOR": "1"}
VENDOR_TRIPLES = {"x86_64": "x86_64-unknown-linux-musl", "aarch64": "aarch64-unknown-linux-musl"}
VENDOR_PACKAGES = {"x86_64": "@openai/codex-linux-x64", "aarch64": "@openai/codex-linux-arm64"}
_SKILL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
#: Copies the skills (pairs of name and source) into $HOME/.agents/skills, then becomes Codex.
LAUNCHER_SCRIPT = """#!/bin/sh
# wfbench: present the arm's skills where Codex discovers them, then exec Codex (it stays PID 1).
# usage: codex-launch COUNT [NAME SOURCE]... PROGRAM [ARGS]...
set -eu
count="$1"; shift
while [ "$count" -gt 0 ]; do
  dest="$HOME/.agents/skills/$1"
  mkdir -p "$dest"
  cp -R "$2/." "$dest/"
  chmod -R a-w "$dest"
  shift 2
  count=$((count - 1))
done
exec "$@"
"""


def find_vendor_binary(path: str) -> str:
    """The static Codex binary behind ``path``: the binary itself, or the npm ``codex`` launcher.

    Raises:
        InputError: ``path`` leads to no executable Codex binary.
    """
    resolved = os.path.realpath(path)
    with contextlib.suppress(OSError), open(resolved, "rb") as handle:
        if handle.read(4) == b"\x7fELF":
            return resolved
    machine = os.uname().machine
    if resolved.endswith(os.path.join("bin", "codex.js")) and machine in VENDOR_TRIPLES:
        package_root = os.path.dirname(os.path.dirname(resolved))  # …/node_modules/@openai/codex
        modules = os.path.dirname(os.path.dirname(package_root))
        binary = os.path.join(
            modules, VENDOR_PACKAGES[machine], "vendor", VENDOR_TRIPLES[machine], "bin", "codex"
        )
        if os.path.isfile(binary):
            return binary
    raise InputError("is not the Codex binary nor its npm launcher", source=path, field="codex binary")


def _exec_only_copy(binary: str, cache_dir: str) -> str:
    """An execute-only (0111) copy of ``binary``, made once per (path, size, mtime) under ``cache_dir``."""
    info = os.stat(binary)
    if info.st_mode & 0o444 == 0:
        return binary
    key = hashlib.sha256(f"{binary}\0{info.st_size}\0{info.st_mtime_ns}".encode()).hexdigest()[:24]
    target_dir = os.path.join(cache_dir, "codex-exec-only", key)
    target = os.path.join(target_dir, "codex")
    if os.path.isfile(target) and os.stat(target).st_mode & 0o777 == 0o111:
        return target
    os.makedirs(target_dir, mode=0o755, exist_ok=True)
    handle, partial = tempfile.mkstemp(prefix=".codex-", dir=target_dir)
    os.close(handle)
    try:
        shutil.copyfile(binary, partial)
        os.chmod(partial, 0o111)  # noqa: S103 - execute-only is the point: nobody may read it
        os.replace(partial, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(partial)
    return target


def _cache_dir() -> str:
    return os.environ.get("WFBENCH_CACHE") or os.path.expanduser("~/.cache/wfbench")


@attrs.frozen
class CodexCLI:
    """Runs ``codex exec`` sessions of one installed Codex binary. Build with :meth:`real`."""

    #: Host path of the ``vendor/<target>`` directory (mounted at ``/opt/codex``).
    vendor_dir: str
    #: Host path of the execute-only binary (mounted over ``/opt/codex/bin/codex``).
    binary: str
    #: ``codex --version`` of the original binary, e.g. ``codex-cli 0.171.0``.
    version: str | None = None
    transcript_limit: int = TRANSCRIPT_LIMIT

    @classmethod
    def real(cls, path: str, *, cache_dir: str | None = None) -> CodexCLI:
        """The Codex CLI at ``path`` (the npm ``.bin/codex`` link, ``codex.js`` or the binary).

        Raises:
            InputError: no Codex binary there, or it does not run.
        """
        binary = find_vendor_binary(path)
        vendor = os.path.dirname(os.path.dirname(binary))
        try:
            done = subprocess.run(
                [binary, "--version"], capture_output=True, text=True, timeout=60, check=False, env={}
            )
        except OSError as exc:
            raise InputError(f"cannot run it ({exc.strerror})", source=path, field="codex binary") from None
        version = done.stdout.strip() or None
        if done.returncode != 0 or not version:
            raise InputError("`--version` failed", source=path, field="codex binary")
        return cls(vendor, _exec_only_copy(binary, cache_dir or _cache_dir()), version)

    @property
    def mounts(self) -> tuple[Mount, ...]:
        """The vendor directory, then the execute-only binary over its ``bin/codex``."""
        return (Mount(self.vendor_dir, VENDOR_TARGET), Mount(self.binary, BINARY_TARGET))

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
            InputError: the request is unsafe (no usable endpoint, no key, a secret in argv).
            SandboxError: the sandbox could not start Codex at all.
        """
        with _launcher_file() as launcher:
            session_policy = self.session_policy(request, policy, launcher_host=launcher)
            argv = self.argv(request, sandbox=sandbox, policy=session_policy)
            result = sandbox.run(argv, policy=session_policy, stdin=request.prompt.encode(), cancel=cancel)
        if result.state is ProcessState.SPAWN_FAILURE:
            raise SandboxError(f"cannot start the agent: {result.detail}")
        return self.record(result, request)

    def session_policy(
        self, request: SessionRequest, policy: SandboxPolicy, *, launcher_host: str
    ) -> SandboxPolicy:
        """``policy`` plus Codex's mounts, the launcher, the session environment and the timeout."""
        own = (*self.mounts, Mount(launcher_host, LAUNCHER_TARGET))
        mounts = (*policy.mounts, *(m for m in own if m not in policy.mounts))
        env = {**DEFAULT_ENV, **policy.env, KEY_ENV: _key(request)}
        return attrs.evolve(policy, mounts=mounts, env=env, timeout_s=request.timeout_s)

    def argv(self, request: SessionRequest, *, sandbox: Sandbox, policy: SandboxPolicy) -> list[str]:
        """The whole command line as the sandbox sees it: launcher, skills, Codex and its flags.

        Raises:
            InputError: no usable endpoint, a bad skill name, or a secret value in the command line.
        """
        root = sandbox.workspace_path(policy)
        skills: list[str] = []
        for name, rel in sorted(request.skill_paths.items()):
            if not _SKILL_NAME.fullmatch(name) or rel.startswith("/") or ".." in rel.split("/"):
                raise InputError("not a skill name and workspace-relative path", field=f"skill {name!r}")
            skills += [name, f"{root}/{rel}"]
        launcher = sandbox.mount_path(LAUNCHER_TARGET, policy)
        binary = sandbox.mount_path(BINARY_TARGET, policy)
        argv = [launcher, str(len(skills) // 2), *skills, binary, *codex_argv(request)]
        named = [*request.secrets.items(), *(("withheld", value) for value in request.withheld)]
        leaked = [name for name, value in named if value and any(value in arg for arg in argv)]
        if leaked:
            raise InputError("a secret value occurs in the agent's command line", field=leaked[0])
        return argv

    def record(self, result: ExecResult, request: SessionRequest) -> SessionRecord:
        """The session record of a finished process (also usable on a recorded capture)."""
        return session_record(result, request, classify_codex_session, transcript_limit=self.transcript_limit)


def _toml(value: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's for these values)."""
    return json.dumps(value, ensure_ascii=True)


def endpoint_of(request: SessionRequest) -> str:
    """The Responses base URL: the sweep's endpoint with ``/v1`` (not doubled).

    Raises:
        InputError: no endpoint in ``request.env``, or not a plain http(s) URL.
    """
    name = next((var for var in BASE_URL_VARS if request.env.get(var)), BASE_URL_VARS[0])
    url = request.env.get(name, "").rstrip("/")
    check_base_url(url, field=name)
    return url if url.endswith("/v1") else f"{url}/v1"


def _key(request: SessionRequest) -> str:
    name = next((var for var in KEY_VARS if var in request.secrets), None)
    value = "" if name is None else request.secrets[name].strip()
    if not value:
        raise InputError(
            "no model API key for Codex (a secret named OPENAI_API_KEY or ANTHROPIC_API_KEY)",
            field=name or "secrets",
        )
    return value


def codex_argv(request: SessionRequest) -> list[str]:
    """Codex's own flags for one headless session (prompt on stdin: the final ``-``)."""
    provider = (
        f"{{name={_toml(PROVIDER)}, base_url={_toml(endpoint_of(request))}, env_key={_toml(KEY_ENV)},"
        ' wire_api="responses", request_max_retries=0, stream_max_retries=0}'
    )
    argv = [
        "exec",
        "--json",
        "--ephemeral",
        "--skip-git-repo-check",
        "--ignore-user-config",
        "--strict-config",
    ]
    argv += ["--color", "never", "-s", "danger-full-access", "-m", request.model]
    argv += ["-c", f"model_provider={_toml(PROVIDER)}", "-c", f"model_providers.{PROVIDER}={provider}"]
    argv += ["-c", "analytics.enabled=false", "-c", "features.plugins=false", "-c", 'web_search="disabled"']
    argv += ["-c", 'shell_environment_policy.inherit="all"']
    argv += ["-c", 'shell_environment_policy.exclude=["WFBENCH_*", "*_API_KEY*"]']
    if request.effort is not None:
        argv += ["-c", f"model_reasoning_effort={_toml(request.effort)}"]
    for directory in request.add_dirs:
        argv += ["--add-dir", directory]
    return [*argv, "-"]


@contextlib.contextmanager
def _launcher_file() -> Iterator[str]:
    root = tempfile.mkdtemp(prefix="wfbench-codex-launch-")
    try:
        path = os.path.join(root, "codex-launch")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(LAUNCHER_SCRIPT)
        os.chmod(path, 0o500)
        yield path
    finally:
        shutil.rmtree(root, ignore_errors=True)
