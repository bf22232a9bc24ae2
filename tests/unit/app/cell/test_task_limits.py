"""A task's own time limits (``limits:``, Harbor's ``timeout_sec``) win over the sweep's."""

from __future__ import annotations

import threading

import attrs

from tests.unit.app.corpus.test_harbor_export_files import SPEC
from wfbench.adapters.store.memory_sweep import MemorySweepDirectory
from wfbench.app.cell.context import CellContext, CellServices, RunSettings
from wfbench.app.corpus.binding import BoundTask
from wfbench.app.corpus.corpus import TaskLimits
from wfbench.domain.workspace.oracle import OracleBundle
from wfbench.domain.workspace.sandbox import TaskResources

SETTINGS = RunSettings(
    out_dir="/o",
    work_dir="/w",
    model="m",
    sandbox_backend="bwrap",
    command_env={},
    agent_env={},
    directory=MemorySweepDirectory(),
)


def _context(limits: TaskLimits) -> CellContext:
    task = BoundTask(attrs.evolve(SPEC, environment=None, limits=limits), "c" * 40, OracleBundle(()))
    services = CellServices(None, None, None, None)  # type: ignore[arg-type]
    return CellContext(task, "/ws", "/scratch", services, SETTINGS, threading.Event())


def test_without_limits_a_cell_takes_the_sweeps_timeouts():
    ctx = _context(TaskLimits())
    assert (ctx.session_timeout_s, ctx.verify_timeout_s) == (5400.0, 600.0)
    assert ctx.policy(writable=False).timeout_s == 600.0


def test_a_tasks_own_timeouts_win_for_its_sessions_verify_and_oracle():
    ctx = _context(TaskLimits(agent_timeout_s=900.0, verifier_timeout_s=120.0))
    assert (ctx.session_timeout_s, ctx.verify_timeout_s) == (900.0, 120.0)
    assert ctx.policy(writable=False).timeout_s == 120.0


def test_a_tasks_resources_reach_every_sandboxed_command_of_its_cells():
    ctx = _context(TaskLimits(cpus=1.5, memory_bytes=512 * 1024**2, storage_bytes=2 * 1024**3))
    assert ctx.policy(writable=True).resources == TaskResources(1.5, 512 * 1024**2, 2 * 1024**3)
    assert ctx.disk_budget_bytes == 2 * 1024**3


def test_without_resources_the_sandbox_and_the_sweeps_disk_budget_apply():
    ctx = _context(TaskLimits())
    assert not ctx.policy(writable=True).resources.declared
    assert ctx.disk_budget_bytes == SETTINGS.disk_budget_bytes
