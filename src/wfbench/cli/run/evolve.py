"""``wfbench evolve CORPUS --generations N``: a proposer agent writes candidate skills, each gated.

The options only; :mod:`wfbench.cli.run.evolve_flow` wires the loop (:mod:`wfbench.app.evolve.evolution`).
"""

from __future__ import annotations

from typing import Annotated

import typer

from wfbench.cli.exit_codes import CANCELLED, OK, USAGE, exit_codes_help
from wfbench.cli.options import sweep as opt

EVOLVE_EPILOG = (
    "\b\nExamples:\n"
    "  wfbench evolve corpus.yaml --generations 2 --out evolve/ --proposer-model claude-opus-4-1\n"
    "  wfbench evolve corpus.yaml --generations 1 --out evolve/ --max-generations 52 --max-cost 40\n"
    "  wfbench evolve corpus.yaml --generations 3 --out evolve/ --apply . --branch skills/evolved\n"
    "\n\b\nEach generation: the proposer session (sandboxed, the same agent as the cells) reads a redacted\n"
    "digest of the last sweep (never hidden oracle bytes or labels) and edits the incumbent skills; the\n"
    "changed files are the candidate overlay (validated like --candidate-overlay); the candidate arms it\n"
    "requires are swept against their incumbents, reusing the last sweep's comparator rows; on promote the\n"
    "candidate joins OUT/incumbent (the next generation's incumbent) and, with --apply, is applied to the\n"
    "repository through `wfbench promote apply` and committed. Generation 0 measures the incumbent alone.\n"
    "Running evolve again on OUT continues from its evolution.jsonl; an interrupted run (its\n"
    "OUT/evolution-run.json) is finished, not restarted: see --generations.\n\n"
    + exit_codes_help(
        (
            (OK, "the generations ran (each generation's outcome is in evolution.jsonl)"),
            (USAGE, "usage or input error: a bad corpus, option or OUT (nothing ran)"),
            (CANCELLED, "cancelled (Ctrl-C / SIGTERM); run evolve on OUT again to continue"),
        )
    )
)


_Corpus = Annotated[str, typer.Argument(metavar="CORPUS", help="The corpus the skills are measured on.")]

_Generations = Annotated[
    int,
    typer.Option(
        "--generations",
        min=1,
        metavar="N",
        help="Generations this run makes after the last one OUT holds (the baseline not counted). A run"
        " killed or cancelled before its end is finished by the same command, which ends where the"
        " uninterrupted run would have (N counts from where that run began); once a run has ended, the"
        " same command makes N more.",
    ),
]

_Out = Annotated[
    str, typer.Option("--out", metavar="DIR", help="Where evolution.jsonl and each generation go.")
]

_Arms = Annotated[
    list[str] | None,
    typer.Option(
        "--arms",
        metavar="ARM[,ARM...]",
        help="Incumbent and comparator arms (candidates are derived from each proposal; default: the"
        " corpus's non-candidate arms, else workflow).",
        show_default=False,
    ),
]

_Runs = Annotated[int, typer.Option(min=1, metavar="N", help="Runs per (task, arm).")]

_ProposerModel = Annotated[
    str | None,
    typer.Option(
        "--proposer-model",
        metavar="MODEL",
        help="The proposer's pinned model (default: --model).",
        show_default=False,
    ),
]

_Model = Annotated[
    str | None,
    typer.Option(
        "--model",
        metavar="MODEL",
        help="The benchmark model (default: the corpus's).",
        show_default=False,
    ),
]

_MaxGenerations = Annotated[
    int | None,
    typer.Option(
        "--max-generations",
        min=1,
        metavar="N",
        help="Stop once OUT holds this many proposing generations (across runs).",
        show_default=False,
    ),
]

_MaxCost = Annotated[
    float | None,
    typer.Option(
        "--max-cost",
        min=0.0,
        metavar="USD",
        help="Budget over all generations' spend metered at the wire (proposer + paid cells): no"
        " generation starts once it is reached, and each sweep gets what is left as its --max-cost.",
        show_default=False,
    ),
]

_ReuseResults = Annotated[
    str | None,
    typer.Option(
        metavar="DIR",
        help="A prior sweep standing in for generation 0 (its evidence, its rows reused).",
        show_default=False,
    ),
]

_Apply = Annotated[
    str | None,
    typer.Option(
        "--apply",
        metavar="REPO",
        help="Apply each promoted generation to REPO (wfbench promote apply) and commit it on --branch.",
        show_default=False,
    ),
]

_Branch = Annotated[
    str | None,
    typer.Option(
        "--branch",
        metavar="NAME",
        help="The new branch --apply commits on (default wfbench/evolve-<UTC the run began>, which a run"
        " finishing a killed one keeps).",
        show_default=False,
    ),
]


def register(app: typer.Typer) -> None:
    """Add ``evolve`` to ``app``."""
    app.command(
        "evolve", epilog=EVOLVE_EPILOG, short_help="Evolve candidate skills with a proposer agent, gated."
    )(evolve)


def evolve(  # noqa: PLR0917 - Typer maps each parameter to one option
    corpus: _Corpus,
    generations: _Generations,
    out: _Out,
    arms: _Arms = None,
    runs: _Runs = 3,
    workers: opt.Workers = 2,
    proposer_model: _ProposerModel = None,
    model: _Model = None,
    max_generations: _MaxGenerations = None,
    max_cost: _MaxCost = None,
    sandbox: opt.SandboxOption = "bwrap",
    agent: opt.AgentOption = "standin",
    provider_script: opt.ProviderScript = None,
    base_url: opt.BaseUrl = None,
    no_provider_script: opt.NoProviderScript = False,
    reuse_results: _ReuseResults = None,
    timeout: opt.SessionTimeout = 5400.0,
    verify_timeout: opt.VerifyTimeout = 600.0,
    apply: _Apply = None,
    branch: _Branch = None,
) -> None:
    """Evolve the corpus's skills for N generations: propose, sweep, gate; record evolution.jsonl."""
    from wfbench.cli.run.evolve_flow import EvolveOptions, run_evolve

    def split(values: list[str] | None) -> tuple[str, ...]:
        return tuple(part for item in values or [] for part in item.replace(",", " ").split())

    options = EvolveOptions(
        corpus=corpus,
        out=out,
        generations=generations,
        arms=split(arms),
        runs=runs,
        workers=workers,
        proposer_model=proposer_model,
        model=model,
        max_generations=max_generations,
        max_cost=max_cost,
        sandbox=sandbox,
        agent=agent,
        provider_script=provider_script,
        base_url=base_url,
        no_provider_script=no_provider_script,
        reuse_results=reuse_results,
        timeout=timeout,
        verify_timeout=verify_timeout,
        apply_target=apply,
        branch=branch,
    )
    raise typer.Exit(run_evolve(options))
