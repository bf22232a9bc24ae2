"""The overview page: ``report.html`` in the sweep directory, and ``index.html`` of ``wfbench view``.

Decision first (a verdict block per candidate: decision, reasons, effect and interval, what the
sweep could detect, spend and run status), then the per-task paired results with their plots,
the arms (implementation and review apart, cost against resolution), the resolve-rate heat
map, every (task, arm) with a dot per run linking to its cell, review quality, the health of
every arm, notes and provenance. Large tables are JSON rendered a page at a time
(:func:`~wfbench.app.report.page.data_table`), so the DOM stays small at 100,000 cells.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from wfbench.app.report import fmt, plots
from wfbench.app.report.links import Links
from wfbench.app.report.markdown import effect_text, spend_text, wall_median
from wfbench.app.report.model import (
    IMPLEMENTATION_ARM_COLUMNS,
    REVIEW_ARM_COLUMNS,
    ArmTotals,
    CellRef,
    SweepModel,
)
from wfbench.app.report.page import data_table_parts, esc, page_parts
from wfbench.app.report.verdicts import Verdict
from wfbench.domain.sweep import layout

__all__ = [
    "StatusCodes",
    "iter_task_arm_rows",
    "overview_parts",
    "render_overview",
    "runs_column",
    "task_arm_rows",
]


class StatusCodes:
    """Cell statuses as small integers for the table script (``statuses`` of a data table)."""

    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = [("resolved", "resolved"), ("unresolved", "unresolved")]
        self._index = {item: i for i, item in enumerate(self.items)}

    def code(self, cell: CellRef) -> int:
        """The index of ``cell``'s status."""
        if cell.resolved:
            item = ("resolved", "resolved")
        elif cell.error_kind is None:
            item = ("unresolved", "unresolved")
        elif cell.excluded:
            item = ("excluded", f"{cell.error_kind} (excluded)")
        else:
            item = ("error", cell.error_kind)
        if item not in self._index:
            self._index[item] = len(self.items)
            self.items.append(item)
        return self._index[item]


def runs_column(cells: Sequence[CellRef], codes: StatusCodes) -> list[list[int]]:
    """The ``runs`` value of a table row: ``[run, status code]`` per cell."""
    return [[cell.run, codes.code(cell)] for cell in cells]


def _cell_base(links: Links, task: str, arm: str) -> str:
    return f"{links.root}{layout.CELLS_DIR}/{layout.path_segment(task)}/{layout.path_segment(arm)}/"


def _suffix(links: Links) -> str:
    return links.cell_suffix


def _facts(model: SweepModel) -> str:
    items = [
        (f"{model.rows:,}", "cells", "#cells"),
        (f"{len(model.tasks):,}", "tasks", "#cells"),
        (f"{len(model.arms)}", "arms", "#arms"),
        (model.spend_text(2), "total spend (rows' cost_usd)", "#arms"),
        (model.run_status or "n/a", "run status", "#verdict"),
    ]
    return (
        '<div class="facts">'
        + "".join(
            f'<div><b><a href="{href}">{esc(v)}</a></b><span>{esc(k)}</span></div>' for v, k, href in items
        )
        + "</div>"
    )


