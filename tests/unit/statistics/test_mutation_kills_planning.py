"""Every cell of a plan is the gate's own MDE and power of that design, for either kind of target."""

from __future__ import annotations

import attrs
import pytest

from tests.unit.statistics.test_analysis import FOUR, arm, pair_samples
from tests.unit.statistics.test_planning_view import calm, noisy
from wfbench.domain.statistics import planning
from wfbench.domain.statistics.analysis import analyze_pair
from wfbench.domain.statistics.config import AnalysisConfig
from wfbench.domain.statistics.effects import Scale
from wfbench.domain.statistics.gate_power import GateDesign, decision_power, saving_mde, tasks_for_decision
from wfbench.domain.statistics.planning import detectability, plan
from wfbench.domain.statistics.power import mde
from wfbench.domain.statistics.samples import REVIEW_METRIC, TaskPair

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


def test_runs_that_never_vary_still_name_the_tasks_that_would_reach_the_target() -> None:
    pairs = []
    for index in range(8):
        level = 1.0 + 0.5 * index
        inc, cand = ("111", "111") if index % 4 else ("000", "111")
        pairs.append(
            TaskPair(f"t{index}", arm(inc, [level] * 3), arm(cand, [0.9 * level * (1 + index % 3 / 10)] * 3))
        )
    reach = detectability(analyze_pair(pair_samples(*pairs)), target=1.0)

    assert (reach.n_tasks, reach.runs_per_arm) == (8, 3)
    assert reach.sentence.startswith("this sweep (8 tasks x 3 runs) can detect ")
    assert reach.tasks_needed is not None
    assert reach.sentence.endswith(
        f"; it cannot detect the 1.0% asked for: {reach.tasks_needed} tasks at 3 runs"
        f" ({reach.tasks_needed - 8} more) would; more runs alone would not (the runs of a task do not vary)"
    )


def test_a_target_below_the_required_saving_is_out_of_reach_of_every_design() -> None:
    required = GateDesign(required=Scale.LOG_RATIO.from_presented(30.0))

    reach = detectability(calm(), target=5.0, design=required)

    assert (reach.tasks_needed, reach.runs_needed) == (None, None)
    assert reach.sentence.endswith("; it cannot detect the 5.0% asked for: no design within reach would")


def test_a_review_metric_target_is_asked_for_in_points() -> None:
    pairs = [
        TaskPair(
            f"t{i}",
            arm("101", [0.5, 0.6, 0.7] if i % 2 else [0.2, 0.4, 0.3]),
            arm("110", [0.7, 0.8, 0.75] if i % 2 else [0.3, 0.6, 0.9]),
        )
        for i in range(8)
    ]
    review = analyze_pair(pair_samples(*pairs, metric=REVIEW_METRIC))

    assert "; it cannot detect the 2.0 points asked for: " in detectability(review, target=2.0).sentence


def test_the_default_design_asks_each_claim_its_share_of_alpha_at_the_analysis_power() -> None:
    stats = analyze_pair(FOUR, AnalysisConfig(confidence=0.8, power=0.9))

    assert planning.default_design(stats) == GateDesign(alpha=0.05, power=0.9, required=0.0)
    assert planning.default_design(stats, claims=4).alpha == pytest.approx(0.025)
    asked = planning.default_design(stats, target=20.0)
    assert asked.required == pytest.approx(Scale.LOG_RATIO.from_presented(20.0))


def test_the_runs_search_starts_at_one_run_when_one_run_already_reaches() -> None:
    assert planning._runs_for(calm(), GateDesign(margin=0.5), saving=1.0) == 1


def test_the_runs_search_never_proposes_fewer_runs_than_the_gate_accepts() -> None:
    """Even a target power any design meets is met at the gate's runs floor, not below it."""
    assert planning._runs_for(calm(), GateDesign(power=0.0, min_runs=3), saving=0.1) == 3


def test_a_target_power_of_one_is_reached_by_runs_once_the_power_rounds_to_one() -> None:
    stats, certain = calm(), GateDesign(power=1.0)
    res, metric = stats.resolution.components, stats.metric.components

    found = planning._runs_for(stats, certain, saving=5.0)

    assert found is not None
    assert decision_power(res, metric, certain, n_tasks=40, runs=found, saving=5.0) == 1.0
    assert decision_power(res, metric, certain, n_tasks=40, runs=found - 1, saving=5.0) < 1.0


