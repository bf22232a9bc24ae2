"""``wfbench run``, ``wfbench doctor`` and ``wfbench tasks check``.

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
from typing import Annotated, Any

import typer

from wfbench.adapters import stale
from wfbench.app.arms import check_overlay_arms, load_overlay, overlay_digest, resolve_arms
from wfbench.app.binding import bind_tasks
from wfbench.app.cell_checks import CellServices, RunSettings
from wfbench.app.corpus import Corpus, load_corpus
from wfbench.app.progress import BarProgress, LineProgress, Progress
from wfbench.app.sweep import SweepConfig, SweepServices, run_sweep, selected_tasks
from wfbench.cli import bootstrap as boot
from wfbench.domain.errors import InputError

MAX_WORKERS = 8


def register(app: typer.Typer) -> None:
    """Add ``run``, ``doctor`` and ``tasks check``."""
    app.command("run")(run)
    app.command("doctor")(doctor)
    tasks = typer.Typer(help="Inspect and validate corpora.", no_args_is_help=True)
    tasks.command("check")(tasks_check)
    app.add_typer(tasks, name="tasks")


def _arms_option(value: list[str] | None) -> list[str]:
    return [part for item in value or [] for part in item.replace(",", " ").split()]


def run(  # noqa: PLR0917 - Typer maps each parameter to one option
    corpus: Annotated[
        str | None, typer.Argument(help="Corpus YAML; omit to run the built-in offline demo.")
    ] = None,
    arms: Annotated[
        list[str] | None, typer.Option("--arms", help="Arms in order (comma-separated or repeated).")
    ] = None,
    runs: Annotated[
        int | None, typer.Option(min=1, help="Runs per (task, arm); demo default 3, else 1.")
    ] = None,
    workers: Annotated[int, typer.Option(min=1, max=MAX_WORKERS, help="Cells run at once (1..8).")] = 2,
    window: Annotated[
        int | None, typer.Option(min=1, help="Cells submitted but not yet folded (default 2×workers).")
    ] = None,
    outage_streak: Annotated[
        int, typer.Option(min=0, help="Systemic failures in a row that stop the sweep (0 disables).")
    ] = 5,
    out: Annotated[
        str | None, typer.Option(help="Output directory (default results/wfbench-<UTC timestamp>/).")
    ] = None,
    sandbox: Annotated[
        str, typer.Option(help="bwrap (default) or host-unsafe (NO containment; explicit only).")
    ] = "bwrap",
    agent: Annotated[
        str, typer.Option(help="standin (bundled, offline) or claude (the real CLI).")
    ] = "standin",
    model: Annotated[str | None, typer.Option(help="Pinned model id (default: the corpus's).")] = None,
    provider_script: Annotated[
        str | None, typer.Option(help="Scripted provider YAML (overrides the corpus's).")
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option(help="Model endpoint when no script is used (key from WFBENCH_ANTHROPIC_API_KEY)."),
    ] = None,
    reuse_results: Annotated[
        str | None, typer.Option(help="Prior sweep directory whose comparator rows may be reused.")
    ] = None,
    resume: Annotated[
        str | None, typer.Option(help="Continue the interrupted sweep in this directory.")
    ] = None,
    candidate_overlay: Annotated[
        str | None, typer.Option(help="Directory of candidate skill Markdown.")
    ] = None,
    include_expensive: Annotated[bool, typer.Option(help="Also run tasks marked expensive.")] = False,
    timeout: Annotated[float, typer.Option(min=1.0, help="Seconds per agent session.")] = 5400.0,
    verify_timeout: Annotated[
        float, typer.Option(min=1.0, help="Seconds for each verify and hidden-oracle command.")
    ] = 600.0,
) -> None:
    """Run a sweep of task × arm × run cells; write results.jsonl, report.md, report.html, promotion.json."""
    out_dir = os.path.abspath(resume or out or _default_out())
    prior = None
    if reuse_results is not None:
        from wfbench.adapters.prior_results import PriorResultsDir

        prior = PriorResultsDir.open(reuse_results, out_dir=out_dir)
    # Held for the whole sweep: out-dir lock, refusals, resume repairs, scratch tree for every temp dir.
    claim = stale.claim_out_dir(out_dir, resume=resume is not None, note=print)
    services = boot.bootstrap(sandbox=sandbox, agent=agent)
    demo = corpus is None
    if demo:
        from wfbench import demo as demo_pkg

        corpus = demo_pkg.materialize(os.path.join(out_dir, "demo-corpus"))
    assert corpus is not None
    loaded = load_corpus(corpus)
    chosen = resolve_arms(
        _arms_option(arms) or list(loaded.defaults.arms) or ["workflow", "workflow_direct", "baseline"],
        loaded.arms,
    )
    overlay_dir = candidate_overlay or (
        loaded.defaults.candidate_overlay if any(a.is_candidate for a in chosen) else None
    )
    overlay = (
        None if overlay_dir is None else load_overlay(overlay_dir, [a for a in chosen if a.is_candidate])
    )
    check_overlay_arms(overlay, chosen, loaded.arms)
    pinned = model or loaded.defaults.model
    if not pinned:
        raise InputError("a named --model is required so evidence cannot drift", field="--model")
    exit_code = _sweep(
        loaded, services, out_dir=out_dir, arms=chosen, overlay=overlay, model=pinned,
        runs=runs or loaded.defaults.runs or 1, workers=workers, window=window, outage_streak=outage_streak,
        script=provider_script or loaded.provider_script, base_url=base_url, resume=resume is not None,
        include_expensive=include_expensive, timeout=timeout, sandbox_name=sandbox, prior=prior, agent=agent,
        verify_timeout=verify_timeout,
    )  # fmt: skip
    claim.release()
    raise typer.Exit(exit_code)


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
        cell = CellServices(services.sandbox, services.agent, services.workspaces, services.clock)
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


def doctor() -> None:
    """Report what this machine can do: bwrap (and its process limit), the claude CLI, Node."""
    import shutil
    import subprocess

    try:
        sandbox = boot.build_sandbox("bwrap")
        typer.echo("bwrap: works")
        process_limit = getattr(sandbox, "process_limit", None)
        if process_limit is not None:
            typer.echo(f"process limit: {process_limit()}")
    except Exception as exc:
        typer.echo(f"bwrap: NOT usable — {exc}")
    claude = boot.find_claude()
    version = "not installed"
    if claude:
        done = subprocess.run([claude, "--version"], capture_output=True, text=True, timeout=30, check=False)
        version = f"{claude} ({done.stdout.strip() or done.stderr.strip()})"
    typer.echo(f"claude: {version}")
    node = shutil.which("node")
    node_version = (
        subprocess.run([node, "--version"], capture_output=True, text=True, check=False).stdout.strip()
        if node
        else ""
    )
    typer.echo(f"node: {node_version or 'not installed'}")
    typer.echo(f"python: {sys.version.split()[0]} ({sys.executable})")


def tasks_check(corpus: Annotated[str, typer.Argument(help="Corpus YAML to validate.")]) -> None:
    """Validate a corpus (fields, arms, repositories, refs, oracle files) without running it."""
    from wfbench.adapters.provider_script import ProviderScript
    from wfbench.adapters.workspace import GitWorkspaces

    loaded = load_corpus(corpus)
    if loaded.provider_script is not None:  # `run` loads it before any session; so does the check
        ProviderScript.load(loaded.provider_script)
    tasks = selected_tasks(loaded, include_expensive=True)
    bound = bind_tasks(loaded, tasks, workspaces=GitWorkspaces())
    for task in bound:
        typer.echo(
            f"ok  {task.spec.id}  {task.spec.kind.value}  {task.commit[:12]}"
            f"  oracle {task.oracle_digests['oracle_digest'][:12]}"
        )
    typer.echo(f"{len(bound)} task(s) valid; arms available: {', '.join(loaded.arms)}")