def _verdict_block(model: SweepModel, verdict: Verdict, links: Links) -> str:
    reasons = "".join(f"<li>{esc(r)}</li>" for r in verdict.reasons) or "<li>n/a</li>"
    others = "".join(
        f'<li>The {esc(policy)} policy says <span class="badge {esc(kind)}">{esc(kind)}</span>: '
        f"{esc('; '.join(why))}</li>"
        for policy, kind, why in verdict.other_policies
    )
    metric = verdict.metric or "metric"
    regressions = verdict.regressions
    flagged = (
        '<p class="flag">Regressions flagged on '
        + ", ".join(
            f'<a href="{esc(links.task(t.task))}">{esc(t.task)}</a> ({esc("; ".join(t.flags))})'
            for t in regressions[:20]
        )
        + (f" and {len(regressions) - 20} more" if len(regressions) > 20 else "")
        + "</p>"
        if regressions
        else '<p class="muted">No task regressed.</p>'
    )
    inc = model.arm_totals.get(verdict.incumbent)
    cand = model.arm_totals.get(verdict.candidate)
    sides = " · ".join(
        f'<a href="{esc(_arm_href(links, t.arm))}">{esc(t.arm)}</a> resolved <a '
        f'href="{esc(_arm_href(links, t.arm))}">{fmt.ratio(t.resolved, t.valid_runs)}</a>, spent <a '
        f'href="{esc(_arm_href(links, t.arm))}">{esc(t.spend_text)}</a>'
        for t in (inc, cand)
        if t is not None
    )
    per_task = f"#paired-{layout.path_segment(verdict.candidate)}"
    facts = [
        ("gate", f"{verdict.gate or 'n/a'} on {metric}", None),
        (
            "median improvement",
            f"{fmt.pct(verdict.median_improvement_pct)} (promotes at ≥ "
            f"{fmt.pct(verdict.min_improvement_pct, signed=False)}; per-task regression limit "
            f"{fmt.pct(verdict.max_task_regression_pct, signed=False)})",
            per_task,
        ),
        (f"effect on {metric}", effect_text(verdict.metric_effect), per_task),
        ("effect on resolution", effect_text(verdict.resolution_effect), per_task),
        (
            "what this sweep could detect",
            verdict.detectability or "n/a (no statistics in promotion.json)",
            None,
        ),
    ]
    dl = "".join(
        f"<dt>{esc(k)}</dt><dd>" + (f'<a href="{href}">{esc(v)}</a>' if href else esc(v)) + "</dd>"
        for k, v, href in facts
    )
    return (
        f'<section class="verdict {esc(verdict.decision)}" '
        f'id="verdict-{esc(layout.path_segment(verdict.candidate))}">'
        f'<h3><span class="badge {esc(verdict.decision)}">{esc(verdict.decision.upper())}</span> '
        f"{esc(verdict.candidate)} vs its incumbent {esc(verdict.incumbent)}</h3>"
        f'<ul>{reasons}{others}</ul><dl class="kv">{dl}</dl><p>{sides}</p>{flagged}</section>'
    )


def _arm_href(links: Links, arm: str) -> str:
    return (
        f"{links.root}arms/{layout.path_segment(arm)}.html"
        if links.pages
        else f"#arm-{layout.path_segment(arm)}"
    )


def _verdicts(model: SweepModel, links: Links) -> str:
    blocks = "".join(_verdict_block(model, v, links) for v in model.verdicts)
    if model.pending:
        blocks = (
            '<section class="verdict pending"><h3><span class="badge pending">PENDING</span> the sweep is '
            f"{esc(model.run_status)}</h3><p>The verdict is judged when every cell has run; this page "
            "refreshes as rows arrive.</p></section>"
        )
    elif not blocks:
        blocks = (
            '<p class="muted">No candidate arm ran against its incumbent: there is no promotion decision.</p>'
        )
    status = f'<p class="note">{esc(model.inputs.status)}</p>' if model.inputs.status else ""
    return (
        f'<h2 id="verdict">Verdict</h2>{status}{blocks}<p>Total spend: {esc(spend_text(model))}. Run '
        f"status: <b>{esc(model.run_status or 'n/a')}</b>.</p>"
    )


def _paired_rows(verdict: Verdict, links: Links) -> Iterator[list[Any]]:
    metric = verdict.metric or ""
    for t in verdict.tasks:
        interval = t.effect_interval
        effect = (
            "n/a"
            if t.effect is None
            else f"{t.effect:+.3g}"
            + ("" if interval is None else f" [{interval[0]:+.3g}, {interval[1]:+.3g}]")
        )
        yield (
            [
                t.task,
                t.task_class or "n/a",
                [fmt.ratio(t.incumbent_resolved, t.incumbent_valid), t.rate("incumbent")],
                [fmt.ratio(t.candidate_resolved, t.candidate_valid), t.rate("candidate")],
                [fmt.metric_value(metric, t.incumbent_metric), t.incumbent_metric],
                [fmt.metric_value(metric, t.candidate_metric), t.candidate_metric],
                [fmt.metric_delta(metric, t.delta), t.delta],
                [fmt.pct(t.improvement_pct), t.improvement_pct],
                [effect, t.effect],
                list(t.flags),
                links.task(t.task),
                links.group(t.task, verdict.incumbent),
                links.group(t.task, verdict.candidate),
            ]
        )


