"""The one composition root: builds adapters inside a function and returns a frozen bundle.

Every port can be overridden (tests pass fakes). Nothing is built at import time.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from wfbench.domain.errors import InputError, SandboxUnavailable

if TYPE_CHECKING:  # annotations only: ``wfbench gate`` starts without every port's value types
    from wfbench.domain.metering.prices import PriceTable
    from wfbench.domain.ports import (
        ClaimableSweepDirectory,
        Clock,
        Environments,
        ImageWorkdirs,
        ModelCLI,
        ModelGateway,
        Sandbox,
        SweepDirectory,
        Workspaces,
    )

API_KEY_ENV = "WFBENCH_ANTHROPIC_API_KEY"
#: The upstream key of ``--gateway openai`` (never on the command line).
OPENAI_KEY_ENV = "WFBENCH_OPENAI_API_KEY"
GATEWAYS = ("openai",)
OFFLINE_KEY = "offline-scripted-provider"
SANDBOXES = ("bwrap", "podman", "docker", "host-unsafe")
#: The image ``--sandbox podman`` runs tasks without an image of their own in (``scripts/base-image``).
PODMAN_IMAGE_ENV = "WFBENCH_PODMAN_IMAGE"
DEFAULT_PODMAN_IMAGE = "localhost/wfbench-base:bookworm-v1"
#: The image ``--sandbox docker`` runs image-less tasks in (``scripts/base-image --docker``).
DOCKER_IMAGE_ENV = "WFBENCH_DOCKER_IMAGE"
DOCKER_HINT = (
    "docker cannot run here; install it and start its daemon (scripts/install-tools --docker, or"
    " apt-get install docker.io and scripts/docker-daemon), import the base image (scripts/base-image"
    " --docker), or pass --sandbox podman or bwrap"
)
PODMAN_HINT = (
    "podman cannot run here; install it (scripts/install-tools --podman, or apt-get install podman runc)"
    " and build the base image (scripts/base-image), or pass --sandbox bwrap"
)
#: The OCI backends (one adapter: ``adapters/sandbox/podman.py``): image tasks run only there.
CONTAINER_SANDBOXES = ("podman", "docker")
AGENTS = ("standin", "claude", "codex", "gemini", "opencode")
BWRAP_HINT = (
    "bubblewrap (bwrap) cannot run here; install it (Debian/Ubuntu: `sudo apt-get install bubblewrap`)"
    " or pass `--sandbox host-unsafe` to run WITHOUT containment"
)


def sweep_directory(root: str) -> ClaimableSweepDirectory:
    """The sweep directory at ``root`` on disk (every write durable: ``adapters/store/atomic.py``)."""
    from wfbench.adapters.store.sweep_files import FileSweepDirectory

    return FileSweepDirectory(root)


def image_workdirs() -> ImageWorkdirs:
    """The Harbor import's image builder (podman, runc)."""
    from wfbench.adapters.repo.image_capture import PodmanWorkdirs

    return PodmanWorkdirs()


def git_workspaces() -> Workspaces:
    """The git workspaces adapter (snapshots of a corpus's repositories)."""
    from wfbench.adapters.repo.workspace import GitWorkspaces

    return GitWorkspaces()


def system_clock() -> Clock:
    """The system clock (commands that need only time, such as ``gate``, take it from here)."""
    from wfbench.adapters.store.clock import SystemClock

    return SystemClock()


@attrs.frozen
class Services:
    """The adapters of one run."""

    sandbox: Sandbox
    agent: ModelCLI
    workspaces: Workspaces
    clock: Clock
    environments: Environments | None = None
    #: The ``SweepDirectory`` at a path (tests pass ``lambda _root: MemorySweepDirectory()``).
    directory_at: Callable[[str], SweepDirectory] = sweep_directory


@attrs.frozen
class Endpoint:
    """Where the agent's model requests go, and the key it presents (never written anywhere).

    ``withheld`` are values the harness redacts from everything it writes but never hands to
    the agent: the real key, which only the loopback key proxy holds.
    """

    base_url: str
    api_key: str = attrs.field(repr=False)
    withheld: tuple[str, ...] = attrs.field(default=(), repr=False)
    #: The key proxy: one metered lease per cell, and the sweep's spend.
    gateway: ModelGateway | None = attrs.field(default=None, repr=False, eq=False)
    #: The scripted provider's reply counts by source (``scripted``, ``default``…); None for a real API.
    replies: Callable[[], Mapping[str, int]] | None = attrs.field(default=None, repr=False, eq=False)


