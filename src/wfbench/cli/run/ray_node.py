"""The node side of a distributed sweep: the composition root that runs one cell on a cluster node.

A Ray task calls :func:`run_order` on a node that offers ``wfbench_slot``. It builds the node's
own adapters (sandbox, agents, workspaces, environments) the way ``wfbench run`` does on one
machine, and calls the same :func:`wfbench.app.cell.cell.run_cell` (``docs/distributed.md``):

* the task snapshot arrives as a git bundle, fetched from the object store only when this node
  has not rebuilt that commit yet (:mod:`wfbench.adapters.repo.bundle`);
* the hidden oracle is fetched only when the cell needs it, after its agent sessions
  (:attr:`BoundTask.oracle_loader`);
* the model endpoint is the node's own: a scripted provider serving the sweep's script, or a key
  proxy in front of ``--base-url`` holding the key from **this node's** environment. No secret is
  ever a task argument (Ray persists those);
* the cell runs on a thread while the task's own thread waits in a short polling loop, so a
  cooperative ``ray.cancel`` (a KeyboardInterrupt at the next bytecode) sets the cell's cancel
  token at once and the cell stops the way a local one does;
* artifacts are written to a private directory and returned with the row; the driver alone
  writes them into the sweep directory and persists the row, in fold order.

:func:`probe_node` is the preflight every node answers before the first cell.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import attrs

from wfbench.app.cell.cell import CellPlan, run_cell
from wfbench.app.cell.context import CellServices, RunSettings
from wfbench.app.corpus.arms import AgentChoice, Arm, Overlay
from wfbench.domain.errors import WfbenchError
from wfbench.domain.results.rows import Row
from wfbench.domain.sweep.nodes import NodeProbe
from wfbench.domain.sweep.scheduling import Cell, failed_cell_row
from wfbench.domain.workspace.oracle import OracleBundle
from wfbench.domain.workspace.rules import Snapshot

#: How often the task's thread looks at its cell (a cooperative cancel lands within this).
POLL_S = 0.05
#: Where a node rebuilds shipped snapshots: ``$WFBENCH_CACHE/ray-snapshots`` (see envbuild's cache).
SNAPSHOT_CACHE = "ray-snapshots"
#: ``$WFBENCH_NODE_WORK_DIR``: where a node's cells get their scratch directories (default: the temp dir).
WORK_DIR_ENV = "WFBENCH_NODE_WORK_DIR"


@attrs.frozen
class NodeRuntime:
    """What every cell of a sweep runs under, shipped once through the object store (no secrets).

    ``settings`` is the driver's, with its secrets, key and paths removed; the node fills them in.
    ``script`` is the provider script's bytes (``None``: the sweep runs against ``base_url``).
    """

    settings: RunSettings
    sandbox: str
    agent: str
    arms: tuple[Arm, ...]
    script: bytes | None = attrs.field(default=None, repr=False)
    base_url: str | None = None
    limits: Any = None
    #: ``--max-cost`` (None: no budget), enforced in the sweep's shared books below.
    budget_usd: float | None = None
    #: The handle of the sweep's budget ledger actor (``adapters/executors/ray_ledger.py``): every
    #: node's key proxy reserves and settles there, so the budget and the wire spend are cluster-wide.
    ledger: Any = attrs.field(default=None, repr=False, eq=False)


@attrs.frozen
class NodeOrder:
    """One cell for a node: its plan, and object-store handles for its snapshot and oracle.

    The handles sit in one-element tuples so that Ray passes them as references (it resolves
    only top-level arguments): the node fetches them when it needs them, not before the task.
    """

    cell: Cell
    plan: CellPlan
    snapshot: tuple[Any, ...] = ()
    oracle: tuple[Any, ...] = ()


@attrs.frozen
class NodeResult:
    """What a node sends back: the row, the cell's artifacts (paths relative to the sweep directory)."""

    row: Row
    artifacts: tuple[tuple[str, bytes], ...] = attrs.field(default=(), repr=False)
    node: str = ""
    #: The task saw a cooperative cancellation (its row is the cell's cancelled row).
    interrupted: bool = False


