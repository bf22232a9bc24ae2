"""The options ``wfbench run`` and ``wfbench evolve`` share (one definition, one help text, one bound).

Each is an ``Annotated`` type a command's parameter takes with its own default, as
:mod:`wfbench.cli.options.limits` does for the resource limits. Nothing heavy is imported here:
``--help`` must answer fast.
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

import typer

from wfbench.domain.sweep.limits import MAX_WORKERS

#: ``--sandbox`` choices (``wfbench.cli.bootstrap.SANDBOXES`` builds them; a test pins the two equal).
Sandbox = Literal["bwrap", "podman", "docker", "host-unsafe"]
SANDBOX_CHOICES: tuple[str, ...] = get_args(Sandbox)
#: ``--agent`` choices (``wfbench.cli.bootstrap.AGENTS``; pinned equal by a test).
Agent = Literal["standin", "claude", "codex", "gemini", "opencode"]
AGENT_CHOICES: tuple[str, ...] = get_args(Agent)

Workers = Annotated[
    int,
    typer.Option(
        min=1,
        max=MAX_WORKERS,
        metavar="N",
        help=f"Cells run at once (1..{MAX_WORKERS}); fewer while the provider throttles (429/529).",
    ),
]
SandboxOption = Annotated[
    Sandbox,
    typer.Option(
        "--sandbox",
        help="bwrap contains every command; podman (or docker) runs each in a container (tasks whose"
        " environment is an image); host-unsafe has NO containment (explicit only, refused under CI).",
    ),
]
AgentOption = Annotated[
    Agent,
    typer.Option(
        "--agent",
        help="standin: the bundled offline agent; claude: the real Claude Code CLI (WFBENCH_CLAUDE_BIN);"
        " codex: the real Codex CLI (WFBENCH_CODEX_BIN); gemini: the real Gemini CLI"
        " (WFBENCH_GEMINI_BIN); opencode: the real OpenCode CLI (WFBENCH_OPENCODE_BIN).",
    ),
]
ProviderScript = Annotated[
    str | None,
    typer.Option(
        "--provider-script",
        metavar="FILE",
        help="Scripted provider YAML (overrides the corpus's).",
        show_default=False,
    ),
]
BaseUrl = Annotated[
    str | None,
    typer.Option(
        "--base-url",
        metavar="URL",
        help="Model endpoint when no script is used (the key from WFBENCH_ANTHROPIC_API_KEY).",
        show_default=False,
    ),
]
NoProviderScript = Annotated[
    bool,
    typer.Option(
        "--no-provider-script",
        help="Ignore the corpus's provider_script: run its tasks against --base-url (a real endpoint).",
    ),
]
SessionTimeout = Annotated[
    float, typer.Option("--timeout", min=1.0, metavar="SECONDS", help="Seconds per agent session.")
]
VerifyTimeout = Annotated[
    float,
    typer.Option(
        "--verify-timeout",
        min=1.0,
        metavar="SECONDS",
        help="Seconds for each verify and hidden-oracle command.",
    ),
]
