#!/usr/bin/env python3
"""Calibrate the statistical gate policy on simulated sweeps (the longer run of the calibration tests).

Every sweep is simulated as rows (``tests/simulation.py``: per-task resolve rates and cost levels,
run noise, an optional effect that may vary by task) and judged by the real domain
(``judge_rows`` with ``decision_policy=statistical``, default 90 % intervals, B = 2,000).
Printed, with a binomial 95 % half-width on every rate:

0. **why the task is the unit** — a run-level McNemar test (every run pair pooled across tasks)
   at 20 tasks × 10 runs, when per-task effects are ±20 points with a random sign (population
   mean 0), beside the statistical policy on the same sweeps;
1. **type-I error** — the share of sweeps promoted when nothing differs, at 8, 12 and 20 tasks ×
   3 runs, for identical arms and for per-task effects of ±20 points with a random sign
   (effects that vary by task, mean 0); the acceptance bound is nominal α (0.05) + 0.02;
2. **power** — the share promoted with a true +20-point resolution effect at 40 tasks × 3 runs
   (acceptance ≥ 0.80);
3. **MDE** — at 40 tasks × 3 runs, the resolution effect the one-sided 5 % test detects in 80 %
   of sweeps (interpolated over a grid of effects), beside the median MDE the analysis prints
   (acceptance: within 15 %); the same for a cost saving.

4. **the decision** (issue #27), on two generators — ``classic`` (above) and ``ushaped``
   (``tests.simulation.UShaped``: U-shaped per-task pass rates, shared flakes, heavy-tailed
   cost) — the gate's promote rate: with no true difference (identical arms, and effects ±20
   points by task with mean 0) at 6/12/40 tasks × 1/3/5 runs (``min_runs`` 1, so no design is
   refused); a harmful candidate (30 % cheaper, −10 points) at 40 × 3; a sweep with no resolved
   run and a 24 % saving; a true 15 % and 30 % saving and a +20-point gain at the design
   ``wfbench plan`` recommends from a 20-task × 3-run pilot of the same generator; and the
   decision MDE the sentence prints beside the simulated 80 %-promotion effect.

Usage: bench/statistics_calibration.py [--sweeps 2000] [--resamples 2000] [--seed 12]
       [--only analysis|decision-null|decision-rest|decision-mde] [--generator classic|ushaped]
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import random
import statistics
import sys
import time
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from tests.simulation import (  # noqa: E402
    MODEL,
    PAIR,
    Scenario,
    UShaped,
    any_rows,
    decide,
    judge_rows,
    promote_rate,
    statistical_policy,
    sweep_rows,
)

ALPHA = 0.05


def _half_width(rate: float, sweeps: int) -> float:
    return 1.96 * math.sqrt(max(rate * (1 - rate), 1e-12) / sweeps)


def _rate_line(label: str, rate: float, sweeps: int, bound: str) -> str:
    return f"  {label:<46} {rate:6.3f} ± {_half_width(rate, sweeps):.3f}   ({bound})"


def _mcnemar_rejects(rows: list) -> bool:
    """Two-sided run-level McNemar at 5 %: run r of the incumbent paired with run r of the candidate."""
    by_cell = {(row.task, row.arm, row.run): row.resolved for row in rows}
    discordant = [
        (by_cell[(task, "incumbent", run)], by_cell[(task, "candidate", run)])
        for (task, arm, run) in by_cell
        if arm == "incumbent"
    ]
    b = sum(1 for inc, cand in discordant if inc and not cand)
    c = sum(1 for inc, cand in discordant if cand and not inc)
    return b + c > 0 and abs(b - c) / math.sqrt(b + c) > 1.959964


def task_unit(sweeps: int, seed: int, resamples: int) -> list[str]:
    from wfbench.domain.promotion.decision import DecisionKind

    policy = statistical_policy(resamples=resamples)
    scenario = Scenario(tasks=20, runs=10, spread=0.2)
    rnd = random.Random(seed)
    mcnemar = promoted = 0
    for _ in range(sweeps):
        rows = sweep_rows(scenario, rnd)
        mcnemar += _mcnemar_rejects(rows)
        _, (decision,) = judge_rows(rows, PAIR, model=MODEL, policy=policy)
        promoted += decision.kind is DecisionKind.PROMOTE
    return [
        "why the task is the unit (no true effect; per-task effects ±20 pts, random sign;"
        " 20 tasks x 10 runs):",
        _rate_line("run-level McNemar, two-sided 5%: rejects", mcnemar / sweeps, sweeps, "nominal 0.05"),
        _rate_line("statistical policy: promotes", promoted / sweeps, sweeps, f"bound {ALPHA + 0.02:.2f}"),
    ]


def type_one(sweeps: int, seed: int, resamples: int) -> list[str]:
    policy = statistical_policy(resamples=resamples)
    lines = [f"type-I error (promotions with no true effect; bound {ALPHA + 0.02:.2f}):"]
    for spread, name in ((0.0, "identical arms"), (0.2, "effects ±20 pts by task")):
        for tasks in (8, 12, 20):
            rate = promote_rate(
                Scenario(tasks=tasks, spread=spread), sweeps=sweeps, seed=seed + tasks, policy=policy
            )
            ok = "ok" if rate <= ALPHA + 0.02 else "ABOVE"
            lines.append(_rate_line(f"{tasks} tasks x 3 runs, {name}", rate, sweeps, ok))
    return lines


def power(sweeps: int, seed: int, resamples: int) -> list[str]:
    policy = statistical_policy(resamples=resamples)
    rate = promote_rate(
        Scenario(tasks=40, effect=0.2, low=0.1, high=0.7), sweeps=sweeps, seed=seed, policy=policy
    )
    ok = "ok" if rate >= 0.8 else "BELOW"
    return [
        "power (promotions with a true +20-point effect; bound 0.80):",
        _rate_line("40 tasks x 3 runs", rate, sweeps, ok),
    ]


def _detect(scenario: Scenario, sweeps: int, seed: int, resamples: int, on_cost: bool) -> tuple[float, float]:
    """(share of sweeps whose one-sided p ≤ α, median printed MDE) on resolution or on cost."""
    policy = statistical_policy(resamples=resamples)
    rnd = random.Random(seed)
    hits, mdes = 0, []
    for _ in range(sweeps):
        _, stats = decide(scenario, rnd, policy)
        summary = stats.metric if on_cost else stats.resolution  # type: ignore[attr-defined]
        hits += summary.p_value is not None and summary.p_value <= ALPHA
        mdes.append(summary.scale.present(summary.mde))
    return hits / sweeps, statistics.median(mdes)


def mde_check(sweeps: int, seed: int, resamples: int, *, on_cost: bool) -> list[str]:
    if on_cost:
        grid = [0.04, 0.06, 0.08, 0.10, 0.12, 0.14]
        scenario = Scenario(tasks=40, cost_noise=0.3)
        label, unit = "cost saving", "%"
    else:
        grid = [0.10, 0.14, 0.18, 0.22, 0.26]
        scenario = Scenario(tasks=40, low=0.15, high=0.65)
        label, unit = "resolution", " pts"
    rows = []
    for effect in grid:
        case = attrs.evolve(scenario, **{"saving" if on_cost else "effect": effect})
        rate, printed = _detect(case, sweeps, seed, resamples, on_cost)
        presented = 100 * (1 - math.exp(-effect)) if on_cost else 100 * effect
        rows.append((presented, rate, printed))
    lines = [f"MDE of {label} at 40 tasks x 3 runs (one-sided α 0.05, 80% power; bound ±15%):"]
    lines += [
        f"  true {p:5.1f}{unit}: detected {r:.3f}, printed MDE (median) {m:5.1f}{unit}" for p, r, m in rows
    ]
    crossing = next(((a, b) for a, b in itertools.pairwise(rows) if a[1] < 0.8 <= b[1]), None)
    if crossing is None:
        return [*lines, "  80% power not bracketed by the grid"]
    (x0, r0, m0), (x1, r1, m1) = crossing
    at80 = x0 + (0.8 - r0) * (x1 - x0) / (r1 - r0)
    printed = m0 + (at80 - x0) * (m1 - m0) / (x1 - x0)
    gap = printed / at80 - 1
    ok = "ok" if abs(gap) <= 0.15 else "OUTSIDE"
    return [
        *lines,
        f"  simulated 80%-power effect {at80:.1f}{unit}; printed MDE {printed:.1f}{unit}: {gap:+.1%} ({ok})",
    ]


GENERATORS = {"classic": Scenario, "ushaped": UShaped}


def _scenario(generator: str, **fields: object) -> Scenario | UShaped:
    return GENERATORS[generator](**fields)  # type: ignore[arg-type]


def decision_null(generator: str, sweeps: int, seed: int, resamples: int) -> list[str]:
    policy = statistical_policy(resamples=resamples, min_runs=1)
    lines = [f"[{generator}] the decision with no true difference (promote; bound 0.05):"]
    print(lines[0], flush=True)
    for spread, name in ((0.0, "identical arms"), (0.2, "effects ±20 pts by task, mean 0")):
        for tasks in (6, 12, 40):
            for runs in (1, 3, 5):
                case = _scenario(generator, tasks=tasks, runs=runs, spread=spread)
                rate = promote_rate(case, sweeps=sweeps, seed=seed + tasks * 10 + runs, policy=policy)
                ok = "ok" if rate <= ALPHA else "ABOVE"
                lines.append(_rate_line(f"{tasks} x {runs}, {name}", rate, sweeps, ok))
                print(lines[-1], flush=True)  # a long block: each cell as soon as it is measured
    return lines[:1]


def _planned(
    generator: str, seed: int, resamples: int, target: str, **fields: float
) -> tuple[int, int] | None:
    """The design ``wfbench plan --effect TARGET`` recommends from a 20 x 3 pilot of the same
    candidate (the same generator and true effect)."""
    from wfbench.domain.promotion.planning import PlanRequest, parse_effect, plan_pairs
    from wfbench.domain.statistics.config import AnalysisConfig

    pilot = any_rows(_scenario(generator, tasks=20, runs=3, **fields), random.Random(seed))
    request = PlanRequest(
        pairs={"candidate": "incumbent"},
        targets=(parse_effect(target),),
        config=AnalysisConfig(resamples=resamples),
    )
    ((_, plan),) = plan_pairs(pilot, request)[0].plans
    return None if plan.recommended is None else (plan.recommended.n_tasks, plan.recommended.runs)


def decision_rest(generator: str, sweeps: int, seed: int, resamples: int) -> list[str]:
    policy = statistical_policy(resamples=resamples)
    lines = [f"[{generator}] the decision (default policy: min_runs 3, margin 10 pts, 5% asked):"]
    harmful = _scenario(generator, tasks=40, runs=3, effect=-0.10, saving=-math.log(0.7))
    rate = promote_rate(harmful, sweeps=sweeps, seed=seed, policy=policy)
    lines.append(_rate_line("harmful: 30% cheaper, -10 pts, 40 x 3", rate, sweeps, "bound 0.05"))
    dead = Scenario(tasks=6, low=0.0, high=0.0, saving=-math.log(0.76))
    rate = promote_rate(dead, sweeps=sweeps, seed=seed + 1, policy=policy)
    lines.append(_rate_line("nothing resolves, 24% cheaper, 6 x 3", rate, sweeps, "must be 0"))
    for text, fields in (
        ("15%", {"saving": -math.log(0.85)}),
        ("30%", {"saving": -math.log(0.70)}),
        ("20pts", {"effect": 0.20}),
    ):
        design = _planned(generator, seed + 2, resamples, text, **fields)
        if design is None:
            lines.append(f"  plan --effect {text}: no design recommended")
            continue
        case = _scenario(generator, tasks=design[0], runs=design[1], **fields)
        rate = promote_rate(case, sweeps=sweeps, seed=seed + 3, policy=policy)
        label = f"true {text} at plan's design {design[0]} x {design[1]}"
        lines.append(_rate_line(label, rate, sweeps, "bound 0.75"))
    return lines


def _crossing(rows: list[tuple[float, float, float]], unit: str) -> str:
    crossing = next(((a, b) for a, b in itertools.pairwise(rows) if a[1] < 0.8 <= b[1]), None)
    if crossing is None:
        return "  80% not bracketed by the grid"
    (x0, r0, m0), (x1, r1, m1) = crossing
    at80 = x0 + (0.8 - r0) * (x1 - x0) / (r1 - r0)
    printed = m0 + (at80 - x0) * (m1 - m0) / (x1 - x0)
    gap = printed / at80 - 1
    ok = "ok" if abs(gap) <= 0.15 else "OUTSIDE"
    return (
        f"  simulated 80% effect {at80:.1f}{unit}; printed decision MDE {printed:.1f}{unit}:"
        f" {gap:+.1%} ({ok})"
    )


def decision_mde(generator: str, sweeps: int, seed: int, resamples: int) -> list[str]:
    """The decision MDEs the sentence prints vs the simulated effect the gate promotes in 80 %:
    a resolution gain at 40 x 3, and a saving at 100 x 3 (where non-inferiority is within reach)."""
    from wfbench.domain.promotion.decision import DecisionKind
    from wfbench.domain.statistics.planning import detectability

    policy = statistical_policy(resamples=resamples)
    design = policy.gate_design()
    lines: list[str] = []
    for label, tasks, field, grid, unit in (
        ("resolution gain", 40, "effect", (0.08, 0.12, 0.16, 0.20, 0.24), " pts"),
        ("cost saving", 100, "saving", (0.08, 0.12, 0.16, 0.20, 0.25, 0.30), "%"),
    ):
        rows = []
        for value in grid:
            rnd, hits, mdes = random.Random(seed), 0, []
            for _ in range(sweeps):
                case = _scenario(generator, tasks=tasks, runs=3, **{field: value})
                kind, stats = decide(case, rnd, policy)
                hits += kind is DecisionKind.PROMOTE
                reach = detectability(stats, design=design)  # type: ignore[arg-type]
                printed = reach.resolution_mde if field == "effect" else reach.metric_mde
                mdes.append(math.inf if printed is None else printed)
            true = 100 * value if field == "effect" else 100 * (1 - math.exp(-value))
            rows.append((true, hits / sweeps, statistics.median(mdes)))
        lines.append(f"[{generator}] decision MDE of a {label} at {tasks} x 3 (bound ±15%):")
        lines += [
            f"  true {p:5.1f}{unit}: promoted {r:.3f}, printed MDE (median) {m:5.1f}{unit}"
            for p, r, m in rows
        ]
        lines.append(_crossing(rows, unit))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweeps", type=int, default=2000)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--only", choices=("analysis", "decision-null", "decision-rest", "decision-mde"))
    parser.add_argument("--generator", choices=tuple(GENERATORS), default=None)
    args = parser.parse_args()
    start = time.monotonic()
    print(f"statistics calibration: {args.sweeps} sweeps per case, B = {args.resamples}, seed {args.seed}")
    print(f"load average: {' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    sweeps, seed, resamples = args.sweeps, args.seed, args.resamples
    generators = [args.generator] if args.generator else list(GENERATORS)
    analysis = [
        lambda: task_unit(sweeps // 2, seed, resamples),
        lambda: type_one(sweeps, seed, resamples),
        lambda: power(sweeps, seed, resamples),
        lambda: mde_check(sweeps // 2, seed, resamples, on_cost=False),
        lambda: mde_check(sweeps // 2, seed, resamples, on_cost=True),
    ]
    decision = {
        name: [(lambda g=g, f=function: f(g, sweeps, seed, resamples)) for g in generators]
        for name, function in (
            ("decision-null", decision_null),
            ("decision-rest", decision_rest),
            ("decision-mde", decision_mde),
        )
    }
    blocks = (
        analysis
        if args.only == "analysis"
        else decision[args.only]
        if args.only
        else analysis + [b for name in decision for b in decision[name]]
    )
    for block in blocks:
        print("\n".join(block()), flush=True)
    print(f"elapsed: {time.monotonic() - start:.0f} s")


if __name__ == "__main__":
    main()