@attrs.frozen
class EndpointOptions:
    """What the key proxy enforces: the pinned model, the agent's protocol, the spend budget."""

    model: str | None = None
    #: Every agent the sweep runs (``codex`` speaks OpenAI Responses: that route is opened too).
    agents: tuple[str, ...] = ("standin",)
    budget_usd: float | None = None
    #: Prices of every model (``--prices`` over the built-in tables; None: the built-in tables).
    price_table: PriceTable | None = attrs.field(default=None, repr=False, eq=False)
    #: ``--gateway openai``: Anthropic-protocol agents reach an OpenAI (Responses) model through LiteLLM.
    gateway: str | None = None
    #: The books the key proxy keeps the spend in (None: its own; a cluster node: the sweep's shared one).
    ledger: Any = attrs.field(default=None, repr=False, eq=False)


def build_sandbox(name: str, limits: Any = None) -> Sandbox:
    """The sandbox backend by name; bwrap is preflighted and never falls back to the host.

    ``limits`` (a :class:`wfbench.adapters.sandbox.command_limits.ResourceLimits`) bounds each bwrap
    command; ``None`` keeps the defaults. host-unsafe applies none of them.

    Raises:
        InputError: an unknown backend name.
        SandboxUnavailable: bwrap cannot start (with how to install it).
    """
    if name == "bwrap":
        from wfbench.adapters.sandbox.bwrap import BwrapSandbox

        sandbox: Sandbox = BwrapSandbox(limits=limits)
        try:
            sandbox.preflight()
        except SandboxUnavailable as exc:
            raise SandboxUnavailable(f"{BWRAP_HINT} ({exc})") from None
        return sandbox
    if name == "podman":
        from wfbench.adapters.sandbox.podman import PodmanSandbox

        image = os.environ.get(PODMAN_IMAGE_ENV) or DEFAULT_PODMAN_IMAGE
        sandbox = PodmanSandbox(image, limits=limits)
        try:
            sandbox.preflight()
        except SandboxUnavailable as exc:
            raise SandboxUnavailable(f"{PODMAN_HINT} ({exc})") from None
        return sandbox
    if name == "docker":
        from wfbench.adapters.sandbox.podman import DockerSandbox

        image = os.environ.get(DOCKER_IMAGE_ENV) or DEFAULT_PODMAN_IMAGE
        sandbox = DockerSandbox(image, limits=limits)
        try:
            sandbox.preflight()
        except SandboxUnavailable as exc:
            raise SandboxUnavailable(f"{DOCKER_HINT} ({exc})") from None
        return sandbox
    if name == "host-unsafe":
        from wfbench.adapters.sandbox.host import UnsafeHostSandbox

        return UnsafeHostSandbox()
    raise InputError(f"unknown sandbox {name!r} (choose {' or '.join(SANDBOXES)})", field="--sandbox")


def find_agent_cli(name: str) -> str | None:
    """A real agent CLI (``claude``, ``codex``, ``gemini``, ``opencode``): ``$WFBENCH_<NAME>_BIN``, the
    project's cache install (``scripts/install-tools``), or PATH."""
    import shutil

    for path in (
        os.environ.get(f"WFBENCH_{name.upper()}_BIN", ""),
        os.path.expanduser(f"~/.cache/wfbench/{name}/node_modules/.bin/{name}"),
        shutil.which(name) or "",
    ):
        if path and os.access(path, os.X_OK):
            return path
    return None


def find_claude() -> str | None:
    """The real Claude Code CLI (:func:`find_agent_cli`)."""
    return find_agent_cli("claude")


def find_codex() -> str | None:
    """The real Codex CLI (:func:`find_agent_cli`)."""
    return find_agent_cli("codex")


def find_gemini() -> str | None:
    """The real Gemini CLI (:func:`find_agent_cli`)."""
    return find_agent_cli("gemini")


