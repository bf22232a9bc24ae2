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

__all__ = ["RunRequest"]


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
