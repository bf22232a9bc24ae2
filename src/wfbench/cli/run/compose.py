"""What ``wfbench run`` builds inside its claimed directory: the sweep, ready for the run use case.

:func:`prepared` is the ``prepare`` step :func:`wfbench.app.sweep.run.claimed_sweep` calls once the
directory is claimed: the adapters (:func:`wfbench.cli.bootstrap.bootstrap`; the sandbox first, so
a missing bwrap is named before anything else can fail), the resolved corpus and arms
(:mod:`wfbench.cli.run.setup`) and their guards, the endpoint, the scratch tree, the log file, the
view, the executor, and the manifest the sweep starts with. It yields a
:class:`~wfbench.app.sweep.run.PreparedSweep` and closes all of it when the sweep is done.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import attrs

from wfbench.cli import bootstrap as boot
from wfbench.cli.run.request import RunRequest
from wfbench.cli.run.setup import incumbent_overlay_for as _incumbent_overlay
from wfbench.cli.run.setup import provider_script_for as _provider_script
from wfbench.domain.errors import InputError

if TYPE_CHECKING:
    from wfbench.app.cell.context import RunSettings
    from wfbench.app.cell.events import SweepObserver
    from wfbench.app.sweep.run import PreparedSweep, SweepRequest
    from wfbench.cli.run.setup import Setup
    from wfbench.domain.ports import PriorResults
    from wfbench.domain.sweep.manifest import RunManifest

__all__ = ["DEMO_CORPUS_DIR", "HEARTBEAT_ENV", "Context", "prepared"]

DEMO_CORPUS_DIR = "demo-corpus"
HEARTBEAT_ENV = "WFBENCH_HEARTBEAT_S"


@attrs.frozen
class Context:
    """What the flow hands the prepare step: the directory, a resume's manifest, the comparator rows."""

    out_dir: str
    recorded: RunManifest | None
    prior: PriorResults | None


@contextmanager
def prepared(request: RunRequest, context: Context) -> Iterator[PreparedSweep]:
    """The sweep ``request`` describes, built in the claimed ``context.out_dir`` (see the module doc)."""
    from wfbench.adapters.gateway.price_table import load_prices
    from wfbench.adapters.sandbox.allocator import cap_arenas
    from wfbench.cli.run.agents import arm_agents
    from wfbench.cli.run.guards import check_budget_prices, check_host_network, check_local_only
    from wfbench.cli.run.setup import setup_of

    cap_arenas()  # before the provider's and the cells' threads start (docs/performance.md)
    services = boot.bootstrap(sandbox=request.sandbox, agent=request.agent, limits=request.limits)
    _remove_leftover_containers(services.sandbox, context.out_dir, human(request))
    corpus_path = request.corpus if request.corpus is not None else _demo_corpus(context.out_dir)
    prices = load_prices(request.prices)  # a bad --prices file fails here, naming its line and field
    if request.gateway not in (None, *boot.GATEWAYS):
        raise InputError(f"must be one of {', '.join(boot.GATEWAYS)}", field="--gateway")
    setup = setup_of(request, corpus_path, prices)
    setup = attrs.evolve(setup, provider_script=_provider_script(request, setup.provider_script))
    if "workers" not in request.explicit and setup.corpus.defaults.workers is not None:
        request = attrs.evolve(request, workers=setup.corpus.defaults.workers)  # the command line wins
    check_host_network(
        setup.corpus, setup.arms, allowed=request.allow_host_network, environ=os.environ, warn=human(request)
    )
    executor_name = request.executor.name if request.executor is not None else "local"
    check_budget_prices(request.max_cost, setup.model, setup.arms, executor=executor_name, prices=prices)
    check_local_only(request, executor=executor_name)
    agents = arm_agents(setup.arms, default=request.agent, default_adapter=services.agent)
    with _endpoint_and_files(request, setup, context.out_dir) as (ep, work_dir, log):
        yield from _built(request, setup, services, context, agents=agents, ep=ep, work_dir=work_dir, log=log)


@contextmanager
def _endpoint_and_files(request: RunRequest, setup: Setup, out_dir: str) -> Iterator[tuple[Any, str, Any]]:
    """The model endpoint, the sweep's scratch work tree and its log file, for the sweep's duration."""
    names = (request.agent, *(arm.agent.name for arm in setup.arms if arm.agent is not None))
    from wfbench.adapters.gateway.price_table import load_prices

    options = boot.EndpointOptions(
        model=setup.model,
        agents=tuple(names),
        budget_usd=request.max_cost,
        price_table=load_prices(request.prices),
        gateway=request.gateway,
    )
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
        yield ep, work_dir, log


