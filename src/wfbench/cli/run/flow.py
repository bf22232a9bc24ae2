"""What ``wfbench run`` does with its options: resolve, claim the output directory, run the sweep.

In order, and nothing runs until every step before it succeeded:

1. ``--resume DIR``: read ``DIR/manifest.json`` and take the sweep's configuration from it; an
   option that contradicts it is refused (:mod:`wfbench.cli.run.manifest`).
2. ``--dry-run`` stops here with the plan (:mod:`wfbench.cli.run.dry`).
3. Claim the output directory (lock, resume repairs), resolve the corpus and options
   (:mod:`wfbench.cli.run.setup`), print the warnings, build the adapters.
4. Run the sweep through the run use case (:func:`wfbench.app.sweep.run.sweep`). Once tasks are
   bound the manifest is written (a resume checks instead that nothing drifted). SIGINT/SIGTERM
   cancel it; the partial report is written; exit 130.

A run that fails before its first cell leaves nothing behind: the lock file is removed with the
claim, and a directory this run created is removed again (:class:`~wfbench.cli.run.out_dir.Litter`).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import attrs

from wfbench.cli import bootstrap as boot
from wfbench.cli.exit_codes import DECISION, OK
from wfbench.cli.run.out_dir import Litter, check_out_dir
from wfbench.cli.run.request import RunRequest
from wfbench.cli.run.signals import cancel_on_signals
from wfbench.domain.errors import InputError

if TYPE_CHECKING:
    from wfbench.app.cell.context import RunSettings
    from wfbench.app.cell.events import SweepObserver
    from wfbench.app.sweep.run import SweepRequest
    from wfbench.cli.run.setup import Setup

DEMO_CORPUS_DIR = "demo-corpus"


def explicit_options(ctx: Any) -> frozenset[str]:
    """The parameters of ``ctx`` (a click context) the user gave on the command line."""
    sources = {name: ctx.get_parameter_source(name) for name in ctx.params}
    return frozenset(name for name, source in sources.items() if getattr(source, "name", "") == "COMMANDLINE")


def execute(request: RunRequest) -> int:
    """Run the sweep ``request`` describes; its exit code (:mod:`wfbench.cli.exit_codes`)."""
    from wfbench.cli.options.gate import failing_decisions, parse_fail_on
    from wfbench.cli.run.manifest import read_manifest, resumed_request

    fail_on = parse_fail_on(request.fail_on)
    recorded = None
    resuming = request.resume is not None
    if request.resume is not None:
        recorded = read_manifest(os.path.abspath(request.resume))
        request = resumed_request(request, recorded)
    out_dir = os.path.abspath(request.out or _default_out())
    check_out_dir(out_dir, resume=resuming)
    if request.dry_run:
        from wfbench.cli.run.dry import dry_run

        return dry_run(request, out_dir=out_dir, resuming=resuming)
    litter = Litter(out_dir)
    cancel = threading.Event()
    # Installed until the end (the summary included): a late Ctrl-C force-quits, never a traceback.
    with cancel_on_signals(cancel, out_dir):
        with litter.cleaned_unless_started():
            result = _claimed_sweep(request, out_dir, recorded, litter, cancel)
        from wfbench.cli.run.summary import summary_event, summary_lines

        human = sys.stderr if request.json_events else sys.stdout
        if request.json_events:
            print(json.dumps(summary_event(out_dir, result)), flush=True)
        else:
            print("\n".join(summary_lines(out_dir, result)), flush=True)
        if result.cancelled and not result.tripped:
            print(
                f"interrupted after {result.completed}/{result.planned} cells; resume with: wfbench run"
                f" --resume {out_dir}",
                file=human,
                flush=True,
            )
    failing = failing_decisions([decision for _, decision in result.decisions], fail_on) if fail_on else []
    if result.exit_code not in (OK, DECISION):
        return int(result.exit_code)
    if failing:  # the sweep's own exit code (its events') is already DECISION
        print(f"wfbench: --fail-on {','.join(sorted(fail_on))}: {', '.join(failing)}", file=sys.stderr)
        return DECISION
    return OK


def _fail_on(request: RunRequest) -> frozenset[str]:
    from wfbench.cli.options.gate import parse_fail_on

    return parse_fail_on(request.fail_on)


def _default_out() -> str:
    return os.path.join("results", "wfbench-" + dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S"))


def _human(request: RunRequest) -> Any:
    """Where messages for a person go: stdout, or stderr when stdout carries ``--json`` events."""
    stream = sys.stderr if request.json_events else sys.stdout
    return lambda text: print(text, file=stream, flush=True)


def _claimed_sweep(
    request: RunRequest, out_dir: str, recorded: Any, litter: Litter, cancel: threading.Event
) -> Any:
    from wfbench.adapters.store import claim as stale
    from wfbench.cli.run.setup import provider_script_for, resolve_setup

    prior = None
    if request.reuse_results is not None:
        from wfbench.adapters.store.prior_results import PriorResultsDir

        prior = PriorResultsDir.open(request.reuse_results, out_dir=out_dir)
    try:
        claim = stale.claim_out_dir(out_dir, resume=request.resume is not None, note=_human(request))
    except OSError as exc:
        raise InputError(
            f"cannot use it as the output directory: {exc.strerror or exc}",
            field="--resume" if request.resume is not None else "--out",
            source=out_dir,
        ) from None
    with claim:
        # The sandbox first: a missing bwrap is named before anything else can fail.
        services = boot.bootstrap(sandbox=request.sandbox, agent=request.agent, limits=request.limits)
        corpus_path = request.corpus
        if corpus_path is None:
            corpus_path = _demo_corpus(out_dir)
        setup = resolve_setup(
            corpus_path,
            arms=request.arms,
            runs=request.runs,
            model=request.model,
            candidate_overlay=request.candidate_overlay,
            provider_script=request.provider_script,
            agent=request.agent,
        )
        setup = attrs.evolve(setup, provider_script=provider_script_for(request, setup.provider_script))
        if "workers" not in request.explicit and setup.corpus.defaults.workers is not None:
            request = attrs.evolve(request, workers=setup.corpus.defaults.workers)  # the command line wins
        from wfbench.cli.run.guards import check_budget_prices, check_host_network

        check_host_network(
            setup.corpus,
            setup.arms,
            allowed=request.allow_host_network,
            environ=os.environ,
            warn=_human(request),
        )
        executor_name = request.executor.name if request.executor is not None else "local"
        check_budget_prices(request.max_cost, setup.model, setup.arms, executor=executor_name)
        from wfbench.cli.run.agents import arm_agents

        agents = arm_agents(setup.arms, default=request.agent, default_adapter=services.agent)
        return _sweep(
            request, setup, services, _SweepContext(out_dir, recorded, prior, litter, cancel, agents)
        )


def _demo_corpus(out_dir: str) -> str:
    """The built-in demo corpus, materialized into the sweep directory (kept there for a resume)."""
    from wfbench import demo as demo_pkg

    target = os.path.join(out_dir, DEMO_CORPUS_DIR)
    existing = os.path.join(target, "corpus.yaml")
    if os.path.isfile(existing):
        return existing
    return demo_pkg.materialize(target)


@attrs.frozen
class _SweepContext:
    out_dir: str
    recorded: Any
    prior: Any
    litter: Litter
    #: Set by the first SIGINT/SIGTERM (:func:`~wfbench.cli.run.signals.cancel_on_signals`).
    cancel: threading.Event
    #: Per-arm agent adapters for arms that name another agent than ``--agent``.
    agents: Any = None


def _sweep(request: RunRequest, setup: Setup, services: boot.Services, context: _SweepContext) -> Any:
    from wfbench.adapters.store.jsonl_store import JsonlResultStore
    from wfbench.app.cell.context import CellServices
    from wfbench.app.sweep.run import observed, sweep

    out_dir = context.out_dir
    cancel = context.cancel
    names = (request.agent, *(arm.agent.name for arm in setup.arms if arm.agent is not None))
    options = boot.EndpointOptions(model=setup.model, agents=tuple(names), budget_usd=request.max_cost)
    with (
        boot.endpoint(
            script_path=setup.provider_script,
            base_url=request.base_url,
            environ=os.environ,
            warn=lambda text: print(text, file=sys.stderr),
            options=options,
            provider_log=request.provider_log,
        ) as ep,
        tempfile.TemporaryDirectory(prefix="wfbench-trees-") as work_dir,
        _log_file(out_dir) as log,
    ):
        secrets = (ep.api_key, *ep.withheld)
        runtime = boot.runtime_digest(
            agent=request.agent, script_path=setup.provider_script, environ=os.environ
        )
        from wfbench.cli.run.agents import arm_runtimes

        runtimes = arm_runtimes(
            setup.arms,
            default=request.agent,
            adapters=context.agents,
            default_adapter=services.agent,
            script_path=setup.provider_script,
            environ=os.environ,
        )
        settings = _settings(
            request,
            setup,
            services,
            ep,
            work_dir=work_dir,
            runtime=runtime,
            runtimes=runtimes,
            out_dir=out_dir,
        )
        store = JsonlResultStore(os.path.join(out_dir, "results.jsonl"))
        start_manifest = _manifest_starter(
            request, setup, runtime, context, secrets=secrets, log=log, store=store, runtimes=runtimes
        )
        view = _view(request, secrets=secrets, gateway=ep.gateway)
        cell = CellServices(
            services.sandbox,
            services.agent,
            services.workspaces,
            services.clock,
            agents=context.agents,
            environments=services.environments,
            gateway=ep.gateway,
        )
        from wfbench.cli.run.ray_driver import executor_for

        note = _note_to(observed(view, log))
        with executor_for(request, setup, settings, out_dir=out_dir, note=note) as executor:
            return sweep(
                _sweep_request(request, setup, settings),
                cell=cell,
                store=store,
                view=view,
                log=log,
                cancel=cancel,
                on_bound=start_manifest,
                executor=executor,
                prior=context.prior,
                provider_replies=ep.replies,
            )


def _settings(
    request: RunRequest,
    setup: Setup,
    services: boot.Services,
    ep: boot.Endpoint,
    *,
    work_dir: str,
    runtime: str,
    runtimes: Any,
    out_dir: str,
) -> RunSettings:
    """The run-wide settings every cell shares: the endpoint, the limits, the runtime identities."""
    from wfbench.app.cell.context import RunSettings
    from wfbench.cli.run.setup import incumbent_overlay_for

    return RunSettings(
        out_dir=out_dir,
        work_dir=work_dir,
        model=setup.model,
        sandbox_backend=request.sandbox,
        command_env=boot.harness_command_env(),
        agent_env={"ANTHROPIC_BASE_URL": ep.base_url},
        secrets={"ANTHROPIC_API_KEY": ep.api_key},
        session_timeout_s=request.timeout,
        verify_timeout_s=request.verify_timeout,
        clock=services.clock,
        runtime_digest=runtime,
        withheld=ep.withheld,
        disk_budget_bytes=request.disk_budget,
        arm_runtimes=runtimes,
        incumbent_overlay=incumbent_overlay_for(request, setup),
        fail_on=_fail_on(request),
        directory=services.directory_at(out_dir),
    )


def _sweep_request(request: RunRequest, setup: Setup, settings: RunSettings) -> SweepRequest:
    """The run use case's request: the resolved setup, the sweep's options, the run-wide settings."""
    from wfbench.app.sweep.run import SweepRequest

    return SweepRequest(
        corpus=setup.corpus,
        arms=setup.arms,
        runs=setup.runs,
        settings=settings,
        workers=request.workers,
        window=request.window,
        outage_streak=request.outage_streak,
        overlay=setup.overlay,
        overlay_digest=setup.overlay_digest,
        resume=request.resume is not None,
        include_expensive=request.include_expensive,
        tasks=request.tasks,
        proposer_model=request.proposer_model,
        throttle_retries=request.throttle_retries,
        throttle_backoff_s=request.throttle_backoff,
        cancel_grace_s=request.executor.cancel_grace_s if request.executor is not None else 30.0,
    )


def _manifest_starter(
    request: RunRequest,
    setup: Setup,
    runtime: str,
    context: _SweepContext,
    *,
    secrets: Sequence[str],
    log: Any,
    store: Any,
    runtimes: Any,
) -> Any:
    """The ``on_bound`` hook: write the manifest (a resume: check nothing drifted), then the sweep starts."""
    from wfbench.cli.run import manifest as rm
    from wfbench.domain.redaction import redact_text

    inputs = rm.ManifestInputs(
        argv=tuple(redact_text(arg, tuple(secrets)) for arg in rm.argv()),
        demo=request.corpus is None,
        agent=request.agent,
        agent_version=_default_agent_version(request, runtimes),
        sandbox=request.sandbox,
        base_url=request.base_url,
        reuse_results=request.reuse_results,
        include_expensive=request.include_expensive,
        task_filter=request.tasks,
        no_provider_script=request.no_provider_script,
        session_timeout_s=request.timeout,
        verify_timeout_s=request.verify_timeout,
        runtime_digest=runtime,
        workers=request.workers,
        window=request.window,
        outage_streak=request.outage_streak,
        started_at=dt.datetime.now(dt.UTC),
    )
    current = rm.build_manifest(setup, inputs, arm_runtimes=runtimes)
    if request.incumbent_overlay is not None or request.proposer_model is not None:
        current = attrs.evolve(current, extra={**current.extra, **_evolve_fields(request, setup)})

    def on_bound(tasks: Sequence[Any]) -> None:
        bound = attrs.evolve(
            current,
            tasks=tuple(task.binding() for task in tasks),
            environment_digests={
                task.spec.id: task.environment_digest for task in tasks if task.environment_digest is not None
            },
        )
        if context.recorded is not None:
            rm.check_drift(context.recorded, bound, out_dir=context.out_dir)
            log("sweep_resumed", level="info", manifest=context.recorded.to_mapping(), argv=list(inputs.argv))
        else:
            if request.resume is not None:  # a sweep without a manifest: its rows must agree
                rm.check_rows(bound, store.rows(), out_dir=context.out_dir)
            rm.write_manifest(context.out_dir, bound)
            log(
                "sweep_started", level="info", manifest=bound.to_mapping(), resumed=request.resume is not None
            )
        context.litter.started = True
        for warning in setup.warnings:  # every input is valid by now: say what this sweep cannot deliver
            print(f"wfbench: warning: {warning}", file=sys.stderr, flush=True)
            log("warning", level="warning", text=warning)

    return on_bound


def _evolve_fields(request: RunRequest, setup: Setup) -> dict[str, Any]:
    """What ``wfbench evolve`` adds to a generation's manifest: the incumbent overlay, the proposer."""
    from wfbench.app.corpus.arms import overlay_digest
    from wfbench.cli.run.setup import incumbent_overlay_for

    incumbent = incumbent_overlay_for(request, setup)
    return {
        "incumbent_overlay": None if incumbent is None else incumbent.root,
        "incumbent_overlay_digest": None if incumbent is None else overlay_digest(incumbent),
        "proposer_model": request.proposer_model,
    }


