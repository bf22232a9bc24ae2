"""Every cell of a plan is the gate's own MDE and power of that design, for either kind of target."""

from __future__ import annotations

import attrs
import pytest

from tests.unit.statistics.test_planning_view import calm
from wfbench.domain.statistics import planning
from wfbench.domain.statistics.gate_power import GateDesign, decision_power, saving_mde
from wfbench.domain.statistics.planning import plan
from wfbench.domain.statistics.power import mde

DESIGN = GateDesign(min_runs=2, min_tasks=5)
GRID = {"task_counts": (4, 10, 80), "run_counts": (1, 2, 3)}


def _refused(n_tasks: int, runs: int) -> bool:
    return n_tasks < 5 or runs < 2


def test_every_cell_of_a_resolution_plan_is_the_gates_mde_and_power_of_that_design() -> None:
    stats = calm()
    res = stats.resolution
    grid = plan(stats, target=20.0, on_resolution=True, design=DESIGN, **GRID)

    assert (grid.quantity, grid.unit, grid.target) == ("resolved", "points", 20.0)
    for cell in grid.cells:
        assert cell.refused is _refused(cell.n_tasks, cell.runs)
        if cell.refused:
            assert (cell.mde, cell.power, cell.reaches) == (None, 0.0, False)
            continue
        raw = mde(
            res.components, alpha=DESIGN.alpha, power=DESIGN.power, n_tasks=cell.n_tasks, runs=cell.runs
        )
        assert raw is not None
        assert cell.mde == pytest.approx(res.scale.present(raw))
        power = decision_power(
            res.components, stats.metric.components, DESIGN, n_tasks=cell.n_tasks, runs=cell.runs, gain=0.2
        )
        assert cell.power == pytest.approx(power)
        assert cell.reaches is (power is not None and power >= DESIGN.power)
    assert {c.mde for c in grid.cells if not c.refused and c.runs == 2} != {
        c.mde for c in grid.cells if not c.refused and c.runs == 3
    }  # the runs of the design are planned, not the pilot's


def test_every_cell_of_a_saving_plan_is_the_gates_saving_mde_and_power_of_that_design() -> None:
    stats = calm()
    res, metric = stats.resolution, stats.metric
    grid = plan(stats, target=30.0, on_resolution=False, design=DESIGN, **GRID)

    saving = metric.scale.from_presented(30.0)
    assert (grid.quantity, grid.unit) == ("cost_usd", "savings_pct")
    for cell in grid.cells:
        if cell.refused:
            assert (cell.mde, cell.power) == (None, 0.0)
            continue
        raw = saving_mde(res.components, metric.components, DESIGN, n_tasks=cell.n_tasks, runs=cell.runs)
        assert cell.mde == (None if raw is None else pytest.approx(metric.scale.present(raw)))
        power = decision_power(
            res.components, metric.components, DESIGN, n_tasks=cell.n_tasks, runs=cell.runs, saving=saving
        )
        assert cell.power == pytest.approx(power)


def test_the_recommended_resolution_design_is_planned_for_the_gain_not_a_saving() -> None:
    stats = calm()
    grid = plan(stats, target=20.0, on_resolution=True, design=DESIGN, **GRID)
    assert grid.recommended is not None
    gain = decision_power(
        stats.resolution.components,
        stats.metric.components,
        DESIGN,
        n_tasks=grid.recommended.n_tasks,
        runs=grid.recommended.runs,
        gain=0.2,
    )
    assert grid.recommended.power == pytest.approx(gain)
    assert grid.recommended.power >= 0.8


def test_a_metric_beyond_the_100_point_scale_is_named_by_its_own_name() -> None:
    review = attrs.evolve(calm().resolution, name="review_weighted_f1")
    assert planning._no_change(review, 120.0, "no") == (
        "no review_weighted_f1 change (its MDE, 120.0 points, exceeds the 100-point scale)"
    )
    assert planning._no_change(calm().resolution, 120.0, "any") == (
        "any resolution change (its MDE, 120.0 points, exceeds the 100-point scale)"
    )


def test_a_cell_prices_two_arms_of_its_tasks_times_runs_sessions() -> None:
    grid = plan(calm(), target=20.0, on_resolution=True, design=DESIGN, session_cost=0.25, **GRID)
    for cell in grid.cells:
        assert cell.sessions == 2 * cell.n_tasks * cell.runs
        assert cell.cost == pytest.approx(0.25 * cell.sessions)


def test_the_grid_starts_at_two_tasks_and_includes_the_pilots_own() -> None:
    grid = plan(
        calm(), target=20.0, on_resolution=True, design=DESIGN, task_counts=(1, 2, 3), run_counts=(3,)
    )
    assert [cell.n_tasks for cell in grid.cells] == [2, 3, 40]
