"""Cells on a Ray cluster: the :class:`~wfbench.domain.ports.CellExecutor` for ``--executor ray``.

Ray is an optional extra (``pip install 'wfbench[ray]'``); it is imported only when a cluster is
used. The driver keeps the fold, the breaker and every row; this adapter only places cells on
nodes and turns what comes back into rows (``docs/distributed.md``):

* **Placement.** Each cell is one Ray task pinned to an accepted node (hard node affinity) that
  requires one ``wfbench_slot`` and no CPU, so only nodes an operator prepared get cells and a
  node never runs more cells than it offers slots. A cell is dispatched only when a slot is free
  (the node with the most free slots first); the rest wait here, in submission order.
* **Pacing.** The driver's fold paces the cells (``app/sweep/executor_sweep.py``): a throttled
  cell comes back with a back-off ``delay_s`` and waits here, on the driver, until it is due. A
  cell is admitted when it is dispatched: ``may_start`` (``--max-cost``) refuses it there, and a
  refused cell never starts (no row).
* **No silent re-runs.** ``max_retries=0``: Ray's default would re-pay a whole session after a
  node loss. A cell whose node died is an ``infra-error`` row the breaker sees, and the node gets
  no further cells; ``node_loss_retries`` resubmits such a cell explicitly, and its row records
  the node of every attempt (``node_attempts``).
* **Cancellation.** ``cancel(grace_s)`` drops the queued cells (no row: they never started) and
  sends every running task a cooperative cancel (the node's cell waits in a polling loop, so it
  stops at once, like a local cell); a task still running after ``grace_s`` is cancelled by
  force. Every cell the driver cancelled is recorded ``cancelled`` whatever its task returned
  (:func:`wfbench.domain.sweep.nodes.cancelled_row`).

Ray's errors are translated here, at the edge: a connection failure is an :class:`InputError`
naming ``--ray-address``; a lost node, a crashed worker or an unschedulable task is a row.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from wfbench.domain.errors import InputError
from wfbench.domain.results.rows import Row
from wfbench.domain.sweep.nodes import cancelled_row, node_loss_row, retry_after_loss
from wfbench.domain.sweep.scheduling import DETAIL_LIMIT, Cell, CellFinished, failed_cell_row

#: The custom resource a node offers per cell it may run (``ray start --resources``).
SLOT_RESOURCE = "wfbench_slot"
#: How long a force-cancelled task may take to come back before its cell is given up as cancelled.
ABANDON_AFTER_S = 60.0
#: A probe of one node must answer within this.
PROBE_TIMEOUT_S = 300.0
INSTALL_HINT = "the Ray executor needs the ray extra: pip install 'wfbench[ray]'"
AUTH_HINT = (
    " (a cluster with token auth needs RAY_AUTH_MODE=token and the cluster's token on this machine:"
    " ~/.ray/auth_token or RAY_AUTH_TOKEN_PATH; docs/distributed.md)"
)


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise InputError(INSTALL_HINT, field="--executor") from None
    return ray


@attrs.frozen
class ClusterNode:
    """A node of the cluster that offers ``slots`` wfbench slots; ``name`` is how messages name it."""

    node_id: str
    name: str
    slots: int


class RayCluster:
    """The driver's connection to one Ray cluster (always an explicit address: never "the last one")."""

    def __init__(self, address: str) -> None:
        if not address.strip() or address.strip() == "auto":
            raise InputError(
                "needs an explicit cluster address (host:port or ray://host:port)", field="--ray-address"
            )
        self.address = address.strip()
        self._connected = False

    def connect(self) -> None:
        """Attach this process to the cluster as its driver.

        Raises:
            InputError: Ray is not installed, or the cluster cannot be reached (``--ray-address``).
        """
        ray = _ray()
        try:
            ray.init(address=self.address, namespace="wfbench", log_to_driver=False, configure_logging=False)
        except (ConnectionError, RuntimeError, ValueError, ray.exceptions.RayError) as exc:
            raise InputError(
                f"cannot reach the Ray cluster at {self.address}: {_first_line(exc)}{AUTH_HINT}",
                field="--ray-address",
            ) from None
        self._connected = True

    def close(self) -> None:
        """Detach from the cluster; Ray ends every task this driver still owns."""
        if self._connected:
            _ray().shutdown()
            self._connected = False

    def nodes(self) -> tuple[ClusterNode, ...]:
        """The alive nodes that offer at least one slot, in the cluster's order."""
        found = []
        for raw in _ray().nodes():
            slots = int(raw.get("Resources", {}).get(SLOT_RESOURCE, 0))
            if raw.get("Alive") and slots > 0:
                node_id = str(raw["NodeID"])
                host = raw.get("NodeManagerHostname") or raw.get("NodeManagerAddress") or "?"
                found.append(ClusterNode(node_id, f"{host}/{node_id[:8]}", slots))
        return tuple(found)

    def start_ledger(self, budget_usd: float | None, prices: Any) -> tuple[Any, Any]:
        """The sweep's shared budget ledger (:func:`~wfbench.adapters.executors.ray_ledger.open_ledger`).

        Raises:
            InputError: the ledger did not start (``--ray-address``).
        """
        from wfbench.adapters.executors.ray_ledger import open_ledger

        try:
            return open_ledger(_ray(), budget_usd, prices)
        except Exception as exc:
            raise InputError(
                f"the sweep's budget ledger did not start on the cluster at {self.address}:"
                f" {type(exc).__name__}: {_first_line(exc)}",
                field="--ray-address",
            ) from None

    def put(self, value: object) -> Any:
        """Store ``value`` once in the object store; every task given the handle shares that copy."""
        return _ray().put(value)

    def on_each(
        self, nodes: Sequence[ClusterNode], fn: Callable[..., object], *args: object
    ) -> list[tuple[ClusterNode, object]]:
        """Run ``fn(*args)`` once on every node (pinned, no slot taken); each value or the error it raised."""
        ray = _ray()
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        remote = ray.remote(fn)
        refs = [
            remote.options(
                num_cpus=0,
                max_retries=0,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node.node_id, soft=False),
            ).remote(*args)
            for node in nodes
        ]
        answers: list[tuple[ClusterNode, object]] = []
        deadline = time.monotonic() + PROBE_TIMEOUT_S
        for node, ref in zip(nodes, refs, strict=True):
            try:
                answers.append((node, ray.get(ref, timeout=max(1.0, deadline - time.monotonic()))))
            except Exception as exc:
                ray.cancel(ref, force=True)
                answers.append((node, exc))
        return answers