def find_opencode() -> str | None:
    """The real OpenCode CLI (:func:`find_agent_cli`)."""
    return find_agent_cli("opencode")


def build_agent(name: str) -> ModelCLI:
    """The stand-in agent (default), the real ``claude`` CLI or the real ``codex`` CLI.

    Raises:
        InputError: an unknown agent, or the named CLI not installed.
    """
    from wfbench.adapters.agents.claude import ClaudeCLI

    if name == "standin":
        return ClaudeCLI.standin()
    if name == "codex":
        from wfbench.adapters.agents.codex import CODEX_VERSION, CodexCLI

        codex = find_codex()
        if codex is None:
            raise InputError(
                "the codex CLI is not installed (scripts/install-tools, or npm install"
                f" @openai/codex@{CODEX_VERSION})",
                field="--agent",
            )
        return CodexCLI.real(codex)
    if name == "gemini":
        from wfbench.adapters.agents.gemini import GEMINI_VERSION, GeminiCLI

        gemini = find_gemini()
        if gemini is None:
            raise InputError(
                "the gemini CLI is not installed (scripts/install-tools, or npm install"
                f" @google/gemini-cli@{GEMINI_VERSION})",
                field="--agent",
            )
        return GeminiCLI.real(gemini)
    if name == "opencode":
        from wfbench.adapters.agents.opencode import OPENCODE_VERSION, OpenCodeCLI

        opencode = find_opencode()
        if opencode is None:
            raise InputError(
                "the opencode CLI is not installed (scripts/install-tools, or npm install"
                f" opencode-ai@{OPENCODE_VERSION})",
                field="--agent",
            )
        return OpenCodeCLI.real(opencode)
    if name == "claude":
        binary = find_claude()
        if binary is None:
            raise InputError(
                "the claude CLI is not installed (npm i -g @anthropic-ai/claude-code)", field="--agent"
            )
        return ClaudeCLI.real(binary)
    raise InputError(f"unknown agent {name!r} (choose {' or '.join(AGENTS)})", field="--agent")


RUNTIME_DIGEST_ENV = "WFBENCH_RUNTIME_DIGEST"


def runtime_digest(
    *, agent: str, script_path: str | None, environ: Mapping[str, str], version: str | None = None
) -> str:
    """Identity of the runtime a row is measured under: a prior row is reused only under the same one.

    ``$WFBENCH_RUNTIME_DIGEST`` wins (a lockfile-pinned harness sets it). Otherwise: wfbench's
    version, the Python version, the agent (the stand-in by the bytes of its module, a real CLI
    by its ``--version``: ``version`` when given, else the installed ``claude``'s) and the
    provider script's bytes when one is used.
    """
    import hashlib
    import subprocess
    from importlib import metadata

    pinned = environ.get(RUNTIME_DIGEST_ENV, "").strip()
    if pinned:
        return pinned
    parts = [f"wfbench={metadata.version('wfbench')}", f"python={sys.version.split()[0]}", f"agent={agent}"]
    if agent == "standin":
        from wfbench.adapters.agents import standin as standin_agent

        with open(standin_agent.__file__, "rb") as handle:
            parts.append("standin=" + hashlib.sha256(handle.read()).hexdigest())
    binary = find_claude() if agent == "claude" and version is None else None
    if binary is not None:
        done = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=60, check=False)
        version = done.stdout.strip()
    if version is not None and agent != "standin":
        parts.append(f"{agent}={version}")
    if script_path is not None:
        with open(script_path, "rb") as handle:
            parts.append("script=" + hashlib.sha256(handle.read()).hexdigest())
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def bootstrap(
    *,
    sandbox: str | Sandbox = "bwrap",
    agent: str | ModelCLI = "standin",
    workspaces: Workspaces | None = None,
    clock: Clock | None = None,
    limits: Any = None,
    environments: Environments | None = None,
    directory_at: Callable[[str], SweepDirectory] | None = None,
) -> Services:
    """Build every adapter (or take the override given for it); ``limits`` as in :func:`build_sandbox`."""
    from wfbench.adapters.repo.workspace import GitWorkspaces
    from wfbench.adapters.store.clock import SystemClock

    built_sandbox = build_sandbox(sandbox, limits) if isinstance(sandbox, str) else sandbox
    return Services(
        sandbox=built_sandbox,
        agent=build_agent(agent) if isinstance(agent, str) else agent,
        workspaces=workspaces or GitWorkspaces(),
        clock=clock or SystemClock(),
        environments=environments or build_environments(built_sandbox, os.environ),
        directory_at=directory_at or sweep_directory,
    )