def _paired(model: SweepModel, links: Links) -> Iterator[str]:
    if model.verdicts:
        yield '<h2 id="paired">Per-task paired results</h2>'
    for index, verdict in enumerate(model.verdicts):
        metric = verdict.metric or "metric"
        columns = [
            {"label": "task", "filter": "text", "href": 10},
            {"label": "class", "filter": "select"},
            {"label": f"{verdict.incumbent} resolved", "num": True, "href": 11},
            {"label": f"{verdict.candidate} resolved", "num": True, "href": 12},
            {"label": f"{verdict.incumbent} {metric}", "num": True, "href": 11},
            {"label": f"{verdict.candidate} {metric}", "num": True, "href": 12},
            {"label": "Δ (cand − inc)", "num": True, "href": 10},
            {"label": "improvement", "num": True, "href": 10},
            {"label": "effect [interval]", "num": True, "href": 10},
            {"label": "flags", "tags": True, "filter": "tags", "flag": True},
        ]
        yield (
            f'<h3 id="paired-{esc(layout.path_segment(verdict.candidate))}">Per task: '
            f"{esc(verdict.candidate)} vs {esc(verdict.incumbent)}</h3>"
            + plots.paired_deltas(verdict, links)
            + plots.forest(verdict)
        )
        yield from data_table_parts(f"paired-{index}", columns, _paired_rows(verdict, links))


def _impl_arms_table(arms: Sequence[ArmTotals], links: Links) -> str:
    head = "".join(f"<th{' class=num' if n else ''}>{esc(h)}</th>" for h, n in IMPLEMENTATION_ARM_COLUMNS)
    body = []
    for t in arms:
        rate = (
            "n/a"
            if t.rate is None
            else f"{100 * t.rate:.0f}%"
            + ("" if t.wilson is None else f" [{100 * t.wilson[0]:.0f}–{100 * t.wilson[1]:.0f}%]")
        )
        spend = t.spend_text
        errors = ", ".join(f"{k}×{v}" for k, v in t.error_kinds.items()) or "—"
        body.append(
            f'<tr id="arm-{esc(layout.path_segment(t.arm))}"><td><a '
            f'href="{esc(_arm_href(links, t.arm))}">{esc(t.arm)}</a></td>'
            f'<td class="num">{t.tasks}</td><td class="num"><a '
            f'href="{esc(_arm_href(links, t.arm))}">{fmt.ratio(t.resolved, t.valid_runs)}</a></td>'
            + "".join(
                f'<td class="num"><a href="{esc(_arm_href(links, t.arm))}">{esc(v)}</a></td>'
                for v in (
                    rate,
                    fmt.money(t.cost_median),
                    spend,
                    fmt.na(t.wall_median, ".1f"),
                    fmt.na(t.wall_total, ".1f"),
                )
            )
            + f"<td>{esc(errors)}</td></tr>"
        )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _review_arms_table(arms: Sequence[ArmTotals], links: Links) -> str:
    names = ("review_weighted_f1", "review_precision", "review_recall", "review_blocker_recall")
    head = "".join(f"<th>{esc(h)}</th>" for h in REVIEW_ARM_COLUMNS)
    body = []
    for t in arms:
        metrics = "".join(f'<td class="num">{esc(fmt.na(t.review_means.get(n), ".3f"))}</td>' for n in names)
        clean = fmt.ratio(t.clean_passed, t.clean_total) if t.clean_total else "n/a"
        errors = ", ".join(f"{k}×{v}" for k, v in t.error_kinds.items()) or "—"
        body.append(
            f'<tr id="arm-{esc(layout.path_segment(t.arm))}"><td><a '
            f'href="{esc(_arm_href(links, t.arm))}">{esc(t.arm)}</a></td>'
            f'<td class="num">{t.tasks}</td><td class="num"><a '
            f'href="{esc(_arm_href(links, t.arm))}">{t.runs}</a></td>{metrics}'
            f'<td class="num">{esc(clean)}</td><td class="num">{esc(t.spend_text)}</td>'
            f'<td class="num">{esc(fmt.na(t.wall_median, ".1f"))}</td><td>{esc(errors)}</td></tr>'
        )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _arms(model: SweepModel, links: Links) -> str:
    impl = [model.arm_totals[a] for a in model.arms if model.arm_totals[a].kind != "review"]
    review = [model.arm_totals[a] for a in model.arms if model.arm_totals[a].kind == "review"]
    out = '<h2 id="arms">Arms</h2>'
    if impl:
        out += (
            "<h3>Implementation arms</h3>" + _impl_arms_table(impl, links) + plots.cost_vs_resolution(model)
        )
        out += plots.resolve_heatmap(model, "implementation", links)
    if review:
        out += (
            "<h3>Review arms</h3>"
            + _review_arms_table(review, links)
            + plots.resolve_heatmap(model, "review", links)
        )
    return out


