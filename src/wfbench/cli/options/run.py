"""The options of ``wfbench run`` that no other command takes, each declared once.

Each is an ``Annotated`` type :func:`wfbench.cli.run.command.run` takes with its own default, as
:mod:`wfbench.cli.options.sweep` does for the options ``run`` and ``evolve`` share. Nothing heavy is
imported here: ``--help`` must answer fast.
"""

from __future__ import annotations

from typing import Annotated

import typer

#: Decisions ``--fail-on`` accepts (``wfbench.domain.promotion.decision.DecisionKind``; pinned by a test).
DECISIONS = ("promote", "keep_incumbent", "insufficient_evidence")

Corpus = Annotated[
    str | None,
    typer.Argument(
        metavar="CORPUS", help="Corpus YAML; omit to run the built-in offline demo.", show_default=False
    ),
]
Arms = Annotated[
    list[str] | None,
    typer.Option(
        "--arms",
        metavar="ARM[,ARM...]",
        help="Arms in order (comma-separated or repeated). Default: the corpus's, else"
        " workflow,workflow_direct,baseline.",
        show_default=False,
    ),
]
Runs = Annotated[
    int | None,
    typer.Option(
        min=1,
        metavar="N",
        help="Runs per (task, arm). Default: the corpus's; else the gate's minimum paired runs (3) when a"
        " candidate arm runs; else 1 (the demo: 3).",
        show_default=False,
    ),
]
Window = Annotated[
    int | None,
    typer.Option(
        min=1,
        metavar="N",
        help="Cells started but not yet folded (default 6×workers; at most N-1 run past a breaker trip).",
        show_default=False,
    ),
]
OutageStreak = Annotated[
    int,
    typer.Option(min=0, metavar="N", help="Systemic failures in a row that stop the sweep (0 disables)."),
]
ThrottleRetries = Annotated[
    int,
    typer.Option(
        min=0,
        metavar="N",
        help="Times a cell throttled by the provider (429/529) runs again before it counts as a"
        " session-error (0: never).",
    ),
]
ThrottleBackoff = Annotated[
    float,
    typer.Option(
        min=0.0,
        metavar="SECONDS",
        help="Wait before a throttled cell's first retry; doubled for each further one (at most 600 s).",
    ),
]
Out = Annotated[
    str | None,
    typer.Option(
        metavar="DIR",
        help="Output directory (default results/wfbench-<UTC timestamp>/).",
        show_default=False,
    ),
]
Model = Annotated[
    str | None,
    typer.Option(
        metavar="MODEL",
        help="Pinned model id (default: the corpus's); blank and mutable names (latest, auto) are refused.",
        show_default=False,
    ),
]
Tasks = Annotated[
    list[str] | None,
    typer.Option(
        "--tasks",
        metavar="IDS",
        help="Run only these tasks: ids or globs (comma-separated or repeated); an unknown id is exit 2.",
        show_default=False,
    ),
]
ReuseResults = Annotated[
    str | None,
    typer.Option(
        metavar="DIR",
        help="Prior sweep directory whose comparator rows may be reused.",
        show_default=False,
    ),
]
Resume = Annotated[
    str | None,
    typer.Option(metavar="DIR", help="Continue the interrupted sweep in DIR.", show_default=False),
]
CandidateOverlay = Annotated[
    str | None,
    typer.Option(metavar="DIR", help="Directory of candidate skill Markdown.", show_default=False),
]
IncludeExpensive = Annotated[
    bool, typer.Option("--include-expensive", help="Also run tasks marked expensive.")
]
FailOn = Annotated[
    str | None,
    typer.Option(
        "--fail-on",
        metavar="DECISION[,DECISION]",
        help="Exit 3 when a candidate's decision is one of these (" + ", ".join(DECISIONS) + ").",
        show_default=False,
    ),
]
DryRun = Annotated[
    bool,
    typer.Option(
        "--dry-run",
        help="Print the planned cells (after reuse and resume), the estimated spend and the warnings;"
        " run nothing, write nothing.",
    ),
]
MaxCost = Annotated[
    float | None,
    typer.Option(
        min=0.0,
        metavar="USD",
        help="Stop issuing cells and refuse new model requests once the spend metered at the wire"
        " (each model's prices, --prices) reaches USD; the report says so. Needs every model priced.",
        show_default=False,
    ),
]
Prices = Annotated[
    str | None,
    typer.Option(
        "--prices",
        metavar="FILE",
        help="A CSV price table (provider,model,input,cache_write,cache_read,output,source,as_of; USD per"
        " million tokens) overriding the built-in prices of the models it names (docs/prices.md).",
        show_default=False,
    ),
]
Gateway = Annotated[
    str | None,
    typer.Option(
        "--gateway",
        metavar="PROVIDER",
        help="Run Anthropic-protocol agents (Claude Code) on another provider's model through a LiteLLM"
        " model gateway on loopback: `openai` (Responses API; the key in WFBENCH_OPENAI_API_KEY with"
        " --base-url). Needs the gateway extra (docs/gateway.md).",
        show_default=False,
    ),
]
AllowHostNetwork = Annotated[
    bool,
    typer.Option(
        "--allow-host-network",
        help="Allow tasks or arms with network: host (their sessions reach the host's network:"
        " contaminating) under CI, which refuses them otherwise.",
    ),
]
ProviderLog = Annotated[
    str | None,
    typer.Option(
        "--provider-log",
        metavar="FILE",
        help="Append every request the scripted provider answers to FILE (JSON lines: the prompt,"
        " the rule and turn that answered it, or `default`). Debugs a provider script.",
        show_default=False,
    ),
]
JsonEvents = Annotated[
    bool,
    typer.Option(
        "--json",
        help="One JSON event per line on stdout (sweep_started, cell_started, phase_started,"
        " phase_finished, cell_finished, note, heartbeat, sweep_finished, summary) for tools that"
        " drive wfbench; messages for people go to stderr.",
    ),
]


def split_list(value: list[str] | None) -> tuple[str, ...]:
    """``--arms a,b --arms c`` (comma-separated or repeated) as ``("a", "b", "c")``."""
    return tuple(part for item in value or [] for part in item.replace(",", " ").split())