def build_environments(sandbox: Sandbox, environ: Mapping[str, str]) -> Environments:
    """Task environments built through ``sandbox`` into ``$WFBENCH_CACHE/envs`` (docs/real-repos.md)."""
    from wfbench.adapters.repo.envbuild import CachedEnvironments, default_cache_dir, default_uv

    cache = default_cache_dir(environ)
    images: Environments | None = None
    if sandbox.name in CONTAINER_SANDBOXES:
        from wfbench.adapters.repo.images import ContainerImages

        command = sandbox.command()  # type: ignore[attr-defined]
        # docker: its daemon has no bridge (builds reach the registries on the host network), and its
        # legacy builder keeps a failed step's container unless --force-rm (podman's default).
        flags = ("--network", "host", "--force-rm") if sandbox.name == "docker" else ()
        images = ContainerImages(
            command, cache_dir=os.path.join(os.path.dirname(cache), "images"), build_flags=flags
        )
    uv = default_uv(environ)  # uv when installed (scripts/install-tools), else venv + pip
    return CachedEnvironments(
        sandbox, cache_dir=cache, command_env=harness_command_env(), uv=uv, images=images
    )


def harness_command_env() -> dict[str, str]:
    """The base environment of every sandboxed harness command (setup, verify, oracle, builds)."""
    python_bin = os.path.join(os.path.realpath(sys.base_prefix), "bin")
    return {
        "PATH": f"{python_bin}:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
    }


@contextlib.contextmanager
def endpoint(
    *,
    script_path: str | None,
    base_url: str | None,
    environ: Mapping[str, str],
    warn: Callable[[str], None],
    options: EndpointOptions | None = None,
    provider_log: str | None = None,
) -> Iterator[Endpoint]:
    """The model endpoint for the run: a scripted provider on loopback, or ``--base-url`` + key.

    Either way the agent talks to a key proxy (:func:`proxied`): each cell through its own
    metered lease (a bridge into the sandbox and a dummy token). ``provider_log``
    (``--provider-log``) appends every request the scripted provider answers, with the rule and
    turn that answered it, to that JSONL file.

    Raises:
        InputError: neither a script nor a base URL, no key in WFBENCH_ANTHROPIC_API_KEY, a
            budget for a model without prices, or a ``--provider-log`` without a script or in a
            directory that does not exist.
    """
    options = options or EndpointOptions()
    if script_path is not None:
        from wfbench.adapters.provider.script import ProviderScript
        from wfbench.adapters.provider.scripted import ScriptedProvider

        script = ProviderScript.load(script_path)  # a missing/unreadable file is an InputError
        log_path = None if provider_log is None else _provider_log(provider_log)
        # keep_requests=False: memory stays flat over long sweeps (the counts are kept, not the requests).
        with (
            ScriptedProvider(script, keep_requests=False, log_path=log_path) as provider,
            proxied(provider.base_url, OFFLINE_KEY, options, names_cells=True) as proxy_endpoint,
        ):
            yield attrs.evolve(proxy_endpoint, replies=provider.reply_counts)
        return
    if provider_log is not None:
        raise InputError(
            "records the scripted provider's requests; this run has none (--base-url)", field="--provider-log"
        )
    if base_url is None:
        raise InputError("no provider script in the corpus: pass --provider-script FILE or --base-url URL")
    key_env = OPENAI_KEY_ENV if options.gateway == "openai" else API_KEY_ENV
    key = environ.get(key_env, "")
    if not key.strip():
        raise InputError(f"--base-url needs the API key in the {key_env} environment variable")
    if key in " ".join(sys.argv):
        warn(
            "WARNING: the API key appears on the command line, where other users can read it;"
            " use the environment"
        )
    with proxied(base_url, key, options) as proxy_endpoint:
        yield proxy_endpoint


