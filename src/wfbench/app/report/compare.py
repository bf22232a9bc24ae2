"""``wfbench compare A B``: two sweeps side by side (before and after a skill change, two agent
versions, two models).

For every (task, arm) in either sweep: the resolution in A and in B and its change in points,
the median cost and its change in %, the weighted F1 for review arms. For every arm both sweeps
ran on common tasks: the paired statistics with B as the candidate and A as the incumbent
(:func:`~wfbench.domain.statistics.analysis.analyze_pair` over the tasks both have: resolution
effect and cost saving with their intervals, the sign test), so "B is better" comes with how
sure. Then what each sweep was: its provenance, spend, run status and decisions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from wfbench.app.report import fmt
from wfbench.app.report.links import Links
from wfbench.app.report.markdown import effect_text
from wfbench.app.report.model import ReportInputs, SweepModel, build_model
from wfbench.app.report.page import esc, page
from wfbench.app.report.verdicts import Effect, effect_of
from wfbench.domain.errors import InputError
from wfbench.domain.results.aggregation import Aggregate
from wfbench.domain.results.rows import Row
from wfbench.domain.statistics.analysis import analyze_pair
from wfbench.domain.statistics.samples import REVIEW_METRIC, paired_samples

__all__ = ["Comparison", "compare_sweeps", "render_comparison_html", "render_comparison_md"]

BEFORE, AFTER = "A", "B"


@attrs.frozen
class CellChange:
    """One (task, arm) in both sweeps (either side ``None`` when that sweep did not run it)."""

    task: str
    arm: str
    before: Aggregate | None
    after: Aggregate | None

    @staticmethod
    def _rate(agg: Aggregate | None) -> float | None:
        return None if agg is None or not agg.valid_runs else agg.resolved / agg.valid_runs

    @property
    def rate_change_pts(self) -> float | None:
        """Resolve rate B − A in points."""
        before, after = self._rate(self.before), self._rate(self.after)
        return None if before is None or after is None else 100 * (after - before)

    @property
    def cost_change_pct(self) -> float | None:
        """Median cost change B vs A in % (negative = B cheaper)."""
        before = None if self.before is None else self.before.cost_usd
        after = None if self.after is None else self.after.cost_usd
        if before is None or after is None or before == 0:
            return None
        return 100 * (after - before) / before

    def quality(self, side: str) -> float | None:
        """The weighted F1 median on one side."""
        agg = self.before if side == BEFORE else self.after
        value = None if agg is None else agg.review.get("review_weighted_f1")
        return None if value is None or isinstance(value, bool) else float(value)


@attrs.frozen
class ArmComparison:
    """The paired statistics of one arm, B against A, over their common tasks."""

    arm: str
    metric: str
    common_tasks: int
    resolution: Effect | None
    metric_effect: Effect | None
    note: str | None = None


@attrs.frozen
class Comparison:
    """Two sweeps and what changed between them."""

    names: tuple[str, str]
    before: SweepModel
    after: SweepModel
    cells: tuple[CellChange, ...]
    arms: tuple[ArmComparison, ...]


def _arm_stats(arm: str, metric: str, before: Sequence[Row], after: Sequence[Row]) -> ArmComparison:
    rows = [attrs.evolve(r, arm=BEFORE) for r in before if r.arm == arm]
    rows += [attrs.evolve(r, arm=AFTER) for r in after if r.arm == arm]
    samples = paired_samples(rows, candidate=AFTER, incumbent=BEFORE, metric=metric)
    if len(samples.tasks) < 2:
        note = f"{len(samples.tasks)} common task(s): at least 2 are needed for an interval"
        return ArmComparison(arm, metric, len(samples.tasks), None, None, note)
    try:
        stats = analyze_pair(samples).to_mapping()
    except InputError as exc:  # pragma: no cover - the samples come from valid rows
        return ArmComparison(arm, metric, len(samples.tasks), None, None, exc.reason)
    return ArmComparison(
        arm,
        metric,
        len(samples.tasks),
        effect_of(stats.get("resolution"), "resolved"),
        effect_of(stats, metric),
    )


def compare_sweeps(
    before: Iterable[Row],
    after: Iterable[Row],
    *,
    names: tuple[str, str],
    inputs: tuple[ReportInputs, ReportInputs],
) -> Comparison:
    """Compare the rows of sweep A (``before``) with those of sweep B (``after``)."""
    rows_a, rows_b = list(before), list(after)
    model_a, model_b = build_model(rows_a, inputs[0]), build_model(rows_b, inputs[1])
    keys = sorted({*model_a.table, *model_b.table})
    cells = tuple(CellChange(t, a, model_a.table.get(t, a), model_b.table.get(t, a)) for t, a in keys)
    arms = []
    for arm in [a for a in model_a.arms if a in model_b.arms]:
        review = model_a.arm_totals[arm].kind == "review"
        arms.append(_arm_stats(arm, REVIEW_METRIC if review else "cost_usd", rows_a, rows_b))
    return Comparison(names=names, before=model_a, after=model_b, cells=cells, arms=tuple(arms))


def _resolved(agg: Aggregate | None) -> str:
    return "—" if agg is None else f"{agg.resolved}/{agg.valid_runs}"


def _cells_rows(comparison: Comparison) -> list[list[str]]:
    return [
        [
            c.task,
            c.arm,
            _resolved(c.before),
            _resolved(c.after),
            fmt.pts(c.rate_change_pts),
            fmt.money(None if c.before is None else c.before.cost_usd),
            fmt.money(None if c.after is None else c.after.cost_usd),
            fmt.pct(c.cost_change_pct),
            fmt.na(c.quality(BEFORE), ".3f"),
            fmt.na(c.quality(AFTER), ".3f"),
        ]
        for c in comparison.cells
    ]


_CELL_HEADER = (
    "task",
    "arm",
    "A resolved",
    "B resolved",
    "Δ resolution",
    "A median cost",
    "B median cost",
    "Δ cost",
    "A weighted F1",
    "B weighted F1",
)


def _arm_lines(arm: ArmComparison) -> list[str]:
    if arm.note is not None:
        return [f"- `{arm.arm}`: n/a — {arm.note}"]
    kind = "weighted F1" if arm.metric == REVIEW_METRIC else "cost"
    return [
        f"- `{arm.arm}` over {arm.common_tasks} common task(s), B against A:",
        f"  - resolution: {effect_text(arm.resolution)}",
        f"  - {kind} ({arm.metric}): {effect_text(arm.metric_effect)}",
        "  - per task: "
        + (
            "n/a"
            if arm.metric_effect is None or arm.metric_effect.wins is None
            else f"{arm.metric_effect.wins} better / {arm.metric_effect.losses} worse / "
            f"{arm.metric_effect.ties} tied"
            f" (sign test p = {fmt.na(arm.metric_effect.sign_test_p, '.3g')})"
        ),
    ]


def _sweep_lines(name: str, label: str, model: SweepModel) -> list[str]:
    facts = dict(model.provenance)
    decisions = "; ".join(f"{v.candidate}: {v.decision}" for v in model.verdicts) or "none"
    return [
        f"- {label} = `{name}`: {model.rows} cell(s), {len(model.tasks)} task(s), spend "
        f"{model.spend_text()}, "
        f"run status {model.run_status or 'n/a'}; model {fmt.na(facts.get('model'))}, agent "
        f"{fmt.na(facts.get('agent'))} {fmt.na(facts.get('agent version'))}, wfbench "
        f"{fmt.na(facts.get('wfbench'))};"
        f" decisions: {decisions}",
    ]


def render_comparison_md(comparison: Comparison) -> str:
    """The comparison as Markdown."""
    from wfbench.app.report.markdown import _table

    a, b = comparison.names
    lines = [
        "# wfbench comparison",
        "",
        *_sweep_lines(a, "A", comparison.before),
        *_sweep_lines(b, "B", comparison.after),
        "",
        "## Paired statistics per arm (B against A, common tasks)",
        "",
    ]
    for arm in comparison.arms:
        lines += _arm_lines(arm)
    if not comparison.arms:
        lines.append("No arm ran in both sweeps.")
    lines += ["", "## Per task and arm", "", *_table(_CELL_HEADER, _cells_rows(comparison))]
    return "\n".join(lines).rstrip("\n") + "\n"


def render_comparison_html(
    comparison: Comparison, *, links: tuple[Links | None, Links | None] = (None, None)
) -> str:
    """The comparison as one self-contained page.

    ``links`` lead from the page into each sweep (its viewer pages, or its directory for
    ``compare --html``); with them, A's and B's resolution of every (task, arm) link to its cells.
    """
    from wfbench.app.report.page import data_table

    a, b = comparison.names
    sweeps = "".join(
        f"<li>{esc(line[2:].replace('`', ''))}</li>"
        for line in (*_sweep_lines(a, "A", comparison.before), *_sweep_lines(b, "B", comparison.after))
    )
    arms = "".join(
        f"<li>{esc(line.strip()[2:].replace('`', ''))}</li>"
        for arm in comparison.arms
        for line in _arm_lines(arm)
    )
    columns: list[dict[str, Any]] = [
        {"label": h, **({"filter": "text"} if h == "task" else {"filter": "select"} if h == "arm" else {})}
        for h in _CELL_HEADER
    ]
    rows: list[list[Any]] = []
    for row, change in zip(_cells_rows(comparison), comparison.cells, strict=True):
        hrefs = [
            None if link is None or agg is None else link.group(change.task, change.arm)
            for link, agg in zip(links, (change.before, change.after), strict=True)
        ]
        rows.append([*row, *hrefs])
    if any(link is not None for link in links):
        columns[2]["href"], columns[3]["href"] = len(_CELL_HEADER), len(_CELL_HEADER) + 1
    body = (
        f"<h1>wfbench comparison</h1><ul>{sweeps}</ul>"
        "<h2>Paired statistics per arm (B against A, common "
        f"tasks)</h2><ul>{arms or '<li>No arm ran in both sweeps.</li>'}</ul>"
        f"<h2>Per task and arm</h2>{data_table('compare', columns, rows)}"
    )
    return page("wfbench comparison", body, crumbs=(("comparison", None),))
