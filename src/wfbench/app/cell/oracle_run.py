"""Run a cell's hidden oracle: staged only now, read-only, its Python never led by the workspace.

The oracle's bytes are staged after the agent's last session (:meth:`Workspaces.stage_oracle`)
and mounted read-only at ``/wfbench-oracle``. Its Python runs with the workspace *appended* to
``sys.path``, never first (``PYTHONSAFEPATH=1``, ``PYTHONNOUSERSITE=1`` and a read-only,
harness-written ``sitecustomize.py`` on ``PYTHONPATH`` at ``/opt/wfbench/oracle-site``): a
planted ``pytest.py``, ``sitecustomize.py`` or ``usercustomize.py`` cannot replace the runner.
The same ``sitecustomize.py`` resolves a test runner's top-level modules
(:data:`~wfbench.domain.workspace.shadowing.RUNNER_MODULES`) only outside the workspace, so a
planted ``pytest.py`` cannot stand in for a runner the task's environment does not have either.

A task whose oracle declares ``report: junit`` gets a fresh, empty report directory mounted
writable at ``/wfbench-report`` **only for the oracle run** (``$WFBENCH_ORACLE_REPORT`` names the
file); the verdict then needs the exit status *and* that report, with every case passed and
every ``expect``ed id present (:func:`wfbench.domain.workspace.oracle.oracle_verdict`).

What code inside the oracle process can still do is in ``docs/security.md``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import attrs

from wfbench.app.cell.context import AgentFault, CellContext
from wfbench.app.cell.junit_report import REPORT_NAME, read_report
from wfbench.app.corpus.binding import BoundTask
from wfbench.domain.errors import SandboxError
from wfbench.domain.results.rows import ErrorKind
from wfbench.domain.workspace.oracle import OracleVerdict, oracle_verdict
from wfbench.domain.workspace.sandbox import Mount, ProcessState
from wfbench.domain.workspace.shadowing import RUNNER_MODULES

ORACLE_MOUNT = "/wfbench-oracle"
REPORT_MOUNT = "/wfbench-report"
SITE_MOUNT = "/opt/wfbench/oracle-site"
SITECUSTOMIZE = """\
# wfbench: the hidden oracle's Python appends the workspace to sys.path, never prepends it, and
# imports a test runner's modules only from outside the workspace (a planted copy cannot stand in
# for a runner the environment lacks).
import importlib.machinery as _machinery
import os as _os
import sys as _sys

_APPENDED = [p for p in _os.environ.get("WFBENCH_APPEND_PATH", "").split(_os.pathsep) if p]
_RUNNERS = frozenset({runners})


class _RunnerGuard:
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if path is not None or name not in _RUNNERS:
            return None
        outside = [entry for entry in _sys.path if entry not in _APPENDED]
        spec = _machinery.PathFinder.find_spec(name, outside)
        if spec is None:
            raise ModuleNotFoundError(f"No module named {{name!r}} outside the workspace", name=name)
        return spec


_sys.meta_path.insert(0, _RunnerGuard)
for _path in _APPENDED:
    if _path not in _sys.path:
        _sys.path.append(_path)
"""
#: Process states that are the agent's doing (its code hung or held the tree), not the harness's.
_AGENT_STATES = frozenset({ProcessState.TIMEOUT, ProcessState.FORCED_KILL})


def write_site(dest: str) -> str:
    """Create ``dest`` (0555) holding the harness's ``sitecustomize.py`` (0444); returns ``dest``."""
    os.mkdir(dest, 0o700)
    fd = os.open(
        os.path.join(dest, "sitecustomize.py"), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o444
    )
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(SITECUSTOMIZE.format(runners=repr(sorted(RUNNER_MODULES))))
    os.chmod(dest, 0o555)  # noqa: S103 - read-only for everyone; mounted read-only into the sandbox
    return dest


def python_guard_env(env: dict[str, str], *, site: str, append: list[str]) -> dict[str, str]:
    """``env`` plus the variables that keep the workspace from leading the oracle's ``sys.path``."""
    return {
        **env,
        "PYTHONSAFEPATH": "1",
        "PYTHONNOUSERSITE": "1",
        "PYTHONPATH": site,
        "WFBENCH_APPEND_PATH": os.pathsep.join(append),
    }


def task_pythonpath(env: dict[str, str] | Mapping[str, str], workspace: str) -> list[str]:
    """The task's own ``PYTHONPATH`` entries (``env: {PYTHONPATH: src}``), relative ones under the workspace.

    The guard replaces ``PYTHONPATH``; these are appended after the workspace instead, so a ``src/``
    layout still imports in the oracle.
    """
    entries = [e for e in env.get("PYTHONPATH", "").split(os.pathsep) if e]
    return [e if os.path.isabs(e) else f"{workspace}/{e}" for e in entries]


def run_oracle(ctx: CellContext, task: BoundTask) -> OracleVerdict:
    """Stage the hidden oracle (the agent has exited), run it, erase it; keep only the verdict.

    Raises:
        AgentFault: the staged oracle files changed while it ran (``implementation-evidence-invalid``).
        SandboxError: the sandbox could not run it, or the sweep was cancelled (harness failures).
    """
    spec = task.spec.oracle
    junit = spec.report == "junit"
    stage = ctx.services.workspaces.stage_oracle(task.hidden_oracle(), os.path.join(ctx.scratch, "oracle"))
    report_dir = os.path.join(ctx.scratch, "oracle-report")
    try:
        site = write_site(os.path.join(ctx.scratch, "oracle-site"))
        mounts = [Mount(stage, ORACLE_MOUNT), Mount(site, SITE_MOUNT)]
        if junit:
            os.mkdir(report_dir, 0o700)
            mounts.append(Mount(report_dir, REPORT_MOUNT, writable=True))
        policy = ctx.policy(writable=False, mounts=tuple(mounts), dependencies=True)
        root = ctx.services.sandbox.mount_path(ORACLE_MOUNT, policy)
        workspace = ctx.services.sandbox.workspace_path(policy)
        env = python_guard_env(
            {**policy.env, "WFBENCH_ORACLE_ROOT": root},
            site=ctx.services.sandbox.mount_path(SITE_MOUNT, policy),
            append=[workspace, *task_pythonpath(policy.env, workspace), root],
        )
        if junit:
            env["WFBENCH_ORACLE_REPORT"] = (
                ctx.services.sandbox.mount_path(REPORT_MOUNT, policy) + "/" + REPORT_NAME
            )
        command = ["/bin/sh", "-c", spec.command]
        result = ctx.services.sandbox.run(command, policy=attrs.evolve(policy, env=env), cancel=ctx.cancel)
    finally:
        intact = ctx.services.workspaces.erase_oracle(task.hidden_oracle(), stage)
    if not intact:
        raise AgentFault(
            ErrorKind.IMPLEMENTATION_EVIDENCE_INVALID, "the hidden oracle files changed while staged"
        )
    if result.state in _AGENT_STATES:
        limit = f" after {ctx.settings.verify_timeout_s:g} s" if result.timed_out else ""
        return OracleVerdict(
            False, "junit" if junit else "exit-code", f"the oracle did not finish ({result.state}{limit})"
        )
    if result.state is not ProcessState.EXITED:
        raise SandboxError(f"hidden oracle did not finish ({result.state}): {result.detail}")
    cases, problem = read_report(report_dir) if junit else (None, None)
    return oracle_verdict(
        exit_ok=result.ok,
        returncode=result.returncode,
        report=cases,
        report_problem=problem,
        require_report=junit,
        expect=spec.expect,
    )
