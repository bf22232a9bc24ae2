"""The ModelCLI adapter for Google's Gemini CLI: one headless ``gemini`` session in a sandbox.

The npm package ``@google/gemini-cli`` is a Node program (``bundle/gemini.js``): the adapter
mounts the package read-only at ``/opt/gemini/cli`` and the host's ``node`` at
``/opt/gemini/node``. The stream goes through :mod:`wfbench.domain.session.gemini_stream`;
decoding, redaction and the record are the Claude adapter's (:mod:`wfbench.adapters.agents.claude`).

What a session runs with (``docs/agents.md``, "Gemini CLI"; facts in ``docs/research/gemini-cli.md``):

* ``node --import <skills preload> gemini.js --output-format stream-json --yolo --skip-trust
  -m <model>``, the prompt on **stdin** (never in argv: a piped stdin makes the CLI headless);
* the environment: ``PATH``/``LANG``/``TERM=dumb``/``NO_COLOR``, the caller's ``policy.env``,
  ``GOOGLE_GEMINI_BASE_URL`` (the sweep's endpoint: the key proxy), ``GEMINI_API_KEY`` (the
  proxy's token), ``GEMINI_CLI_NO_RELAUNCH=1`` (one process: the CLI otherwise re-spawns itself,
  and the child would be dumpable), and the session's settings, copied by the preload (below)
  to ``$HOME/.gemini/settings.json``, read-only: API-key auth, folder trust off, one attempt
  per model request (no retries: an injected failure ends the session), telemetry, usage
  statistics and update checks off, the hosted tools ``google_web_search`` and ``web_fetch``
  excluded (the provider or the CLI would reach the network), environment-variable redaction on
  for tool commands (the key never reaches a tool). They are *user* settings: the CLI
  refuses a system settings file not owned by root, and nothing in the sandbox is. A
  workspace's ``.gemini/settings.json`` could override them (as ``.claude/settings.json`` can
  Claude Code's); the key proxy answers where it matters: it refuses hosted tools, and the key
  in the sandbox is the proxy's per-cell token;
* **the key is unreadable by tools**: the Node process is started non-dumpable (the sandbox runs
  it through an execute-only copy of its ELF loader, :mod:`wfbench.adapters.sandbox.nondumpable`),
  so ``/proc/<gemini>/environ``, ``mem`` and ``fd`` are closed to every other process;
* **skills**: a preload module (``--import``, read-only) copies each skill of the arm
  (``request.skill_paths``, in the workspace) to ``$HOME/.gemini/skills/<name>``, read-only,
  before the CLI starts; the CLI discovers it there, lists it to the model and loads it when
  the model calls ``activate_skill``.
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
from wfbench.domain.session.gemini_stream import classify_gemini_session
from wfbench.domain.session.records import SessionRecord, SessionRequest
from wfbench.domain.workspace.sandbox import ExecResult, Mount, ProcessState, SandboxPolicy

__all__ = ["GEMINI_VERSION", "GeminiCLI", "gemini_argv", "gemini_settings"]

#: The pinned ``@google/gemini-cli`` version (``scripts/install-tools`` installs it).
GEMINI_VERSION = "0.61.0"
PACKAGE_TARGET = "/opt/gemini/cli"
NODE_TARGET = "/opt/gemini/node"
SETTINGS_TARGET = "/opt/wfbench/gemini-settings.json"
PRELOAD_TARGET = "/opt/wfbench/gemini-skills.mjs"
KEY_ENV = "GEMINI_API_KEY"
BASE_URL_ENV = "GOOGLE_GEMINI_BASE_URL"
SKILLS_ENV = "WFBENCH_GEMINI_SKILLS"
SETTINGS_ENV = "WFBENCH_GEMINI_SETTINGS"
#: Where the sweep's endpoint is found in ``request.env`` (the first one set wins).
BASE_URL_VARS = (BASE_URL_ENV, "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL")
#: Secret names the adapter accepts for the key (the first one set wins).
KEY_VARS = (KEY_ENV, "ANTHROPIC_API_KEY", "OPENAI_API_KEY")
DEFAULT_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "TERM": "dumb", "NO_COLOR": "1"}
_SKILL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
#: Tools the CLI offers that reach the network (through the provider or from the CLI itself).
HOSTED_TOOLS = ("google_web_search", "web_fetch")
#: Copies $WFBENCH_GEMINI_SETTINGS to $HOME/.gemini/settings.json and the skills named in
#: $WFBENCH_GEMINI_SKILLS (name=path lines) into $HOME/.gemini/skills, all read-only, before the
#: CLI's own modules load.
PRELOAD_SCRIPT = """// wfbench: the session's settings and the arm's skills where Gemini CLI reads them.
import { copyFileSync, cpSync, chmodSync, mkdirSync, readdirSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
const spec = process.env.WFBENCH_GEMINI_SKILLS || "";
const settings = process.env.WFBENCH_GEMINI_SETTINGS;
delete process.env.WFBENCH_GEMINI_SKILLS;
delete process.env.WFBENCH_GEMINI_SETTINGS;
mkdirSync(join(homedir(), ".gemini"), { recursive: true });
if (settings) {
  copyFileSync(settings, join(homedir(), ".gemini", "settings.json"));
  chmodSync(join(homedir(), ".gemini", "settings.json"), 0o444);
}
const readOnly = (path) => {
  const info = statSync(path);
  if (info.isDirectory()) { for (const name of readdirSync(path)) readOnly(join(path, name)); }
  chmodSync(path, info.isDirectory() ? 0o555 : 0o444);
};
for (const line of spec.split("\\n")) {
  if (!line) continue;
  const at = line.indexOf("=");
  const dest = join(homedir(), ".gemini", "skills", line.slice(0, at));
  mkdirSync(dest, { recursive: true });
  cpSync(line.slice(at + 1), dest, { recursive: true });
  readOnly(dest);
}
"""


def gemini_settings() -> dict[str, object]:
    """The system settings every session runs with (see the module docstring)."""
    return {
        "security": {
            "auth": {"selectedType": "gemini-api-key"},
            "folderTrust": {"enabled": False},
            "environmentVariableRedaction": {"enabled": True, "blocked": [KEY_ENV, BASE_URL_ENV]},
        },
        "general": {
            "disableAutoUpdate": True,
            "disableUpdateNag": True,
            "maxAttempts": 1,
            "retryFetchErrors": False,
        },
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "tools": {"exclude": list(HOSTED_TOOLS)},
        "advanced": {"autoConfigureMemory": False},
    }


def find_package(path: str) -> str:
    """The ``@google/gemini-cli`` package root behind ``path`` (the npm ``.bin/gemini`` link or the package).

    Raises:
        InputError: ``path`` leads to no Gemini CLI package.
    """
    resolved = os.path.realpath(path)
    candidates = [resolved, os.path.dirname(os.path.dirname(resolved))]  # …/bundle/gemini.js → package
    for root in candidates:
        with (
            contextlib.suppress(OSError, ValueError),
            open(os.path.join(root, "package.json"), encoding="utf-8") as handle,
        ):
            if json.load(handle).get("name") == "@google/gemini-cli":
                return root
    raise InputError("is not the Gemini CLI nor its npm launcher", source=path, field="gemini binary")


@attrs.frozen
class GeminiCLI:
    """Runs ``gemini`` sessions of one installed Gemini CLI package. Build with :meth:`real`."""

    #: Host path of the ``@google/gemini-cli`` package (mounted at ``/opt/gemini/cli``).
    package_dir: str
    #: Host path of the ``node`` binary (mounted at ``/opt/gemini/node``).
    node: str
    #: ``gemini --version`` of the package, e.g. ``0.61.0``.
    version: str | None = None
    transcript_limit: int = TRANSCRIPT_LIMIT

    @classmethod
    def real(cls, path: str, *, node: str | None = None) -> GeminiCLI:
        """The Gemini CLI at ``path`` run by ``node`` (default: the ``node`` on PATH).

        Raises:
            InputError: no Gemini CLI package there, no Node, or ``--version`` fails.
        """
        package = find_package(path)
        runtime = node or shutil.which("node")
        if runtime is None:
            raise InputError("Node.js (`node`) is not installed", source=path, field="gemini binary")
        runtime = os.path.realpath(runtime)
        script = os.path.join(package, "bundle", "gemini.js")
        try:
            done = subprocess.run(
                [runtime, script, "--version"],
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
                env={"PATH": os.path.dirname(runtime), "GEMINI_CLI_NO_RELAUNCH": "1", "NO_COLOR": "1"},
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise InputError(f"cannot run it ({exc})", source=path, field="gemini binary") from None
        version = done.stdout.strip().splitlines()[-1:] if done.stdout.strip() else []
        if done.returncode != 0 or not version:
            raise InputError("`--version` failed", source=path, field="gemini binary")
        return cls(package, runtime, f"{version[0]} (Gemini CLI)")

    @property
    def mounts(self) -> tuple[Mount, ...]:
        """The package and Node, read-only."""
        return (Mount(self.package_dir, PACKAGE_TARGET), Mount(self.node, NODE_TARGET))

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
        with _session_files() as (settings, preload):
            session_policy = self.session_policy(request, policy, sandbox=sandbox, files=(settings, preload))
            argv = self.argv(request, sandbox=sandbox, policy=session_policy)
            result = sandbox.run(argv, policy=session_policy, stdin=request.prompt.encode(), cancel=cancel)
        if result.state is ProcessState.SPAWN_FAILURE:
            raise SandboxError(f"cannot start the agent: {result.detail}")
        return self.record(result, request)

    def session_policy(
        self, request: SessionRequest, policy: SandboxPolicy, *, sandbox: Sandbox, files: tuple[str, str]
    ) -> SandboxPolicy:
        """``policy`` plus the mounts, the session environment, the timeout, and a non-dumpable start.

        ``files`` are the host paths of the generated settings and skills preload.

        Raises:
            InputError: no usable endpoint, no key, or a bad skill name or path.
        """
        own = (*self.mounts, Mount(files[0], SETTINGS_TARGET), Mount(files[1], PRELOAD_TARGET))
        mounts = (*policy.mounts, *(m for m in own if m not in policy.mounts))
        evolved = attrs.evolve(policy, mounts=mounts, timeout_s=request.timeout_s, non_dumpable=True)
        env = {
            **DEFAULT_ENV,
            **policy.env,
            BASE_URL_ENV: endpoint_of(request),
            "GEMINI_CLI_NO_RELAUNCH": "1",
            SETTINGS_ENV: sandbox.mount_path(SETTINGS_TARGET, evolved),
            SKILLS_ENV: _skills_spec(request, sandbox.workspace_path(policy)),
            KEY_ENV: _key(request),
        }
        return attrs.evolve(evolved, env=env)

    def argv(self, request: SessionRequest, *, sandbox: Sandbox, policy: SandboxPolicy) -> list[str]:
        """The whole command line as the sandbox sees it: Node, the preload, the CLI and its flags.

        Raises:
            InputError: a secret value occurs in the command line.
        """
        node = sandbox.mount_path(NODE_TARGET, policy)
        preload = sandbox.mount_path(PRELOAD_TARGET, policy)
        script = os.path.join(sandbox.mount_path(PACKAGE_TARGET, policy), "bundle", "gemini.js")
        argv = [node, "--import", preload, script, *gemini_argv(request)]
        named = [*request.secrets.items(), *(("withheld", value) for value in request.withheld)]
        leaked = [name for name, value in named if value and any(value in arg for arg in argv)]
        if leaked:
            raise InputError("a secret value occurs in the agent's command line", field=leaked[0])
        return argv

    def record(self, result: ExecResult, request: SessionRequest) -> SessionRecord:
        """The session record of a finished process (also usable on a recorded capture)."""
        return session_record(
            result, request, classify_gemini_session, transcript_limit=self.transcript_limit
        )


def gemini_argv(request: SessionRequest) -> list[str]:
    """Gemini CLI's own flags for one headless session (the prompt comes on stdin)."""
    argv = ["--output-format", "stream-json", "--yolo", "--skip-trust", "-m", request.model]
    for directory in request.add_dirs:
        argv += ["--include-directories", directory]
    return argv


def endpoint_of(request: SessionRequest) -> str:
    """The Gemini API base URL: the sweep's endpoint without a trailing ``/v1``-style suffix.

    Raises:
        InputError: no endpoint in ``request.env``, or not a plain http(s) URL.
    """
    name = next((var for var in BASE_URL_VARS if request.env.get(var)), BASE_URL_VARS[0])
    url = request.env.get(name, "").rstrip("/")
    check_base_url(url, field=name)
    return url[: -len("/v1")] if url.endswith("/v1") else url


def _key(request: SessionRequest) -> str:
    name = next((var for var in KEY_VARS if var in request.secrets), None)
    value = "" if name is None else request.secrets[name].strip()
    if not value:
        raise InputError(
            "no model API key for Gemini CLI (a secret named GEMINI_API_KEY or ANTHROPIC_API_KEY)",
            field=name or "secrets",
        )
    return value


def _skills_spec(request: SessionRequest, root: str) -> str:
    """``name=path`` lines of the arm's skills, as the sandbox sees them.

    Raises:
        InputError: a skill name that is no identifier, or a path that leaves the workspace.
    """
    lines = []
    for name, rel in sorted(request.skill_paths.items()):
        if not _SKILL_NAME.fullmatch(name) or rel.startswith("/") or ".." in rel.split("/") or "\n" in rel:
            raise InputError("not a skill name and workspace-relative path", field=f"skill {name!r}")
        lines.append(f"{name}={root}/{rel}")
    return "\n".join(lines)


@contextlib.contextmanager
def _session_files() -> Iterator[tuple[str, str]]:
    root = tempfile.mkdtemp(prefix="wfbench-gemini-")
    try:
        settings = os.path.join(root, "settings.json")
        preload = os.path.join(root, "skills.mjs")
        with open(settings, "w", encoding="utf-8") as handle:
            json.dump(gemini_settings(), handle)
        with open(preload, "w", encoding="utf-8") as handle:
            handle.write(PRELOAD_SCRIPT)
        os.chmod(settings, 0o444)
        os.chmod(preload, 0o444)
        yield settings, preload
    finally:
        shutil.rmtree(root, ignore_errors=True)
