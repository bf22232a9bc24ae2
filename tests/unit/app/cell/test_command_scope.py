"""Every command of a cell carries its sweep, cell and phase (a container backend names its container so)."""

from __future__ import annotations

import threading

import attrs

from tests.unit.app.cell.test_task_limits import SETTINGS
from tests.unit.app.corpus.test_harbor_export_files import SPEC
from wfbench.app.cell.context import CellContext, CellServices
from wfbench.app.corpus.binding import BoundTask
from wfbench.domain.workspace.oracle import OracleBundle
from wfbench.domain.workspace.sandbox import CommandScope


def _context(cell: tuple[str, int] | None) -> CellContext:
    task = BoundTask(attrs.evolve(SPEC, environment=None), "c" * 40, OracleBundle(()))
    services = CellServices(None, None, None, None)  # type: ignore[arg-type]
    return CellContext(task, "/ws", "/scratch", services, SETTINGS, threading.Event(), cell=cell)


def test_a_cells_policy_names_its_sweep_task_arm_run_and_current_phase():
    ctx = _context(("baseline", 2))
    assert ctx.policy(writable=True).scope == CommandScope("/o", SPEC.id, "baseline", 2, "prepare")
    ctx.phase = "verify"
    assert ctx.policy(writable=False).scope == CommandScope("/o", SPEC.id, "baseline", 2, "verify")


def test_a_context_outside_a_planned_cell_has_no_scope():
    assert _context(None).policy(writable=False).scope is None