def task_arm_rows(
    model: SweepModel, links: Links, codes: StatusCodes, *, tasks: Sequence[str] | None = None
) -> list[list[Any]]:
    """One row per (task, arm): resolution, medians, real wall time, errors and a dot per run."""
    return list(iter_task_arm_rows(model, links, codes, tasks=tasks))


def iter_task_arm_rows(
    model: SweepModel, links: Links, codes: StatusCodes, *, tasks: Iterable[str] | None = None
) -> Iterator[list[Any]]:
    """:func:`task_arm_rows` one row at a time (each made when it is asked for)."""
    for task in tasks if tasks is not None else model.tasks:
        for arm in model.arms:
            agg = model.table.get(task, arm)
            if agg is None:
                continue
            cells = model.cells_of(task, arm)
            rate = agg.resolved / agg.valid_runs if agg.valid_runs else None
            resolved = f"{agg.resolved}/{agg.valid_runs}" + (
                f" ({agg.excluded_runs} excl.)" if agg.excluded_runs else ""
            )
            quality = agg.review.get("review_weighted_f1") if agg.review else None
            yield (
                [
                    task,
                    agg.task_class or "n/a",
                    arm,
                    [resolved, rate],
                    [fmt.money(agg.cost_usd), agg.cost_usd],
                    [fmt.na(agg.output_tokens, ",.0f"), agg.output_tokens],
                    [fmt.na(agg.num_turns, ".0f"), agg.num_turns],
                    [fmt.na(wall := wall_median(cells), ".1f"), wall],
                    [fmt.na(quality, ".3f"), quality],
                    sorted({k.value for k in agg.error_kinds}),
                    runs_column(cells, codes),
                    links.task(task),
                    links.group(task, arm),
                    _cell_base(links, task, arm),
                ]
            )


TASK_ARM_COLUMNS = [
    {"label": "task", "filter": "text", "href": 11},
    {"label": "class", "filter": "select"},
    {"label": "arm", "filter": "select"},
    {"label": "resolved", "num": True, "href": 12},
    {"label": "median cost", "num": True, "href": 12},
    {"label": "median output tokens", "num": True, "href": 12},
    {"label": "median turns", "num": True, "href": 12},
    {"label": "median cell wall s", "num": True, "href": 12},
    {"label": "weighted F1", "num": True, "href": 12},
    {"label": "error kinds", "tags": True, "filter": "tags"},
    {"label": "runs", "runs": True, "base": 13, "nosort": True},
]


def _task_arm_table(model: SweepModel, links: Links) -> Iterator[str]:
    codes = StatusCodes()
    rows = iter_task_arm_rows(model, links, codes)
    yield (
        '<h2 id="cells">Every task and arm</h2><p class="muted">A dot per run (green resolved, grey '
        "unresolved, "
        "red failed, amber excluded) links to the cell: its transcript, patch, verify output and row.</p>"
    )
    yield from data_table_parts(
        "task-arm", TASK_ARM_COLUMNS, rows, statuses=codes.items, suffix=_suffix(links)
    )