def _view(request: RunRequest, *, secrets: Sequence[str], gateway: Any = None) -> SweepObserver:
    """What shows the sweep: JSON events (``--json``), the live view (a TTY) or plain lines.

    With a metered endpoint (``gateway``, the key proxy) the spend shown is the wire meter's.

    ``$WFBENCH_HEARTBEAT_S`` sets the heartbeat interval off a TTY (default 60 s; tests shorten it).
    """
    from wfbench.app.sweep.progress import HEARTBEAT_S, JsonProgress, LiveProgress, PlainProgress

    heartbeat = _heartbeat_s(os.environ.get(HEARTBEAT_ENV), HEARTBEAT_S)
    metered = None if gateway is None else gateway.spend
    if request.json_events:
        return JsonProgress(sys.stdout, secrets, heartbeat_s=heartbeat, metered=metered)
    if sys.stdout.isatty():
        return LiveProgress(sys.stdout, secrets, metered=metered)
    return PlainProgress(sys.stdout, secrets, heartbeat_s=heartbeat, metered=metered)


def _note_to(observer: Any) -> Callable[[str], None]:
    """A one-argument note callback (the Ray executor's) for ``observer``: a ``[tag]`` line is a warning."""
    from wfbench.app.cell.events import Note

    def note(text: str) -> None:
        observer.notify(Note(text, "warning" if text.startswith("[") else "info"))

    return note