def _built(
    request: RunRequest,
    setup: Setup,
    services: boot.Services,
    context: Context,
    *,
    agents: Any,
    ep: boot.Endpoint,
    work_dir: str,
    log: Callable[..., None],
) -> Iterator[PreparedSweep]:
    from wfbench.adapters.sandbox.allocator import release_free_memory
    from wfbench.adapters.store.jsonl_store import JsonlResultStore
    from wfbench.app.cell.context import CellServices
    from wfbench.app.sweep.run import PreparedSweep, observed
    from wfbench.cli.run.agents import arm_runtimes
    from wfbench.cli.run.manifest import start_manifest, sweep_start
    from wfbench.cli.run.ray_driver import executor_for, gateway_for

    secrets = (ep.api_key, *ep.withheld)
    runtime = boot.runtime_digest(agent=request.agent, script_path=setup.provider_script, environ=os.environ)
    runtimes = arm_runtimes(
        setup.arms,
        default=request.agent,
        adapters=agents,
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
        out_dir=context.out_dir,
    )
    store = JsonlResultStore(os.path.join(context.out_dir, "results.jsonl"))
    manifest = start_manifest(request, setup, runtime, secrets=secrets, runtimes=runtimes)
    manifest = _with_evolve_fields(request, setup, manifest)
    start = sweep_start(request, setup, manifest, recorded=context.recorded)
    gateway = gateway_for(request, ep.gateway)  # on a cluster: every node's spend
    view = _view(request, secrets=secrets, gateway=gateway)
    cell = CellServices(
        services.sandbox,
        services.agent,
        services.workspaces,
        services.clock,
        agents=agents,
        environments=services.environments,
        gateway=gateway,
    )
    note = _note_to(observed(view, log))
    with executor_for(
        request, setup, settings, out_dir=context.out_dir, note=note, gateway=gateway
    ) as executor:
        yield PreparedSweep(
            request=_sweep_request(request, setup, settings),
            start=start,
            cell=cell,
            store=store,
            view=view,
            log=log,
            warn=lambda text: print(text, file=sys.stderr, flush=True),
            executor=executor,
            prior=context.prior,
            provider_replies=ep.replies,
            release_memory=release_free_memory,
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
    from wfbench.cli.options.gate import parse_fail_on

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
        incumbent_overlay=_incumbent_overlay(request, setup),
        fail_on=parse_fail_on(request.fail_on),
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


def _with_evolve_fields(request: RunRequest, setup: Setup, manifest: RunManifest) -> RunManifest:
    """What ``wfbench evolve`` adds to a generation's manifest: the incumbent overlay, the proposer."""
    if request.incumbent_overlay is None and request.proposer_model is None:
        return manifest
    from wfbench.app.corpus.arms import overlay_digest

    incumbent = _incumbent_overlay(request, setup)
    fields: Mapping[str, Any] = {
        "incumbent_overlay": None if incumbent is None else incumbent.root,
        "incumbent_overlay_digest": None if incumbent is None else overlay_digest(incumbent),
        "proposer_model": request.proposer_model,
    }
    return attrs.evolve(manifest, extra={**manifest.extra, **fields})


def _demo_corpus(out_dir: str) -> str:
    """The built-in demo corpus, materialized into the sweep directory (kept there for a resume)."""
    from wfbench import demo as demo_pkg

    target = os.path.join(out_dir, DEMO_CORPUS_DIR)
    existing = os.path.join(target, "corpus.yaml")
    if os.path.isfile(existing):
        return existing
    return demo_pkg.materialize(target)


def _remove_leftover_containers(sandbox: Any, out_dir: str, say: Callable[[str], None]) -> None:
    """A container backend: remove the containers a killed run of this sweep left (never another's)."""
    remove = getattr(sandbox, "remove_sweep_containers", None)
    if remove is not None:
        for name in remove(out_dir):
            say(f"removed a container of a killed run of this sweep: {name}")


def human(request: RunRequest) -> Callable[[str], None]:
    """Where messages for a person go: stdout, or stderr when stdout carries ``--json`` events."""
    stream = sys.stderr if request.json_events else sys.stdout
    return lambda text: print(text, file=stream, flush=True)


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


def _heartbeat_s(raw: str | None, default: float) -> float:
    try:
        value = float(raw) if raw else default
    except ValueError:
        raise InputError(f"must be a number of seconds, got {raw!r}", field=HEARTBEAT_ENV) from None
    return value if value > 0 else default


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
