"""The driver side of ``wfbench run --executor ray``: connect, preflight the nodes, ship cells, take rows.

:class:`RaySweep` is entered once per sweep (after the adapters and the endpoint are built, before
the first cell). It attaches to the cluster at ``--ray-address``, ships the run-wide
:class:`~wfbench.cli.run.ray_node.NodeRuntime` once, and asks every node that offers ``wfbench_slot``
for its :class:`~wfbench.domain.sweep.nodes.NodeProbe`: a node whose wfbench, runtime identity or
agent differs from the driver's, or that cannot run a cell, is refused with a line naming it and
every reason, and gets no cell. No accepted node: the run stops before its first cell (exit 2).

Per cell it builds the :class:`~wfbench.cli.run.ray_node.NodeOrder`: the task's snapshot is bundled
and put into the object store once per snapshot, its hidden oracle once per task (the plan
itself carries no oracle bytes), and what a node returns is turned into the row here, on the
driver, which alone writes artifacts into the sweep directory (:meth:`RaySweep.deliver`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import attrs

from wfbench.app.cell.cell import CellPlan
from wfbench.app.cell.context import RunSettings
from wfbench.cli.run.ray_node import (
    NodeOrder,
    NodeResult,
    NodeRuntime,
    expected_agents,
    probe_node,
    run_order,
)
from wfbench.domain.errors import InputError
from wfbench.domain.results.rows import Row
from wfbench.domain.sweep.nodes import NodeExpectation, NodeProbe, judge_node, refusal_message
from wfbench.domain.sweep.scheduling import Cell, failed_cell_row
from wfbench.domain.workspace.oracle import OracleBundle

if TYPE_CHECKING:
    from wfbench.cli.run.request import RunRequest
    from wfbench.cli.run.setup import Setup

#: A node needs at least this much free disk for its workspaces (``--min-node-disk`` is not offered).
MIN_FREE_DISK = 2 * 1024**3
#: Seconds a cooperatively cancelled cell gets before its task is cancelled by force.
DEFAULT_CANCEL_GRACE_S = 30.0


@attrs.frozen
class RayOptions:
    """``--ray-address``, ``--node-loss-retries`` and ``--cancel-grace`` as given."""

    address: str
    node_loss_retries: int = 0
    cancel_grace_s: float = DEFAULT_CANCEL_GRACE_S
    min_free_disk_bytes: int = MIN_FREE_DISK


class ClusterGateway:
    """The driver's :class:`~wfbench.domain.ports.ModelGateway` on a cluster: the spend is every node's.

    Cells run on nodes, each through its own key proxy, and every proxy keeps its books in the
    sweep's shared ledger (:mod:`wfbench.adapters.executors.ray_ledger`). So the sweep's spend
    (the progress line, the summary's "metered at the wire this run", ``--max-cost``'s stop) is
    read there once the cluster is attached; before that it is the driver's own proxy's (nothing).
    """

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._meter: Any = None

    def attach(self, meter: Any) -> None:
        """Read the spend from ``meter`` (a :class:`~wfbench.adapters.executors.ray_ledger.ClusterMeter`)."""
        self._meter = meter

    def lease(self, label: str, *, model: str | None = None, scratch: str | None = None) -> Any:
        return self._inner.lease(label, model=model, scratch=scratch)

    def spend(self) -> Any:
        return (self._inner if self._meter is None else self._meter).spend()


class _NodeSetsItsOwn:
    """The shipped settings' sweep directory: a node writes into its own (``ray_node._run``)."""

    def write(self, rel: str, data: bytes) -> None:  # noqa: ARG002 -- the port's signature
        raise OSError(f"the driver's sweep directory is not shipped to nodes: {rel}")

    def read(self, rel: str) -> bytes | None:
        raise OSError(f"the driver's sweep directory is not shipped to nodes: {rel}")


def node_runtime(
    settings: RunSettings,
    *,
    sandbox: str,
    agent: str,
    arms: Sequence[Any],
    script_path: str | None,
    base_url: str | None,
    limits: Any,
    budget_usd: float | None = None,
) -> NodeRuntime:
    """The run-wide part every node receives: the settings without any secret, key or driver path."""
    script = None
    if script_path is not None:
        with open(script_path, "rb") as handle:
            script = handle.read()
    shipped = attrs.evolve(
        settings,
        out_dir="",
        work_dir="",
        agent_env={},
        secrets={},
        withheld=(),
        clock=None,
        command_env={},
        directory=_NodeSetsItsOwn(),
    )
    return NodeRuntime(
        shipped,
        sandbox,
        agent,
        tuple(arms),
        script=script,
        base_url=base_url,
        limits=limits,
        budget_usd=budget_usd,
    )


