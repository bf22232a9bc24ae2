"""report.html: a self-contained page (inline CSS and SVG, no scripts, no network) from rows alone.

Plots: resolve rate per arm, median cost per arm, and per-task paired deltas of the promotion
metric (candidate vs incumbent, positive = candidate better/cheaper). Then the per-task table,
the promotion decisions with their reasons, and the notes.
"""

from __future__ import annotations

import html
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from wfbench.domain.results.aggregation import Aggregate, aggregate
from wfbench.domain.results.rows import Row

_CSS = (
    "body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1000px;color:#222}"
    "table{border-collapse:collapse;margin:1em 0}"
    "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
    "th{background:#f3f3f3}td:first-child,td:nth-child(2){text-align:left}.promote{color:#07620f}"
    ".keep_incumbent{color:#a33}.insufficient_evidence{color:#a60}svg{margin:.5em 1em .5em 0}"
    ".note{background:#fff6d8;padding:.5em 1em}"
)
_BAR = "#4a78b5"


def _fmt(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def _bars(title: str, items: Sequence[tuple[str, float | None]], *, fmt: str, signed: bool = False) -> str:
    """A horizontal bar chart as inline SVG; ``None`` is drawn as an empty bar labelled n/a."""
    width, row_h, label_w = 460, 24, 190
    height = 30 + row_h * max(1, len(items))
    known = [abs(v) for _, v in items if v is not None]
    scale = max(known) if known and max(known) > 0 else 1.0
    half = (width - label_w - 60) / (2 if signed else 1)
    origin = label_w + (half if signed else 0)
    parts = [f'<svg role="img" width="{width}" height="{height}" viewBox="0 0 {width} {height}">']
    parts.append(f'<text x="0" y="16" font-weight="bold">{html.escape(title)}</text>')
    for i, (label, value) in enumerate(items):
        y = 26 + i * row_h
        parts.append(f'<text x="0" y="{y + 15}">{html.escape(label)}</text>')
        if value is not None:
            length = half * abs(value) / scale
            x = origin - length if signed and value < 0 else origin
            color = "#a33" if signed and value < 0 else _BAR
            parts.append(
                f'<rect x="{x:.1f}" y="{y + 3}" width="{length:.1f}" height="{row_h - 8}" fill="{color}"/>'
            )
        text_x = (
            origin + (half if signed else 0) + 6 if signed else origin + half * abs(value or 0) / scale + 6
        )
        parts.append(f'<text x="{text_x:.1f}" y="{y + 15}">{_fmt(value, fmt)}</text>')
    if signed:
        parts.append(f'<line x1="{origin}" y1="24" x2="{origin}" y2="{height}" stroke="#888"/>')
    parts.append("</svg>")
    return "".join(parts)


def _arm_series(rows: Sequence[Row]) -> tuple[list[tuple[str, float | None]], list[tuple[str, float | None]]]:
    arms: dict[str, list[Row]] = {}
    for row in rows:
        arms.setdefault(row.arm, []).append(row)
    rates: list[tuple[str, float | None]] = []
    costs: list[tuple[str, float | None]] = []
    for arm, arm_rows in arms.items():
        valid = [r for r in arm_rows if not r.excluded]
        rates.append((arm, 100.0 * sum(r.resolved for r in valid) / len(valid) if valid else None))
        known = [r.cost_usd for r in valid]
        costs.append((arm, statistics.median(known) if valid and all(c is not None for c in known) else None))  # type: ignore[type-var]
    return rates, costs


def _deltas(promotion: Mapping[str, Any] | None) -> list[tuple[str, float | None]]:
    out: list[tuple[str, float | None]] = []
    for decision in (promotion or {}).get("decisions", []):
        for task in decision.get("tasks", []):
            value = task.get("improvement_pct")
            if value is None and "candidate_weighted_f1" in task:
                inc, cand = task.get("incumbent_weighted_f1"), task.get("candidate_weighted_f1")
                value = None if inc is None or cand is None else round(100 * (cand - inc), 1)
            out.append((f"{task.get('task')} ({decision.get('candidate_arm')})", value))
    return out


def _table(table_rows: Sequence[tuple[str, str, Aggregate]]) -> str:
    names = ("task", "arm", "resolved", "excluded", "cost $", "wall s", "output tokens", "errors")
    head = "<tr>" + "".join(f"<th>{name}</th>" for name in names) + "</tr>"
    body = []
    for task, arm, agg in table_rows:
        errors = ", ".join(f"{k}×{v}" for k, v in sorted(agg.error_kinds.items())) or "—"
        body.append(
            f"<tr><td>{html.escape(task)}</td><td>{html.escape(arm)}</td><td>{agg.resolved}/{agg.valid_runs}</td>"
            f"<td>{agg.excluded_runs}</td><td>{_fmt(agg.cost_usd, '.4f')}</td>"
            f"<td>{_fmt(agg.duration_s, '.1f')}</td>"
            f"<td>{_fmt(agg.output_tokens, '.0f')}</td><td>{html.escape(errors)}</td></tr>"
        )
    return f"<table>{head}{''.join(body)}</table>"


def _decisions(promotion: Mapping[str, Any] | None) -> str:
    if not promotion:
        return "<p>No candidate arm ran: no promotion decision.</p>"
    parts = [f"<p>Run status: <b>{html.escape(str(promotion.get('run_status')))}</b></p><ul>"]
    for d in promotion.get("decisions", []):
        kind = html.escape(str(d.get("decision")))
        reasons = "".join(f"<li>{html.escape(str(r))}</li>" for r in d.get("reasons", []))
        parts.append(
            f"<li><b>{html.escape(str(d.get('candidate_arm')))}</b>"
            f" vs {html.escape(str(d.get('incumbent_arm')))}:"
            f' <span class="{kind}">{kind}</span><ul>{reasons}</ul></li>'
        )
    return "".join(parts) + "</ul>"


def render_report_html(
    rows: Sequence[Row], *, promotion: Mapping[str, Any] | None = None, status: str | None = None
) -> str:
    """The whole page as one string."""
    table = aggregate(rows)
    rates, costs = _arm_series(rows)
    deltas = _deltas(promotion)
    table_rows = [
        (task, arm, table[(task, arm)])
        for task in table.tasks()
        for arm in table.arms()
        if (task, arm) in table
    ]
    plots = _bars("Resolve rate per arm (%)", rates, fmt=".0f") + _bars(
        "Median cost per arm ($)", costs, fmt=".4f"
    )
    if deltas:
        plots += _bars(
            "Per-task paired delta of the promotion metric (%; + = candidate better)",
            deltas,
            fmt="+.1f",
            signed=True,
        )
    excluded = sum(1 for r in rows if r.excluded)
    notes = f'<p class="note">{html.escape(status)}</p>' if status else ""
    if excluded:
        notes += (
            f"<p>{excluded} run(s) hit session/infra errors or had unverifiable evidence and were excluded"
            " from medians and resolve denominators — see error_kind in results.jsonl.</p>"
        )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>wfbench report</title>'
        f"<style>{_CSS}</style></head><body><h1>wfbench report</h1>{notes}<div>{plots}</div>"
        f"<h2>Per task and arm</h2>{_table(table_rows)}<h2>Promotion</h2>{_decisions(promotion)}"
        f"<p>{len(rows)} row(s); medians over valid runs; cost is the only figure that includes"
        " subagent spend.</p>"
        "</body></html>\n"
    )