def node_name() -> str:
    """How rows and messages name this node: its host name and Ray node id prefix."""
    import ray

    return f"{socket.gethostname()}/{ray.get_runtime_context().get_node_id()[:8]}"


def run_order(runtime: NodeRuntime, order: NodeOrder) -> NodeResult:
    """Run ``order``'s cell on this node; always returns (a failure is the row's ``infra-error``)."""
    token = threading.Event()
    box: dict[str, NodeResult] = {}
    worker = threading.Thread(target=_run_into, args=(runtime, order, token, box), name="wfbench-cell")
    worker.start()
    interrupted = wait_for_cell(box, worker, token)
    result = box.get("result")
    if result is None:
        result = NodeResult(
            failed_cell_row(order.cell, "the node's cell thread returned nothing", cancelled=True)
        )
    return attrs.evolve(result, interrupted=interrupted)


def wait_for_cell(box: Mapping[str, object], worker: threading.Thread, token: threading.Event) -> bool:
    """Wait until ``worker`` put its result in ``box``; a KeyboardInterrupt meanwhile sets ``token``.

    ``ray.cancel(force=False)`` raises KeyboardInterrupt in the task's thread at the next
    bytecode: the cell then stops the way a local one stops (its token), and this keeps waiting
    for its row. The wait is a plain sleep loop over ``box``: a KeyboardInterrupt that lands
    inside ``Thread.join`` can leave the thread marked stopped while it still runs (CPython), and
    the cell's row would be lost. True when an interrupt came.
    """
    interrupted = False
    while "result" not in box and worker.is_alive():
        try:
            time.sleep(POLL_S)
        except KeyboardInterrupt:
            token.set()
            interrupted = True
    return interrupted


def _run_into(
    runtime: NodeRuntime, order: NodeOrder, token: threading.Event, box: dict[str, NodeResult]
) -> None:
    name = ""
    try:
        name = node_name()
        box["result"] = attrs.evolve(_run(runtime, order, token), node=name)
    except BaseException as exc:  # the task must return a row; the driver records the failure
        detail = f"on node {name or 'unknown'}: {type(exc).__name__}: {exc}"
        box["result"] = NodeResult(failed_cell_row(order.cell, detail, cancelled=token.is_set()), node=name)


def _run(runtime: NodeRuntime, order: NodeOrder, token: threading.Event) -> NodeResult:
    services = node_services(runtime)
    root = os.environ.get(WORK_DIR_ENV) or None
    with tempfile.TemporaryDirectory(prefix="wfbench-node-", dir=root) as scratch:
        out_dir = os.path.join(scratch, "out")
        work_dir = os.path.join(scratch, "work")
        os.mkdir(out_dir, 0o700)
        os.mkdir(work_dir, 0o700)
        plan, problem = _node_plan(order, services, scratch, token)
        with _endpoint(runtime, scratch) as endpoint:
            settings = attrs.evolve(
                runtime.settings,
                out_dir=out_dir,
                work_dir=work_dir,
                command_env=_boot().harness_command_env(),
                agent_env={"ANTHROPIC_BASE_URL": endpoint.base_url},
                secrets={"ANTHROPIC_API_KEY": endpoint.api_key},
                withheld=endpoint.withheld,
                clock=services.clock,
                directory=_boot().sweep_directory(out_dir),
            )
            if problem is not None:
                plan = attrs.evolve(plan, task=attrs.evolve(plan.task, snapshot=None, failure=problem))
            # The cell reaches the model through this node's key proxy: its own metered lease (bridge).
            metered = attrs.evolve(services, gateway=endpoint.gateway)
            row = run_cell(plan, services=metered, settings=settings, cancel=token)
        return NodeResult(row, tuple(_artifacts(out_dir)))


