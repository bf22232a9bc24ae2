"""The report's four plots, as inline SVG (see :mod:`wfbench.app.report.svg` for why by hand).

1. :func:`paired_deltas` — per task, the candidate's improvement over its incumbent, sorted by
   effect, with the policy's thresholds drawn and regressions marked; labels are placed only
   where they cannot collide, so 1,000 tasks draw as a curve with the flagged and extreme tasks
   named (every bar keeps a hover title and links to its task).
2. :func:`resolve_heatmap` — resolve rate per task and arm (the tasks where arms differ most
   when there are more than fit).
3. :func:`forest` — the pair's effect with its interval, then per-task effects with theirs.
4. :func:`cost_vs_resolution` — each arm's median cost per run against its resolve rate, with
   the Wilson interval.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from wfbench.app.report import fmt
from wfbench.app.report.links import Links
from wfbench.app.report.model import SweepModel
from wfbench.app.report.svg import Canvas, nice_ticks, place_labels, shorten
from wfbench.app.report.verdicts import PairedTask, Verdict

__all__ = ["cost_vs_resolution", "forest", "paired_deltas", "resolve_heatmap"]

LABELLED_ROWS = 40
HEATMAP_ROWS = 60
_LABEL_W = 200
_ROW_H = 18
_GOOD, _BAD, _FLAG, _MUTED = "#3b6fb6", "#d08a2e", "#c0392b", "#8a8a8a"


def _scale(low: float, high: float, left: float, right: float) -> Callable[[float], float]:
    span = (high - low) or 1.0
    return lambda value: left + (value - low) * (right - left) / span


def _axis(
    canvas: Canvas,
    ticks: Sequence[float],
    x_of: Callable[[float], float],
    span: tuple[float, float],
    unit: str,
) -> None:
    y0, y1 = span
    for tick in ticks:
        x = x_of(tick)
        canvas.add("line", x1=x, y1=y0, x2=x, y2=y1, class_="grid")
        canvas.text(x, y1 + 14, f"{tick:g}{unit}", anchor="middle", cls="tick")


def _rule(canvas: Canvas, x: float, span: tuple[float, float], label: str, cls: str) -> None:
    y0, y1 = span
    canvas.add("line", x1=x, y1=y0, x2=x, y2=y1, class_=cls)
    canvas.text(x + 3, y0 + 10, label, cls=f"rule-label {cls}")


def paired_deltas(verdict: Verdict, links: Links) -> str:
    """Improvement per task (+ = the candidate is better), sorted, thresholds drawn."""
    tasks = sorted(
        (t for t in verdict.tasks if t.improvement_pct is not None),
        key=lambda t: (-(t.improvement_pct or 0.0), t.task),
    )
    title = (
        f"Improvement per task: {verdict.candidate} vs {verdict.incumbent} ({verdict.metric or 'metric'}; + "
        "= candidate better)"
    )
    if not tasks:
        return f'<p class="empty">{_esc(title)}: no task has a measured improvement (n/a).</p>'
    n = len(tasks)
    labelled = n <= LABELLED_ROWS
    row_h = _ROW_H if labelled else min(_ROW_H, 720 / n)
    top, width = 46, 900
    height = int(top + row_h * n + 34)
    values = [t.improvement_pct or 0.0 for t in tasks]
    low = min(0.0, *values, -(verdict.max_task_regression_pct or 0.0) if any(v < 0 for v in values) else 0.0)
    high = max(0.0, *values, verdict.min_improvement_pct or 0.0)
    ticks = nice_ticks(low, high)
    x_of = _scale(ticks[0], ticks[-1], _LABEL_W + 10, width - 60)
    canvas = Canvas(width, height, title=title, label=title)
    canvas.text(0, 16, shorten(title, 120), cls="plot-title")
    _axis(canvas, ticks, x_of, (top - 6, top + row_h * n), "%")
    bottom = top + row_h * n
    canvas.add("line", x1=x_of(0), y1=top - 6, x2=x_of(0), y2=bottom, class_="zero")
    _delta_rules(canvas, verdict, x_of, (top - 22, bottom), low=low)
    for index, task in enumerate(tasks):
        _delta_bar(canvas, verdict, task, links, x_of, y=top + index * row_h, row_h=row_h, labelled=labelled)
    if not labelled:
        _sparse_delta_labels(canvas, tasks, top=top, row_h=row_h)
    return canvas.render()


def _delta_rules(
    canvas: Canvas, verdict: Verdict, x_of: Callable[[float], float], span: tuple[float, float], *, low: float
) -> None:
    """The promotion threshold, and the regression limit when the axis reaches it."""
    if verdict.min_improvement_pct is not None:
        _rule(
            canvas,
            x_of(verdict.min_improvement_pct),
            span,
            f"promote at median ≥ {verdict.min_improvement_pct:g}%",
            "threshold",
        )
    if verdict.max_task_regression_pct is not None and low <= -verdict.max_task_regression_pct:
        _rule(
            canvas,
            x_of(-verdict.max_task_regression_pct),
            span,
            f"max task regression −{verdict.max_task_regression_pct:g}%",
            "limit",
        )


def _delta_bar(
    canvas: Canvas,
    verdict: Verdict,
    task: PairedTask,
    links: Links,
    x_of: Callable[[float], float],
    *,
    y: float,
    row_h: float,
    labelled: bool,
) -> None:
    """One task's bar (linked to its page, a flag when it regressed), labelled when the rows are few."""
    value = task.improvement_pct or 0.0
    x0, x1 = sorted((x_of(0), x_of(value)))
    colour = _FLAG if task.regressed else _GOOD if value >= 0 else _BAD
    tip = (
        f"{task.task}: {fmt.pct(task.improvement_pct)} "
        f"({fmt.metric_delta(verdict.metric or '', task.delta)})"
        + (f" — {'; '.join(task.flags)}" if task.flags else "")
    )
    canvas.link(links.task(task.task), tip)
    canvas.add(
        "rect",
        x=x0,
        y=y + row_h * 0.15,
        width=max(1.0, x1 - x0),
        height=max(1.0, row_h * 0.7),
        fill=colour,
    )
    if task.regressed:
        canvas.add(
            "circle",
            cx=x_of(value) + (6 if value >= 0 else -6),
            cy=y + row_h / 2,
            r=min(4.0, row_h / 2 + 1),
            class_="flag",
        )
    canvas.end_link()
    if labelled:
        canvas.text(_LABEL_W, y + row_h * 0.72, shorten(task.task, 30), anchor="end", tip=task.task)
        canvas.text(
            x1 + 8 if value >= 0 else x0 - 8,
            y + row_h * 0.72,
            fmt.pct(value),
            anchor="start" if value >= 0 else "end",
            cls="value",
        )


