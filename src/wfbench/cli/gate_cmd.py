"""``wfbench gate RESULTS`` and ``wfbench report RESULTS``: the file-level commands over the gate.

RESULTS is a ``results.jsonl`` or a directory holding one. ``gate`` recomputes the aggregates
and a decision for every candidate arm present, prints them (``--json``: the promotion evidence
as JSON) and writes ``promotion.json`` beside the results, atomically. ``report`` writes
``report.md`` and ``report.html`` beside them. A torn or invalid line exits 2 naming the file,
the line and the field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from wfbench.domain.errors import InputError

if TYPE_CHECKING:
    from wfbench.app.gating import GateResult
    from wfbench.domain.promotion.policy import PromotionPolicy
    from wfbench.domain.results.rows import Row

RESULTS_NAME = "results.jsonl"

_Results = Annotated[Path, typer.Argument(help="A results.jsonl, or a directory holding one.")]
_Metric = Annotated[
    str,
    typer.Option(
        "--metric", help="Implementation metric: cost_usd (default), output_tokens, duration_s, num_turns."
    ),
]
_MinRuns = Annotated[
    int, typer.Option("--min-runs", help="Valid (and scored) runs required per arm and task.")
]
_MinImprovement = Annotated[
    float, typer.Option("--min-improvement", help="Median improvement (%) needed to promote on spend.")
]
_MaxRegression = Annotated[
    float, typer.Option("--max-task-regression", help="Largest tolerated per-task spend regression (%).")
]
_Pairs = Annotated[
    list[str] | None,
    typer.Option("--pair", help="CANDIDATE=INCUMBENT (repeatable); replaces the default candidate pairing."),
]


def results_path(target: Path) -> Path:
    """The results file named by ``target`` (the file itself, or ``DIR/results.jsonl``).

    Raises:
        InputError: nothing readable there.
    """
    if target.is_dir():
        candidate = target / RESULTS_NAME
        if not candidate.is_file():
            raise InputError(f"no {RESULTS_NAME} in this directory", source=str(target))
        return candidate
    if not target.is_file():
        raise InputError("no such results file or directory", source=str(target))
    return target


def parse_pairs(specs: list[str] | None) -> dict[str, str] | None:
    """``["cand=inc", ...]`` as a pairing map; ``None`` when no ``--pair`` was given."""
    if not specs:
        return None
    pairs: dict[str, str] = {}
    for spec in specs:
        candidate, sep, incumbent = spec.partition("=")
        if not sep or not candidate or not incumbent or candidate == incumbent:
            raise InputError(f"expected CANDIDATE=INCUMBENT, got {spec!r}", field="--pair")
        pairs[candidate] = incumbent
    return pairs


def _fmt(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def render_gate_text(result: GateResult, *, source: Path, written: Path | None) -> str:
    """The human summary: one line per (task, arm) aggregate, then each decision and its reasons."""
    lines = [
        f"results: {source}",
        "",
        "aggregates (task, arm: resolved/valid, scored, cost $, wall s, errors):",
    ]
    for (task, arm), agg in result.table.items():
        errors = ", ".join(f"{kind}×{n}" for kind, n in sorted(agg.error_kinds.items())) or "—"
        excluded = f" ({agg.excluded_runs} excluded)" if agg.excluded_runs else ""
        lines.append(
            f"  {task}  {arm}: {agg.resolved}/{agg.valid_runs}{excluded}, scored {agg.scored_runs}, "
            f"cost {_fmt(agg.cost_usd, '.4f')}, wall {_fmt(agg.duration_s, '.0f')}, {errors}"
        )
    lines.append("")
    if not result.decisions:
        lines.append("decisions: no candidate arm has rows; nothing to gate (no promotion.json written)")
    for decision in result.decisions:
        lines.append(
            f"decision: {decision.candidate_arm} vs {decision.incumbent_arm} "
            f"({decision.gate.value}, {decision.metric}): {decision.kind.value.upper()}"
        )
        lines += [f"  - {reason}" for reason in decision.reasons]
    if written is not None:
        lines += ["", f"wrote {written}"]
    return "\n".join(lines)


def _policy(metric: str, min_runs: int, min_improvement: float, max_regression: float) -> PromotionPolicy:
    from wfbench.domain.promotion.policy import PromotionPolicy

    try:
        return PromotionPolicy(
            metric=metric,
            min_runs=min_runs,
            min_improvement_pct=min_improvement,
            max_task_regression_pct=max_regression,
        )
    except InputError as exc:
        raise InputError(exc.reason, field=f"--{exc.field.replace('_', '-')}") from None


def _load(target: Path) -> tuple[Path, tuple[Row, ...]]:
    from wfbench.adapters.jsonl_store import JsonlResultStore

    source = results_path(target)
    return source, JsonlResultStore(source).rows()


def _regate(rows: tuple[Row, ...], policy: PromotionPolicy, pairs: dict[str, str] | None) -> GateResult:
    from wfbench.adapters.clock import SystemClock
    from wfbench.app.gating import regate
    from wfbench.domain.promotion.policy import CANDIDATE_ARMS

    return regate(rows, now=SystemClock().now(), policy=policy, pairs=pairs or CANDIDATE_ARMS)


def register(app: typer.Typer) -> None:
    """Add ``gate`` and ``report`` to ``app``."""

    @app.command("gate")
    def gate(
        results: _Results,
        *,
        as_json: Annotated[
            bool, typer.Option("--json", help="Print the promotion evidence as JSON.")
        ] = False,
        metric: _Metric = "cost_usd",
        min_runs: _MinRuns = 3,
        min_improvement: _MinImprovement = 5.0,
        max_task_regression: _MaxRegression = 20.0,
        pair: _Pairs = None,
    ) -> None:
        """Re-gate RESULTS: print aggregates and decisions, write promotion.json beside it."""
        from wfbench.adapters.jsonl_store import write_json_atomic

        policy = _policy(metric, min_runs, min_improvement, max_task_regression)
        pairs = parse_pairs(pair)
        source, rows = _load(results)
        result = _regate(rows, policy, pairs)
        evidence: dict[str, Any] | None = None if result.evidence is None else result.evidence.to_mapping()
        written = None
        if evidence is not None:
            written = source.parent / "promotion.json"
            write_json_atomic(written, evidence)
        if as_json:
            typer.echo(json.dumps(evidence, indent=2, ensure_ascii=False))
        else:
            typer.echo(render_gate_text(result, source=source, written=written))

    @app.command("report")
    def report(
        results: _Results,
        *,
        metric: _Metric = "cost_usd",
        min_runs: _MinRuns = 3,
        min_improvement: _MinImprovement = 5.0,
        max_task_regression: _MaxRegression = 20.0,
        pair: _Pairs = None,
    ) -> None:
        """Write report.md and report.html beside RESULTS (aggregates, savings, review quality, health)."""
        from wfbench.adapters.jsonl_store import write_text_atomic
        from wfbench.app.report_md import render_report_md

        policy = _policy(metric, min_runs, min_improvement, max_task_regression)
        pairs = parse_pairs(pair)
        source, rows = _load(results)
        result = _regate(rows, policy, pairs)
        promotion = None if result.evidence is None else result.evidence.to_mapping()
        target = source.parent / "report.md"
        write_text_atomic(target, render_report_md(rows, promotion=promotion))
        typer.echo(f"wrote {target}")
        from wfbench.app.report_html import render_report_html

        html = source.parent / "report.html"
        write_text_atomic(html, render_report_html(rows, promotion=promotion))
        typer.echo(f"wrote {html}")