def _node_plan(
    order: NodeOrder, services: CellServices, scratch: str, token: threading.Event
) -> tuple[CellPlan, str | None]:
    """The driver's plan with this node's snapshot, environment, overlay and a deferred oracle."""
    plan = order.plan
    task = plan.task
    if order.oracle:
        task = attrs.evolve(task, oracle=OracleBundle(()), oracle_loader=_deferred(order.oracle[0]))
    plan = attrs.evolve(plan, task=task, overlay=_node_overlay(plan.overlay, scratch))
    if task.snapshot is None:
        return plan, None
    try:
        snapshot = _node_snapshot(task.snapshot, order.snapshot)
        task = attrs.evolve(task, snapshot=snapshot)
        if task.environment is not None and task.spec.environment is not None:
            if services.environments is None:
                return attrs.evolve(plan, task=task), "this node has no environment builder"
            built = services.environments.ensure(
                task.spec.environment, snapshot=snapshot, task_env=dict(task.spec.env), cancel=token
            )
            if built.digest != task.environment.digest:
                return attrs.evolve(plan, task=task), (
                    f"this node built environment {built.digest[:12]},"
                    f" the driver {task.environment.digest[:12]}"
                )
            task = attrs.evolve(task, environment=built)
    except (WfbenchError, OSError) as exc:
        return attrs.evolve(
            plan, task=task
        ), f"task preparation failed on this node: {type(exc).__name__}: {exc}"
    return attrs.evolve(plan, task=task), None


def _deferred(ref: Any) -> Callable[[], OracleBundle]:
    """A loader that fetches the oracle from the object store on first use, then keeps it."""
    held: list[OracleBundle] = []
    lock = threading.Lock()

    def load() -> OracleBundle:
        import ray

        with lock:
            if not held:
                value = ray.get(ref)
                if not isinstance(value, OracleBundle):
                    raise TypeError(f"the oracle handle holds a {type(value).__name__}")
                held.append(value)
            return held[0]

    return load


def _node_snapshot(like: Snapshot, handle: tuple[Any, ...]) -> Snapshot:
    from wfbench.adapters.repo.bundle import materialize_snapshot
    from wfbench.adapters.repo.envbuild import default_cache_dir

    if not handle:
        raise WfbenchError("the driver shipped no snapshot for this task")

    def fetch() -> bytes:
        import ray

        data = ray.get(handle[0])
        if not isinstance(data, bytes):
            raise TypeError(f"the snapshot handle holds a {type(data).__name__}")
        return data

    cache = os.path.join(os.path.dirname(default_cache_dir(os.environ)), SNAPSHOT_CACHE)
    return materialize_snapshot(fetch, like, cache)


def _node_overlay(overlay: Overlay | None, scratch: str) -> Overlay | None:
    """The candidate overlay written out on this node (it travels as bytes in the plan)."""
    if overlay is None:
        return None
    root = os.path.join(scratch, "overlay")
    for rel, data in overlay.files:
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(data)
    return attrs.evolve(overlay, root=root)


@contextmanager
def _endpoint(runtime: NodeRuntime, scratch: str) -> Iterator[Any]:
    """This node's model endpoint: the script served here, or a key proxy with this node's key."""
    boot = _boot()
    script_path = None
    if runtime.script is not None:
        script_path = os.path.join(scratch, "provider-script.yaml")
        with open(script_path, "wb") as handle:
            handle.write(runtime.script)
    agents = (runtime.agent, *(arm.agent.name for arm in runtime.arms if arm.agent is not None))
    options = boot.EndpointOptions(
        model=runtime.settings.model,
        agents=agents,
        budget_usd=runtime.budget_usd,
        ledger=_shared_ledger(runtime),
    )
    with boot.endpoint(
        script_path=script_path,
        base_url=runtime.base_url,
        environ=os.environ,
        warn=lambda text: print(text, file=sys.stderr),
        options=options,
    ) as endpoint:
        yield endpoint


def _shared_ledger(runtime: NodeRuntime) -> Any:
    """The sweep's shared books as this node's proxy's ledger (None: the driver started none)."""
    if runtime.ledger is None:
        return None
    import ray

    from wfbench.adapters.executors.ray_ledger import ClusterLedger

    return ClusterLedger(ray, runtime.ledger, runtime.budget_usd)


