"""What ``wfbench run`` does with its options: validate, claim the output directory, run the sweep.

``wfbench run`` with no corpus runs the built-in offline demo (materialized into the output
directory). SIGINT/SIGTERM set a cancel event that reaches every running session; the partial
report is written and the command exits 130.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import attrs

from wfbench.adapters import stale
from wfbench.app.arms import check_overlay_arms, load_overlay, overlay_digest, resolve_arms
from wfbench.app.cell_checks import DEFAULT_DISK_BUDGET, CellServices, RunSettings
from wfbench.app.corpus import Corpus, load_corpus
from wfbench.app.progress import BarProgress, LineProgress, Progress
from wfbench.app.sweep import SweepConfig, SweepServices, run_sweep
from wfbench.cli import bootstrap as boot
from wfbench.domain.errors import InputError

DEFAULT_ARMS = ("workflow", "workflow_direct", "baseline")


@attrs.frozen
class RunRequest:
    """The options of one ``wfbench run`` as typed (``None``: not given), and which were typed."""

    corpus: str | None
    arms: tuple[str, ...]
    runs: int | None
    workers: int
    window: int | None
    outage_streak: int
    out: str | None
    sandbox: str
    agent: str
    model: str | None
    provider_script: str | None
    base_url: str | None
    reuse_results: str | None
    resume: str | None
    candidate_overlay: str | None
    include_expensive: bool
    timeout: float
    verify_timeout: float
    #: Parameter names given on the command line (the rest are defaults).
    explicit: frozenset[str] = frozenset()
    #: Per-command sandbox limits (``ResourceLimits``; None: the defaults).
    limits: Any = None
    #: Bytes a workspace may grow during its sessions (None: unchecked).
    disk_budget: int | None = DEFAULT_DISK_BUDGET


def explicit_options(ctx: Any) -> frozenset[str]:
    """The parameters of ``ctx`` (a click context) the user gave on the command line."""
    sources = {name: ctx.get_parameter_source(name) for name in ctx.params}
    return frozenset(name for name, source in sources.items() if getattr(source, "name", "") == "COMMANDLINE")


def execute(request: RunRequest) -> int:
    """Run the sweep ``request`` describes; its exit code (:mod:`wfbench.cli.exit_codes`)."""
    out_dir = os.path.abspath(request.resume or request.out or _default_out())
    prior = None
    if request.reuse_results is not None:
        from wfbench.adapters.prior_results import PriorResultsDir

        prior = PriorResultsDir.open(request.reuse_results, out_dir=out_dir)
    # Held for the whole sweep: out-dir lock, refusals, resume repairs, scratch tree for every temp dir.
    claim = stale.claim_out_dir(out_dir, resume=request.resume is not None, note=print)
    services = boot.bootstrap(sandbox=request.sandbox, agent=request.agent, limits=request.limits)
    corpus = request.corpus
    if corpus is None:
        from wfbench import demo as demo_pkg

        corpus = demo_pkg.materialize(os.path.join(out_dir, "demo-corpus"))
    loaded = load_corpus(corpus)
    chosen = resolve_arms(list(request.arms) or list(loaded.defaults.arms) or list(DEFAULT_ARMS), loaded.arms)
    overlay_dir = request.candidate_overlay or (
        loaded.defaults.candidate_overlay if any(a.is_candidate for a in chosen) else None
    )
    overlay = (
        None if overlay_dir is None else load_overlay(overlay_dir, [a for a in chosen if a.is_candidate])
    )
    check_overlay_arms(overlay, chosen, loaded.arms)
    pinned = request.model or loaded.defaults.model
    if not pinned:
        raise InputError("a named --model is required so evidence cannot drift", field="--model")
    from wfbench.cli.agents import arm_agents

    agents = arm_agents(chosen, default=request.agent, default_adapter=services.agent)
    exit_code = _sweep(
        loaded, services, out_dir=out_dir, arms=chosen, overlay=overlay, model=pinned,
        agents=agents,
        runs=request.runs or loaded.defaults.runs or 1, workers=request.workers, window=request.window,
        outage_streak=request.outage_streak, script=request.provider_script or loaded.provider_script,
        base_url=request.base_url, resume=request.resume is not None,
        include_expensive=request.include_expensive, timeout=request.timeout, sandbox_name=request.sandbox,
        prior=prior, agent=request.agent, verify_timeout=request.verify_timeout,
        disk_budget=request.disk_budget,
    )  # fmt: skip
    claim.release()
    return exit_code


def _default_out() -> str:
    return os.path.join("results", "wfbench-" + dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S"))


def _sweep(corpus: Corpus, services: boot.Services, *, out_dir: str, **opts: Any) -> int:
    secrets_seen: list[str] = []
    cancel = threading.Event()
    with _signals(cancel), boot.endpoint(
        script_path=opts["script"], base_url=opts["base_url"], environ=os.environ,
        warn=lambda text: print(text, file=sys.stderr),
    ) as ep, tempfile.TemporaryDirectory(prefix="wfbench-trees-") as work_dir, _log_file(
        out_dir
    ) as log:  # fmt: skip
        secrets_seen.extend((ep.api_key, *ep.withheld))
        runtime = boot.runtime_digest(agent=opts["agent"], script_path=opts["script"], environ=os.environ)
        from wfbench.cli.agents import arm_runtimes

        runtimes = arm_runtimes(
            opts["arms"], default=opts["agent"], adapters=opts["agents"], default_adapter=services.agent,
            script_path=opts["script"], environ=os.environ,
        )  # fmt: skip
        settings = RunSettings(
            out_dir=out_dir,
            work_dir=work_dir,
            model=opts["model"],
            sandbox_backend=opts["sandbox_name"],
            command_env=_command_env(),
            agent_env={"ANTHROPIC_BASE_URL": ep.base_url},
            secrets={"ANTHROPIC_API_KEY": ep.api_key},
            session_timeout_s=opts["timeout"],
            verify_timeout_s=opts["verify_timeout"],
            clock=services.clock,
            runtime_digest=runtime,
            withheld=ep.withheld,
            disk_budget_bytes=opts["disk_budget"],
            arm_runtimes=runtimes,
        )
        overlay = opts["overlay"]
        config = SweepConfig(
            corpus=corpus, arms=tuple(opts["arms"]), runs=opts["runs"], workers=opts["workers"],
            settings=settings, window=opts["window"], outage_streak=opts["outage_streak"], overlay=overlay,
            overlay_digest=None if overlay is None else overlay_digest(overlay), resume=opts["resume"],
            include_expensive=opts["include_expensive"], prior=opts["prior"],
        )  # fmt: skip
        from wfbench.adapters.jsonl_store import JsonlResultStore

        progress: Progress = (BarProgress if sys.stdout.isatty() else LineProgress)(secrets=secrets_seen)
        cell = CellServices(
            services.sandbox, services.agent, services.workspaces, services.clock, agents=opts["agents"]
        )
        sweep_services = SweepServices(
            cell, JsonlResultStore(os.path.join(out_dir, "results.jsonl")), progress, log
        )
        result = run_sweep(config, services=sweep_services, cancel=cancel)
    return result.exit_code


def _command_env() -> dict[str, str]:
    python_bin = os.path.join(os.path.realpath(sys.base_prefix), "bin")
    return {
        "PATH": f"{python_bin}:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
    }


@contextmanager
def _signals(cancel: threading.Event) -> Iterator[None]:
    """SIGINT/SIGTERM set ``cancel`` (running sessions see it and stop; the report is still written)."""

    def handler(signum: int, frame: object) -> None:
        del frame
        print(f"wfbench: {signal.Signals(signum).name}: cancelling the sweep…", file=sys.stderr, flush=True)
        cancel.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


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
            with lock:
                logger.msg(event, **fields)

        yield log
