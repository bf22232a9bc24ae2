"""What ``wfbench evolve`` wires together: sweeps through ``wfbench run``'s flow, the proposer session.

Every generation's sweep is an ordinary sweep directory made by :func:`wfbench.cli.run.flow.execute`
(manifest, results, reports, ``promotion.json``; the incumbent overlay and the proposer model in
the manifest). The proposer session is built like a cell's: the same sandbox backend and agent
adapter, the same kind of endpoint (the corpus's scripted provider offline, or ``--base-url``)
behind the key proxy, reached only through the proposer's own metered lease (a bridge on the
sandbox's loopback, a dummy token), so its cost is metered at the wire like every cell's.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import attrs

from wfbench.cli import bootstrap as boot
from wfbench.cli.exit_codes import CANCELLED, OK

__all__ = ["EvolveOptions", "run_evolve"]


@attrs.frozen
class EvolveOptions:
    """``wfbench evolve``'s options."""

    corpus: str
    out: str
    generations: int
    arms: tuple[str, ...]
    runs: int
    workers: int
    proposer_model: str | None
    model: str | None
    max_generations: int | None
    max_cost: float | None
    sandbox: str
    agent: str
    provider_script: str | None
    base_url: str | None
    no_provider_script: bool
    reuse_results: str | None
    timeout: float
    verify_timeout: float
    apply_target: str | None
    branch: str | None
    tasks: tuple[str, ...] = ()


def _sweeper(options: EvolveOptions, model: str) -> Any:
    from wfbench.cli.run.flow import execute
    from wfbench.cli.run.request import RunRequest

    def run_sweep(order: Any) -> int:
        request = RunRequest(
            corpus=options.corpus,
            arms=order.arms,
            runs=options.runs,
            workers=options.workers,
            window=None,
            outage_streak=5,
            out=order.out_dir,
            sandbox=options.sandbox,
            agent=options.agent,
            model=model,
            provider_script=options.provider_script,
            base_url=options.base_url,
            reuse_results=order.reuse_results,
            resume=None,
            candidate_overlay=order.candidate_overlay,
            include_expensive=False,
            timeout=options.timeout,
            verify_timeout=options.verify_timeout,
            incumbent_overlay=order.incumbent_overlay,
            proposer_model=order.proposer_model,
            no_provider_script=options.no_provider_script,
            tasks=options.tasks,
            max_cost=order.max_cost_usd,
        )
        return execute(request)

    return run_sweep


def _script(options: EvolveOptions, corpus: Any) -> str | None:
    if options.no_provider_script:
        return None
    return os.path.abspath(options.provider_script) if options.provider_script else corpus.provider_script


@contextlib.contextmanager
def _proposer(options: EvolveOptions, corpus: Any, model: str, cancel: threading.Event) -> Iterator[Any]:
    """A ``propose(order)`` callable that runs the proposer session in the sandbox."""
    from wfbench.app.cell.context import CellServices, RunSettings
    from wfbench.app.evolve.proposer import run_proposer
    from wfbench.cli.bootstrap import harness_command_env

    services = boot.bootstrap(sandbox=options.sandbox, agent=options.agent)
    endpoint_options = boot.EndpointOptions(model=model, agents=(options.agent,))
    with (
        boot.endpoint(
            script_path=_script(options, corpus),
            base_url=options.base_url,
            environ=os.environ,
            warn=lambda text: print(text, file=sys.stderr),
            options=endpoint_options,
        ) as ep,
        tempfile.TemporaryDirectory(prefix="wfbench-proposer-") as work_dir,
    ):
        settings = RunSettings(
            out_dir=options.out,
            work_dir=work_dir,
            model=model,
            sandbox_backend=options.sandbox,
            command_env=harness_command_env(),
            agent_env={"ANTHROPIC_BASE_URL": ep.base_url},
            secrets={"ANTHROPIC_API_KEY": ep.api_key},
            session_timeout_s=options.timeout,
            clock=services.clock,
            withheld=ep.withheld,
            directory=services.directory_at(options.out),
        )
        cell = CellServices(
            services.sandbox, services.agent, services.workspaces, services.clock, gateway=ep.gateway
        )

        def propose(order: Any) -> Any:
            proposal = run_proposer(
                workspace=order.workspace,
                incumbent=order.incumbent,
                evidence=order.evidence,
                prompt=order.prompt,
                model=model,
                services=cell,
                settings=settings,
                cancel=cancel,
                label=order.label,
            )
            transcript = os.path.join(os.path.dirname(order.workspace), "transcript.jsonl")
            with open(transcript, "wb") as handle:
                handle.write(proposal.record.transcript)
            return proposal

        yield propose


