"""The gate's decision power: the claims' power, refused designs, the saving MDE, the task search."""

from __future__ import annotations

import math

import pytest

from wfbench.domain.statistics.distributions import t_cdf, t_ppf
from wfbench.domain.statistics.gate_power import (
    GateDesign,
    claim_power,
    decision_power,
    non_inferiority_power,
    saving_mde,
    tasks_for_decision,
)
from wfbench.domain.statistics.power import VarianceComponents

#: Resolution: per-task variance 0.09 at 3 runs (τ² 0.03, σ² 0.09 → 0.03 + 2·0.09/3 = 0.09).
RES = VarianceComponents(n_tasks=20, effect_variance=0.09, sigma2=0.09, inverse_runs=2 / 3, within_dof=80)
#: Cost (log scale): per-task variance 0.04 at 3 runs.
COST = VarianceComponents(n_tasks=20, effect_variance=0.04, sigma2=0.03, inverse_runs=2 / 3, within_dof=80)
DESIGN = GateDesign(alpha=0.025, margin=0.10, required=0.05, power=0.8, min_tasks=5, min_runs=3)


def test_a_claim_s_power_inverts_the_mde_formula() -> None:
    se, n = 0.05, 30
    effect = (t_ppf(0.975, n - 1) + t_ppf(0.8, n - 1)) * se

    assert claim_power(se, n, effect, 0.025) == pytest.approx(0.8, abs=1e-9)
    assert claim_power(se, n, 0.0, 0.025) == pytest.approx(0.025, abs=1e-9)


@pytest.mark.parametrize(
    ("tasks", "runs", "refused"),
    [(4, 3, True), (5, 3, False), (5, 2, True), (5, None, False), (1, None, True)],
)
def test_the_gate_refuses_too_few_tasks_or_runs(tasks: int, runs: int | None, refused: bool) -> None:
    assert DESIGN.refuses(tasks, runs) is refused


def test_a_refused_design_has_no_power() -> None:
    assert decision_power(RES, COST, DESIGN, n_tasks=200, runs=2, saving=0.5) == 0.0
    assert decision_power(RES, COST, DESIGN, n_tasks=4, runs=3, gain=0.5) == 0.0
    assert saving_mde(RES, COST, DESIGN, n_tasks=4, runs=3) is None


def test_a_resolution_gain_is_one_claim_at_the_holm_level() -> None:
    power = decision_power(RES, COST, DESIGN, n_tasks=40, runs=3, gain=0.1)

    assert power == pytest.approx(claim_power(math.sqrt(0.09 / 40), 40, 0.1, 0.025))


def test_a_saving_needs_non_inferiority_and_the_saving_both() -> None:
    n = 60
    se_res, se_cost = math.sqrt(0.09 / n), math.sqrt(0.04 / n)
    ni = claim_power(se_res, n, 0.10, 0.025)
    bar = max(0.05, t_ppf(0.975, n - 1) * se_cost)
    saving = t_cdf((0.2 - bar) / se_cost, n - 1)

    assert non_inferiority_power(RES, DESIGN, n, 3) == pytest.approx(ni)
    assert decision_power(RES, COST, DESIGN, n_tasks=n, runs=3, saving=0.2) == pytest.approx(ni * saving)


def test_the_required_saving_raises_the_bar_above_significance() -> None:
    """At many tasks significance is cheap; the estimate must still reach the required saving."""
    lenient = GateDesign(alpha=0.025, margin=0.10, required=0.0)
    strict = GateDesign(alpha=0.025, margin=0.10, required=0.3)

    at_required = decision_power(RES, COST, strict, n_tasks=5000, runs=3, saving=0.3)

    assert at_required is not None
    assert at_required == pytest.approx(0.5, abs=0.01)  # a true saving exactly at the bar: a coin flip
    assert decision_power(RES, COST, lenient, n_tasks=5000, runs=3, saving=0.3) == pytest.approx(1.0)


def test_nothing_varied_has_unknown_power() -> None:
    flat = VarianceComponents(n_tasks=10, effect_variance=0.0, sigma2=0.0, inverse_runs=2 / 3, within_dof=40)

    assert decision_power(flat, COST, DESIGN, n_tasks=40, runs=3, saving=0.2) is None
    assert decision_power(RES, flat, DESIGN, n_tasks=40, runs=3, saving=0.2) is None
    assert decision_power(RES, None, DESIGN, n_tasks=40, runs=3, saving=0.2) is None
    assert decision_power(flat, COST, DESIGN, n_tasks=40, runs=3, gain=0.2) is None
    assert non_inferiority_power(flat, DESIGN, 40, 3) is None
    assert saving_mde(flat, COST, DESIGN, n_tasks=40, runs=3) is None


def test_the_saving_mde_is_where_the_decision_reaches_its_power() -> None:
    mde = saving_mde(RES, COST, DESIGN, n_tasks=80, runs=3)

    assert mde is not None
    assert decision_power(RES, COST, DESIGN, n_tasks=80, runs=3, saving=mde) == pytest.approx(0.8, abs=1e-9)


def test_no_saving_is_enough_when_non_inferiority_alone_is_shown_too_rarely() -> None:
    ni = non_inferiority_power(RES, DESIGN, 20, 3)

    assert ni is not None
    assert ni < 0.8
    assert saving_mde(RES, COST, DESIGN, n_tasks=20, runs=3) is None


def brute_tasks(runs: int | None, **effect: float) -> int | None:
    for n in range(1, 5000):
        power = decision_power(RES, COST, DESIGN, n_tasks=n, runs=runs, **effect)
        if power is not None and power >= DESIGN.power:
            return n
    return None


@pytest.mark.parametrize(
    ("runs", "effect"),
    [
        (3, {"saving": 0.3}),
        (5, {"saving": 0.15}),
        (3, {"gain": 0.2}),
        (None, {"gain": 0.05}),
        (3, {"gain": 0.3}),
    ],
)
def test_the_task_search_finds_the_first_design_that_reaches(
    runs: int | None, effect: dict[str, float]
) -> None:
    assert tasks_for_decision(RES, COST, DESIGN, runs=runs, **effect) == brute_tasks(runs, **effect)


def test_a_design_the_gate_refuses_at_every_size_is_never_found() -> None:
    assert tasks_for_decision(RES, COST, DESIGN, runs=1, gain=0.5) is None
    assert tasks_for_decision(RES, COST, DESIGN, runs=3, saving=0.0) is None
