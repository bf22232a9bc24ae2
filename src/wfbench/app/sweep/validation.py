"""``wfbench tasks validate``: is each task able to measure anything, before any paid session?

Per task, without an agent, through the same sandbox, snapshot and environment a cell uses:

1. the snapshot builds and the environment builds (or comes from the cache);
2. ``setup`` succeeds on a private copy;
3. ``verify`` at the base commit gives a result (recorded: authored tests may fail there);
4. the hidden oracle **fails** at the base commit (an oracle that already passes measures nothing);
5. with a ``gold_patch``: on a fresh copy, setup, the patch applied, then verify **and** the oracle
   pass (SWE-bench's harness validation).

Review tasks are graded by labels, not by an oracle command: only 1–2 are checked for them.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence

import attrs

from wfbench.app.cell.context import CellContext, CellServices, RunSettings
from wfbench.app.cell.oracle_run import run_oracle
from wfbench.app.corpus.binding import BoundTask
from wfbench.app.corpus.corpus import TaskSpec
from wfbench.domain.errors import WfbenchError
from wfbench.domain.ports import CancelToken
from wfbench.domain.workspace.sandbox import Mount

GOLD_MOUNT = "/wfbench-gold"
TAIL = 600


@attrs.frozen
class TaskValidation:
    """What validating one task found; ``valid`` is the verdict, ``problems`` say why not."""

    task: str
    kind: str
    environment_digest: str | None = None
    environment: str = "n/a"
    setup: str = "n/a"
    verify_at_base: bool | None = None
    oracle_at_base: bool | None = None
    gold_verify: bool | None = None
    gold_oracle: bool | None = None
    problems: tuple[str, ...] = ()

    @property
    def valid(self) -> bool:
        """No problem was found."""
        return not self.problems

    def as_dict(self) -> dict[str, object]:
        """The JSON form (``--json``)."""
        return {**attrs.asdict(self), "problems": list(self.problems), "valid": self.valid}


def validate_task(
    task: BoundTask, *, services: CellServices, settings: RunSettings, cancel: CancelToken
) -> TaskValidation:
    """Validate one prepared task (snapshot and environment already attempted)."""
    spec = task.spec
    result = TaskValidation(task=spec.id, kind=spec.kind.value, environment_digest=task.environment_digest)
    if task.snapshot is None:
        return attrs.evolve(result, problems=(task.failure or "the task could not be prepared",))
    env_state = "none" if spec.environment is None else ("built" if task.environment else "failed")
    result = attrs.evolve(result, environment=env_state)
    try:
        with _copy(task, services, settings, cancel) as ctx:
            result = _at_base(ctx, result)
        if result.valid and spec.gold_patch is not None and spec.kind.value == "implementation":
            with _copy(task, services, settings, cancel) as ctx:
                result = _with_gold(ctx, spec, result)
    except (WfbenchError, OSError) as exc:
        result = attrs.evolve(result, problems=(*result.problems, f"{type(exc).__name__}: {exc}"))
    return result


def _at_base(ctx: CellContext, result: TaskValidation) -> TaskValidation:
    spec = ctx.task.spec
    problem = _setup(ctx, spec)
    if problem:
        return attrs.evolve(result, setup="failed", problems=(problem,))
    result = attrs.evolve(result, setup="ok" if spec.setup else "none")
    if spec.kind.value != "implementation":
        return result
    verify = _run(ctx, spec.verify)
    oracle = _oracle(ctx)
    problems: tuple[str, ...] = ()
    if oracle:
        problems = ("the hidden oracle already passes at the base commit: it measures nothing",)
    return attrs.evolve(result, verify_at_base=verify, oracle_at_base=oracle, problems=problems)


def _with_gold(ctx: CellContext, spec: TaskSpec, result: TaskValidation) -> TaskValidation:
    assert spec.gold_patch is not None
    problem = _setup(ctx, spec)
    if problem:
        return attrs.evolve(result, problems=(f"with the gold patch: {problem}",))
    policy = ctx.policy(writable=True, mounts=(Mount(os.path.dirname(spec.gold_patch), GOLD_MOUNT),))
    seen = ctx.services.sandbox.mount_path(GOLD_MOUNT, policy) + "/" + os.path.basename(spec.gold_patch)
    applied = ctx.services.sandbox.run(
        ["git", "-c", "core.fsmonitor=false", "apply", "--whitespace=nowarn", seen],
        policy=policy,
        cancel=ctx.cancel,
    )
    if not applied.ok:
        tail = applied.stderr_tail.decode("utf-8", "replace").strip()[-TAIL:]
        return attrs.evolve(result, problems=(f"the gold patch does not apply: {tail}",))
    verify = _run(ctx, spec.verify)
    oracle = _oracle(ctx)
    problems = []
    if not verify:
        problems.append("verify fails with the gold patch")
    if not oracle:
        problems.append("the hidden oracle fails with the gold patch")
    return attrs.evolve(result, gold_verify=verify, gold_oracle=oracle, problems=tuple(problems))


def _setup(ctx: CellContext, spec: TaskSpec) -> str | None:
    if not spec.setup:
        return None
    done = ctx.services.sandbox.run(
        ["/bin/sh", "-c", "set -eu\n" + spec.setup],
        policy=ctx.policy(writable=True, timeout_s=600.0),
        cancel=ctx.cancel,
    )
    if done.ok:
        return None
    tail = (done.stdout[-TAIL:] + done.stderr_tail[-TAIL:]).decode("utf-8", "replace").strip()
    return f"setup failed ({done.state}, exit {done.returncode}): {tail}"


def _run(ctx: CellContext, command: str) -> bool:
    done = ctx.services.sandbox.run(
        ["/bin/sh", "-c", command], policy=ctx.policy(writable=False, dependencies=True), cancel=ctx.cancel
    )
    return done.ok


def _oracle(ctx: CellContext) -> bool:
    """The hidden oracle's verdict, exactly as a cell gets it (staged, guarded, its report read)."""
    return run_oracle(ctx, ctx.task).passed


class _copy:
    """A private copy of the task's snapshot, as a cell's context, removed afterwards."""

    def __init__(
        self, task: BoundTask, services: CellServices, settings: RunSettings, cancel: CancelToken
    ) -> None:
        self._args = (task, services, settings, cancel)
        self._scratch = ""

    def __enter__(self) -> CellContext:
        task, services, settings, cancel = self._args
        assert task.snapshot is not None
        self._scratch = tempfile.mkdtemp(prefix=f"wfbench-validate-{task.spec.id}-", dir=settings.work_dir)
        workspace = os.path.join(self._scratch, "workspace")
        services.workspaces.private_copy(task.snapshot, workspace, cancel=cancel)
        return CellContext(task, workspace, self._scratch, services, settings, cancel)

    def __exit__(self, *exc: object) -> None:
        self._args[1].workspaces.remove_tree(self._scratch)


def validate_tasks(
    tasks: Sequence[BoundTask],
    *,
    services: CellServices,
    settings: RunSettings,
    cancel: CancelToken,
    on_result: Callable[[TaskValidation], None] = lambda _r: None,
) -> tuple[TaskValidation, ...]:
    """Validate every task in order (``on_result`` hears each as it is decided)."""
    results = []
    for task in tasks:
        result = validate_task(task, services=services, settings=settings, cancel=cancel)
        on_result(result)
        results.append(result)
    return tuple(results)