def _committed_skills(corpus: Any) -> Any:
    """Read the committed skill files of the corpus's first task (its bound commit)."""
    from wfbench.adapters.repo.workspace import GitWorkspaces
    from wfbench.app.corpus.skill_bindings import read_tree_files

    def committed(roots: Sequence[str]) -> Mapping[str, bytes]:
        workspaces = GitWorkspaces()
        task = corpus.tasks[0]
        with tempfile.TemporaryDirectory(prefix="wfbench-incumbent-") as scratch:
            snapshot = workspaces.build_snapshot(task.repo, task.ref, os.path.join(scratch, "snapshot"))
            return read_tree_files(snapshot.path, roots)

    return committed


def _applier(options: EvolveOptions, model: str, proposer_model: str) -> Any:
    if options.apply_target is None:
        return None
    from wfbench.adapters.repo.skill_target import GitSkillTarget
    from wfbench.adapters.repo.workspace import GitWorkspaces
    from wfbench.adapters.store.clock import SystemClock
    from wfbench.app.evolve.run import run_started_at
    from wfbench.app.promotion.apply import ApplyRefused, ApplyRequest, apply_promotion
    from wfbench.cli.commands.promote import environment_digester

    state = {"branched": False}

    def apply(promotion: str) -> Mapping[str, Any]:
        # The default branch is named after the run's start, which a run finishing a killed one keeps:
        # it commits on the branch the killed run made (perhaps already created), never on a second one.
        began = run_started_at(os.path.abspath(options.out)) or dt.datetime.now(dt.UTC)
        branch = options.branch or "wfbench/evolve-" + began.astimezone(dt.UTC).strftime("%Y%m%d-%H%M%S")
        target = GitSkillTarget(options.apply_target or "")
        done = _applied_before(target, promotion)
        if done is not None:  # a killed run applied it, then died before its summary was journaled
            state["branched"] = True
            return {"target": target.root, "applied": True, "branch": target.branch(), **done}
        if target.branch() == branch:  # a continued run: later generations commit on the branch
            state["branched"] = True
        request = ApplyRequest(
            evidence_path=promotion,
            corpus_path=options.corpus,
            model=model,
            proposer_model=proposer_model,
            branch=None if state["branched"] else branch,
            commit=state["branched"],
            tasks=options.tasks,
        )
        with tempfile.TemporaryDirectory(prefix="wfbench-apply-") as work_dir:
            try:
                outcome = apply_promotion(
                    request,
                    target=target,
                    workspaces=GitWorkspaces(),
                    now=SystemClock().now(),
                    environment_digest=environment_digester(options.sandbox),
                    work_dir=work_dir,
                )
            except ApplyRefused as exc:
                print(f"wfbench: evolve --apply refused: {'; '.join(exc.problems)}", file=sys.stderr)
                return {"target": target.root, "applied": False, "problems": list(exc.problems)}
        state["branched"] = True  # written, never committed (a recovered kill): apply committed it
        return {
            "target": target.root,
            "applied": True,
            "branch": branch,
            "commit": outcome.commit,
            "files": list(outcome.writes),
            "evidence_sha256": outcome.evidence_sha256,
        }

    return apply


