"""The sweep use case: load → bind → plan → run (packed, folded in order) → finish.

:func:`run_sweep` receives its ports (:class:`SweepServices`) and a frozen
:class:`SweepConfig`; it never builds adapters. A bad corpus raises :class:`InputError`
before any session. Rows are persisted as they are folded (one fsynced line each); the
reports, ``promotion.json`` and arm health are written at the end, also after a breaker trip
or a cancellation. The exit code: 0, 1 (breaker trip or an UNUSABLE arm), 130 (cancelled).
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Mapping, Sequence

import attrs

from wfbench.app.cell.cell import CellPlan, run_cell
from wfbench.app.cell.context import CellServices, RunSettings
from wfbench.app.cell.events import (
    CellFinished,
    CellStarted,
    Note,
    SweepFinished,
    SweepObserver,
    SweepStarted,
)
from wfbench.app.corpus.arms import Arm, Overlay
from wfbench.app.corpus.binding import BoundTask, bind_tasks, prepare_snapshots
from wfbench.app.corpus.corpus import Corpus, TaskSpec
from wfbench.app.corpus.skill_bindings import sweep_base_digests
from wfbench.app.sweep import concurrency
from wfbench.app.sweep.budget import BudgetStop, metered_spend, spend_fields
from wfbench.app.sweep.environments import prepare_environments
from wfbench.app.sweep.executor_sweep import DEFAULT_GRACE_S, ExecutorPacing, run_on_executor
from wfbench.app.sweep.finish import FinishInput, FinishOutcome, finish_sweep
from wfbench.app.sweep.reuse_plan import ReusePlan, plan_reuse
from wfbench.app.sweep.scheduler import LimitEvent, SweepOutcome, run_packed
from wfbench.app.sweep.spend import spend_of
from wfbench.domain.errors import InputError
from wfbench.domain.metering.evidence import Spend as MeteredSpend
from wfbench.domain.ports import CancelToken, CellExecutor, PriorResults, ResultStore
from wfbench.domain.results.rows import Row
from wfbench.domain.sweep.pacing import RetryPolicy
from wfbench.domain.sweep.resume import is_cancellation_residue
from wfbench.domain.sweep.scheduling import Cell, canonical_order, longest_first
from wfbench.domain.sweep.task_selection import select_ids


@attrs.frozen
class SweepConfig:
    """What to run and how (command-line options merged with the corpus defaults)."""

    corpus: Corpus
    arms: tuple[Arm, ...]
    runs: int
    workers: int
    settings: RunSettings
    window: int | None = None
    outage_streak: int = 5
    overlay: Overlay | None = None
    overlay_digest: str | None = None
    resume: bool = False
    include_expensive: bool = False
    #: ``--tasks``: ids or globs of the tasks to run (empty: all).
    tasks: tuple[str, ...] = ()
    #: ``--reuse-results DIR``: a prior sweep whose comparator rows may stand in for paid cells.
    prior: PriorResults | None = None
    #: How throttled (429/529) cells run again (``None``: the scheduler's default policy).
    retry: RetryPolicy | None = None
    #: The model that proposed the overlay (``wfbench evolve``); None for a manual overlay.
    proposer_model: str | None = None
    #: The scripted provider's reply counts by source, read at the end (None: a real endpoint).
    provider_replies: Callable[[], Mapping[str, int]] | None = None


#: Rows folded between two calls of :attr:`SweepServices.release_memory` (a call takes milliseconds).
RELEASE_EVERY = 100

#: The exit code of a finished sweep whose decision ``--fail-on`` names (``cli.exit_codes.DECISION``).
DECISION_EXIT = 3


def _fails_on(decisions: Sequence[tuple[str, str]], fail_on: frozenset[str]) -> bool:
    """``--fail-on`` names a decision; with no decision at all, ``insufficient_evidence`` stands in."""
    judged = [kind for _, kind in decisions] or ["insufficient_evidence"]
    return bool(fail_on) and any(kind in fail_on for kind in judged)


def _ignore_bound(tasks: Sequence[BoundTask]) -> None:
    del tasks


@attrs.frozen
class CellJobs:
    """What an executor needs from the sweep: each cell's plan, and whom to tell when one starts."""

    plan_for: Callable[[Cell], CellPlan]
    on_start: Callable[[Cell], None]
    #: Asked just before a cell starts; False and it never starts (``--max-cost`` reached).
    may_start: Callable[[], bool] | None = None


