"""``wfbench run``: the options of a sweep (one per block, so additions merge cleanly).

The command only collects its options into a :class:`~wfbench.cli.run.request.RunRequest` (with the
names the user really typed, which ``--resume`` checks against the run manifest) and hands it to
:func:`wfbench.cli.run.flow.execute`. Nothing heavy is imported here: ``wfbench run --help``
must answer fast.
"""

from __future__ import annotations

from typing import Annotated

import typer

from wfbench.cli.exit_codes import EXIT_CODES_HELP
from wfbench.cli.options import executor as exe
from wfbench.cli.options import limits as lim
from wfbench.cli.options import sweep as opt

#: The preset arms (``wfbench.app.corpus.arms.preset_arms``; pinned equal by a test).
PRESET_ARMS = (
    "workflow",
    "workflow_direct",
    "review",
    "baseline",
    "baseline_nomcp",
    "candidate_workflow",
    "candidate_workflow_direct",
    "candidate_review",
)
#: Decisions ``--fail-on`` accepts (``wfbench.domain.promotion.decision.DecisionKind``; pinned by a test).
DECISIONS = ("promote", "keep_incumbent", "insufficient_evidence")

RUN_EPILOG = (
    "\b\nExamples:\n"
    "  wfbench run                                   # the built-in offline demo (bwrap, stand-in agent)\n"
    "  wfbench run corpus.yaml --runs 3 --arms workflow,candidate_workflow --candidate-overlay skills/\n"
    "  wfbench run corpus.yaml --dry-run             # the plan, the estimated spend, the warnings\n"
    "  wfbench run --resume results/wfbench-20260101-120000     # exactly that sweep's configuration\n"
    "  wfbench run corpus.yaml --agent claude --base-url https://api.anthropic.com --fail-on keep_incumbent\n"
    "\n\b\nPreset arms: " + ", ".join(PRESET_ARMS) + " (a corpus may define more).\n"
    "\n\b\nEnvironment:\n"
    "  WFBENCH_ANTHROPIC_API_KEY  the API key for --base-url (held by a loopback key proxy; the agent\n"
    "                             only ever sees a dummy token). ANTHROPIC_API_KEY is NOT read.\n"
    "  WFBENCH_CLAUDE_BIN         the claude CLI for --agent claude (default: the pinned install in\n"
    "                             ~/.cache/wfbench/claude, then PATH)\n"
    "  WFBENCH_CODEX_BIN          the codex CLI for --agent codex (default: ~/.cache/wfbench/codex,\n"
    "                             then PATH)\n"
    "  WFBENCH_RUNTIME_DIGEST     pins the runtime identity rows are reused under (--reuse-results)\n"
    "  WFBENCH_CACHE              built task environments (envs/) and the codex install (default\n"
    "                             ~/.cache/wfbench)\n"
    "  WFBENCH_HEARTBEAT_S        seconds between heartbeat lines off a terminal (default 60)\n"
    "  CI                         when set, --sandbox host-unsafe is refused, and network: host\n"
    "                             unless --allow-host-network\n"
    "  TMPDIR                     where the sweep's scratch tree lives\n\n" + EXIT_CODES_HELP
)


def register(app: typer.Typer) -> None:
    """Add ``run``, ``doctor`` and the ``tasks`` group."""
    from wfbench.cli.commands import doctor as doctor_cmd
    from wfbench.cli.commands import tasks as tasks_cmd

    app.command("run", epilog=RUN_EPILOG, short_help="Run a sweep of task × arm × run cells.")(run)
    doctor_cmd.register(app)
    tasks_cmd.register(app)


