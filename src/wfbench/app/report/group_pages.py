"""The pages between the overview and a cell: one per task (every cell of it, by arm) and one
per arm (every task it ran, with a dot per run)."""

from __future__ import annotations

from wfbench.app.report import fmt
from wfbench.app.report.links import Links
from wfbench.app.report.markdown import wall_median
from wfbench.app.report.model import SweepModel
from wfbench.app.report.overview import TASK_ARM_COLUMNS, StatusCodes, task_arm_rows
from wfbench.app.report.page import data_table, esc, page, status_class
from wfbench.domain.sweep import layout

__all__ = ["render_arm_page", "render_task_page"]


def render_task_page(model: SweepModel, task: str, links: Links) -> str:
    """Every cell of ``task``, grouped by arm, with the paired results that mention it."""
    klass = next(
        (agg.task_class for (t, _), agg in model.table.items() if t == task and agg.task_class), None
    )
    parts = [
        f"<h1>{esc(task)}</h1><p>class {esc(klass or 'n/a')} · kind "
        f"{esc(model.task_kinds.get(task, 'n/a'))}</p>"
    ]
    for verdict in model.verdicts:
        paired = next((t for t in verdict.tasks if t.task == task), None)
        if paired is None:
            continue
        flags = f' <span class="flag">{esc("; ".join(paired.flags))}</span>' if paired.flags else ""
        parts.append(
            f"<p><b>{esc(verdict.candidate)}</b> vs {esc(verdict.incumbent)}: resolved "
            f"{fmt.ratio(paired.candidate_resolved, paired.candidate_valid)} vs "
            f"{fmt.ratio(paired.incumbent_resolved, paired.incumbent_valid)}, "
            f"{esc(verdict.metric or 'metric')} "
            f"{esc(fmt.metric_value(verdict.metric or '', paired.candidate_metric))} vs "
            f"{esc(fmt.metric_value(verdict.metric or '', paired.incumbent_metric))} (improvement "
            f"{esc(fmt.pct(paired.improvement_pct))}){flags}</p>"
        )
    for arm in model.arms:
        cells = model.cells_of(task, arm)
        if not cells:
            continue
        agg = model.table.get(task, arm)
        summary = (
            ""
            if agg is None
            else f"resolved {agg.resolved}/{agg.valid_runs} · median cost {fmt.money(agg.cost_usd)} · "
            f"median cell wall {fmt.na(wall_median(cells), '.1f')} s"
        )
        rows = "".join(
            f'<tr><td><a href="{esc(links.cell(task, arm, c.run))}">run {c.run}</a></td>'
            '<td><span class="badge '
            f'{status_class("excluded" if c.excluded else c.status)}">{esc(c.status)}</span>'
            f"{' (reused)' if c.reused else ''}</td>"
            f'<td class="num">{esc(fmt.money(c.cost_usd))}</td><td '
            f'class="num">{esc(fmt.na(c.cell_wall_s, ".1f"))}</td>'
            f'<td class="num">{esc(fmt.na(c.quality, ".3f"))}</td></tr>'
            for c in cells
        )
        parts.append(
            f'<h2 id="arm-{esc(layout.path_segment(arm))}">{esc(arm)}</h2><p>{esc(summary)}</p>'
            "<table><thead><tr><th>cell</th><th>outcome</th><th class=num>cost</th><th class=num>cell wall "
            "s</th>"
            f"<th class=num>weighted F1</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    return page(task, "".join(parts), crumbs=(("overview", links.overview()), (task, None)))


def render_arm_page(model: SweepModel, arm: str, links: Links) -> str:
    """One arm: its totals and health, and every task it ran with a dot per run."""
    totals = model.arm_totals[arm]
    health = totals.health
    rate = "n/a" if totals.rate is None else f"{100 * totals.rate:.0f}%"
    head = (
        f"<h1>{esc(arm)}</h1><p>{esc(totals.kind)} arm · {totals.tasks} task(s) · resolved "
        f"{fmt.ratio(totals.resolved, totals.valid_runs)} ({esc(rate)}) · spend "
        f"{esc(totals.spend_text)} · "
        f"median cell wall {esc(fmt.na(totals.wall_median, '.1f'))} s</p>"
        f'<p>health <span class="badge {esc(health.status.value)}">{esc(health.status.value)}</span> '
        f"{esc('; '.join(health.reasons))}</p>"
    )
    codes = StatusCodes()
    rows = [row for row in task_arm_rows(model, links, codes) if row[2] == arm]
    table = data_table("arm-tasks", TASK_ARM_COLUMNS, rows, statuses=codes.items, suffix=".html")
    return page(arm, head + table, crumbs=(("overview", links.overview()), (arm, None)))
