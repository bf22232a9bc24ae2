"""``wfbench run``: the command, its options declared once in :mod:`wfbench.cli.options.run`.

The command only collects its options, in typed parts (:mod:`wfbench.cli.run.request`), into a
:class:`~wfbench.cli.run.request.RunRequest` (with the names the user really typed, which
``--resume`` checks against the run manifest) and hands it to :func:`wfbench.cli.run.flow.execute`.
Nothing heavy is imported here: ``wfbench run --help`` must answer fast.
"""

from __future__ import annotations

import typer

from wfbench.cli.exit_codes import EXIT_CODES_HELP
from wfbench.cli.options import executor as exe
from wfbench.cli.options import limits as lim
from wfbench.cli.options import run as ro
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
    "  WFBENCH_GEMINI_BIN         the gemini CLI for --agent gemini (default: ~/.cache/wfbench/gemini,\n"
    "                             then PATH; run by the host's node)\n"
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
    corpus: ro.Corpus = None,
    arms: ro.Arms = None,
    runs: ro.Runs = None,
    workers: opt.Workers = 2,
    window: ro.Window = None,
    outage_streak: ro.OutageStreak = 5,
    throttle_retries: ro.ThrottleRetries = 3,
    throttle_backoff: ro.ThrottleBackoff = 30.0,
    out: ro.Out = None,
    sandbox: opt.SandboxOption = "bwrap",
    agent: opt.AgentOption = "standin",
    model: ro.Model = None,
    provider_script: opt.ProviderScript = None,
    base_url: opt.BaseUrl = None,
    no_provider_script: opt.NoProviderScript = False,
    tasks: ro.Tasks = None,
    reuse_results: ro.ReuseResults = None,
    resume: ro.Resume = None,
    candidate_overlay: ro.CandidateOverlay = None,
    include_expensive: ro.IncludeExpensive = False,
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
    fail_on: ro.FailOn = None,
    dry_run: ro.DryRun = False,
    max_cost: ro.MaxCost = None,
    prices: ro.Prices = None,
    gateway: ro.Gateway = None,
    allow_host_network: ro.AllowHostNetwork = False,
    provider_log: ro.ProviderLog = None,
    json_events: ro.JsonEvents = False,
) -> None:
    """Run a sweep of task × arm × run cells: results.jsonl, report.md, report.html, promotion.json."""
    from wfbench.cli.run import request as rq
    from wfbench.cli.run.flow import execute, explicit_options

    request = rq.RunRequest.of(
        rq.Selection(corpus=corpus, arms=arms, runs=runs, tasks=tasks, model=model),
        rq.Places(out=out, resume=resume, reuse=reuse_results, overlay=candidate_overlay),
        rq.Agents(sandbox=sandbox, agent=agent),
        rq.Endpoint(
            script=provider_script,
            url=base_url,
            no_script=no_provider_script,
            log=provider_log,
            prices=prices,
            gateway=gateway,
        ),
        rq.Pace(
            workers=workers,
            window=window,
            outage_streak=outage_streak,
            retries=throttle_retries,
            backoff=throttle_backoff,
        ),
        rq.Limits(
            memory=memory_limit,
            processes=process_limit,
            open_files=open_files,
            file_size=file_size_limit,
            tmpfs=tmpfs_size,
            disk=disk_budget,
            timeout=timeout,
            verify_timeout=verify_timeout,
        ),
        rq.Executor(name=executor, address=ray_address, retries=node_loss_retries, grace=cancel_grace),
        rq.Outcome(
            fail_on=fail_on,
            dry_run=dry_run,
            json_events=json_events,
            max_cost=max_cost,
            allow_host_network=allow_host_network,
            include_expensive=include_expensive,
        ),
        explicit=explicit_options(ctx),
    )
    raise typer.Exit(execute(request))
