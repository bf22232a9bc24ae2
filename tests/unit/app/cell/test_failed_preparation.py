"""A task whose environment failed to build never runs a cell: its rows are infra-errors naming why."""

from __future__ import annotations

import threading

import attrs

from tests.unit.app.cell.test_task_limits import SETTINGS
from tests.unit.app.corpus.test_harbor_export_files import SPEC
from wfbench.adapters.store.clock import SystemClock
from wfbench.app.cell.cell import CellPlan, run_cell
from wfbench.app.cell.context import CellServices
from wfbench.app.corpus.arms import preset_arms
from wfbench.app.corpus.binding import BoundTask
from wfbench.domain.workspace.oracle import OracleBundle
from wfbench.domain.workspace.rules import Snapshot


def test_a_task_with_a_snapshot_whose_environment_failed_yields_an_infra_error_row():
    snapshot = Snapshot(
        repo="/r", ref="main", source_commit="0" * 40, commit="0" * 40, tree="0" * 40, path="/s"
    )
    why = "task preparation failed: environment: docker build failed (exit 100)"
    task = attrs.evolve(
        BoundTask(attrs.evolve(SPEC, environment=None), "c" * 40, OracleBundle(())),
        snapshot=snapshot,
        failure=why,
    )
    services = CellServices(None, None, None, SystemClock())  # type: ignore[arg-type] - nothing may be called
    row = run_cell(
        CellPlan(task, preset_arms()["baseline"], 0),
        services=services,
        settings=SETTINGS,
        cancel=threading.Event(),
    )
    assert row.error_kind is not None
    assert row.error_kind.value == "infra-error"
    assert "docker build failed" in row.extra["error_detail"]