def run(  # noqa: PLR0917 - Typer maps each parameter to one option
    ctx: typer.Context,
    corpus: Annotated[
        str | None,
        typer.Argument(
            metavar="CORPUS", help="Corpus YAML; omit to run the built-in offline demo.", show_default=False
        ),
    ] = None,
    arms: Annotated[
        list[str] | None,
        typer.Option(
            "--arms",
            metavar="ARM[,ARM...]",
            help="Arms in order (comma-separated or repeated). Default: the corpus's, else"
            " workflow,workflow_direct,baseline.",
            show_default=False,
        ),
    ] = None,
    runs: Annotated[
        int | None,
        typer.Option(
            min=1,
            metavar="N",
            help="Runs per (task, arm). Default: the corpus's; else the gate's minimum paired runs (3) when a"
            " candidate arm runs; else 1 (the demo: 3).",
            show_default=False,
        ),
    ] = None,
    workers: opt.Workers = 2,
    window: Annotated[
        int | None,
        typer.Option(
            min=1,
            metavar="N",
            help="Cells started but not yet folded (default 6×workers; at most N-1 run past a breaker trip).",
            show_default=False,
        ),
    ] = None,
    outage_streak: Annotated[
        int,
        typer.Option(min=0, metavar="N", help="Systemic failures in a row that stop the sweep (0 disables)."),
    ] = 5,
    throttle_retries: Annotated[
        int,
        typer.Option(
            min=0,
            metavar="N",
            help="Times a cell throttled by the provider (429/529) runs again before it counts as a"
            " session-error (0: never).",
        ),
    ] = 3,
    throttle_backoff: Annotated[
        float,
        typer.Option(
            min=0.0,
            metavar="SECONDS",
            help="Wait before a throttled cell's first retry; doubled for each further one (at most 600 s).",
        ),
    ] = 30.0,
    out: Annotated[
        str | None,
        typer.Option(
            metavar="DIR",
            help="Output directory (default results/wfbench-<UTC timestamp>/).",
            show_default=False,
        ),
    ] = None,
    sandbox: opt.SandboxOption = "bwrap",
    agent: opt.AgentOption = "standin",
    model: Annotated[
        str | None,
        typer.Option(
            metavar="MODEL",
            help="Pinned model id (default: the corpus's); blank and mutable names (latest, auto) are"
            " refused.",
            show_default=False,
        ),
    ] = None,
    provider_script: opt.ProviderScript = None,
    base_url: opt.BaseUrl = None,
    no_provider_script: opt.NoProviderScript = False,
    tasks: Annotated[
        list[str] | None,
        typer.Option(
            "--tasks",
            metavar="IDS",
            help="Run only these tasks: ids or globs (comma-separated or repeated); an unknown id is exit 2.",
            show_default=False,
        ),
    ] = None,
    reuse_results: Annotated[
        str | None,
        typer.Option(
            metavar="DIR",
            help="Prior sweep directory whose comparator rows may be reused.",
            show_default=False,
        ),
    ] = None,
    resume: Annotated[
        str | None,
        typer.Option(metavar="DIR", help="Continue the interrupted sweep in DIR.", show_default=False),
    ] = None,
    candidate_overlay: Annotated[
        str | None,
        typer.Option(metavar="DIR", help="Directory of candidate skill Markdown.", show_default=False),
    ] = None,
    include_expensive: Annotated[
        bool, typer.Option("--include-expensive", help="Also run tasks marked expensive.")
    ] = False,
    timeout: opt.SessionTimeout = 5400.0,
    verify_timeout: opt.VerifyTimeout = 600.0,
    memory_limit: lim.MemoryLimit = "2G",
    process_limit: lim.ProcessLimit = "512",
    open_files: lim.OpenFiles = "4096",
    file_size_limit: lim.FileSizeLimit = "1G",
    tmpfs_size: lim.TmpfsSize = "1G",
    disk_budget: lim.DiskBudget = "4G",
    executor: exe.Executor = "local",
    ray_address: exe.RayAddress = None,
    node_loss_retries: exe.NodeLossRetries = 0,
    cancel_grace: exe.CancelGrace = 30.0,
    fail_on: Annotated[
        str | None,
        typer.Option(
            "--fail-on",
            metavar="DECISION[,DECISION]",
            help="Exit 3 when a candidate's decision is one of these (" + ", ".join(DECISIONS) + ").",
            show_default=False,
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Print the planned cells (after reuse and resume), the estimated spend and the warnings;"
            " run nothing, write nothing.",
        ),
    ] = False,
    max_cost: Annotated[
        float | None,
        typer.Option(
            min=0.0,
            metavar="USD",
            help="Stop issuing cells and refuse new model requests once the spend metered at the wire"
            " (the pinned model's prices) reaches USD; the report says so. Needs a priced model.",
            show_default=False,
        ),
    ] = None,
    allow_host_network: Annotated[
        bool,
        typer.Option(
            "--allow-host-network",
            help="Allow tasks or arms with network: host (their sessions reach the host's network:"
            " contaminating) under CI, which refuses them otherwise.",
        ),
    ] = False,
    provider_log: Annotated[
        str | None,
        typer.Option(
            "--provider-log",
            metavar="FILE",
            help="Append every request the scripted provider answers to FILE (JSON lines: the prompt,"
            " the rule and turn that answered it, or `default`). Debugs a provider script.",
            show_default=False,
        ),
    ] = None,
    json_events: Annotated[
        bool,
        typer.Option(
            "--json",
            help="One JSON event per line on stdout (sweep_started, cell_started, phase_started,"
            " phase_finished, cell_finished, note, heartbeat, sweep_finished, summary) for tools that"
            " drive wfbench; messages for people go to stderr.",
        ),
    ] = False,
) -> None:
    """Run a sweep of task × arm × run cells: results.jsonl, report.md, report.html, promotion.json."""
    from wfbench.cli.run.flow import execute, explicit_options
    from wfbench.cli.run.request import RunRequest

    request = RunRequest(
        corpus=corpus,
        arms=tuple(_split_arms(arms)),
        runs=runs,
        workers=workers,
        window=window,
        outage_streak=outage_streak,
        throttle_retries=throttle_retries,
        throttle_backoff=throttle_backoff,
        out=out,
        sandbox=sandbox,
        agent=agent,
        model=model,
        provider_script=provider_script,
        base_url=base_url,
        reuse_results=reuse_results,
        resume=resume,
        candidate_overlay=candidate_overlay,
        include_expensive=include_expensive,
        timeout=timeout,
        verify_timeout=verify_timeout,
        fail_on=fail_on,
        dry_run=dry_run,
        json_events=json_events,
        provider_log=provider_log,
        explicit=explicit_options(ctx),
        limits=lim.resource_limits(
            memory=memory_limit,
            processes=process_limit,
            open_files=open_files,
            file_size=file_size_limit,
            tmpfs=tmpfs_size,
        ),
        disk_budget=lim.size_option(disk_budget, "--disk-budget"),
        no_provider_script=no_provider_script,
        tasks=tuple(_split_arms(tasks)),
        max_cost=max_cost,
        allow_host_network=allow_host_network,
        executor=exe.ExecutorChoice.of(
            executor,
            ray_address=ray_address,
            node_loss_retries=node_loss_retries,
            cancel_grace_s=cancel_grace,
            explicit=explicit_options(ctx),
        ),
    )
    raise typer.Exit(execute(request))


def _split_arms(value: list[str] | None) -> list[str]:
    return [part for item in value or [] for part in item.replace(",", " ").split()]