#: Builds the executor a sweep's cells run on (``None`` in :class:`SweepServices`: local threads).
ExecutorFactory = Callable[[CellJobs], CellExecutor]


@attrs.frozen
class SweepServices:
    """The ports of a sweep: the cell's ports, the result store, progress and a log callback.

    ``on_bound`` is called once the tasks are bound and prepared, before any cell runs (the CLI
    writes the run manifest there, or refuses a resume whose tasks drifted by raising).
    """

    cell: CellServices
    store: ResultStore
    progress: SweepObserver
    log: Callable[..., None] = attrs.field(default=lambda *_args, **_fields: None)
    on_bound: Callable[[Sequence[BoundTask]], None] = _ignore_bound
    #: Where cells run: ``None`` is this machine's thread pool (``workers``); otherwise a factory
    #: such as the Ray executor's (the fold, the breaker and every row stay here either way).
    executor: ExecutorFactory | None = None
    #: Seconds a cancelled cell of an executor gets before it is stopped by force.
    cancel_grace_s: float = DEFAULT_GRACE_S
    #: Gives the process's free memory back (the CLI: ``malloc_trim``); called on the folding
    #: thread after every :data:`RELEASE_EVERY` rows, so a long sweep's resident memory stays flat.
    release_memory: Callable[[], object] | None = None


@attrs.frozen
class SweepResult:
    """How a sweep ended."""

    exit_code: int
    rows: tuple[Row, ...]
    tripped: bool
    cancelled: bool
    unusable: tuple[str, ...]
    #: ``(candidate arm, decision)`` for each candidate judged, in arm order.
    decisions: tuple[tuple[str, str], ...] = ()
    #: Cells the sweep planned, and how many of them have a row that is evidence (not cancelled).
    planned: int = 0
    completed: int = 0
    #: ``--max-cost`` was reached: cells were held back.
    budget_stopped: bool = False
    #: This run's spend metered at the wire (a ``domain.metering`` ``Spend``; None: no meter).
    metered: MeteredSpend | None = None


def selected_tasks(
    corpus: Corpus, *, include_expensive: bool, only: Sequence[str] = ()
) -> tuple[TaskSpec, ...]:
    """The corpus's tasks in file order: those ``only`` selects (``--tasks``), without expensive ones
    unless asked (a task named exactly by ``only`` is kept even if expensive).

    Raises:
        InputError: an id or glob of ``only`` matches no task (field ``--tasks``), or nothing is left.
    """
    chosen = select_ids([t.id for t in corpus.tasks], only)
    named = {pattern for pattern in only if pattern in chosen}
    tasks = tuple(
        t for t in corpus.tasks if t.id in chosen and (include_expensive or not t.expensive or t.id in named)
    )
    if not tasks:
        raise InputError("no tasks selected after expensive-task filtering", source=corpus.path)
    return tasks


def plan_cells(tasks: Sequence[BoundTask], arms: Sequence[Arm], runs: int) -> tuple[Cell, ...]:
    """Canonical order (task-major, run-major, arm-minor), only arms that fit each task's kind."""
    kinds = {t.spec.id: t.spec.kind for t in tasks}
    by_name = {arm.name: arm for arm in arms}
    cells = canonical_order([t.spec.id for t in tasks], [a.name for a in arms], runs)
    return tuple(c for c in cells if by_name[c.arm].kind is kinds[c.task])


def run_sweep(config: SweepConfig, *, services: SweepServices, cancel: CancelToken) -> SweepResult:
    """Run the whole sweep and write its outputs; see the module docstring for the exit code."""
    note = _noter(services)
    prepared = _prepared_tasks(config, services, cancel, note)
    cells = plan_cells(prepared, config.arms, config.runs)
    earlier = services.store.rows() if config.resume else ()
    reuse, reused, todo = _cells_to_run(config, services, cells, prepared, earlier, note)
    started = SweepStarted(
        planned=len(cells),
        to_run=len(todo),
        already=len(cells) - len(todo) - reused,
        reused=reused,
        workers=config.workers,
        arms=tuple(a.name for a in config.arms),
        out_dir=config.settings.out_dir,
        spent_before_usd=spend_of(earlier).usd,
        expected_cell_s=_expected_cell_s(earlier, reuse),
    )
    outcome = _run_cells(config, services, prepared, todo, cancel, started=started)
    rows = services.store.rows()
    finished = _finish(config, services, prepared, outcome, rows, note)
    planned = {cell.key for cell in cells}
    return _result(services, finished, outcome, rows, planned=planned, fail_on=config.settings.fail_on)