def expectation(settings: RunSettings, *, wfbench_version: str, min_free_disk: int) -> NodeExpectation:
    """What every node must equal: the driver's version, runtime identity and agents."""
    runtimes = settings.arm_runtimes
    return NodeExpectation(
        wfbench_version=wfbench_version,
        runtime_digest=settings.runtime_digest,
        arm_digests={arm: value.runtime_digest for arm, value in runtimes.items()},
        agents=expected_agents(runtimes),
        min_free_disk_bytes=min_free_disk,
    )


class RaySweep:
    """One sweep's use of a Ray cluster: the accepted nodes, the shipped objects, the executor."""

    def __init__(
        self,
        options: RayOptions,
        runtime: NodeRuntime,
        *,
        out_dir: str,
        note: Callable[[str], None],
        gateway: ClusterGateway | None = None,
    ) -> None:
        from wfbench.adapters.executors.ray_executor import RayCluster

        self.options = options
        self.cluster = RayCluster(options.address)
        self.runtime = runtime
        self.out_dir = os.path.abspath(out_dir)
        from wfbench.cli.bootstrap import sweep_directory

        self.directory = sweep_directory(self.out_dir)
        self.note = note
        self.gateway = gateway
        self._meter: Any = None
        self.nodes: tuple[Any, ...] = ()
        self._runtime_ref: Any = None
        self._snapshots: dict[str, Any] = {}
        self._oracles: dict[str, Any] = {}

    def start(self, expected: NodeExpectation) -> None:
        """Connect, ship the runtime, probe every slotted node, keep the accepted ones.

        Raises:
            InputError: no node offers ``wfbench_slot``, or every such node was refused.
        """
        self.cluster.connect()
        self._start_ledger()
        self._runtime_ref = self.cluster.put(self.runtime)
        candidates = self.cluster.nodes()
        if not candidates:
            raise InputError(
                f"no node of the Ray cluster at {self.options.address} offers a wfbench_slot"
                " (start workers with --resources '{\"wfbench_slot\": N}')",
                field="--ray-address",
            )
        accepted = []
        refusals = []
        for node, answer in self.cluster.on_each(candidates, probe_node, self._runtime_ref):
            probe = answer if isinstance(answer, NodeProbe) else None
            if probe is None:
                line = f"node {node.name} refused: its probe failed: {type(answer).__name__}: {answer}"
                refusals.append(line[:600])
                continue
            reasons = judge_node(attrs.evolve(probe, slots=node.slots), expected)
            if reasons:
                refusals.append(refusal_message(attrs.evolve(probe, name=node.name), reasons))
            else:
                accepted.append(node)
        for line in refusals:
            self.note(f"[node-refused] {line}")
        if not accepted:
            raise InputError(
                f"every node of the Ray cluster at {self.options.address} was refused: "
                + " | ".join(refusals),
                field="--ray-address",
            )
        self.nodes = tuple(accepted)
        slots = sum(node.slots for node in accepted)
        self.note(
            f"ray: {len(accepted)} node(s), {slots} slot(s): "
            + ", ".join(f"{n.name}×{n.slots}" for n in accepted)
        )

    def _start_ledger(self) -> None:
        """The sweep's shared books: every node's key proxy reserves and settles there."""
        from wfbench.adapters.gateway.price_table import builtin_prices

        prices = builtin_prices().prices_for(self.runtime.settings.model)
        keeper, self._meter = self.cluster.start_ledger(self.runtime.budget_usd, prices)
        self.runtime = attrs.evolve(self.runtime, ledger=keeper)
        if self.gateway is not None:
            self.gateway.attach(self._meter)

    def executor(
        self,
        plan_for: Callable[[Cell], CellPlan],
        *,
        on_start: Callable[[Cell], None] | None,
        may_start: Callable[[], bool] | None = None,
    ) -> Any:
        """The :class:`~wfbench.adapters.executors.ray_executor.RayExecutor` for this sweep's cells."""
        from wfbench.adapters.executors.ray_executor import RayExecutor

        def order_for(cell: Cell) -> tuple[object, ...]:
            return (self._runtime_ref, self.order(cell, plan_for(cell)))

        return RayExecutor(
            self.nodes,
            task=run_order,
            order_for=order_for,
            deliver=self.deliver,
            node_loss_retries=self.options.node_loss_retries,
            on_start=on_start,
            may_start=may_start,
            note=self.note,
        )

    def order(self, cell: Cell, plan: CellPlan) -> NodeOrder:
        """``plan`` for a node: the snapshot and the oracle as object-store handles, no oracle bytes."""
        from wfbench.adapters.repo.bundle import bundle_snapshot

        task = plan.task
        snapshot: tuple[Any, ...] = ()
        if task.snapshot is not None:
            key = task.snapshot.commit
            if key not in self._snapshots:
                self._snapshots[key] = self.cluster.put(bundle_snapshot(task.snapshot))
            snapshot = (self._snapshots[key],)
        if task.spec.id not in self._oracles:
            self._oracles[task.spec.id] = self.cluster.put(task.hidden_oracle())
        shipped = attrs.evolve(task, oracle=OracleBundle(()), oracle_loader=None)
        return NodeOrder(cell, attrs.evolve(plan, task=shipped), snapshot, (self._oracles[task.spec.id],))

    def deliver(self, cell: Cell, value: object) -> Row:
        """The row of what a node returned; its artifacts written into the sweep directory first."""
        if not isinstance(value, NodeResult) or value.row.cell != cell.key:
            got = type(value).__name__
            return failed_cell_row(cell, f"the node returned a {got}, not the cell's result", cancelled=False)
        try:
            for rel, data in value.artifacts:
                self._write(rel, data)
        except (OSError, ValueError) as exc:
            return failed_cell_row(cell, f"writing the cell's artifacts failed: {exc}", cancelled=False)
        return value.row

    def _write(self, rel: str, data: bytes) -> None:
        parts = rel.split("/")
        if os.path.isabs(rel) or parts[0] != "cells" or any(p in ("", ".", "..") for p in parts):
            raise ValueError(f"refusing an artifact path outside cells/: {rel!r}")
        self.directory.write(rel, data)

    def close(self) -> None:
        """Read the shared books one last time (the summary's wire spend), then detach."""
        if self._meter is not None:
            self._meter.close()
        self.cluster.close()


