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
import posixpath
import secrets
import shlex
from collections.abc import Mapping

import attrs

from wfbench.app.cell.context import AgentFault, CellContext
from wfbench.app.cell.junit_report import REPORT_NAME, read_report
from wfbench.app.corpus.binding import BoundTask
from wfbench.domain.errors import SandboxError
from wfbench.domain.results.rows import ErrorKind
from wfbench.domain.workspace.canary import canaries_for, canary_file_name, canary_source, imported_packages
from wfbench.domain.workspace.oracle import (
    Canaries,
    OracleBundle,
    OracleFile,
    OracleOutcome,
    OracleVerdict,
    oracle_verdict,
    parse_reward,
    reward_verdict,
)
from wfbench.domain.workspace.sandbox import Mount, ProcessState, SandboxPolicy
from wfbench.domain.workspace.shadowing import RUNNER_MODULES

ORACLE_MOUNT = "/wfbench-oracle"
REPORT_MOUNT = "/wfbench-report"
#: Where a reward oracle (Harbor's ``test.sh``) writes ``reward.txt``: fresh and empty per run.
REWARD_MOUNT = "/logs/verifier"
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


def _outside(paths):
    return [entry for entry in paths if entry not in _APPENDED and not any(
        entry == top or entry.startswith(top.rstrip("/") + "/") for top in _HIDDEN)]


_HIDDEN = [p for p in _os.environ.get("WFBENCH_METADATA_HIDDEN", "").split(_os.pathsep) if p]


# Package metadata (entry points: pytest plugins) is found only outside the workspace.
class _MetadataGuard:
    @classmethod
    def find_distributions(cls, context=None):
        import importlib.metadata as _metadata

        context = context or _metadata.DistributionFinder.Context()
        return _metadata.MetadataPathFinder.find_distributions(
            _metadata.DistributionFinder.Context(name=context.name, path=_outside(context.path)))

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        return None