def _provider_log(path: str) -> str:
    """``--provider-log``: an absolute path whose directory exists and which is not a directory."""
    absolute = os.path.abspath(path)
    if os.path.isdir(absolute):
        raise InputError(
            "is a directory; name the file to append the requests to", field="--provider-log", source=path
        )
    if not os.path.isdir(os.path.dirname(absolute)):
        raise InputError("its directory does not exist", field="--provider-log", source=path)
    return absolute


@contextlib.contextmanager
def proxied(
    upstream_base_url: str, key: str, options: EndpointOptions | None = None, *, names_cells: bool = False
) -> Iterator[Endpoint]:
    """A key proxy in front of ``upstream_base_url``: cells get leases, tools get its loopback URL and token.

    The real ``key`` never enters the sandbox (docs/security.md); the proxy stops when the
    block ends, however it ends (a cancelled sweep included). Only the agent's protocol is
    routed: Anthropic Messages, plus OpenAI Responses for Codex and the Gemini API for Gemini CLI.
    ``names_cells`` (the run's own scripted provider only) tells the upstream each request's cell,
    for its seeded usage jitter.

    Raises:
        InputError: the upstream URL is unusable (``--base-url``), or a budget cannot be priced.
    """
    from wfbench.adapters.gateway.key_proxy import KeyProxy
    from wfbench.adapters.gateway.rules import ANTHROPIC_ROUTES, GEMINI_ROUTES, OPENAI_RESPONSES_ROUTE

    options = options or EndpointOptions()
    if options.gateway is not None:
        with gatewayed(upstream_base_url, key, options) as gated:
            yield gated
        return
    routes = ANTHROPIC_ROUTES + ((OPENAI_RESPONSES_ROUTE,) if "codex" in options.agents else ())
    routes += GEMINI_ROUTES if "gemini" in options.agents else ()
    proxy = KeyProxy(
        upstream_base_url,
        key,
        model=options.model,
        routes=routes,
        budget_usd=options.budget_usd,
        price_table=options.price_table,
        names_cells=names_cells,
        ledger=options.ledger,
    )
    with proxy:
        yield Endpoint(proxy.base_url, proxy.dummy_token, withheld=(key.strip(),), gateway=proxy)


@contextlib.contextmanager
def gatewayed(upstream_base_url: str, key: str, options: EndpointOptions) -> Iterator[Endpoint]:
    """The model gateway (``--gateway openai``): key proxy → LiteLLM → upstream meter → upstream.

    Cells get leases of the front key proxy, as without a gateway; LiteLLM (one per sweep, on
    loopback) holds only its master key and the upstream meter's token; the upstream meter holds
    the real key and meters each cell's native usage (``adapters/gateway/litellm_gateway.py``).

    Raises:
        InputError: no model, LiteLLM is not installed, or the upstream URL is unusable.
        WfbenchError: LiteLLM did not start.
    """
    from wfbench.adapters.gateway.key_proxy import CellTagging, KeyProxy
    from wfbench.adapters.gateway.litellm_gateway import CELL_HEADER, LiteLLMProcess
    from wfbench.adapters.gateway.rules import ANTHROPIC_ROUTES, GATEWAY_RESPONSES_ROUTE

    if not options.model:
        raise InputError("needs the model the gateway serves (--model)", field="--gateway")
    meter = KeyProxy(
        upstream_base_url,
        key,
        model=options.model,
        routes=(GATEWAY_RESPONSES_ROUTE,),
        price_table=options.price_table,
        cells=CellTagging(read_header=CELL_HEADER),
    )
    with meter, LiteLLMProcess(options.model, meter.base_url, meter.dummy_token) as litellm:
        front = KeyProxy(
            litellm.base_url,
            litellm.master_key,
            model=options.model,
            routes=ANTHROPIC_ROUTES,
            budget_usd=options.budget_usd,
            price_table=options.price_table,
            cells=CellTagging(send_header=CELL_HEADER, native=meter),
        )
        with front:
            withheld = (key.strip(), litellm.master_key, meter.dummy_token)
            yield Endpoint(front.base_url, front.dummy_token, withheld=withheld, gateway=front)
