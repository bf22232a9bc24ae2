"""Detectability sentences, the plan grid and its recommendation, and the report's view."""

from __future__ import annotations

import pytest

from tests.unit.statistics.test_analysis import FOUR, arm, pair_samples
from wfbench.domain.errors import InputError
from wfbench.domain.statistics.analysis import analyze_pair
from wfbench.domain.statistics.gate_power import GateDesign
from wfbench.domain.statistics.planning import detectability, plan
from wfbench.domain.statistics.samples import TaskPair
from wfbench.domain.statistics.view import statistics_view


def noisy(tasks: int = 8) -> object:
    pairs = []
    for index in range(tasks):
        spread = [0.5, 1.0, 2.0] if index % 2 else [1.5, 0.7, 1.1]
        pairs.append(TaskPair(f"t{index}", arm("101", spread), arm("110", spread[::-1])))
    return analyze_pair(pair_samples(*pairs))


def calm(tasks: int = 40) -> object:
    """Resolution that varies a little by task (one run in three, either way) and a noisy cost."""
    pairs = []
    for index in range(tasks):
        spread = [0.5, 1.0, 2.0] if index % 2 else [1.5, 0.7, 1.1]
        inc, cand = {0: ("110", "111"), 1: ("111", "110")}.get(index % 8, ("111", "111"))
        pairs.append(TaskPair(f"t{index}", arm(inc, spread), arm(cand, [0.5 * v for v in spread[::-1]])))
    return analyze_pair(pair_samples(*pairs))


def test_a_sweep_that_reaches_the_target_says_so() -> None:
    reach = detectability(calm(), target=90.0)

    assert reach.can_detect_target
    assert reach.sentence.startswith("this sweep (40 tasks x 3 runs) can detect a cost_usd saving of >= ")
    assert "and a resolution change of >= " in reach.sentence
    assert "the gate's one-sided alpha = 0.025 per claim after Holm" in reach.sentence
    assert reach.sentence.endswith("so it could detect the 90.0% asked for")
    assert reach.tasks_needed is None


def test_a_sweep_that_misses_the_target_says_what_would_reach_it() -> None:
    reach = detectability(noisy(), target=5.0)

    assert not reach.can_detect_target
    assert reach.metric_mde is None  # non-inferiority alone is shown too rarely at 8 tasks
    assert "it cannot detect the 5.0% asked for: " in reach.sentence
    assert reach.tasks_needed is not None
    assert f"{reach.tasks_needed} tasks at 3 runs ({reach.tasks_needed - 8} more)" in reach.sentence


def test_a_sweep_too_small_for_non_inferiority_says_how_many_tasks_would_show_it() -> None:
    reach = detectability(noisy())

    assert reach.non_inferiority_tasks is not None
    assert (
        f"it shows resolution non-inferior too rarely: {reach.non_inferiority_tasks} tasks at 3 runs "
        f"({reach.non_inferiority_tasks - 8} more) would show it with 80% power"
    ) in reach.sentence


def test_without_a_target_only_the_reach_is_stated() -> None:
    reach = detectability(noisy())

    assert reach.can_detect_target
    assert "asked for" not in reach.sentence


def test_one_task_cannot_say_what_it_could_detect() -> None:
    one = analyze_pair(pair_samples(TaskPair("a", arm("1"), arm("0"))))

    reach = detectability(one, target=5.0)

    assert not reach.can_detect_target
    assert "cannot say what it could detect" in reach.sentence


def test_the_plan_grid_prices_every_cell_and_recommends_the_cheapest_that_reaches() -> None:
    stats = calm()

    grid = plan(
        stats,
        target=20.0,
        on_resolution=False,
        design=GateDesign(),
        session_cost=0.5,
        task_counts=(10, 80),
        run_counts=(1, 3),
    )

    assert [(c.n_tasks, c.runs) for c in grid.cells] == [(10, 1), (40, 1), (80, 1), (10, 3), (40, 3), (80, 3)]
    assert grid.cells[0].sessions == 20
    assert grid.cells[0].cost == 10.0
    assert grid.recommended is not None
    assert grid.recommended.reaches
    assert grid.recommended.power is not None
    assert grid.recommended.power >= 0.8
    assert grid.recommended.mde is not None
    assert grid.recommended.mde <= 20.0
    reaching = [c for c in grid.cells if c.reaches]
    assert all(grid.recommended.cost <= c.cost for c in reaching)  # type: ignore[operator]


def test_a_plan_never_recommends_a_design_the_gate_refuses() -> None:
    refusing = GateDesign(min_runs=3, min_tasks=5)

    grid = plan(
        calm(), target=20.0, on_resolution=True, design=refusing, task_counts=(4, 80), run_counts=(1, 3)
    )

    assert grid.recommended is not None
    assert grid.recommended.runs == 3
    assert [c.refused for c in grid.cells] == [True, True, True, True, False, False]
    assert all(c.power == 0.0 for c in grid.cells if c.refused)


