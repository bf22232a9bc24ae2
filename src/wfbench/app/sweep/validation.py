"""``wfbench tasks validate``: is each task able to measure anything, before any paid session?

Per task, without an agent, through the same sandbox, snapshot and environment a cell uses:

1. the snapshot builds and the environment builds (or comes from the cache);
2. ``setup`` succeeds on a private copy;
3. ``verify`` at the base commit gives a result (recorded: authored tests may fail there);
4. the hidden oracle **fails** at the base commit (an oracle that already passes measures nothing);
5. with a ``gold_patch`` (or a ``gold_script``, Harbor's ``solve.sh``, run instead of an agent): on a
   fresh copy, setup, the patch applied (the script run), then verify **and** the oracle pass
   (SWE-bench's harness validation).

Review tasks are graded by labels, not by an oracle command: only 1–2 are checked for them.
"""

from __future__ import annotations

import json
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
from wfbench.domain.workspace.rules import relative_path_problem
from wfbench.domain.workspace.sandbox import Mount

GOLD_MOUNT = "/wfbench-gold"
#: Where a gold script's directory appears (Harbor uploads ``solution/`` there).
SOLUTION_MOUNT = "/solution"
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
    #: ``gold + an added test`` passes and ``no fix + a shadowing test`` fails (None: not probed).
    honest_edit_oracle: bool | None = None
    shadowing_edit_oracle: bool | None = None
    #: ``<when>: <outcome class>[ (failing/missing expected ids)]`` per oracle run, for the author.
    oracle_outcomes: tuple[str, ...] = ()
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
        has_gold = spec.gold_patch is not None or spec.gold_script is not None
        if result.valid and has_gold and spec.kind.value == "implementation":
            with _copy(task, services, settings, cancel) as ctx:
                result = _with_gold(ctx, spec, result)
            target = probe_target(task)
            if result.valid and target is not None:
                result = _probe(
                    task, services, settings=settings, cancel=cancel, result=result, target=target
                )
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
    result, oracle = _oracle(ctx, result, "at the base commit")
    problems: tuple[str, ...] = ()
    if oracle:
        problems = ("the hidden oracle already passes at the base commit: it measures nothing",)
    return attrs.evolve(result, verify_at_base=verify, oracle_at_base=oracle, problems=problems)


def _with_gold(ctx: CellContext, spec: TaskSpec, result: TaskValidation) -> TaskValidation:
    gold = "the gold script" if spec.gold_script is not None else "the gold patch"
    problem = _setup(ctx, spec)
    if problem:
        return attrs.evolve(result, problems=(f"with {gold}: {problem}",))
    problem = _apply_gold(ctx, spec)
    if problem:
        return attrs.evolve(result, problems=(problem,))
    verify = _run(ctx, spec.verify)
    result, oracle = _oracle(ctx, result, f"with {gold}")
    problems = []
    if not verify:
        problems.append(f"verify fails with {gold}")
    if not oracle:
        problems.append(f"the hidden oracle fails with {gold}")
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


def _run_gold_script(ctx: CellContext, script: str) -> str | None:
    """Run the gold script (Harbor's ``solve.sh``) as an agent would act: writable workspace, no
    network, its directory read-only at ``/solution`` (where Harbor uploads it)."""
    policy = ctx.policy(writable=True, mounts=(Mount(os.path.dirname(script), SOLUTION_MOUNT),))
    seen = ctx.services.sandbox.mount_path(SOLUTION_MOUNT, policy) + "/" + os.path.basename(script)
    done = ctx.services.sandbox.run(["bash", seen], policy=policy, cancel=ctx.cancel)
    if done.ok:
        return None
    tail = (done.stdout[-TAIL:] + done.stderr_tail[-TAIL:]).decode("utf-8", "replace").strip()
    return f"the gold script failed ({done.state}, exit {done.returncode}): {tail}"