_machinery.PathFinder.find_distributions = lambda *args, **kwargs: iter(())
_sys.meta_path.append(_MetadataGuard)
"""
#: pytest options the harness sets for every oracle (``PYTEST_ADDOPTS``): no cache, the harness's
#: empty ini file (no workspace ``pytest.ini``/``tox.ini``/``setup.cfg``/``pyproject.toml``
#: applies, nor its ``addopts``), the rootdir pinned to the oracle stage. The oracle's own
#: command line comes after, so a task can still name its own config (from the stage).
PYTEST_INI = "[pytest]\n"
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
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    with os.fdopen(os.open(os.path.join(dest, "pytest.ini"), flags, 0o444), "w", encoding="utf-8") as handle:
        handle.write(PYTEST_INI)
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
        "WFBENCH_METADATA_HIDDEN": os.pathsep.join(append[:1]),
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }


def pytest_addopts(*, site: str, root: str, canary: str | None) -> str:
    """``PYTEST_ADDOPTS`` of every oracle run (paths quoted for pytest's ``shlex.split``)."""
    options = ["-p", "no:cacheprovider", "-c", f"{site}/pytest.ini", "--rootdir", root, "-o", "addopts="]
    return shlex.join([*options, *([canary] if canary else [])])


def task_pythonpath(env: dict[str, str] | Mapping[str, str], workspace: str) -> list[str]:
    """The task's own ``PYTHONPATH`` entries (``env: {PYTHONPATH: src}``), relative ones under the workspace.

    The guard replaces ``PYTHONPATH``; these are appended after the workspace instead, so a ``src/``
    layout still imports in the oracle.
    """
    entries = [e for e in env.get("PYTHONPATH", "").split(os.pathsep) if e]
    return [e if os.path.isabs(e) else f"{workspace}/{e}" for e in entries]


def with_canary(bundle: OracleBundle, token: str) -> tuple[OracleBundle, Canaries, str]:
    """``bundle`` plus this cell's canary module beside its first hidden test file; the canaries and
    the module's target (``docs/security.md``, "Canaries")."""
    tests = [f for f in bundle.files if _is_test_file(f.target)]
    directory = posixpath.dirname(tests[0].target) if tests else ""
    target = posixpath.join(directory, canary_file_name(token))
    canaries = canaries_for(token)
    sources = [f.data.decode("utf-8", "replace") for f in tests]
    data = canary_source(canaries, token, imported_packages(sources)).encode()
    files = sorted((*bundle.files, OracleFile.of(target, data)), key=lambda f: f.target)
    return OracleBundle(tuple(files)), canaries, target


def _is_test_file(target: str) -> bool:
    name = posixpath.basename(target)
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def run_oracle(ctx: CellContext, task: BoundTask) -> OracleVerdict:
    """Stage the hidden oracle and its canaries (the agent has exited), run it, erase it; keep the verdict.

    Raises:
        AgentFault: the staged oracle files changed while it ran (``implementation-evidence-invalid``).
        SandboxError: the sandbox could not run it, or the sweep was cancelled (harness failures).
    """
    spec = task.spec.oracle
    ctx.phase = "oracle"
    junit, reward = spec.report == "junit", spec.report == "reward"
    bundle, canaries, canary = with_canary(task.hidden_oracle(), secrets.token_hex(8))
    stage = ctx.services.workspaces.stage_oracle(bundle, os.path.join(ctx.scratch, "oracle"))
    report_dir = os.path.join(ctx.scratch, "oracle-report")
    try:
        site = write_site(os.path.join(ctx.scratch, "oracle-site"))
        mounts = [Mount(stage, spec.mount or ORACLE_MOUNT), Mount(site, SITE_MOUNT)]
        if junit or reward:
            os.mkdir(report_dir, 0o700)
            mounts.append(Mount(report_dir, REWARD_MOUNT if reward else REPORT_MOUNT, writable=True))
        policy = ctx.policy(writable=False, mounts=tuple(mounts), dependencies=True)
        env = _oracle_env(ctx, policy, canary=canary, junit=junit, root=spec.mount or ORACLE_MOUNT)
        command = ["/bin/sh", "-c", spec.command]
        result = ctx.services.sandbox.run(command, policy=attrs.evolve(policy, env=env), cancel=ctx.cancel)
    finally:
        intact = ctx.services.workspaces.erase_oracle(bundle, stage)
    if not intact:
        raise AgentFault(
            ErrorKind.IMPLEMENTATION_EVIDENCE_INVALID, "the hidden oracle files changed while staged"
        )
    if result.state in _AGENT_STATES:
        limit = f" after {ctx.verify_timeout_s:g} s" if result.timed_out else ""
        detail = f"the oracle did not finish ({result.state}{limit})"
        return OracleVerdict(False, "junit" if junit else "exit-code", detail, OracleOutcome.TIMED_OUT)
    if result.state is not ProcessState.EXITED:
        raise SandboxError(f"hidden oracle did not finish ({result.state}): {result.detail}")
    if reward:
        value, why = parse_reward(*_reward_files(report_dir))
        return reward_verdict(
            exit_ok=result.ok,
            returncode=result.returncode,
            reward=value,
            problem=why,
            above=spec.reward_above,
        )
    cases, problem = read_report(report_dir) if junit else (None, None)
    return oracle_verdict(
        exit_ok=result.ok,
        returncode=result.returncode,
        report=cases,
        report_problem=problem,
        require_report=junit,
        expect=spec.expect,
        canaries=canaries if junit else None,
    )


def _reward_files(report_dir: str) -> tuple[bytes | None, bytes | None]:
    """The bytes of ``reward.txt`` and ``reward.json`` the verifier wrote (regular files only, bounded)."""
    found: list[bytes | None] = []
    for name in ("reward.txt", "reward.json"):
        try:
            fd = os.open(os.path.join(report_dir, name), os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            found.append(None)
            continue
        with os.fdopen(fd, "rb") as handle:
            found.append(handle.read(64 * 1024))
    return found[0], found[1]


def _oracle_env(
    ctx: CellContext, policy: SandboxPolicy, *, canary: str, junit: bool, root: str = ORACLE_MOUNT
) -> dict[str, str]:
    root = ctx.services.sandbox.mount_path(root, policy)
    workspace = ctx.services.sandbox.workspace_path(policy)
    site = ctx.services.sandbox.mount_path(SITE_MOUNT, policy)
    env = python_guard_env(
        {**policy.env, "WFBENCH_ORACLE_ROOT": root, "WFBENCH_ORACLE_CANARY": f"{root}/{canary}"},
        site=site,
        append=[workspace, *task_pythonpath(policy.env, workspace), root],
    )
    env["PYTEST_ADDOPTS"] = pytest_addopts(site=site, root=root, canary=f"{root}/{canary}" if junit else None)
    if junit:
        report = ctx.services.sandbox.mount_path(REPORT_MOUNT, policy)
        env["WFBENCH_ORACLE_REPORT"] = f"{report}/{REPORT_NAME}"
    return env