@attrs.define
class _Running:
    index: int
    cell: Cell
    node: ClusterNode
    attempts: tuple[str, ...]
    cancel_deadline: float | None = None
    forced_at: float | None = None


@attrs.define
class _Queued:
    index: int
    cell: Cell
    attempts: tuple[str, ...] = ()
    #: ``time.monotonic()`` before which the cell may not start (a throttled retry's back-off).
    due: float = 0.0


Deliver = Callable[[Cell, object], Row]
OrderFor = Callable[[Cell], tuple[object, ...]]


class RayExecutor:
    """Runs cells as Ray tasks on accepted nodes (see the module docstring).

    ``task`` is the node-side function (importable on every node); ``order_for(cell)`` gives its
    arguments; ``deliver(cell, value)`` turns what a task returned into the cell's row (the
    driver writes the artifacts there). ``on_start`` is told when a cell is dispatched and
    ``note`` when a node is lost.
    """

    def __init__(
        self,
        nodes: Sequence[ClusterNode],
        *,
        task: Callable[..., object],
        order_for: OrderFor,
        deliver: Deliver,
        node_loss_retries: int = 0,
        on_start: Callable[[Cell], None] | None = None,
        may_start: Callable[[], bool] | None = None,
        note: Callable[[str], None] = lambda _text: None,
        ray_api: Any = None,
        affinity: Callable[[str], object] | None = None,
    ) -> None:
        """``ray_api`` and ``affinity`` replace the ``ray`` module and its node-affinity strategy (tests).

        ``may_start`` is asked just before a cell's first dispatch; ``False`` and it never starts.
        """
        if node_loss_retries < 0:
            raise ValueError(f"node_loss_retries must be at least 0, got {node_loss_retries}")
        if not nodes:
            raise ValueError("a Ray executor needs at least one node")
        ray = ray_api if ray_api is not None else _ray()
        self._ray = ray
        self._affinity = affinity or _node_affinity
        self._remote = ray.remote(task)
        self._nodes = {node.node_id: node for node in nodes}
        self._free = {node.node_id: node.slots for node in nodes}
        self._order_for = order_for
        self._deliver = deliver
        self._retries = node_loss_retries
        self._on_start = on_start
        self._may_start = may_start
        self._note = note
        self._queue: list[_Queued] = []
        self._running: dict[Any, _Running] = {}
        self._finished: list[CellFinished] = []
        self._lost: set[str] = set()
        self._cancelled = False

    @property
    def slots(self) -> int:
        """The slots of the nodes still in service."""
        return max(1, sum(node.slots for node_id, node in self._nodes.items() if node_id not in self._lost))

    def submit(self, index: int, cell: Cell, delay_s: float = 0.0) -> None:
        """Queue ``cell``; it is dispatched once ``delay_s`` s have passed and a node has a free slot."""
        if self._cancelled:
            self._finished.append(CellFinished(index, None))
            return
        due = time.monotonic() + delay_s if delay_s > 0 else 0.0
        self._queue.append(_Queued(index, cell, due=due))
        self._dispatch()

    def wait(self, timeout: float) -> tuple[CellFinished, ...]:
        """Cells finished since the last call; blocks up to ``timeout`` s (less when a force is due)."""
        self._force_overdue()
        self._dispatch()
        if not self._finished and self._running:
            ready, _ = self._ray.wait(list(self._running), num_returns=1, timeout=self._budget(timeout))
            if ready:
                ready, _ = self._ray.wait(list(self._running), num_returns=len(self._running), timeout=0)
            for ref in ready:
                self._collect(ref)
            self._abandon_overdue()
        elif not self._finished:
            time.sleep(self._until_due(timeout))
        self._dispatch()
        finished, self._finished = tuple(self._finished), []
        return finished

    def cancel(self, grace_s: float) -> None:
        """Drop the queued cells, cancel the running ones cooperatively now and by force after ``grace_s``."""
        self._cancelled = True
        for queued in self._queue:
            self._finished.append(CellFinished(queued.index, None))
        self._queue.clear()
        now = time.monotonic()
        for ref, running in self._running.items():
            if running.cancel_deadline is None:
                running.cancel_deadline = now + max(0.0, grace_s)
                self._ray.cancel(ref, force=False)

    def close(self) -> None:
        """Cancel what still runs and wait until every task came back (or was given up)."""
        if self._running or self._queue:
            self.cancel(0.0)
        while self._running:
            self.wait(0.2)

    # --- internals ------------------------------------------------------------------------

    def _dispatch(self) -> None:
        if self._queue and len(self._lost) == len(self._nodes):
            for queued in self._queue:  # nowhere left to run them: systemic rows the breaker sees
                row = failed_cell_row(
                    queued.cell, "no node of the cluster is left to run it", cancelled=False
                )
                self._finished.append(CellFinished(queued.index, row))
            self._queue.clear()
        while not self._cancelled and (due := self._next_due()) is not None:
            queued = due
            node_id = max(self._free, key=lambda key: (self._free[key], -list(self._free).index(key)))
            if self._free[node_id] < 1:
                return
            self._queue.remove(queued)
            if not queued.attempts and self._may_start is not None and not self._may_start():
                self._finished.append(CellFinished(queued.index, None))
                continue
            node = self._nodes[node_id]
            ref = self._remote.options(
                num_cpus=0,
                resources={SLOT_RESOURCE: 1},
                max_retries=0,
                retry_exceptions=False,
                scheduling_strategy=self._affinity(node_id),
            ).remote(*self._order_for(queued.cell))
            self._free[node_id] -= 1
            self._running[ref] = _Running(queued.index, queued.cell, node, (*queued.attempts, node.name))
            if self._on_start is not None:
                self._on_start(queued.cell)

    def _next_due(self) -> _Queued | None:
        """The first queued cell (submission order) whose back-off has passed."""
        now = time.monotonic()
        return next((queued for queued in self._queue if queued.due <= now), None)

    def _until_due(self, timeout: float) -> float:
        """How long to sleep with nothing running: ``timeout``, or less when a delayed cell falls due."""
        dues = [queued.due for queued in self._queue]
        return max(0.0, min([timeout, *(due - time.monotonic() for due in dues)]))

    def _budget(self, timeout: float) -> float:
        deadlines = [
            r.cancel_deadline for r in self._running.values() if r.cancel_deadline and not r.forced_at
        ]
        if not deadlines:
            return timeout
        return max(0.0, min(timeout, min(deadlines) - time.monotonic()))

    def _force_overdue(self) -> None:
        now = time.monotonic()
        for ref, running in self._running.items():
            due = running.cancel_deadline
            if due is not None and running.forced_at is None and now >= due:
                running.forced_at = now
                self._ray.cancel(ref, force=True)

    def _abandon_overdue(self) -> None:
        now = time.monotonic()
        for ref, running in list(self._running.items()):
            if running.forced_at is not None and now - running.forced_at > ABANDON_AFTER_S:
                del self._running[ref]
                self._release(running.node)
                detail = f"cancelled by the driver; node {running.node.name} did not return it in time"
                self._finished.append(
                    CellFinished(running.index, cancelled_row(running.cell, None, detail=detail))
                )

    def _release(self, node: ClusterNode) -> None:
        if node.node_id not in self._lost:
            self._free[node.node_id] += 1

    def _collect(self, ref: Any) -> None:
        running = self._running.pop(ref)
        self._release(running.node)
        exceptions = self._ray.exceptions
        value: object = None
        lost: str | None = None
        failure: str | None = None
        try:
            value = self._ray.get(ref)
        except exceptions.TaskCancelledError:
            failure = "the task was cancelled"
        except (
            exceptions.NodeDiedError,
            exceptions.WorkerCrashedError,
            exceptions.LocalRayletDiedError,
            exceptions.TaskUnschedulableError,
            exceptions.ObjectLostError,
        ) as exc:
            lost = f"{type(exc).__name__}: {_first_line(exc)}"
        except exceptions.RayError as exc:
            failure = f"on node {running.node.name}: {type(exc).__name__}: {_first_line(exc)}"
        self._finished.extend(self._outcome(running, value, lost, failure))

    def _outcome(
        self, running: _Running, value: object, lost: str | None, failure: str | None
    ) -> list[CellFinished]:
        cell = running.cell
        if running.cancel_deadline is not None:
            returned = self._deliver(cell, value) if value is not None else None
            detail = "cancelled by the driver" + (f" ({failure or lost})" if failure or lost else "")
            return [
                CellFinished(
                    running.index, self._attempted(cancelled_row(cell, returned, detail=detail), running)
                )
            ]
        if lost is not None:
            self._lose(running.node, lost)
            if retry_after_loss(len(running.attempts), self._retries) and not self._cancelled:
                self._queue.insert(0, _Queued(running.index, cell, running.attempts))
                return []
            row = node_loss_row(cell, node=running.node.name, detail=lost, attempts=running.attempts)
            return [CellFinished(running.index, row)]
        if failure is not None:
            row = failed_cell_row(cell, failure[:DETAIL_LIMIT], cancelled=False)
            return [CellFinished(running.index, self._attempted(row, running))]
        return [CellFinished(running.index, self._attempted(self._deliver(cell, value), running))]

    def _attempted(self, row: Row, running: _Running) -> Row:
        extra = {**row.extra, "node": running.node.name}
        if len(running.attempts) > 1:
            extra["node_attempts"] = list(running.attempts)
        return attrs.evolve(row, extra=extra)

    def _lose(self, node: ClusterNode, detail: str) -> None:
        if node.node_id in self._lost:
            return
        self._lost.add(node.node_id)
        self._free[node.node_id] = 0
        self._note(f"[node-lost] {node.name}: {detail}; no further cells go to it")


def _node_affinity(node_id: str) -> object:
    """Pin a task to ``node_id``: it runs there or fails (never spills to a node not probed)."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return NodeAffinitySchedulingStrategy(node_id, soft=False)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:500] if text else ""