def _applied_before(target: Any, promotion: str) -> dict[str, Any] | None:
    """The summary of an earlier apply of ``promotion`` that the target's HEAD commit holds, if any.

    An apply a killed run left half-done is finished (or rolled back) first, like ``promote recover``.
    """
    import hashlib

    target.recover()
    with open(promotion, "rb") as handle:
        evidence_sha = hashlib.sha256(handle.read()).hexdigest()
    head = target.applied_at_head(evidence_sha)
    if head is None:
        return None
    commit, files = head
    return {"commit": commit, "files": list(files), "evidence_sha256": evidence_sha}


@contextlib.contextmanager
def _cancel_on_signals(cancel: threading.Event) -> Iterator[None]:
    """SIGINT/SIGTERM set ``cancel``: the proposer session stops and the loop ends after it."""

    def handler(signum: int, frame: object) -> None:
        del frame
        print(f"wfbench: {signal.Signals(signum).name}: cancelling the loop…", file=sys.stderr, flush=True)
        cancel.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def run_evolve(options: EvolveOptions) -> int:
    """Run the loop; the exit code (0: it ran, 130: cancelled; bad input is raised as InputError)."""
    from wfbench.adapters.store.clock import SystemClock
    from wfbench.adapters.store.jsonl_store import JsonlResultStore
    from wfbench.app.corpus.corpus import load_corpus
    from wfbench.app.evolve.evolution import EvolveConfig, EvolveServices, evolve
    from wfbench.domain.errors import InputError
    from wfbench.domain.sweep.manifest import check_model_name

    corpus = load_corpus(options.corpus)
    model = check_model_name(options.model or corpus.defaults.model, field="--model (or defaults.model)")
    proposer_model = check_model_name(options.proposer_model or model, field="--proposer-model")
    arms = (
        options.arms
        or tuple(a for a in corpus.defaults.arms if a in corpus.arms and not corpus.arms[a].is_candidate)
        or ("workflow",)
    )
    unknown = [a for a in arms if a not in corpus.arms or corpus.arms[a].is_candidate]
    if unknown:
        raise InputError(
            f"{unknown[0]!r} is not an incumbent or comparator arm of the corpus (candidates are derived)",
            field="--arms",
        )
    if options.max_cost is not None:
        from wfbench.cli.run.guards import check_budget_prices

        check_budget_prices(options.max_cost, model, [corpus.arms[a] for a in arms])
        check_budget_prices(options.max_cost, proposer_model, [])
    config = EvolveConfig(
        corpus_path=options.corpus,
        out_dir=os.path.abspath(options.out),
        generations=options.generations,
        base_arms=tuple(arms),
        proposer_model=proposer_model,
        max_generations=options.max_generations,
        max_cost_usd=options.max_cost,
        reuse_results=options.reuse_results,
    )
    cancel = threading.Event()  # SIGINT/SIGTERM outside a sweep (a sweep handles its own, exit 130)
    with _cancel_on_signals(cancel), _proposer(options, corpus, proposer_model, cancel) as propose:
        services = EvolveServices(
            run_sweep=_sweeper(options, model),
            propose=propose,
            committed_skills=_committed_skills(corpus),
            read_rows=lambda path: JsonlResultStore(path).rows(),
            clock=SystemClock(),
            note=print,
            apply=_applier(options, model, proposer_model),
            cancelled=cancel.is_set,
            directory=boot.sweep_directory(config.out_dir),
        )
        result = evolve(config, services)
    last = result.history[-1] if result.history else None
    print(f"[evolve] {len(result.history)} generation record(s) in {config.out_dir}/evolution.jsonl")
    if last is not None:
        print(f"[evolve] last: generation {last.generation} {last.outcome.value}")
    if result.stopped:
        print(f"[evolve] stopped: {result.stopped}")
    return CANCELLED if result.cancelled else OK
