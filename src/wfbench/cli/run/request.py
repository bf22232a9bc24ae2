"""The typed options of one ``wfbench run`` (:class:`RunRequest`): what the command parsed, handed to
the run flow, the dry run and the Ray driver (a module of its own, so none of them imports another
for the type)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from wfbench.app.cell.context import DEFAULT_DISK_BUDGET

if TYPE_CHECKING:
    from wfbench.adapters.sandbox.command_limits import ResourceLimits
    from wfbench.cli.options.executor import ExecutorChoice

__all__ = ["Agents", "Endpoint", "Executor", "Limits", "Outcome", "Pace", "Places", "RunRequest", "Selection"]


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
    fail_on: str | None = None
    dry_run: bool = False
    #: ``--json``: JSON events on stdout instead of the human view.
    json_events: bool = False
    #: ``--provider-log FILE``: every scripted-provider request appended there.
    provider_log: str | None = None
    #: ``--no-provider-script``: run a scripted corpus against ``--base-url``.
    no_provider_script: bool = False
    #: ``--tasks``: ids or globs.
    tasks: tuple[str, ...] = ()
    #: Parameter names given on the command line (the rest are defaults).
    explicit: frozenset[str] = frozenset()
    #: Per-command sandbox limits (``ResourceLimits``; None: the defaults).
    limits: ResourceLimits | None = None
    #: Bytes a workspace may grow during its sessions (None: unchecked).
    disk_budget: int | None = DEFAULT_DISK_BUDGET
    #: ``wfbench evolve``: skill files every arm evaluating them runs with (the promoted incumbent).
    incumbent_overlay: str | None = None
    #: ``wfbench evolve``: the model that proposed the candidate overlay.
    proposer_model: str | None = None
    #: ``--executor`` and its Ray options (an ``ExecutorChoice``; None: local threads).
    executor: ExecutorChoice | None = None
    #: ``--max-cost USD``: the budget of spend metered at the wire (None: none).
    max_cost: float | None = None
    #: ``--prices FILE``: a price table overriding the built-in one (None: the built-in one).
    prices: str | None = None
    #: ``--gateway PROVIDER``: the model gateway (LiteLLM) between the agent and the provider.
    gateway: str | None = None
    #: ``--allow-host-network``: ``network: host`` tasks or arms are allowed under CI.
    allow_host_network: bool = False
    #: Retries of a throttled (429/529) cell, and the first back-off in seconds.
    throttle_retries: int = 3
    throttle_backoff: float = 30.0

    @classmethod
    def of(  # noqa: PLR0917 - one part per group of options, each of its own type (mypy checks the order)
        cls,
        what: Selection,
        where: Places,
        agents: Agents,
        endpoint: Endpoint,
        pace: Pace,
        limits: Limits,
        executor: Executor,
        outcome: Outcome,
        *,
        explicit: frozenset[str],
    ) -> RunRequest:
        """The request of ``wfbench run``'s options in their parts (``explicit``: the ones typed).

        Raises:
            InputError: a limit is not a size (or count), or an executor option does not apply.
        """
        from wfbench.cli.options import executor as exe
        from wfbench.cli.options import limits as lim
        from wfbench.cli.options.run import split_list

        resource_limits = lim.resource_limits(
            memory=limits.memory,
            processes=limits.processes,
            open_files=limits.open_files,
            file_size=limits.file_size,
            tmpfs=limits.tmpfs,
        )
        choice = exe.ExecutorChoice.of(
            executor.name,
            ray_address=executor.address,
            node_loss_retries=executor.retries,
            cancel_grace_s=executor.grace,
            explicit=explicit,
        )
        return cls(
            corpus=what.corpus,
            arms=split_list(what.arms),
            runs=what.runs,
            tasks=split_list(what.tasks),
            model=what.model,
            out=where.out,
            resume=where.resume,
            reuse_results=where.reuse,
            candidate_overlay=where.overlay,
            sandbox=agents.sandbox,
            agent=agents.agent,
            provider_script=endpoint.script,
            base_url=endpoint.url,
            no_provider_script=endpoint.no_script,
            provider_log=endpoint.log,
            prices=endpoint.prices,
            gateway=endpoint.gateway,
            workers=pace.workers,
            window=pace.window,
            outage_streak=pace.outage_streak,
            throttle_retries=pace.retries,
            throttle_backoff=pace.backoff,
            timeout=limits.timeout,
            verify_timeout=limits.verify_timeout,
            limits=resource_limits,
            disk_budget=lim.size_option(limits.disk, "--disk-budget"),
            executor=choice,
            fail_on=outcome.fail_on,
            dry_run=outcome.dry_run,
            json_events=outcome.json_events,
            max_cost=outcome.max_cost,
            allow_host_network=outcome.allow_host_network,
            include_expensive=outcome.include_expensive,
            explicit=explicit,
        )


# --- the options of ``wfbench run`` in typed parts (what ``run`` hands over, checked by mypy) -------


@attrs.frozen(kw_only=True)
class Selection:
    """What the sweep runs: the corpus, ``--arms``, ``--runs``, ``--tasks``, ``--model`` as typed."""

    corpus: str | None
    arms: list[str] | None
    runs: int | None
    tasks: list[str] | None
    model: str | None


@attrs.frozen(kw_only=True)
class Places:
    """Where it reads and writes: ``--out``, ``--resume``, ``--reuse-results``, ``--candidate-overlay``."""

    out: str | None
    resume: str | None
    reuse: str | None
    overlay: str | None


@attrs.frozen(kw_only=True)
class Agents:
    """What runs the sessions: ``--sandbox`` and ``--agent``."""

    sandbox: str
    agent: str


@attrs.frozen(kw_only=True)
class Endpoint:
    """The model's endpoint: the provider script (``--no-provider-script``: none), ``--base-url``, its log."""

    script: str | None
    url: str | None
    no_script: bool
    log: str | None
    #: ``--prices FILE`` (None: the built-in tables).
    prices: str | None = None
    #: ``--gateway PROVIDER`` (None: no model gateway).
    gateway: str | None = None


@attrs.frozen(kw_only=True)
class Pace:
    """How fast: ``--workers``, ``--window``, ``--outage-streak``, the throttle's retries and back-off."""

    workers: int
    window: int | None
    outage_streak: int
    retries: int
    backoff: float


@attrs.frozen(kw_only=True)
class Limits:
    """The sandbox's per-command limits and the timeouts, as typed (sizes parsed by :meth:`RunRequest.of`)."""

    memory: str
    processes: str
    open_files: str
    file_size: str
    tmpfs: str
    disk: str
    timeout: float
    verify_timeout: float


@attrs.frozen(kw_only=True)
class Executor:
    """``--executor`` and its Ray options, as typed (checked by :meth:`RunRequest.of`)."""

    name: str
    address: str | None
    retries: int
    grace: float


@attrs.frozen(kw_only=True)
class Outcome:
    """What ends the sweep and how it shows: ``--fail-on``, ``--dry-run``, ``--json``, the guards."""

    fail_on: str | None
    dry_run: bool
    json_events: bool
    max_cost: float | None
    allow_host_network: bool
    include_expensive: bool
