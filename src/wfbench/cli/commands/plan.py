"""``wfbench plan RESULTS --effect 10%``: how big must the next sweep be to detect an effect?

RESULTS is a pilot sweep (or any prior rows) with a candidate and its incumbent. For each pair the
command prints what the pilot measured (effects, between-task and run variance), what the pilot
itself could detect, and per target effect the MDE grid over tasks × runs per arm with each
design's cost (``2·n·K`` sessions × the pilot's median session cost), then the cheapest design
that reaches the target. ``--json`` prints the same as JSON. Nothing is written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from wfbench.cli.commands.gate import results_path
from wfbench.cli.exit_codes import OK, USAGE, exit_codes_help
from wfbench.cli.options.gate import Metric, parse_pairs
from wfbench.domain.errors import InputError

if TYPE_CHECKING:
    from wfbench.domain.promotion.planning import PairPlan, Target
    from wfbench.domain.statistics.planning import Plan, PlanCell

PLAN_EPILOG = (
    "\b\nExamples:\n"
    "  wfbench plan results/pilot --effect 10%          # a 10% cost saving\n"
    "  wfbench plan results/pilot --effect 15pts         # a 15-point resolution gain\n"
    "  wfbench plan RESULTS --effect 5% --runs 1,3,5 --tasks 20,40,80 --json\n"
    "\n"
    + exit_codes_help(
        (
            (OK, "the plan was printed"),
            (USAGE, "usage or input error: no pilot rows, a bad --effect, a torn results.jsonl line"),
        )
    )
)


def _counts(text: str, option: str) -> tuple[int, ...]:
    try:
        values = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise InputError(f"expected comma-separated integers, got {text!r}", field=option) from None
    if not values or any(value < 1 for value in values):
        raise InputError(f"expected positive integers, got {text!r}", field=option)
    return values


def _money(value: float | None) -> str:
    return "n/a" if value is None else f"${value:,.2f}"


def _mde(plan: Plan, value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.1f}%" if plan.unit == "savings_pct" else f"{value:.1f}pt"


def _power(cell: PlanCell) -> str:
    if cell.refused:
        return "refused"
    return "n/a" if cell.power is None else f"{cell.power:.0%}"


def _design(plan: Plan, cell: PlanCell) -> str:
    return (
        f"{cell.n_tasks} tasks x {cell.runs} run{'' if cell.runs == 1 else 's'} per arm = {cell.sessions}"
        f" sessions, {_money(cell.cost)} "
        f"(the gate promotes it with {_power(cell)}; decision MDE {_mde(plan, cell.mde)})"
    )


def _grid(plan: Plan) -> list[str]:
    runs = sorted({cell.runs for cell in plan.cells})
    tasks = sorted({cell.n_tasks for cell in plan.cells})
    by_key = {(cell.n_tasks, cell.runs): cell for cell in plan.cells}
    width = 26
    lines = ["    " + "tasks".ljust(7) + "".join(f"runs={k}".ljust(width) for k in runs)]
    for n in tasks:
        cells = [by_key[(n, k)] for k in runs]
        text = "".join(
            (("*" if c.reaches else " ") + f"{_mde(plan, c.mde)} {_power(c)} {_money(c.cost)}").ljust(width)
            for c in cells
        )
        lines.append("    " + str(n).ljust(7) + text)
    return lines


def render_plan_text(plans: tuple[PairPlan, ...], *, source: Path) -> str:
    """The human plan: per pair the pilot's numbers, then per target the grid and the recommendation."""
    from wfbench.domain.statistics.view import effect_line

    lines = [f"pilot: {source}"]
    for pair in plans:
        stats = pair.statistics
        res, metric = stats.resolution, stats.metric
        lines += [
            "",
            f"pair {pair.candidate} vs {pair.incumbent}: {res.n_tasks} tasks x {res.runs_per_arm} runs"
            f" per arm; median session cost {_money(pair.session_cost)}",
        ]
        for summary in (res, metric):
            components = summary.components
            tau2 = "n/a" if components is None or components.tau2 is None else f"{components.tau2:.4g}"
            sigma2 = "n/a" if components is None or components.sigma2 is None else f"{components.sigma2:.4g}"
            scale = " (log scale)" if summary.scale.value == "log_ratio" else ""
            line = effect_line(summary, stats.config.confidence).text()
            lines.append(f"  {line}; between-task tau2 {tau2}, run sigma2 {sigma2}{scale}")
        for target, plan in pair.plans:
            quantity = "resolution change (points)" if target.on_resolution else f"{metric.name} saving"
            lines += [
                "",
                f"  target {target.text()}: per design the gate's MDE of a {quantity}, the chance the"
                f" gate promotes a true {target.text()} (one-sided alpha {stats.config.alpha / 2:g} per"
                f" claim after Holm; {'' if target.on_resolution else 'resolution equal, '}"
                f"'refused' below --min-runs or 5 tasks) and its cost (* reaches {stats.config.power:.0%}):",
                *_grid(plan),
            ]
            lines.append(f"  {recommendation_text(target, plan)}")
    return "\n".join(lines)