def _presented_saving_mde(stats: object, runs: int) -> float:
    res, metric = stats.resolution, stats.metric  # type: ignore[attr-defined]
    raw = saving_mde(res.components, metric.components, GateDesign(), n_tasks=res.n_tasks, runs=runs)
    assert raw is not None
    return float(metric.scale.present(raw))


def test_the_runs_search_goes_up_to_100_runs_per_arm_and_no_further() -> None:
    stats = noisy()
    at_100, at_101 = _presented_saving_mde(stats, 100), _presented_saving_mde(stats, 101)
    assert _presented_saving_mde(stats, 99) > at_100 + 1e-6

    assert detectability(stats, target=at_100 + 1e-9).runs_needed == 100
    assert detectability(stats, target=(at_100 + at_101) / 2).runs_needed is None


def _pilot_without_a_metric() -> object:
    pairs = [
        TaskPair(f"t{i}", arm("110" if i % 2 else "101", [None] * 3), arm("111", [None] * 3))
        for i in range(6)
    ]
    return analyze_pair(pair_samples(*pairs))


def test_a_saving_plan_without_a_measured_metric_has_no_mde_or_power_and_recommends_nothing() -> None:
    stats = _pilot_without_a_metric()
    assert stats.resolution.components is not None
    assert stats.metric.components is None

    grid = plan(stats, target=20.0, on_resolution=False, design=DESIGN, **GRID)

    assert all(cell.mde is None for cell in grid.cells)
    assert all(cell.power is None or cell.refused for cell in grid.cells)
    assert grid.recommended is None


def test_a_plan_on_an_empty_pilot_has_no_power_and_recommends_nothing() -> None:
    one = analyze_pair(pair_samples())
    assert one.resolution.components is None

    grid = plan(one, target=20.0, on_resolution=True, design=GateDesign(), task_counts=(10,), run_counts=(3,))

    assert [(cell.n_tasks, cell.mde, cell.power, cell.reaches) for cell in grid.cells] == [
        (10, None, None, False)
    ]
    assert grid.recommended is None


def test_designs_of_equal_sessions_recommend_the_one_with_more_tasks() -> None:
    """At a gain of 8 points, 24 tasks x 5 runs and 20 tasks x 6 runs are both 240 sessions."""
    grid = plan(calm(), target=8.0, on_resolution=True, design=GateDesign(), run_counts=(5, 6))

    assert grid.recommended is not None
    assert (grid.recommended.n_tasks, grid.recommended.runs, grid.recommended.sessions) == (24, 5, 240)


def test_a_plan_cell_reaches_a_target_power_of_one_once_its_power_rounds_to_one() -> None:
    certain = GateDesign(power=1.0)

    grid = plan(
        calm(), target=99.0, on_resolution=False, design=certain, task_counts=(320,), run_counts=(10,)
    )

    (cell,) = [c for c in grid.cells if c.n_tasks == 320]
    assert cell.power == 1.0
    assert cell.reaches


def test_a_review_metric_is_described_by_its_own_name() -> None:
    review = attrs.evolve(calm().metric, name=REVIEW_METRIC, scale=Scale.DIFFERENCE)

    assert planning.describe_effect(review, 12.0) == f"a {REVIEW_METRIC} change of >= 12.0 points"


def test_only_an_mde_of_more_than_100_points_is_beyond_the_scale() -> None:
    resolution = calm().resolution
    assert not planning._beyond_scale(resolution, 100.0)
    assert planning._beyond_scale(resolution, 100.5)


def test_the_sentence_states_the_margin_of_the_design_it_was_given() -> None:
    sentence = detectability(calm(), design=GateDesign(margin=0.05)).sentence

    assert "a saving also needs resolution shown within 5 points)" in sentence
    assert "within 10 points" in detectability(calm()).sentence


def test_a_target_exactly_at_the_mde_is_within_reach() -> None:
    mde_pct = detectability(calm()).metric_mde
    assert mde_pct is not None

    assert detectability(calm(), target=mde_pct).can_detect_target


def test_a_sweep_that_cannot_say_what_it_detects_reports_no_mde_and_the_target() -> None:
    pairs = (TaskPair(f"t{i}", arm("111", [1.0] * 3), arm("111", [2.0] * 3)) for i in range(6))

    reach = detectability(analyze_pair(pair_samples(*pairs)), target=5.0)

    assert reach == planning.Detectability(6, 3, None, None, 5.0, False, None, None, reach.sentence)