def _health(model: SweepModel) -> str:
    items = []
    for arm in model.arms:
        verdict = model.arm_totals[arm].health
        c = verdict.counters
        why = "" if not verdict.reasons else " — " + esc("; ".join(verdict.reasons))
        items.append(
            f'<li><span class="badge {esc(verdict.status.value)}">{esc(verdict.status.value)}</span> '
            f"<b>{esc(arm)}</b>: "
            f"fresh attempts {c.fresh_attempts}, reused {c.reused}, admissible {c.admissible}, execution "
            "failures "
            f"{c.execution_failures}, evidence failures {c.evidence_failures}{why}</li>"
        )
    return '<h2 id="health">Measurement health (every arm)</h2><ul>' + "".join(items) + "</ul>"


def _diagnostics(model: SweepModel, links: Links) -> str:
    if not model.diagnostics:
        return ""
    items = []
    for task, arm, run, shown, total in model.diagnostics[:200]:
        more = f"<li>… and {total - len(shown)} more</li>" if total > len(shown) else ""
        listed = "".join(f"<li>{esc(item)}</li>" for item in shown)
        items.append(
            f'<li><a href="{esc(links.cell(task, arm, run))}">{esc(task)} / {esc(arm)} / run {run}</a>'
            f"<ul>{listed}{more}</ul></li>"
        )
    extra = len(model.diagnostics) - 200
    tail = f'<p class="muted">… and {extra} more cells (report.md lists them all)</p>' if extra > 0 else ""
    return f'<h2 id="diagnostics">Evidence diagnostics</h2><ul>{"".join(items)}</ul>{tail}'


def _concurrency(model: SweepModel) -> str:
    lines = model.inputs.concurrency
    if not lines:
        return ""
    items = "".join(f"<li>{esc(line)}</li>" for line in lines)
    return f'<h2 id="concurrency">Concurrency</h2><ul>{items}</ul>'


def _provenance(model: SweepModel) -> str:
    rows = "".join(
        f'<dt>{esc(name)}</dt><dd class="mono">{esc(fmt.na(value))}</dd>' for name, value in model.provenance
    )
    return f'<h2 id="provenance">Provenance</h2><dl class="kv">{rows}</dl>'


def _notes(model: SweepModel) -> str:
    notes = [
        "Medians are over valid runs; cost is the only figure that includes subagent spend.",
        "Cell wall time is the harness's measured time per cell (cell_wall_s), not the agent's "
        "self-reported duration.",
    ]
    if model.skill_not_invoked:
        notes.append(
            f"{model.skill_not_invoked} run(s) never invoked the skill under test (kept out of quality "
            "medians)."
        )
    if model.transcripts_missing:
        notes.append(f"{model.transcripts_missing} run(s) had no locatable session transcript.")
    return '<h2 id="notes">Notes</h2><ul>' + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ul>"


def render_overview(model: SweepModel, links: Links) -> str:
    """The whole overview page."""
    return "".join(overview_parts(model, links))


def overview_parts(model: SweepModel, links: Links) -> Iterator[str]:
    """The overview page in pieces, each made when it is asked for (:func:`render_overview` joins them).

    The per-task tables come a few rows at a time, so writing the pieces to a file as they come
    (``wfbench report``) never holds the page, nor any table's rows, in memory.
    """
    return page_parts(model.inputs.title, _body(model, links), crumbs=(("overview", None),))


def _body(model: SweepModel, links: Links) -> Iterator[str]:
    problems = ""
    if model.inputs.problems:
        shown = "".join(f"<li>{esc(p)}</li>" for p in model.inputs.problems[:20])
        problems = (
            f'<div class="problem"><b>results.jsonl has {len(model.inputs.problems)} line(s) that are not '
            f"rows</b> (shown as such, not counted):<ul>{shown}</ul></div>"
        )
    hint = (
        ""
        if links.pages
        else '<p class="muted">Run <code>wfbench view DIR</code> to open every cell\'s transcript, patch '
        "and review in the browser.</p>"
    )
    yield f"<h1>{esc(model.inputs.title)}</h1>{_facts(model)}{problems}{hint}" + _verdicts(model, links)
    yield from _paired(model, links)
    yield _arms(model, links)
    yield from _task_arm_table(model, links)
    yield (
        _health(model) + _diagnostics(model, links) + _concurrency(model) + _notes(model) + _provenance(model)
    )