def test_a_plan_without_a_known_cost_ranks_by_sessions() -> None:
    grid = plan(
        noisy(), target=30.0, on_resolution=True, design=GateDesign(), task_counts=(20,), run_counts=(2, 5)
    )

    assert grid.cells[0].cost is None
    assert grid.recommended is not None
    assert grid.unit == "points"


def test_the_report_view_reads_a_statistics_object() -> None:
    raw = analyze_pair(FOUR).to_mapping()

    view = statistics_view(raw, candidate="cand", incumbent="inc", target=5.0)

    assert view.resolution.text().startswith("resolution: +8.3 points, 90% interval [")
    assert view.resolution.text().endswith("(4 tasks x 3 runs)")
    assert view.metric.text().startswith("cost_usd saving: 40.5%, 90% interval [")
    assert [t.task for t in view.tasks] == ["a", "b", "c", "d"]
    assert view.detectability.target == 5.0


def test_the_report_view_of_nothing_measured_prints_n_a() -> None:
    view = statistics_view(analyze_pair(pair_samples()).to_mapping(), candidate="cand", incumbent="inc")

    assert view.resolution.text() == "resolution: n/a (0 tasks x None runs)"


def test_the_report_view_refuses_a_forged_object() -> None:
    raw = analyze_pair(FOUR).to_mapping() | {"effect": 1.0}

    with pytest.raises(InputError, match="disagrees"):
        statistics_view(raw, candidate="cand", incumbent="inc")


def test_a_sweep_where_nothing_varied_cannot_tell_rather_than_claiming_any_effect() -> None:
    """Identical runs everywhere: the MDE is unknown (never "a saving of >= 0.0%")."""
    pairs = (TaskPair(f"t{i}", arm("111", [1.0] * 3), arm("111", [2.0] * 3)) for i in range(6))
    same = analyze_pair(pair_samples(*pairs))

    reach = detectability(same, target=5.0)

    assert reach.metric_mde is None
    assert reach.resolution_mde is None
    assert not reach.can_detect_target
    assert ">= 0.0" not in reach.sentence
    assert reach.sentence == (
        "this sweep (6 tasks x 3 runs) cannot say what it could detect: nothing varied between its runs "
        "or tasks, so there is no noise to plan on; it cannot tell whether it could detect the 5.0% asked for"
    )


def test_one_task_says_it_needs_two_tasks() -> None:
    one = analyze_pair(pair_samples(TaskPair("a", arm("1"), arm("0"))))

    assert detectability(one).sentence.endswith("it needs at least two paired tasks")


def test_an_mde_beyond_100_points_says_no_resolution_change_is_detectable() -> None:
    """Two tasks at one run: a resolution MDE of hundreds of points means no change of any size."""
    tiny = analyze_pair(pair_samples(TaskPair("a", arm("1"), arm("0")), TaskPair("b", arm("0"), arm("0"))))

    reach = detectability(tiny)

    assert reach.resolution_mde is not None
    assert reach.resolution_mde > 100.0
    assert ">= " not in reach.sentence
    assert reach.sentence.startswith(
        "this sweep (2 tasks x 1 runs) cannot detect any resolution change (its MDE, "
    )
    assert (
        "points, exceeds the 100-point scale) with 80% power (the gate's one-sided alpha = 0.025"
        in reach.sentence
    )


def test_one_run_per_arm_plans_tasks_but_not_runs() -> None:
    pairs = (
        TaskPair("a", arm("1", [1.0]), arm("0", [0.5])),
        TaskPair("b", arm("0", [1.0]), arm("0", [0.45])),
    )
    both = analyze_pair(pair_samples(*pairs))

    planned = detectability(both, target=5.0)

    assert planned.tasks_needed is not None
    assert planned.runs_needed is None
    assert planned.sentence.endswith(
        f"{planned.tasks_needed} tasks at 1 runs ({planned.tasks_needed - 2} more) would; whether more runs "
        "would is unknown (no task has two runs of an arm)"
    )


def test_two_tasks_print_no_interval_and_no_bound_reads_minus_zero() -> None:
    from wfbench.domain.statistics.view import EffectLine

    two = EffectLine("cost_usd saving", "savings_pct", 2, 3, 24.0, -10766.0, 60.0, 0.9, None, None)
    tiny = EffectLine("resolution", "points", 12, 3, -1e-16, -1.1e-15, 26.7, 0.9, None, None)

    assert (
        two.text()
        == "cost_usd saving: 24.0%, 90% interval n/a (too few tasks for an interval) (2 tasks x 3 runs)"
    )
    assert tiny.text() == "resolution: +0.0 points, 90% interval [+0.0, +26.7] (12 tasks x 3 runs)"