def _prepared_tasks(
    config: SweepConfig, services: SweepServices, cancel: CancelToken, note: Callable[..., None]
) -> tuple[BoundTask, ...]:
    """Select the tasks, bind them, prepare their snapshots and environments (failures noted)."""
    corpus = config.corpus
    tasks = selected_tasks(corpus, include_expensive=config.include_expensive, only=config.tasks)
    note(
        f"selected {len(tasks)} task(s): {', '.join(t.id for t in tasks)}; arms: "
        + ", ".join(a.name for a in config.arms)
    )
    bound = bind_tasks(corpus, tasks, workspaces=services.cell.workspaces)
    work_dir = config.settings.work_dir
    prepared = prepare_snapshots(bound, workspaces=services.cell.workspaces, parent=work_dir)
    prepared = prepare_environments(
        prepared, environments=services.cell.environments, cancel=cancel, note=note
    )
    for task in prepared:
        if task.failure:
            note(f"[{task.spec.id}] {task.failure}", "warning")
    services.on_bound(prepared)
    return prepared


def _cells_to_run(  # noqa: PLR0917 - the sweep's phases hand these on
    config: SweepConfig,
    services: SweepServices,
    cells: Sequence[Cell],
    prepared: Sequence[BoundTask],
    earlier: Sequence[Row],
    note: Callable[..., None],
) -> tuple[ReusePlan, int, tuple[Cell, ...]]:
    """Store the prior sweep's reusable rows; the reuse plan, how many rows it gave, the cells left to run."""
    done = {row.cell for row in earlier}
    reuse = ReusePlan()
    if config.prior is not None:
        reuse = plan_reuse(
            config.prior,
            tasks=prepared,
            arms=config.arms,
            planned=[c.key for c in cells],
            settings=config.settings,
            note=note,
        )
    reused = 0
    for row in reuse.rows:
        if row.cell not in done:
            services.store.append(row)
            done.add(row.cell)
            reused += 1
    todo = longest_first((c for c in cells if c.key not in done), reuse.durations or None)
    if done:
        note(f"{len(cells) - len(todo)} cell(s) already have a row; running {len(todo)}")
    return reuse, reused, todo


def _finish(  # noqa: PLR0917 - the sweep's phases hand these on
    config: SweepConfig,
    services: SweepServices,
    prepared: Sequence[BoundTask],
    outcome: _Outcome,
    rows: Sequence[Row],
    note: Callable[..., None],
) -> FinishOutcome:
    """Write the sweep's reports and promotion evidence from its rows."""
    corpus = config.corpus
    base_digests, unbound = sweep_base_digests(
        prepared, config.arms, config.overlay, corpus.skill_mirrors, config.settings.incumbent_overlay
    )
    if unbound is not None and config.overlay is not None:
        note(f"[promotion] target_base_digests left empty (apply will refuse): {unbound}", "warning")
    replies = None if config.provider_replies is None else dict(config.provider_replies())
    if replies is not None:
        level = "warning" if replies.get("default") else "info"
        services.log("provider_replies", level=level, counts=replies)
    finish = FinishInput(
        corpus=corpus,
        tasks=prepared,
        arms=config.arms,
        rows=rows,
        out_dir=config.settings.out_dir,
        directory=config.settings.directory,
        model=config.settings.model,
        tripped=outcome.tripped,
        cancelled=outcome.cancelled,
        budget_stopped=outcome.budget_stopped,
        spend=metered_spend(services.cell.gateway),
        overlay=config.overlay,
        overlay_digest=config.overlay_digest,
        now=config.settings.now(),
        effort=config.settings.effort,
        target_base_digests=base_digests,
        proposer_model=config.proposer_model,
        provider_replies=replies,
    )
    return finish_sweep(finish, note=note)


