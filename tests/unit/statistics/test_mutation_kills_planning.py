"""Every cell of a plan is the gate's own MDE and power of that design, for either kind of target."""

from __future__ import annotations

import attrs
import pytest

from tests.unit.statistics.test_analysis import arm, pair_samples
from tests.unit.statistics.test_planning_view import calm, noisy
from wfbench.domain.statistics import planning
from wfbench.domain.statistics.analysis import analyze_pair
from wfbench.domain.statistics.gate_power import GateDesign, decision_power, saving_mde, tasks_for_decision
from wfbench.domain.statistics.planning import detectability, plan
from wfbench.domain.statistics.power import mde
from wfbench.domain.statistics.samples import TaskPair

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


def _first_runs(stats: object, saving: float) -> int | None:
    """Brute force: the fewest runs per arm (1 … 100) at which the gate promotes ``saving`` with 80 %."""
    res, metric = stats.resolution, stats.metric  # type: ignore[attr-defined]
    for runs in range(1, 101):
        power = decision_power(
            res.components, metric.components, GateDesign(), n_tasks=res.n_tasks, runs=runs, saving=saving
        )
        if power is not None and power >= 0.8:
            return runs
    return None


def test_a_missed_target_names_the_tasks_and_the_runs_that_would_reach_it() -> None:
    stats = noisy()
    saving = stats.metric.scale.from_presented(30.0)
    tasks = tasks_for_decision(
        stats.resolution.components, stats.metric.components, GateDesign(), runs=None, saving=saving
    )
    runs = _first_runs(stats, saving)
    assert (tasks, runs) == (177, 89)

    reach = detectability(stats, target=30.0)

    assert (reach.tasks_needed, reach.runs_needed) == (tasks, runs)
    assert reach.sentence.endswith(
        "; it cannot detect the 30.0% asked for: 177 tasks at 3 runs (169 more)"
        " or 89 runs per arm on these 8 tasks would"
    )


def test_when_no_run_count_reaches_the_sentence_says_why_more_runs_alone_would_not() -> None:
    reach = detectability(noisy(), target=5.0)

    assert _first_runs(noisy(), noisy().metric.scale.from_presented(5.0)) is None
    assert reach.runs_needed is None
    assert reach.sentence.endswith(
        f"; it cannot detect the 5.0% asked for: {reach.tasks_needed} tasks at 3 runs"
        f" ({reach.tasks_needed - 8} more) would;"
        " more runs alone would not (the tasks themselves differ too much)"
    )


def test_runs_that_never_vary_say_so() -> None:
    pairs = []
    for index in range(8):
        level = 1.0 + 0.5 * index
        inc, cand = ("111", "111") if index % 4 else ("000", "111")
        pairs.append(
            TaskPair(f"t{index}", arm(inc, [level] * 3), arm(cand, [0.9 * level * (1 + index % 3 / 10)] * 3))
        )
    stats = analyze_pair(pair_samples(*pairs))
    assert stats.metric.components.sigma2 == 0.0

    reach = detectability(stats, target=1.0)

    assert reach.runs_needed is None
    assert reach.sentence.endswith("; more runs alone would not (the runs of a task do not vary)")


def test_a_plan_no_design_reaches_recommends_none() -> None:
    grid = plan(calm(), target=20.0, on_resolution=True, design=DESIGN, task_counts=(10,), run_counts=(1,))
    assert grid.recommended is None
    assert [cell.refused for cell in grid.cells] == [True, True]
