"""The ModelCLI adapter for OpenCode (``opencode-ai``): one headless ``opencode run`` in a sandbox.

The npm package ships a dynamically linked native binary (Bun inside): the adapter mounts it
read-only at ``/opt/opencode/opencode``. The stream goes through
:mod:`wfbench.domain.session.opencode_stream`; decoding, redaction and the record are the
Claude adapter's (:mod:`wfbench.adapters.agents.claude`).

What a session runs with (``docs/agents.md``, "OpenCode"; facts in ``docs/research/opencode.md``):

* ``opencode run --format json --title <title> -m anthropic/<model>``, the prompt on **stdin**
  (OpenCode reads a piped stdin as the message, verbatim; a positional prompt would sit in
  ``/proc/<pid>/cmdline`` and be sent wrapped in quotes). ``--title`` gives the session its title, so
  OpenCode makes no extra title request to the model: every model request it makes is a step
  of its event stream, and the wire meter and the agent's own report count the same requests;
* a generated config (``OPENCODE_CONFIG``, read-only): OpenCode's built-in ``anthropic``
  provider with its ``baseURL`` pointed at the sweep's endpoint (the cell's bridge) and its
  ``apiKey`` read from ``$WFBENCH_OPENCODE_KEY`` (the lease's token); permissions to edit, run
  commands and reach other directories (the sandbox is the boundary) but never ``webfetch``;
  the arm's skills as ``skills`` directories; sharing and auto-update off;
* the environment: ``PATH``/``LANG``/``TERM=dumb``/``NO_COLOR``, the caller's ``policy.env``,
  models fetch, auto-update, LSP downloads, default plugins, project config, sharing and
  external (``~/.claude``, ``~/.agents``) skill scans off, and ``SHELL`` = a read-only wrapper
  that starts ``bash`` without the key: OpenCode's ``bash`` tool otherwise inherits its whole
  environment. Nothing reaches the network but the bridge (``--network none``): OpenCode
  downloads ripgrep from GitHub when none is on ``PATH``, so the host's ``rg`` must be there
  (``scripts/install-tools``) or the ``skill`` and search tools fail;
* **the key is unreadable by tools**: the process is started non-dumpable (the sandbox runs it
  through an execute-only copy of its ELF loader, :mod:`wfbench.adapters.sandbox.nondumpable`),
  so ``/proc/<opencode>/environ``, ``mem`` and ``fd`` are closed to every other process;
* **skills**: each skill of the arm (``request.skill_paths``, in the workspace) is listed in the
  config's ``skills``; OpenCode lists them to the model and its ``skill`` tool loads one's
  ``SKILL.md`` (the evidence wfbench counts: a completed ``skill`` call naming it).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator

import attrs

from wfbench.adapters.agents.claude import TRANSCRIPT_LIMIT, check_base_url, session_record
from wfbench.domain.errors import InputError, SandboxError
from wfbench.domain.ports import CancelToken, Sandbox
from wfbench.domain.session.opencode_stream import classify_opencode_session
from wfbench.domain.session.records import SessionRecord, SessionRequest
from wfbench.domain.workspace.sandbox import ExecResult, Mount, ProcessState, SandboxPolicy

__all__ = ["OPENCODE_VERSION", "OpenCodeCLI", "opencode_argv", "opencode_config"]

#: The pinned ``opencode-ai`` version (``scripts/install-tools`` installs it).
OPENCODE_VERSION = "1.18.33"
BINARY_TARGET = "/opt/opencode/opencode"
CONFIG_TARGET = "/opt/wfbench/opencode.json"
SHELL_TARGET = "/opt/wfbench/opencode-shell"
KEY_ENV = "WFBENCH_OPENCODE_KEY"
#: Where the sweep's endpoint is found in ``request.env`` (the first one set wins).
BASE_URL_VARS = ("ANTHROPIC_BASE_URL",)
#: Secret names the adapter accepts for the key (the first one set wins).
KEY_VARS = ("ANTHROPIC_API_KEY", KEY_ENV)
DEFAULT_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "TERM": "dumb", "NO_COLOR": "1"}
#: OpenCode switches every session runs with (network, updates, sharing, outside config off).
QUIET_ENV = {
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_DISABLE_PROJECT_CONFIG": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_EXTERNAL_SKILLS": "1",
}
#: The shell OpenCode's ``bash`` tool starts: bash without the key in its environment.
SHELL_SCRIPT = f'#!/bin/sh\nexec env -u {KEY_ENV} /bin/bash "$@"\n'
_SKILL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_TITLE = "wfbench session"


def opencode_config(base_url: str, model: str, skills: list[str]) -> dict[str, object]:
    """The config every session runs with (see the module docstring)."""
    return {
        "autoupdate": False,
        "share": "disabled",
        "model": f"anthropic/{model}",
        "small_model": f"anthropic/{model}",
        "provider": {
            "anthropic": {
                "options": {"baseURL": base_url, "apiKey": f"{{env:{KEY_ENV}}}"},
                "models": {model: {"name": model}},
            }
        },
        "permission": {"edit": "allow", "bash": "allow", "external_directory": "allow", "webfetch": "deny"},
        "skills": skills,
    }


def find_binary(path: str) -> str:
    """The native ``opencode`` binary behind ``path`` (the npm ``.bin/opencode`` link or the binary).

    Raises:
        InputError: ``path`` is not an executable file.
    """
    resolved = os.path.realpath(path)
    if not os.path.isfile(resolved) or not os.access(resolved, os.X_OK):
        raise InputError("is not an executable OpenCode binary", source=path, field="opencode binary")
    return resolved


@attrs.frozen
class OpenCodeCLI:
    """Runs ``opencode run`` sessions of one installed OpenCode binary. Build with :meth:`real`."""

    #: Host path of the native binary (mounted at ``/opt/opencode/opencode``).
    binary: str
    #: ``opencode --version`` of the binary, e.g. ``1.18.33 (OpenCode)``.
    version: str | None = None
    transcript_limit: int = TRANSCRIPT_LIMIT

    @classmethod
    def real(cls, path: str) -> OpenCodeCLI:
        """The OpenCode binary at ``path``.

        Raises:
            InputError: no executable there, or ``--version`` fails.
        """
        binary = find_binary(path)
        home = tempfile.mkdtemp(prefix="wfbench-opencode-version-")
        try:
            done = subprocess.run(
                [binary, "--version"],
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
                env={"PATH": "/usr/bin:/bin", "HOME": home, "NO_COLOR": "1", **QUIET_ENV},
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise InputError(f"cannot run it ({exc})", source=path, field="opencode binary") from None
        finally:
            shutil.rmtree(home, ignore_errors=True)
        version = done.stdout.strip().splitlines()[-1:] if done.stdout.strip() else []
        if done.returncode != 0 or not version:
            raise InputError("`--version` failed", source=path, field="opencode binary")
        return cls(binary, f"{version[0]} (OpenCode)")

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
            SandboxError: the sandbox could not start the CLI at all.
        """
        root = sandbox.workspace_path(policy)
        config = opencode_config(endpoint_of(request), request.model, _skills(request, root))
        with _session_files(config) as files:
            session_policy = self.session_policy(request, policy, sandbox=sandbox, files=files)
            argv = self.argv(request, sandbox=sandbox, policy=session_policy)
            result = sandbox.run(argv, policy=session_policy, stdin=request.prompt.encode(), cancel=cancel)
        if result.state is ProcessState.SPAWN_FAILURE:
            raise SandboxError(f"cannot start the agent: {result.detail}")
        return self.record(result, request)

    def session_policy(
        self, request: SessionRequest, policy: SandboxPolicy, *, sandbox: Sandbox, files: tuple[str, str]
    ) -> SandboxPolicy:
        """``policy`` plus the mounts, the session environment, the timeout, and a non-dumpable start.

        ``files`` are the host paths of the generated config and shell wrapper.

        Raises:
            InputError: no key.
        """
        own = (
            Mount(self.binary, BINARY_TARGET),
            Mount(files[0], CONFIG_TARGET),
            Mount(files[1], SHELL_TARGET),
        )
        mounts = (*policy.mounts, *(m for m in own if m not in policy.mounts))
        evolved = attrs.evolve(policy, mounts=mounts, timeout_s=request.timeout_s, non_dumpable=True)
        env = {
            **DEFAULT_ENV,
            **policy.env,
            **QUIET_ENV,
            "OPENCODE_CONFIG": sandbox.mount_path(CONFIG_TARGET, evolved),
            "SHELL": sandbox.mount_path(SHELL_TARGET, evolved),
            KEY_ENV: _key(request),
        }
        return attrs.evolve(evolved, env=env)

    def argv(self, request: SessionRequest, *, sandbox: Sandbox, policy: SandboxPolicy) -> list[str]:
        """The whole command line as the sandbox sees it: the binary and its flags (no prompt).

        Raises:
            InputError: a secret value occurs in the command line.
        """
        argv = [sandbox.mount_path(BINARY_TARGET, policy), *opencode_argv(request)]
        named = [*request.secrets.items(), *(("withheld", value) for value in request.withheld)]
        leaked = [name for name, value in named if value and any(value in arg for arg in argv)]
        if leaked:
            raise InputError("a secret value occurs in the agent's command line", field=leaked[0])
        return argv

    def record(self, result: ExecResult, request: SessionRequest) -> SessionRecord:
        """The session record of a finished process (also usable on a recorded capture)."""
        return session_record(
            result, request, classify_opencode_session, transcript_limit=self.transcript_limit
        )