def test_two_tasks_where_nothing_varied_say_so_rather_than_asking_for_two_tasks() -> None:
    pairs = (TaskPair(f"t{i}", arm("111", [1.0] * 3), arm("111", [2.0] * 3)) for i in range(2))

    sentence = detectability(analyze_pair(pair_samples(*pairs))).sentence

    assert sentence == (
        "this sweep (2 tasks x 3 runs) cannot say what it could detect: nothing varied between its runs "
        "or tasks, so there is no noise to plan on"
    )


def test_two_tasks_can_already_say_how_many_would_show_non_inferiority() -> None:
    two = analyze_pair(pair_samples(TaskPair("a", arm("1"), arm("0")), TaskPair("b", arm("0"), arm("0"))))

    assert detectability(two).non_inferiority_tasks == 395


def test_a_sweep_that_already_shows_non_inferiority_asks_for_no_more_tasks_even_at_power_one() -> None:
    assert planning._ni_tasks(calm(), GateDesign(power=1.0, margin=0.9)) is None


def test_one_task_asks_for_no_tasks_for_non_inferiority() -> None:
    one = analyze_pair(pair_samples(TaskPair("a", arm("110"), arm("111"))))

    assert planning._ni_tasks(one, GateDesign()) is None


def _review_sweep(patterns: list[tuple[str, str]], reviews: list[float]) -> object:
    pairs = [
        TaskPair(f"t{i}", arm(inc, [0.5] * 3), arm(cand, [review, review, review - 0.01]))
        for i, ((inc, cand), review) in enumerate(zip(patterns, reviews, strict=True))
    ]
    return analyze_pair(pair_samples(*pairs, metric=REVIEW_METRIC))


def test_a_known_mde_and_one_beyond_the_scale_are_said_together() -> None:
    sweep = _review_sweep([("111", "111"), ("111", "111"), ("110", "111")], [0.99, 0.01, 0.99])

    sentence = detectability(sweep, design=GateDesign(margin=1.0, min_tasks=2)).sentence

    assert sentence.startswith(
        "this sweep (3 tasks x 3 runs) can detect a resolution change of >= 59.6 points"
    )
    assert sentence.endswith(
        "within 100 points) but no review_weighted_f1 change (its MDE, 178.5 points,"
        " exceeds the 100-point scale)"
    )


def test_two_mdes_beyond_the_scale_are_both_named() -> None:
    sweep = _review_sweep([("000", "111"), ("111", "110"), ("110", "110")], [0.95, 0.05, 0.9])

    sentence = detectability(sweep, design=GateDesign(margin=5.0, min_tasks=2)).sentence

    assert sentence.startswith(
        "this sweep (3 tasks x 3 runs) cannot detect any review_weighted_f1 change (its MDE, 157.6 points,"
        " exceeds the 100-point scale) or any resolution change (its MDE, 214.9 points, exceeds the"
        " 100-point scale) with 80% power"
    )


def test_a_metric_measured_on_one_task_has_no_mde_and_on_two_has_one() -> None:
    def measured_on(count: int) -> object:
        pairs = []
        for index in range(40):
            spread = [0.5, 1.0, 2.0] if index % 2 else [1.5, 0.7, 1.1]
            inc, cand = {0: ("110", "111"), 1: ("111", "110")}.get(index % 8, ("111", "111"))
            costs = spread if index < count else [None] * 3
            cand_costs = [0.5 * v for v in spread[::-1]] if index < count else [None] * 3
            pairs.append(TaskPair(f"t{index}", arm(inc, costs), arm(cand, cand_costs)))
        return analyze_pair(pair_samples(*pairs))

    assert detectability(measured_on(1)).metric_mde is None
    assert detectability(measured_on(2)).metric_mde is not None


def test_a_metric_without_noise_cannot_say_whether_it_reaches_the_target() -> None:
    pairs = []
    for index in range(40):
        inc, cand = {0: ("110", "111"), 1: ("111", "110")}.get(index % 8, ("111", "111"))
        pairs.append(TaskPair(f"t{index}", arm(inc, [2.0] * 3), arm(cand, [1.0] * 3)))
    stats = analyze_pair(pair_samples(*pairs))
    assert stats.metric.mde is None

    sentence = detectability(stats, target=5.0).sentence

    assert sentence.startswith("this sweep (40 tasks x 3 runs) can detect a resolution change of >= ")
    assert sentence.endswith("; it cannot say whether it could detect the 5.0% asked for")
