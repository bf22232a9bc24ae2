"""The run use case: claim the sweep's directory, run one resolved sweep request, record its start.

``wfbench run`` (the CLI) parses its options and calls :func:`claimed_sweep` with its sweep
directory and a ``prepare`` step (its composition root: the corpus, the adapters, the endpoint),
then renders the result and maps errors to exit codes. The order is this module's: claim the
directory (lock, a resume's repairs, cancelled rows set aside), prepare inside the claim, record
the manifest once tasks are bound (:mod:`wfbench.app.sweep.start`), run every cell
(:func:`sweep`: the retry policy, the log beside the view, the call of
:func:`~wfbench.app.sweep.sweep.run_sweep`). It is tested with the in-package fakes
(``tests/unit/app/sweep/``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager

import attrs

from wfbench.app.cell.context import CellServices, RunSettings
from wfbench.app.cell.events import Fanout, SweepObserver
from wfbench.app.corpus.arms import Arm, Overlay
from wfbench.app.corpus.binding import BoundTask
from wfbench.app.corpus.corpus import Corpus
from wfbench.app.sweep.executor_sweep import DEFAULT_GRACE_S
from wfbench.app.sweep.progress import LogObserver
from wfbench.app.sweep.start import StartPorts, SweepStart, starter
from wfbench.app.sweep.sweep import ExecutorFactory, SweepConfig, SweepResult, SweepServices, run_sweep
from wfbench.domain.ports import CancelToken, ClaimableSweepDirectory, PriorResults, ResultStore
from wfbench.domain.sweep.pacing import RetryPolicy

__all__ = ["PreparedSweep", "SweepRequest", "claimed_sweep", "observed", "sweep"]

#: The longest wait before a throttled cell runs again, unless the first back-off is longer.
MAX_BACKOFF_S = 600.0


@attrs.frozen(kw_only=True)
class SweepRequest:
    """One sweep, resolved: what it runs (corpus, arms, runs, overlay), how, and its run-wide settings."""

    corpus: Corpus
    arms: tuple[Arm, ...]
    runs: int
    settings: RunSettings
    workers: int
    window: int | None = None
    outage_streak: int = 5
    overlay: Overlay | None = None
    overlay_digest: str | None = None
    #: ``--resume``: rows already in the store are kept; only the missing cells run.
    resume: bool = False
    include_expensive: bool = False
    #: ``--tasks``: ids or globs (empty: every task).
    tasks: tuple[str, ...] = ()
    #: ``wfbench evolve``: the model that proposed the candidate overlay.
    proposer_model: str | None = None
    #: Retries of a throttled (429/529) cell, and the first back-off in seconds (doubled per retry).
    throttle_retries: int = 3
    throttle_backoff_s: float = 30.0
    #: Seconds a cancelled cell of an executor gets before it is stopped by force.
    cancel_grace_s: float = DEFAULT_GRACE_S

    def retry_policy(self) -> RetryPolicy:
        """How throttled cells run again: at most :data:`MAX_BACKOFF_S` apart (or the first back-off)."""
        backoff = self.throttle_backoff_s
        return RetryPolicy(
            retries=self.throttle_retries, base_delay_s=backoff, max_delay_s=max(MAX_BACKOFF_S, backoff)
        )


def _ignore_bound(tasks: Sequence[BoundTask]) -> None:
    del tasks


def observed(view: SweepObserver, log: Callable[..., None]) -> SweepObserver:
    """What a sweep tells its events to: the ``view`` (what a person or a tool sees), then the log."""
    return Fanout((view, LogObserver(log)))


def sweep(
    request: SweepRequest,
    *,
    cell: CellServices,
    store: ResultStore,
    view: SweepObserver,
    log: Callable[..., None],
    cancel: CancelToken,
    on_bound: Callable[[Sequence[BoundTask]], None] = _ignore_bound,
    executor: ExecutorFactory | None = None,
    prior: PriorResults | None = None,
    provider_replies: Callable[[], Mapping[str, int]] | None = None,
    release_memory: Callable[[], object] | None = None,
) -> SweepResult:
    """Run the sweep ``request`` describes: its rows into ``store``, its reports into its directory.

    ``on_bound`` is called once the tasks are bound, before any cell runs (the CLI writes the run
    manifest there); ``executor`` builds where cells run (``None``: local threads, ``workers``);
    ``prior`` offers the comparator rows a sweep may reuse; ``provider_replies`` counts the
    scripted provider's replies by source; ``release_memory`` gives the process's free memory
    back every :data:`~wfbench.app.sweep.sweep.RELEASE_EVERY` rows.

    Raises:
        InputError: a bad corpus, arm or task selection, before any session.
    """
    config = SweepConfig(
        corpus=request.corpus,
        arms=request.arms,
        runs=request.runs,
        workers=request.workers,
        settings=request.settings,
        window=request.window,
        outage_streak=request.outage_streak,
        overlay=request.overlay,
        overlay_digest=request.overlay_digest,
        resume=request.resume,
        include_expensive=request.include_expensive,
        prior=prior,
        provider_replies=provider_replies,
        tasks=request.tasks,
        retry=request.retry_policy(),
        proposer_model=request.proposer_model,
    )
    services = SweepServices(
        cell,
        store,
        observed(view, log),
        log,
        on_bound=on_bound,
        executor=executor,
        cancel_grace_s=request.cancel_grace_s,
        release_memory=release_memory,
    )
    return run_sweep(config, services=services, cancel=cancel)


@attrs.frozen(kw_only=True)
class PreparedSweep:
    """A sweep built inside its claimed directory: the request, its ports, the start it records."""

    request: SweepRequest
    start: SweepStart
    cell: CellServices
    store: ResultStore
    view: SweepObserver
    log: Callable[..., None]
    #: Where a person's warnings go (the CLI: stderr).
    warn: Callable[[str], None]
    executor: ExecutorFactory | None = None
    prior: PriorResults | None = None
    provider_replies: Callable[[], Mapping[str, int]] | None = None
    #: Gives the process's free memory back, every so many rows (the CLI: ``malloc_trim``).
    release_memory: Callable[[], object] | None = None


def claimed_sweep(
    *,
    directory: ClaimableSweepDirectory,
    resume: bool,
    note: Callable[[str], None],
    cancel: CancelToken,
    prepare: Callable[[], AbstractContextManager[PreparedSweep]],
) -> SweepResult:
    """Claim ``directory``, build the sweep inside the claim (``prepare``), record its start, run it.

    ``note`` hears the claim's repairs (a resume's torn row, cancelled rows set aside). The
    manifest is written (a resume: checked) once the tasks are bound; a failure before that
    leaves the directory as it was (:meth:`~wfbench.domain.ports.SweepDirectory.claim`).

    Raises:
        InputError: the directory is another sweep's or holds rows a fresh sweep would append to;
            a resume drifted from its manifest; what ``prepare`` or :func:`sweep` raise.
        SweepStorageError: the directory refused a write (the sweep stopped; its rows are whole).
    """
    with directory.claim(resume=resume, note=note) as claim, prepare() as ready:
        out_dir = ready.request.settings.out_dir
        ports = StartPorts(
            directory=directory,
            claim=claim,
            store=ready.store,
            log=ready.log,
            warn=ready.warn,
            out_dir=out_dir,
        )
        return sweep(
            ready.request,
            cell=ready.cell,
            store=ready.store,
            view=ready.view,
            log=ready.log,
            cancel=cancel,
            on_bound=starter(ready.start, ports),
            executor=ready.executor,
            prior=ready.prior,
            provider_replies=ready.provider_replies,
            release_memory=ready.release_memory,
        )