def _sparse_delta_labels(canvas: Canvas, tasks: Sequence[PairedTask], *, top: float, row_h: float) -> None:
    """Too many rows to label each: label the flagged and the extreme ones, and say so."""
    n = len(tasks)
    bottom = top + row_h * n
    wanted = [(i, top + i * row_h) for i, t in enumerate(tasks) if t.regressed]
    wanted += [(i, top + i * row_h) for i in (*range(5), *range(n - 5, n)) if 0 <= i < n]
    for index in place_labels(wanted, _ROW_H - 4):
        task = tasks[index]
        canvas.text(
            _LABEL_W,
            top + index * row_h + row_h / 2 + 4,
            shorten(task.task, 30) + f" {fmt.pct(task.improvement_pct)}",
            anchor="end",
            tip=task.task,
        )
    canvas.text(
        _LABEL_W,
        bottom + 28,
        f"{n} tasks; labelled: flagged and extreme ones (hover a bar for its task)",
        anchor="end",
        cls="tick",
    )


def _rate_colour(rate: float | None) -> str:
    if rate is None:
        return "url(#na)"
    light = int(95 - 55 * rate)
    return f"hsl(212, 60%, {light}%)"


def resolve_heatmap(model: SweepModel, kind: str, links: Links) -> str:
    """Resolve rate per task (rows) and arm (columns) for arms of ``kind``."""
    arms = [a for a in model.arms if (model.arm_totals[a].kind == "review") == (kind == "review")]
    tasks = [t for t in model.tasks if any((t, a) in model.table for a in arms)]
    title = f"Resolve rate per task and arm ({kind})"
    if not arms or not tasks:
        return ""

    def rate(task: str, arm: str) -> float | None:
        agg = model.table.get(task, arm)
        return None if agg is None or not agg.valid_runs else agg.resolved / agg.valid_runs

    caption = ""
    if len(tasks) > HEATMAP_ROWS:

        def spread(task: str) -> float:
            known = [r for a in arms if (r := rate(task, a)) is not None]
            return max(known) - min(known) if known else -1.0

        tasks = sorted(tasks, key=lambda t: (-spread(t), t))[:HEATMAP_ROWS]
        caption = (
            f"the {HEATMAP_ROWS} of "
            f"{len([t for t in model.tasks if any((t, a) in model.table for a in arms)])} tasks where the "
            "arms differ most; the table below has every task"
        )
    col_w = max(70, min(140, 640 // len(arms)))
    top = 40 + 12 * max((len(a) > col_w // 7) for a in arms)
    width = _LABEL_W + 20 + col_w * len(arms) + 20
    height = top + _ROW_H * len(tasks) + (30 if caption else 12)
    canvas = Canvas(width, height, title=title, label=title)
    canvas.add("pattern", id="na", width=6, height=6, patternUnits="userSpaceOnUse")
    canvas.text(0, 16, title, cls="plot-title")
    for j, arm in enumerate(arms):
        canvas.text(
            _LABEL_W + 20 + col_w * (j + 0.5), top - 8, shorten(arm, col_w // 7), anchor="middle", tip=arm
        )
    for i, task in enumerate(tasks):
        y = top + i * _ROW_H
        canvas.text(_LABEL_W + 10, y + 13, shorten(task, 30), anchor="end", tip=task)
        for j, arm in enumerate(arms):
            agg = model.table.get(task, arm)
            x = _LABEL_W + 20 + col_w * j
            if agg is None:
                canvas.add("rect", x=x + 1, y=y + 1, width=col_w - 2, height=_ROW_H - 2, class_="absent")
                continue
            value = rate(task, arm)
            label = f"{agg.resolved}/{agg.valid_runs}"
            canvas.link(links.group(task, arm), f"{task} · {arm}: {label} resolved")
            canvas.add(
                "rect",
                x=x + 1,
                y=y + 1,
                width=col_w - 2,
                height=_ROW_H - 2,
                fill=_rate_colour(value),
                class_="na" if value is None else "",
            )
            dark = value is not None and value > 0.55
            canvas.text(
                x + col_w / 2,
                y + 13,
                label if value is not None else "n/a",
                anchor="middle",
                cls="cell-dark" if dark else "cell",
            )
            canvas.end_link()
    if caption:
        canvas.text(0, height - 8, caption, cls="tick")
    return canvas.render()


def forest(verdict: Verdict) -> str:
    """The pair's effect and each task's, with intervals (needs the ``statistics`` object)."""
    effect = verdict.metric_effect
    title = f"Effects with intervals: {verdict.candidate} vs {verdict.incumbent}"
    if effect is None or effect.effect is None:
        return (
            f'<p class="empty">{_esc(title)}: n/a — promotion.json carries no statistics for this pair.</p>'
        )
    level = "" if effect.confidence is None else f"{effect.confidence:.0%} "
    unit = "% saved" if effect.unit == "savings_pct" else " pts" if effect.unit == "points" else ""
    tasks: list[PairedTask] = sorted(
        (t for t in verdict.tasks if t.effect is not None), key=lambda t: -(t.effect or 0.0)
    )
    note = ""
    if len(tasks) > LABELLED_ROWS:
        tasks = sorted(tasks, key=lambda t: -abs(t.effect or 0.0))[:LABELLED_ROWS]
        tasks.sort(key=lambda t: -(t.effect or 0.0))
        note = f"the {LABELLED_ROWS} tasks with the largest effects are shown"
    rows: list[tuple[str, float, tuple[float, float] | None, bool]] = [
        (f"{verdict.metric or 'metric'} (pair)", effect.effect, _pair(effect.ci_low, effect.ci_high), True)
    ]
    resolution = verdict.resolution_effect
    if resolution is not None and resolution.effect is not None and resolution.unit == effect.unit:
        rows.append(
            ("resolution (pair)", resolution.effect, _pair(resolution.ci_low, resolution.ci_high), True)
        )
    rows += [(t.task, t.effect or 0.0, t.effect_interval, False) for t in tasks]
    values = [v for _, e, ci, _ in rows for v in ((e,) + (ci or ()))]
    ticks = nice_ticks(min(0.0, *values), max(0.0, *values))
    width, top = 900, 44
    height = top + _ROW_H * len(rows) + (40 if note else 26)
    x_of = _scale(ticks[0], ticks[-1], _LABEL_W + 10, width - 40)
    canvas = Canvas(width, height, title=title, label=title)
    canvas.text(0, 16, f"{title} ({level}interval, {effect.unit or 'units'})", cls="plot-title")
    _axis(
        canvas,
        ticks,
        x_of,
        (top - 6, top + _ROW_H * len(rows)),
        unit.strip() if unit == " pts" else "%" if unit else "",
    )
    canvas.add("line", x1=x_of(0), y1=top - 6, x2=x_of(0), y2=top + _ROW_H * len(rows), class_="zero")
    for i, (label, value, interval, overall) in enumerate(rows):
        y = top + i * _ROW_H + _ROW_H / 2
        canvas.text(
            _LABEL_W, y + 4, shorten(label, 30), anchor="end", cls="strong" if overall else "t", tip=label
        )
        tip = f"{label}: {value:+.3g}{unit}" + (
            "" if interval is None else f" [{interval[0]:+.3g}, {interval[1]:+.3g}]"
        )
        if interval is not None:
            canvas.add("line", x1=x_of(interval[0]), y1=y, x2=x_of(interval[1]), y2=y, class_="ci", tip=tip)
        if overall:
            x = x_of(value)
            canvas.add(
                "path",
                d=f"M{x - 7:.1f} {y:.1f} L{x:.1f} {y - 6:.1f} L{x + 7:.1f} {y:.1f} L{x:.1f} {y + 6:.1f} Z",
                class_="diamond",
                tip=tip,
            )
        else:
            canvas.add("circle", cx=x_of(value), cy=y, r=4, class_="dot", tip=tip)
    if note:
        canvas.text(0, height - 8, note, cls="tick")
    return canvas.render()


def _pair(low: float | None, high: float | None) -> tuple[float, float] | None:
    return None if low is None or high is None else (low, high)


def cost_vs_resolution(model: SweepModel) -> str:
    """Median cost per run (x) against resolve rate (y, Wilson interval) per implementation arm."""
    arms = [model.arm_totals[a] for a in model.arms if model.arm_totals[a].kind != "review"]
    points = [(t, t.cost_median, t.rate) for t in arms]
    known = [(t, c, r) for t, c, r in points if c is not None and r is not None]
    title = "Cost vs resolution per arm (implementation tasks)"
    if not known:
        return (
            f'<p class="empty">{_esc(title)}: n/a — no arm has both a known cost and valid runs.</p>'
            if arms
            else ""
        )
    width, height, left, bottom, top = 900, 340, 70, 290, 40
    costs = [c for _, c, _ in known]
    ticks_x = nice_ticks(0.0, max(costs) * 1.15 or 1.0)
    x_of = _scale(ticks_x[0], ticks_x[-1], left, width - 200)
    y_of = _scale(0.0, 100.0, bottom, top)
    canvas = Canvas(width, height, title=title, label=title)
    canvas.text(0, 16, title, cls="plot-title")
    for tick in ticks_x:
        canvas.add("line", x1=x_of(tick), y1=top, x2=x_of(tick), y2=bottom, class_="grid")
        canvas.text(x_of(tick), bottom + 16, f"${tick:g}", anchor="middle", cls="tick")
    for tick in (0, 25, 50, 75, 100):
        canvas.add("line", x1=left, y1=y_of(tick), x2=width - 200, y2=y_of(tick), class_="grid")
        canvas.text(left - 6, y_of(tick) + 4, f"{tick}%", anchor="end", cls="tick")
    canvas.text((left + width - 200) / 2, bottom + 40, "median cost per run ($)", anchor="middle", cls="axis")
    canvas.text(
        12, (top + bottom) / 2, "resolved (90% Wilson interval)", anchor="middle", cls="axis vertical"
    )
    placed: list[float] = []
    for totals, cost, rate in sorted(known, key=lambda p: -(p[2] or 0.0)):
        x, y = x_of(cost or 0.0), y_of(100 * (rate or 0.0))
        tip = (
            f"{totals.arm}: {fmt.money(cost)} per run, {100 * (rate or 0):.0f}% resolved "
            f"({totals.resolved}/{totals.valid_runs})"
        )
        if totals.wilson is not None:
            canvas.add(
                "line",
                x1=x,
                y1=y_of(100 * totals.wilson[0]),
                x2=x,
                y2=y_of(100 * totals.wilson[1]),
                class_="ci",
                tip=tip,
            )
        canvas.add("circle", cx=x, cy=y, r=6, class_="dot arm", tip=tip)
        label_y = y + 4
        while any(abs(label_y - other) < 14 for other in placed):
            label_y += 14
        placed.append(label_y)
        canvas.text(
            x + 10,
            label_y,
            f"{shorten(totals.arm, 28)} · {100 * (rate or 0):.0f}% · {fmt.money(cost)}",
            tip=tip,
        )
    return canvas.render()


def _esc(text: str) -> str:
    import html

    return html.escape(text)