@contextmanager
def ray_sweep(
    options: RayOptions,
    runtime: NodeRuntime,
    expected: NodeExpectation,
    *,
    out_dir: str,
    note: Callable[[str], None],
    gateway: ClusterGateway | None = None,
) -> Iterator[RaySweep]:
    """A started :class:`RaySweep`, detached when the block ends however it ends."""
    sweep = RaySweep(options, runtime, out_dir=out_dir, note=note, gateway=gateway)
    try:
        sweep.start(expected)
        yield sweep
    finally:
        sweep.close()


def wfbench_version() -> str:
    """This driver's wfbench version (what every node must run)."""
    from importlib import metadata

    return metadata.version("wfbench")


@contextmanager
def executor_for(
    request: RunRequest,
    setup: Setup,
    settings: RunSettings,
    *,
    out_dir: str,
    note: Callable[[str], None],
    gateway: ClusterGateway | None = None,
) -> Iterator[Callable[[Any], Any] | None]:
    """The executor factory ``wfbench run`` hands the sweep: ``None`` (local threads) or the cluster's.

    For ``--executor ray`` the cluster is attached and every node probed here, before the first
    cell; the connection ends with the block. ``gateway`` (the sweep's, from :func:`gateway_for`)
    reads its spend from the cluster's shared books from then on.

    Raises:
        InputError: as :meth:`RaySweep.start`, or Ray is not installed.
    """
    choice = request.executor
    if choice is None or choice.name != "ray":
        yield None
        return
    if choice.ray_address is None:  # ExecutorChoice.of refuses it; a hand-built request may not
        raise InputError("--executor ray needs --ray-address HOST:PORT", field="--ray-address")
    runtime = node_runtime(
        settings,
        sandbox=request.sandbox,
        agent=request.agent,
        arms=setup.arms,
        script_path=setup.provider_script,
        base_url=request.base_url,
        limits=request.limits,
        budget_usd=request.max_cost,
    )
    options = RayOptions(choice.ray_address, choice.node_loss_retries, choice.cancel_grace_s)
    expected = expectation(
        settings, wfbench_version=wfbench_version(), min_free_disk=options.min_free_disk_bytes
    )
    with ray_sweep(options, runtime, expected, out_dir=out_dir, note=note, gateway=gateway) as sweep:
        yield lambda jobs: sweep.executor(jobs.plan_for, on_start=jobs.on_start, may_start=jobs.may_start)


def gateway_for(request: RunRequest, gateway: Any) -> Any:
    """The sweep's gateway: the endpoint's own, or on a cluster one whose spend is every node's."""
    choice = request.executor
    if gateway is None or choice is None or choice.name != "ray":
        return gateway
    return ClusterGateway(gateway)