def recommendation_text(target: Target, plan: Plan) -> str:
    """``cheapest design reaching 10%: 40 tasks x 3 runs per arm = …`` (or why there is none)."""
    best = plan.recommended
    if best is None:
        return (
            f"no design within reach detects {target.text()} (the pilot cannot separate"
            " the noise, or the tasks differ too much)"
        )
    return f"cheapest design reaching {target.text()}: {_design(plan, best)}"


def _cell_mapping(cell: PlanCell | None) -> dict[str, Any] | None:
    if cell is None:
        return None
    return {
        "tasks": cell.n_tasks,
        "runs": cell.runs,
        "sessions": cell.sessions,
        "cost": cell.cost,
        "mde": cell.mde,
        "power": cell.power,
        "refused": cell.refused,
        "reaches": cell.reaches,
    }


def plan_mapping(plans: tuple[PairPlan, ...]) -> list[dict[str, Any]]:
    """The plan as JSON-ready data: per pair, the pilot's statistics and each target's grid."""
    return [
        {
            "candidate_arm": pair.candidate,
            "incumbent_arm": pair.incumbent,
            "session_cost": pair.session_cost,
            "statistics": {k: v for k, v in pair.statistics.to_mapping().items() if k != "tasks"},
            "targets": [
                {
                    "effect": target.value,
                    "unit": "points" if target.on_resolution else "savings_pct",
                    "on": "resolution" if target.on_resolution else pair.statistics.metric.name,
                    "recommended": _cell_mapping(plan.recommended),
                    "grid": [_cell_mapping(cell) for cell in plan.cells],
                }
                for target, plan in pair.plans
            ],
        }
        for pair in plans
    ]


_Results = Annotated[
    Path, typer.Argument(metavar="RESULTS", help="A pilot results.jsonl, or a directory holding one.")
]
_Effect = Annotated[
    list[str] | None,
    typer.Option(
        "--effect",
        metavar="EFFECT",
        help="Repeatable: 10% (a saving on --metric) or 10pts (resolution points). Default: 5% and 10pts.",
        show_default=False,
    ),
]
_Metric = Annotated[Metric, typer.Option("--metric", help="The spend metric savings are on.")]
_Pairs = Annotated[
    list[str] | None,
    typer.Option(
        "--pair",
        metavar="CANDIDATE=INCUMBENT",
        help="Repeatable; replaces the default candidate pairing.",
        show_default=False,
    ),
]
_Tasks = Annotated[str, typer.Option("--tasks", metavar="N[,N]", help="Task counts of the grid.")]
_Runs = Annotated[str, typer.Option("--runs", metavar="K[,K]", help="Runs per arm of the grid.")]
_Power = Annotated[float, typer.Option("--power", metavar="P", help="Power of the MDE.")]
_Confidence = Annotated[
    float, typer.Option("--confidence", metavar="C", help="Two-sided confidence (one-sided alpha = (1-C)/2).")
]
_MinRuns = Annotated[
    int,
    typer.Option(
        "--min-runs", min=1, help="The gate's fewest valid runs per arm (designs below it are refused)."
    ),
]
_MinImprovement = Annotated[
    float, typer.Option("--min-improvement", metavar="PCT", help="The smallest saving the gate promotes.")
]
_AsJson = Annotated[bool, typer.Option("--json", help="Print the plan as JSON.")]


def register(app: typer.Typer) -> None:
    """Add ``plan`` to ``app``."""
    app.command("plan", epilog=PLAN_EPILOG)(plan_command)


def plan_command(
    results: _Results,
    *,
    effect: _Effect = None,
    metric: _Metric = "cost_usd",
    pair: _Pairs = None,
    tasks: _Tasks = "5,10,20,40,80,160,320",
    runs: _Runs = "1,2,3,5,10",
    power: _Power = 0.8,
    confidence: _Confidence = 0.9,
    min_runs: _MinRuns = 3,
    min_improvement: _MinImprovement = 5.0,
    as_json: _AsJson = False,
) -> None:
    """Plan the next sweep from a pilot: the MDE over tasks x runs, its cost, the cheapest design."""
    from wfbench.adapters.store.jsonl_store import JsonlResultStore
    from wfbench.domain.promotion.planning import PlanRequest, parse_effect, plan_pairs
    from wfbench.domain.promotion.policy import CANDIDATE_ARMS, PromotionPolicy
    from wfbench.domain.statistics.config import AnalysisConfig

    targets = tuple(parse_effect(text) for text in (effect or ["5%", "10pts"]))
    try:
        config = AnalysisConfig(confidence=confidence, power=power)
    except InputError as exc:
        raise InputError(exc.reason, field=f"--{exc.field}") from None
    policy = PromotionPolicy(
        metric=metric, min_runs=min_runs, min_improvement_pct=min_improvement, decision_policy="statistical"
    )
    request = PlanRequest(
        pairs=parse_pairs(pair) or CANDIDATE_ARMS,
        metric=metric,
        targets=targets,
        task_counts=_counts(tasks, "--tasks"),
        run_counts=_counts(runs, "--runs"),
        config=config,
        policy=policy,
    )
    source = results_path(results)
    plans = plan_pairs(JsonlResultStore(source).rows(), request)
    if as_json:
        typer.echo(json.dumps(plan_mapping(plans), indent=2, ensure_ascii=False))
    else:
        typer.echo(render_plan_text(plans, source=source))
