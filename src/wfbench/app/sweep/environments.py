"""Build each prepared task's environment before its cells run (docs/real-repos.md "Environments").

:func:`prepare_environments` goes through the :class:`~wfbench.domain.ports.Environments` port,
once per (snapshot, spec, variables): tasks sharing them share one build, and the port caches
builds across sweeps by digest. A build that fails makes the task's cells ``infra-error`` rows
naming it, like a snapshot that cannot be built.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import attrs

from wfbench.app.corpus.binding import BoundTask
from wfbench.domain.environment.spec import BuiltEnvironment, EnvironmentSpec
from wfbench.domain.errors import WfbenchError
from wfbench.domain.ports import CancelToken, Environments


def prepare_environments(
    tasks: Sequence[BoundTask],
    *,
    environments: Environments | None,
    cancel: CancelToken | None = None,
    note: Callable[[str], None] = lambda _text: None,
) -> tuple[BoundTask, ...]:
    """Build (or take from the cache) each prepared task's environment; failures become task values.

    A task without a snapshot (its preparation already failed) or without an environment is
    passed through.
    """
    built: dict[tuple[object, ...], BuiltEnvironment | str] = {}
    done: list[BoundTask] = []
    for task in tasks:
        spec = task.spec.environment
        if spec is None or task.snapshot is None:
            done.append(task)
            continue
        env: Mapping[str, str] = dict(task.spec.env)
        key = (task.snapshot.path, spec, tuple(sorted(env.items())))
        if key not in built:
            built[key] = _build(task, spec, env, environments, cancel, note)
        result = built[key]
        if isinstance(result, str):
            done.append(attrs.evolve(task, failure=result))
        else:
            done.append(attrs.evolve(task, environment=result))
    return tuple(done)


def _build(  # noqa: PLR0917 - one private step of prepare_environments()
    task: BoundTask,
    spec: EnvironmentSpec,
    env: Mapping[str, str],
    environments: Environments | None,
    cancel: CancelToken | None,
    note: Callable[[str], None],
) -> BuiltEnvironment | str:
    if environments is None:
        return "task preparation failed: no environment builder is configured"
    try:
        assert task.snapshot is not None
        result = environments.ensure(spec, snapshot=task.snapshot, task_env=env, cancel=cancel)
    except (WfbenchError, OSError) as exc:
        return f"task preparation failed: environment: {exc}"
    how = "cached" if result.cached else f"built in {result.build_s:.1f} s"
    note(f"[{task.spec.id}] environment {result.digest[:12]} {how}")
    return result