def _apply_gold(ctx: CellContext, spec: TaskSpec) -> str | None:
    if spec.gold_script is not None:
        return _run_gold_script(ctx, spec.gold_script)
    assert spec.gold_patch is not None
    policy = ctx.policy(writable=True, mounts=(Mount(os.path.dirname(spec.gold_patch), GOLD_MOUNT),))
    seen = ctx.services.sandbox.mount_path(GOLD_MOUNT, policy) + "/" + os.path.basename(spec.gold_patch)
    applied = ctx.services.sandbox.run(
        ["git", "-c", "core.fsmonitor=false", "apply", "--whitespace=nowarn", seen],
        policy=policy,
        cancel=ctx.cancel,
    )
    if applied.ok:
        return None
    return f"the gold patch does not apply: {applied.stderr_tail.decode('utf-8', 'replace').strip()[-TAIL:]}"


def _oracle(ctx: CellContext, result: TaskValidation, when: str) -> tuple[TaskValidation, bool]:
    """The hidden oracle's verdict, exactly as a cell gets it (staged, guarded, its report read),
    and its outcome class (with the failing/missing expected ids) recorded for the author."""
    verdict = run_oracle(ctx, ctx.task)
    line = f"{when}: {verdict.outcome.value if verdict.outcome else 'n/a'}"
    if verdict.failing_ids:
        line += f" ({', '.join(verdict.failing_ids[:10])})"
    return attrs.evolve(result, oracle_outcomes=(*result.oracle_outcomes, line)), verdict.passed


def probe_target(task: BoundTask) -> tuple[str, str] | None:
    """(test file, ``[Class::]name``) of the first ``FAIL_TO_PASS`` id of a SWE-bench-style oracle
    (its ``tests.json``), or None: the probes need to know a hidden test's file and name."""
    found = {f.target: f.data for f in task.hidden_oracle().files}
    try:
        first = str(json.loads(found["tests.json"])["FAIL_TO_PASS"][0])
    except (KeyError, IndexError, TypeError, ValueError):
        return None
    path, _, rest = first.partition("::")
    if relative_path_problem(path) or not rest:
        return None
    return path, rest


def shadowing_test(rest: str) -> str:
    """A definition appended after the hidden test ``[Class::]name`` that replaces it (always passes)."""
    parts = rest.split("[", 1)[0].split("::")
    if len(parts) == 1:
        return f"\n\ndef {parts[0]}():\n    assert True\n"
    return f"\n\nclass {parts[0]}:\n    def {parts[-1]}(self):\n        assert True\n"


HONEST_TEST = "\n\ndef test_wfbench_validation_added_test():\n    assert True\n"


def _probe(
    task: BoundTask,
    services: CellServices,
    *,
    settings: RunSettings,
    cancel: CancelToken,
    result: TaskValidation,
    target: tuple[str, str],
) -> TaskValidation:
    """Gold + an added test in the hidden test's file must pass; no fix + a shadowing test must fail."""
    path, rest = target
    problems = list(result.problems)
    verdicts = []
    for gold, text, when in (
        (True, HONEST_TEST, "gold + an added test"),
        (False, shadowing_test(rest), "no fix + a shadowing test"),
    ):
        with _copy(task, services, settings, cancel) as ctx:
            problem = _setup(ctx, task.spec) or (_apply_gold(ctx, task.spec) if gold else None)
            if problem:
                return attrs.evolve(result, problems=(*problems, f"{when}: {problem}"))
            with open(os.path.join(ctx.workspace, path), "a", encoding="utf-8") as handle:
                handle.write(text)
            result, passed = _oracle(ctx, result, when)
            verdicts.append(passed)
    if not verdicts[0]:
        problems.append("the hidden oracle fails with the gold patch plus an added test in its test file")
    if verdicts[1]:
        problems.append("the hidden oracle passes with no fix and a test that shadows a hidden test")
    return attrs.evolve(
        result, honest_edit_oracle=verdicts[0], shadowing_edit_oracle=verdicts[1], problems=tuple(problems)
    )


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