def _artifacts(out_dir: str) -> Iterator[tuple[str, bytes]]:
    for parent, _dirs, files in os.walk(out_dir):
        for name in sorted(files):
            path = os.path.join(parent, name)
            with open(path, "rb") as handle:
                yield os.path.relpath(path, out_dir), handle.read()


# --- adapters, built once per worker process -----------------------------------------------

_services: dict[tuple[object, ...], CellServices] = {}
_services_lock = threading.Lock()


def node_services(runtime: NodeRuntime) -> CellServices:
    """The node's cell ports for ``runtime`` (built on first use in this worker process, then kept).

    Raises:
        InputError, SandboxUnavailable: as :func:`wfbench.cli.bootstrap.bootstrap`.
    """
    from wfbench.cli.run.agents import arm_agents

    key = (runtime.sandbox, runtime.agent, repr(runtime.limits), tuple(_choices(runtime)))
    with _services_lock:
        if key not in _services:
            built = _boot().bootstrap(sandbox=runtime.sandbox, agent=runtime.agent, limits=runtime.limits)
            agents = arm_agents(runtime.arms, default=runtime.agent, default_adapter=built.agent)
            _services[key] = CellServices(
                built.sandbox,
                built.agent,
                built.workspaces,
                built.clock,
                agents=agents,
                environments=built.environments,
            )
        return _services[key]


def _choices(runtime: NodeRuntime) -> list[str]:
    return sorted({(arm.agent or AgentChoice(runtime.agent)).key for arm in runtime.arms})


def _boot() -> Any:
    from wfbench.cli import bootstrap

    return bootstrap


# --- preflight ------------------------------------------------------------------------------


def probe_node(runtime: NodeRuntime) -> NodeProbe:
    """What this node is: its checks, wfbench version, runtime identity and agents (never raises)."""
    from importlib import metadata

    import ray

    problems: list[str] = []
    node_id = ray.get_runtime_context().get_node_id()
    agents, digests, runtime_digest = _identity(runtime, problems)
    if shutil.which("git") is None and not os.access("/usr/bin/git", os.X_OK):
        problems.append("git is not installed")
    root = os.environ.get(WORK_DIR_ENV) or tempfile.gettempdir()
    try:
        free: int | None = shutil.disk_usage(root).free
    except OSError as exc:
        free = None
        problems.append(f"cannot read free disk of {root}: {exc.strerror}")
    return NodeProbe(
        node_id=node_id,
        name=f"{socket.gethostname()}/{node_id[:8]}",
        slots=0,
        wfbench_version=metadata.version("wfbench"),
        runtime_digest=runtime_digest,
        arm_digests=digests,
        agents=agents,
        free_disk_bytes=free,
        problems=tuple(problems),
    )


def _identity(
    runtime: NodeRuntime, problems: list[str]
) -> tuple[dict[str, str | None], dict[str, str | None], str | None]:
    """The node's agents and versions, per-arm runtime digests and run-wide digest (problems appended)."""
    from wfbench.cli.run.agents import arm_runtimes

    boot = _boot()
    try:
        services = node_services(runtime)
    except WfbenchError as exc:
        problems.append(str(exc))
        return {}, {}, None
    with tempfile.TemporaryDirectory(prefix="wfbench-probe-") as scratch:
        script_path = None
        if runtime.script is not None:
            script_path = os.path.join(scratch, "provider-script.yaml")
            with open(script_path, "wb") as handle:
                handle.write(runtime.script)
        runtime_digest = boot.runtime_digest(agent=runtime.agent, script_path=script_path, environ=os.environ)
        runtimes = arm_runtimes(
            runtime.arms,
            default=runtime.agent,
            adapters=services.agents,
            default_adapter=services.agent,
            script_path=script_path,
            environ=os.environ,
        )
    agents = {value.agent: value.agent_version for value in runtimes.values()}
    digests: dict[str, str | None] = {arm: value.runtime_digest for arm, value in runtimes.items()}
    return agents, digests, runtime_digest


def expected_agents(runtimes: Mapping[str, Any]) -> dict[str, str | None]:
    """The driver's agents and versions, from its arm runtimes (what every node must report)."""
    return {value.agent: value.agent_version for value in runtimes.values()}