HEARTBEAT_ENV = "WFBENCH_HEARTBEAT_S"


def _heartbeat_s(raw: str | None, default: float) -> float:
    try:
        value = float(raw) if raw else default
    except ValueError:
        raise InputError(f"must be a number of seconds, got {raw!r}", field=HEARTBEAT_ENV) from None
    return value if value > 0 else default


def _default_agent_version(request: RunRequest, runtimes: Any) -> str | None:
    """The version of ``--agent``, from the runtime of an arm that runs it (None when no arm does)."""
    for runtime in runtimes.values():
        if runtime.agent == request.agent:
            return str(runtime.agent_version) if runtime.agent_version is not None else None
    return None


@contextmanager
def _log_file(out_dir: str) -> Iterator[Any]:
    """A structlog logger writing JSON lines to ``<out>/wfbench.log``; yields its ``info``-style callable."""
    import structlog

    with open(os.path.join(out_dir, "wfbench.log"), "a", encoding="utf-8") as handle:
        logger = structlog.wrap_logger(
            structlog.WriteLogger(handle),
            processors=[
                structlog.processors.TimeStamper(fmt="iso", utc=True),
                structlog.processors.JSONRenderer(),
            ],
        )
        lock = threading.Lock()

        def log(event: str, **fields: Any) -> None:
            fields.setdefault("level", "info")
            with lock:
                logger.msg(event, **fields)

        yield log