def _result(
    services: SweepServices,
    finished: FinishOutcome,
    outcome: _Outcome,
    rows: tuple[Row, ...],
    *,
    planned: set[tuple[str, str, int]],
    fail_on: frozenset[str],
) -> SweepResult:
    """The exit code (see the module docstring), logged and reported to progress, and the result."""
    unusable = finished.unusable
    code = (
        1 if unusable or outcome.tripped else 130 if outcome.cancelled else 1 if outcome.budget_stopped else 0
    )
    if code == 0 and _fails_on(finished.decisions, fail_on):
        code = DECISION_EXIT
    services.log(
        "sweep_finished",
        level="info",
        exit_code=code,
        rows=len(rows),
        tripped=outcome.tripped,
        **spend_fields(metered_spend(services.cell.gateway)),
    )
    completed = sum(1 for row in rows if row.cell in planned and not is_cancellation_residue(row))
    services.progress.notify(
        SweepFinished(code, outcome.cancelled, outcome.tripped, finished.decisions, len(planned), completed)
    )
    services.progress.close()
    return SweepResult(
        code,
        rows,
        outcome.tripped,
        outcome.cancelled,
        unusable,
        finished.decisions,
        len(planned),
        completed,
        budget_stopped=outcome.budget_stopped,
        metered=metered_spend(services.cell.gateway),
    )


def _noter(services: SweepServices) -> Callable[..., None]:
    def note(text: str, level: str = "info") -> None:
        services.progress.notify(Note(text, level))

    return note


def _expected_cell_s(earlier: Sequence[Row], reuse: ReusePlan) -> float | None:
    """A cell's expected wall time before any finishes: the median of the resumed rows', else reuse's."""
    walls = [
        float(w)
        for w in (row.extra.get("cell_wall_s") for row in earlier)
        if isinstance(w, int | float) and not isinstance(w, bool)
    ]
    if walls:
        return statistics.median(walls)
    return statistics.median(reuse.durations.values()) if reuse.durations else None


def _run_cells(
    config: SweepConfig,
    services: SweepServices,
    tasks: Sequence[BoundTask],
    cells: Sequence[Cell],
    cancel: CancelToken,
    *,
    started: SweepStarted,
) -> _Outcome:
    by_task = {t.spec.id: t for t in tasks}
    by_arm = {a.name: a for a in config.arms}
    os.makedirs(config.settings.out_dir, exist_ok=True)
    observe = services.progress.notify
    cell_services = attrs.evolve(services.cell, observe=observe)

    def plan_of(cell: Cell) -> CellPlan:
        arm = by_arm[cell.arm]
        overlay = config.overlay if arm.is_candidate else None
        return CellPlan(by_task[cell.task], arm, cell.run, overlay, config.overlay_digest)

    def one(cell: Cell, token: CancelToken) -> Row:
        row = run_cell(plan_of(cell), services=cell_services, settings=config.settings, cancel=token)
        spend = spend_fields(metered_spend(services.cell.gateway))
        where = {"task": cell.task, "arm": cell.arm, "run": cell.run}
        services.log("cell_finished", level="info", **where, **_log_fields(row), **spend)
        return row

    release = _every(RELEASE_EVERY, services.release_memory)

    def on_row(row: Row) -> None:
        services.store.append(row)
        observe(CellFinished(row))
        release()

    budget = BudgetStop(services.cell.gateway)
    history: list[dict[str, object]] = []

    def on_limit(event: LimitEvent) -> None:
        record = concurrency.limit_record(event)
        history.append(record)
        level = "warning" if event.change.new < event.change.old else "info"  # throttled down: worth a look
        services.log("concurrency_limit", level=level, **record)
        status = "" if record["status"] is None else f" {record['status']}"
        services.progress.notify(
            Note(
                f"[concurrency] limit {record['old']} → {record['new']} ({record['reason']}{status} on"
                f" {record['task']}/{record['arm']}/run {record['run']})",
                level,
            )
        )

    observe(started)
    try:
        if services.executor is not None:
            paced = ExecutorPacing(retry=config.retry, on_limit=on_limit)
            jobs = _Elsewhere(plan_of, budget.may_start, paced)
            elsewhere = _run_elsewhere(config, services, cells, cancel, jobs=jobs)
            concurrency.write_history(
                config.settings.directory, history, workers=elsewhere.slots, retries=elsewhere.outcome.retries
            )
            return _noted(services, elsewhere.outcome, cancel, budget)
        result = run_packed(
            cells,
            run_cell=one,
            on_row=on_row,
            workers=config.workers,
            window=config.window,
            outage_streak=config.outage_streak,
            cancel=cancel,
            on_start=lambda cell: observe(CellStarted((cell.task, cell.arm, cell.run))),
            may_start=budget.may_start,
            on_limit=on_limit,
            retry=config.retry,
            keep_rows=False,  # persisted as they come; a 10,000-cell sweep holds none of them
        )
    finally:
        services.progress.close()
    concurrency.write_history(
        config.settings.directory, history, workers=config.workers, retries=result.retries
    )
    return _noted(services, result, cancel, budget)