def opencode_argv(request: SessionRequest) -> list[str]:
    """OpenCode's own flags for one headless session (the prompt comes on stdin)."""
    return ["run", "--format", "json", "--title", _TITLE, "-m", f"anthropic/{request.model}"]


def endpoint_of(request: SessionRequest) -> str:
    """The Anthropic base URL OpenCode's provider takes: the sweep's endpoint ending in ``/v1``.

    Raises:
        InputError: no endpoint in ``request.env``, or not a plain http(s) URL.
    """
    name = BASE_URL_VARS[0]
    url = request.env.get(name, "").rstrip("/")
    check_base_url(url, field=name)
    return url if url.endswith("/v1") else f"{url}/v1"


def _key(request: SessionRequest) -> str:
    name = next((var for var in KEY_VARS if var in request.secrets), None)
    value = "" if name is None else request.secrets[name].strip()
    if not value:
        raise InputError(
            "no model API key for OpenCode (a secret named ANTHROPIC_API_KEY)", field=name or "secrets"
        )
    return value


def _skills(request: SessionRequest, root: str) -> list[str]:
    """The arm's skill directories, as the sandbox sees them.

    Raises:
        InputError: a skill name that is no identifier, or a path that leaves the workspace.
    """
    paths = []
    for name, rel in sorted(request.skill_paths.items()):
        if not _SKILL_NAME.fullmatch(name) or rel.startswith("/") or ".." in rel.split("/") or "\n" in rel:
            raise InputError("not a skill name and workspace-relative path", field=f"skill {name!r}")
        paths.append(f"{root}/{rel}")
    return paths


@contextlib.contextmanager
def _session_files(config: dict[str, object]) -> Iterator[tuple[str, str]]:
    root = tempfile.mkdtemp(prefix="wfbench-opencode-")
    try:
        config_path = os.path.join(root, "opencode.json")
        shell = os.path.join(root, "shell")
        with open(config_path, "w", encoding="utf-8") as handle:
            json.dump(config, handle)
        with open(shell, "w", encoding="utf-8") as handle:
            handle.write(SHELL_SCRIPT)
        os.chmod(config_path, 0o444)
        os.chmod(shell, 0o500)
        yield config_path, shell
    finally:
        shutil.rmtree(root, ignore_errors=True)
