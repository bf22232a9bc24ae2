"""Agents per arm: one adapter for every agent the chosen arms name, and each arm's runtime identity.

An arm runs the run's ``--agent`` unless it names its own (``agent:`` in the corpus, see
``docs/arms.md``). Every arm's rows record ``agent``, ``agent_version`` and a ``runtime_digest``
(reuse compares it), so a sweep can set Claude Code against Codex, or one Codex version against
another, and each row says what it ran.
"""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Mapping, Sequence

from wfbench.app.cell.context import ArmRuntime
from wfbench.app.corpus.arms import AgentChoice, Arm
from wfbench.cli import bootstrap as boot
from wfbench.domain.errors import InputError
from wfbench.domain.ports import ModelCLI

__all__ = ["agent_version", "arm_agents", "arm_runtimes", "build_choice"]


def build_choice(choice: AgentChoice) -> ModelCLI:
    """The adapter for an arm's agent (its pinned binary, or the default install).

    Raises:
        InputError: the agent is not installed, or the pinned binary is not one.
    """
    if choice.binary is None:
        return boot.build_agent(choice.name)
    if choice.name == "claude":
        from wfbench.adapters.agents.claude import ClaudeCLI

        return ClaudeCLI.real(choice.binary)
    if choice.name == "codex":
        from wfbench.adapters.agents.codex import CodexCLI

        return CodexCLI.real(choice.binary)
    if choice.name == "gemini":
        from wfbench.adapters.agents.gemini import GeminiCLI

        return GeminiCLI.real(choice.binary)
    if choice.name == "opencode":
        from wfbench.adapters.agents.opencode import OpenCodeCLI

        return OpenCodeCLI.real(choice.binary)
    raise InputError(f"agent {choice.name!r} cannot pin a binary", field="agent.binary")


def agent_version(choice: AgentChoice, adapter: ModelCLI) -> str | None:
    """What the agent says it is: ``codex-cli 0.171.0``, ``2.1.328 (Claude Code)``, ``standin <sha>``."""
    if choice.name in ("codex", "gemini", "opencode"):
        version = getattr(adapter, "version", None)
        return version if isinstance(version, str) else None
    if choice.name == "standin":
        from wfbench.adapters.agents import standin as standin_agent

        with open(standin_agent.__file__, "rb") as handle:
            return "standin " + hashlib.sha256(handle.read()).hexdigest()[:12]
    binary = choice.binary or boot.find_claude()
    if binary is None:
        return None
    done = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=60, check=False)
    return done.stdout.strip() or None


def arm_agents(arms: Sequence[Arm], *, default: str, default_adapter: ModelCLI) -> dict[str, ModelCLI]:
    """Adapters by ``AgentChoice.key`` for the arms that name an agent.

    An arm that names the run's own agent (no pinned binary) shares the run's adapter: its key
    maps to it (``agent: standin`` in a run of the stand-in, as a mixed sweep's arms say).

    Raises:
        InputError: a named agent is not installed.
    """
    default_key = AgentChoice(default).key
    adapters: dict[str, ModelCLI] = {default_key: default_adapter}
    for arm in arms:
        if arm.agent is not None and arm.agent.key not in adapters:
            adapters[arm.agent.key] = build_choice(arm.agent)
    return adapters


def arm_runtimes(
    arms: Sequence[Arm],
    *,
    default: str,
    adapters: Mapping[str, ModelCLI],
    default_adapter: ModelCLI,
    script_path: str | None,
    environ: Mapping[str, str],
) -> dict[str, ArmRuntime]:
    """Every arm's runtime identity: its agent, the agent's version, and the digest reuse compares.

    Arms sharing an agent share one identity; with ``$WFBENCH_RUNTIME_DIGEST`` pinned, the run's
    own agent keeps the pinned value and any other agent gets a digest derived from it.
    """
    default_choice = AgentChoice(default)
    cache: dict[str, ArmRuntime] = {}
    runtimes: dict[str, ArmRuntime] = {}
    for arm in arms:
        choice = arm.agent or default_choice
        if choice.key not in cache:
            adapter = adapters.get(choice.key, default_adapter)
            version = agent_version(choice, adapter)
            digest = boot.runtime_digest(
                agent=choice.name, script_path=script_path, environ=environ, version=version
            )
            if choice != default_choice and environ.get(boot.RUNTIME_DIGEST_ENV, "").strip():
                digest = hashlib.sha256(f"{digest}\n{choice.key}\n{version}".encode()).hexdigest()
            cache[choice.key] = ArmRuntime(agent=choice.name, agent_version=version, runtime_digest=digest)
        runtimes[arm.name] = cache[choice.key]
    return runtimes