def _every(rows: int, call: Callable[[], object] | None) -> Callable[[], None]:
    """A callable that calls ``call`` on every ``rows``-th of its own calls (never when None)."""
    folded = 0

    def tick() -> None:
        nonlocal folded
        folded += 1
        if call is not None and folded % max(rows, 1) == 0:
            call()

    return tick


@attrs.frozen
class _Elsewhere:
    """What a sweep on an executor is run with: the plans, the budget's admission, the pacing."""

    plan_for: Callable[[Cell], CellPlan]
    may_start: Callable[[], bool]
    pacing: ExecutorPacing


@attrs.frozen
class _ElsewhereOutcome:
    outcome: SweepOutcome
    slots: int


def _run_elsewhere(
    config: SweepConfig,
    services: SweepServices,
    cells: Sequence[Cell],
    cancel: CancelToken,
    *,
    jobs: _Elsewhere,
) -> _ElsewhereOutcome:
    """The cells on ``services.executor`` (a cluster): same fold and pacing, rows persisted here in order."""
    assert services.executor is not None

    observe = services.progress.notify

    def on_start(cell: Cell) -> None:
        observe(CellStarted((cell.task, cell.arm, cell.run)))

    def on_row(row: Row) -> None:
        task, arm, run = row.cell
        node = row.extra.get("node")
        services.log(
            "cell_finished", level="info", task=task, arm=arm, run=run, node=node, **_log_fields(row)
        )
        services.store.append(row)
        observe(CellFinished(row))

    executor = services.executor(CellJobs(jobs.plan_for, on_start, may_start=jobs.may_start))
    slots = executor.slots
    outcome = run_on_executor(
        cells,
        executor=executor,
        on_row=on_row,
        cancel=cancel,
        window=config.window,
        outage_streak=config.outage_streak,
        grace_s=services.cancel_grace_s,
        pacing=jobs.pacing,
        keep_rows=False,
    )
    return _ElsewhereOutcome(outcome, slots)


def _noted(
    services: SweepServices, result: SweepOutcome, cancel: CancelToken, budget: BudgetStop
) -> _Outcome:
    if result.tripped:
        services.log("breaker_tripped", level="error", limit=result.breaker.limit, not_run=result.not_run)
        services.progress.notify(
            Note(
                f"[systemic-outage] {result.breaker.limit} consecutive unusable-evidence failures — aborting"
                " the remaining sweep; report and promotion are written from partial evidence and the run"
                " exits non-zero.",
                "error",
            )
        )
    if (budget_note := budget.note()) is not None:
        services.log("max_cost_reached", level="warning", held_back=budget.held_back)
        services.progress.notify(Note(budget_note, "warning"))
    return _Outcome(
        tripped=result.tripped, cancelled=result.cancelled or cancel.is_set(), budget_stopped=budget.stopped
    )


@attrs.frozen
class _Outcome:
    tripped: bool
    cancelled: bool
    budget_stopped: bool = False


def _log_fields(row: Row) -> dict[str, object]:
    return {
        "resolved": row.resolved,
        "error_kind": row.error_kind.value if row.error_kind else None,
        "cost_usd": row.cost_usd,
        "duration_s": row.duration_s,
        "cell_wall_s": row.extra.get("cell_wall_s"),
    }
