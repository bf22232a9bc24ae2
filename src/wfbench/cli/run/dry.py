"""``wfbench run --dry-run``: the plan, the estimated spend and the warnings; no session, nothing written.

It resolves everything a real run would (the resume's manifest, the corpus, arms, model, runs,
the task bindings, reuse) and prints which cells would run, which already have a row (resume)
and which a prior sweep's rows would stand in for (``--reuse-results``). The estimated spend is
the median prior cost of each planned (task, arm), else of the arm, from the rows of the resumed
sweep and of ``--reuse-results``; a cell with no prior is ``n/a``. The demo corpus and task
snapshots are built in a temporary directory that is removed before it returns; the output
directory is never created.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs

from wfbench.cli.exit_codes import OK

if TYPE_CHECKING:
    from wfbench.cli.run.request import RunRequest
    from wfbench.cli.run.setup import Setup


def dry_run(request: Any, *, out_dir: str, resuming: bool) -> int:
    """Print the plan of ``request``; exit code 0 (a bad input raises as in a real run)."""
    with tempfile.TemporaryDirectory(prefix="wfbench-dry-run-") as scratch:
        lines = _plan_lines(request, out_dir=out_dir, resuming=resuming, scratch=scratch)
    print("\n".join(lines))
    return OK


def _plan_lines(request: Any, *, out_dir: str, resuming: bool, scratch: str) -> list[str]:
    from wfbench.adapters.repo.workspace import GitWorkspaces
    from wfbench.app.corpus.binding import bind_tasks, prepare_snapshots
    from wfbench.app.sweep.sweep import plan_cells, selected_tasks
    from wfbench.cli.run.setup import setup_of

    corpus_path = request.corpus or _demo_corpus(out_dir, scratch)
    setup = setup_of(request, corpus_path)
    from wfbench.cli.run.setup import provider_script_for

    setup = attrs.evolve(setup, provider_script=provider_script_for(request, setup.provider_script))
    workspaces = GitWorkspaces()
    tasks = selected_tasks(setup.corpus, include_expensive=request.include_expensive, only=request.tasks)
    bound = bind_tasks(setup.corpus, tasks, workspaces=workspaces)
    if request.reuse_results is not None:
        bound = _prepared(request, prepare_snapshots(bound, workspaces=workspaces, parent=scratch))
    cells = plan_cells(bound, setup.arms, setup.runs)
    have = _resumed_rows(out_dir) if resuming else ()
    done = {row.cell for row in have}
    planned = [cell for cell in cells if cell.key not in done]
    reused, prior_rows = _reuse(request, setup, bound, planned, out_dir)
    todo = [cell for cell in planned if cell.key not in reused]
    lines = [
        f"dry run: nothing runs and nothing is written (would write to {out_dir})",
        f"corpus: {'the built-in demo' if request.corpus is None else setup.corpus.path}",
        f"tasks: {', '.join(task.spec.id for task in bound)}",
        f"arms: {', '.join(arm.name for arm in setup.arms)}; runs: {setup.runs}; model: {setup.model};"
        f" agent: {request.agent}; sandbox: {request.sandbox}",
        f"cells: {len(cells)} planned, {len(done)} already have a row (resume), {len(reused)} reused from"
        f" {request.reuse_results or 'no prior sweep'}, {len(todo)} to run",
    ]
    lines += _spend_lines(todo, [*have, *prior_rows, *_cancelled_rows(out_dir, resuming)])
    lines += [f"warning: {warning}" for warning in setup.warnings] or ["warnings: none"]
    return lines


def _prepared(request: Any, bound: Any) -> Any:
    """The tasks with the environments the run would bind (their digests; nothing is built)."""
    from wfbench.adapters.repo.envbuild import CachedEnvironments, PlannedEnvironments, default_cache_dir
    from wfbench.app.sweep.environments import prepare_environments
    from wfbench.cli import bootstrap as boot

    sandbox = boot.build_sandbox(request.sandbox, request.limits)
    cached = CachedEnvironments(
        sandbox, cache_dir=default_cache_dir(os.environ), command_env=boot.harness_command_env()
    )
    return prepare_environments(bound, environments=PlannedEnvironments(cached))


def _demo_corpus(out_dir: str, scratch: str) -> str:
    from wfbench import demo as demo_pkg

    existing = os.path.join(out_dir, "demo-corpus", "corpus.yaml")
    if os.path.isfile(existing):
        return existing
    return demo_pkg.materialize(os.path.join(scratch, "demo-corpus"))


def _resumed_rows(out_dir: str) -> tuple[Any, ...]:
    """The rows a resume keeps (a cancelled cell's row is set aside and its cell runs again)."""
    from wfbench.adapters.store.jsonl_store import JsonlResultStore
    from wfbench.domain.sweep.resume import split_for_resume

    rows = JsonlResultStore(os.path.join(out_dir, "results.jsonl")).rows()
    split = split_for_resume(rows)
    return tuple(rows[index] for index in split.keep)


def _cancelled_rows(out_dir: str, resuming: bool) -> tuple[Any, ...]:
    """Rows of cancelled cells (already set aside, or about to be): priors for the estimate."""
    from wfbench.adapters.store.jsonl_store import JsonlResultStore
    from wfbench.domain.sweep.resume import is_cancellation_residue

    if not resuming:
        return ()
    rows: list[Any] = []
    for name in ("results.cancelled.jsonl", "results.jsonl"):
        rows += [
            row
            for row in JsonlResultStore(os.path.join(out_dir, name)).rows()
            if is_cancellation_residue(row)
        ]
    return tuple(rows)


def _reuse(
    request: RunRequest, setup: Setup, bound: Any, planned: Sequence[Any], out_dir: str
) -> tuple[set[Any], Any]:
    if request.reuse_results is None:
        return set(), ()
    from wfbench.adapters.store.prior_results import PriorResultsDir
    from wfbench.app.cell.context import RunSettings
    from wfbench.app.sweep.reuse_plan import select_reuse
    from wfbench.cli import bootstrap as boot
    from wfbench.cli.run.agents import arm_agents, arm_runtimes
    from wfbench.cli.run.setup import incumbent_overlay_for

    prior = PriorResultsDir.open(request.reuse_results, out_dir=out_dir)
    rows = prior.rows()
    runtime = boot.runtime_digest(agent=request.agent, script_path=setup.provider_script, environ=os.environ)
    # The arms' runtime identities as the run computes them (agent and version): without them every
    # comparator's identity differs from the prior rows' and the dry run reused nothing.
    default_adapter = boot.build_agent(request.agent)
    runtimes = arm_runtimes(
        setup.arms,
        default=request.agent,
        adapters=arm_agents(setup.arms, default=request.agent, default_adapter=default_adapter),
        default_adapter=default_adapter,
        script_path=setup.provider_script,
        environ=os.environ,
    )
    settings = RunSettings(
        out_dir=out_dir,
        work_dir="",
        model=setup.model,
        sandbox_backend=request.sandbox,
        command_env={},
        agent_env={},
        runtime_digest=runtime,
        arm_runtimes=runtimes,
        incumbent_overlay=incumbent_overlay_for(request, setup),
        directory=boot.sweep_directory(out_dir),
    )
    kept, _canaries = select_reuse(
        rows, tasks=bound, arms=setup.arms, planned=[c.key for c in planned], settings=settings
    )
    return set(kept), rows


def _spend_lines(todo: Sequence[Any], prior: Sequence[Any]) -> list[str]:
    from wfbench.app.sweep.spend import estimate

    estimates = estimate([(cell.task, cell.arm) for cell in todo], prior)
    known = [value for value in estimates if value is not None]
    total = f"${sum(known):.4f}" if known else "n/a"
    unknown = len(estimates) - len(known)
    lines = [
        f"estimated spend: {total} for {len(known)} cell(s) with a prior cost"
        + (f"; {unknown} cell(s) without one (n/a)" if unknown else "")
    ]
    lines += [
        f"  {cell.task}  {cell.arm}  run {cell.run}  est {'n/a' if value is None else f'${value:.4f}'}"
        for cell, value in zip(todo, estimates, strict=True)
    ]
    return lines
