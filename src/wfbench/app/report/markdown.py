"""``report.md``: the decision first, then the evidence behind it, in the order a reader needs it.

1. the verdict per candidate (decision, reasons, effect and interval, what the sweep could
   detect), the sweep's total spend and run status;
2. per-task paired results of each candidate against its own incumbent;
3. per-arm totals, implementation and review arms apart (resolve rate with a Wilson interval,
   spend, real cell wall time);
4. the per-task, per-arm table and the review quality per task;
5. measurement health of every arm, the evidence diagnostics, the concurrency limit's history (when
   the provider throttled), the notes, and the provenance.

Unknowns print ``n/a``. A pure function of the :class:`~wfbench.app.report.model.SweepModel`.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Iterable, Iterator, Sequence

from wfbench.app.report import fmt
from wfbench.app.report.agents_view import agents_section
from wfbench.app.report.model import (
    IMPLEMENTATION_ARM_COLUMNS,
    REVIEW_ARM_COLUMNS,
    ArmTotals,
    CellRef,
    SweepModel,
)
from wfbench.app.report.verdicts import Effect, PairedTask, Verdict
from wfbench.domain.redaction import escape_controls
from wfbench.domain.results.aggregation import Aggregate

__all__ = [
    "effect_text",
    "effect_value",
    "joined_lines",
    "markdown_parts",
    "render_markdown",
    "spend_text",
    "wall_median",
]


NO_STATISTICS = "n/a (no statistics in promotion.json)"


def _cell(text: object) -> str:
    """One table cell or list item: control characters escaped (no terminal escapes), pipes escaped."""
    return escape_controls(str(text).replace("\n", " ")).replace("|", "\\|")


def _table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> Iterator[str]:
    """A table's lines, then an empty one; each row's line made when it is asked for."""
    yield "| " + " | ".join(header) + " |"
    yield "|" + "---|" * len(header)
    for row in rows:
        yield "| " + " | ".join(_cell(value) for value in row) + " |"
    yield ""


def _titled(title: str, header: Sequence[str], rows: Iterator[Sequence[object]]) -> Iterator[str]:
    """``## title`` and its table, or nothing at all when there are no rows."""
    first = next(rows, None)
    if first is None:
        return
    yield from (title, "")
    yield from _table(header, itertools.chain((first,), rows))


def effect_value(unit: str | None, value: float | None) -> str:
    """One effect value in its unit: ``+33.3 pts`` (points), ``+24.9% saved`` (savings), else plain."""
    if value is None:
        return "n/a"
    if unit == "points":
        return fmt.pts(value)
    if unit == "savings_pct":
        return fmt.pct(value) + " saved"
    return f"{value:+.4g}".replace("-", "−") + (f" {unit}" if unit else "")


def effect_text(effect: Effect | None) -> str:
    """``+24.9% saved [90% CI +18.0% saved, +31.2% saved]``; ``n/a`` when unknown."""
    if effect is None or effect.effect is None:
        return "n/a"

    def fmt_one(value: float) -> str:
        return effect_value(effect.unit, value)

    text = fmt_one(effect.effect)
    if effect.ci_low is not None and effect.ci_high is not None:
        level = "" if effect.confidence is None else f"{effect.confidence:.0%} "
        text += f" [{level}CI {fmt_one(effect.ci_low)}, {fmt_one(effect.ci_high)}]"
    return text


def spend_text(model: SweepModel) -> str:
    """The sweep's total spend and where it comes from."""
    return f"{model.spend_text()} over {model.rows} cell(s), from {model.spend_source}"


def wall_median(cells: Sequence[CellRef]) -> float | None:
    """Median real cell wall time (``cell_wall_s``) of ``cells``; ``None`` when none has it."""
    known = [c.cell_wall_s for c in cells if c.cell_wall_s is not None]
    return statistics.median(known) if known else None


def _sign_test(effect: Effect | None) -> str:
    if effect is None or effect.wins is None:
        return "n/a"
    p = fmt.na(effect.sign_test_p, ".3g")
    return f"{effect.wins} better / {effect.losses} worse / {effect.ties} tied (sign test p = {p})"


def _verdict(verdict: Verdict) -> list[str]:
    lines = [
        f"### `{verdict.candidate}` vs `{verdict.incumbent}`: **{verdict.decision.upper()}**",
        "",
        *[f"- {_cell(reason)}" for reason in verdict.reasons],
    ]
    for policy, decision, reasons in verdict.other_policies:
        lines.append(f"- The {_cell(policy)} policy says **{_cell(decision)}**: " + _cell("; ".join(reasons)))
    metric = verdict.metric or "metric"
    lines += [
        "",
        f"- Gate: {verdict.gate or 'n/a'} on `{metric}`; median improvement "
        f"{fmt.pct(verdict.median_improvement_pct)} (promotes at ≥ "
        f"{fmt.pct(verdict.min_improvement_pct, signed=False)};"
        f" a task may regress at most {fmt.pct(verdict.max_task_regression_pct, signed=False)})",
        f"- Effect on `{metric}`: {effect_text(verdict.metric_effect)}",
        f"- Effect on resolution: {effect_text(verdict.resolution_effect)}",
        f"- Per task: {_sign_test(verdict.metric_effect)}",
        f"- What this sweep could detect: {_cell(verdict.detectability or NO_STATISTICS)}",
    ]
    regressions = verdict.regressions
    if regressions:
        names = ", ".join(f"{t.task} ({'; '.join(t.flags)})" for t in regressions)
        lines.append(f"- **Regressions flagged ({len(regressions)})**: {_cell(names)}")
    return [*lines, ""]


def _verdict_section(model: SweepModel) -> list[str]:
    lines = ["## Verdict", ""]
    if not model.verdicts:
        lines += ["No candidate arm ran against its incumbent: there is no promotion decision.", ""]
    for verdict in model.verdicts:
        lines += _verdict(verdict)
    lines += [
        f"- Total spend: {spend_text(model)}",
        f"- Run status: {model.run_status or 'n/a'}"
        + (f" — {model.inputs.status}" if model.inputs.status else ""),
        "",
    ]
    return lines


def _paired_row(verdict: Verdict, task: PairedTask) -> list[object]:
    metric = verdict.metric or ""
    interval = task.effect_interval
    effect = "n/a" if task.effect is None else f"{task.effect:+.3g}"
    if interval is not None:
        effect += f" [{interval[0]:+.3g}, {interval[1]:+.3g}]"
    return [
        task.task,
        task.task_class or "n/a",
        fmt.ratio(task.incumbent_resolved, task.incumbent_valid),
        fmt.ratio(task.candidate_resolved, task.candidate_valid),
        fmt.metric_value(metric, task.incumbent_metric),
        fmt.metric_value(metric, task.candidate_metric),
        fmt.metric_delta(metric, task.delta),
        fmt.pct(task.improvement_pct),
        effect,
        "; ".join(task.flags) or "—",
    ]


def _paired_section(model: SweepModel) -> Iterator[str]:
    for verdict in model.verdicts:
        metric = verdict.metric or "metric"
        yield from (f"## Per task: `{verdict.candidate}` vs its incumbent `{verdict.incumbent}`", "")
        header = [
            "task",
            "class",
            f"{verdict.incumbent} resolved",
            f"{verdict.candidate} resolved",
            f"{verdict.incumbent} {metric}",
            f"{verdict.candidate} {metric}",
            "Δ (candidate − incumbent)",
            "improvement",
            "effect [interval]",
            "flags",
        ]
        ordered = sorted(
            verdict.tasks, key=lambda t: (t.improvement_pct is None, -(t.improvement_pct or 0.0))
        )
        yield from _table(header, (_paired_row(verdict, task) for task in ordered))


def _rate(totals: ArmTotals) -> str:
    if totals.rate is None:
        return "n/a"
    text = f"{100 * totals.rate:.0f}%"
    if totals.wilson is not None:
        text += f" [{100 * totals.wilson[0]:.0f}–{100 * totals.wilson[1]:.0f}%]"
    return text


def _errors(kinds: object) -> str:
    items = kinds.items() if isinstance(kinds, dict) else []
    return ", ".join(f"{kind}×{count}" for kind, count in sorted(items)) or "—"


def _arms_section(model: SweepModel) -> list[str]:
    lines = ["## Arms", ""]
    impl = [model.arm_totals[a] for a in model.arms if model.arm_totals[a].kind != "review"]
    review = [model.arm_totals[a] for a in model.arms if model.arm_totals[a].kind == "review"]
    if impl:
        lines += ["### Implementation arms", ""]
        lines += _table([h for h, _ in IMPLEMENTATION_ARM_COLUMNS], [_impl_arm(t) for t in impl])
    if review:
        lines += ["### Review arms", ""]
        lines += _table(REVIEW_ARM_COLUMNS, [_review_arm(t) for t in review])
    return lines


def _impl_arm(t: ArmTotals) -> list[object]:
    spend = t.spend_text
    return [
        t.arm,
        t.tasks,
        fmt.ratio(t.resolved, t.valid_runs),
        _rate(t),
        fmt.money(t.cost_median),
        spend,
        fmt.na(t.wall_median, ".1f"),
        fmt.na(t.wall_total, ".1f"),
        _errors(dict(t.error_kinds)),
    ]


def _review_arm(t: ArmTotals) -> list[object]:
    means = t.review_means
    return [
        t.arm,
        t.tasks,
        t.runs,
        *(
            fmt.na(means.get(name), ".3f")
            for name in ("review_weighted_f1", "review_precision", "review_recall", "review_blocker_recall")
        ),
        fmt.ratio(t.clean_passed, t.clean_total) if t.clean_total else "n/a",
        t.spend_text,
        fmt.na(t.wall_median, ".1f"),
        _errors(dict(t.error_kinds)),
    ]


def _churn(agg: Aggregate) -> str:
    parts = (agg.diff_files, agg.diff_insertions, agg.diff_deletions)
    if all(part is None for part in parts):
        return "n/a"
    files, ins, dels = (fmt.na(part, ".0f") for part in parts)
    return f"{files}/+{ins}/−{dels}"


def _resolved(agg: Aggregate) -> str:
    text = f"{agg.resolved}/{agg.valid_runs}"
    return f"{text} ({agg.excluded_runs} excluded)" if agg.excluded_runs else text


def _task_rows(model: SweepModel) -> Iterator[list[object]]:
    impl = [a for a in model.arms if model.arm_totals[a].kind != "review"]
    for task in model.tasks:
        for arm in impl:
            agg = model.table.get(task, arm)
            if agg is None:
                continue
            yield (
                [
                    task,
                    agg.task_class or "n/a",
                    arm,
                    _resolved(agg),
                    fmt.money(agg.cost_usd),
                    fmt.na(agg.output_tokens, ",.0f"),
                    fmt.na(agg.num_turns, ".0f"),
                    fmt.na(wall_median(model.cells_of(task, arm)), ".1f"),
                    _churn(agg),
                    _errors({k.value: v for k, v in agg.error_kinds.items()}),
                ]
            )


def _task_table(model: SweepModel) -> Iterator[str]:
    header = [
        "task",
        "class",
        "arm",
        "resolved",
        "median cost",
        "median output tokens",
        "median turns",
        "median cell wall s",
        "churn",
        "errors",
    ]
    return _titled("## Per task and arm", header, _task_rows(model))


def _review_rows(model: SweepModel) -> Iterator[list[object]]:
    for task in model.tasks:
        for arm in model.arms:
            agg = model.table.get(task, arm)
            if agg is None or not agg.review:
                continue
            metric = agg.review.get
            clean = metric("review_clean_control")
            yield (
                [
                    task,
                    arm,
                    _resolved(agg),
                    *(
                        fmt.na(metric(f"review_{n}"), ".1f")
                        for n in ("true_positives", "false_positives", "false_negatives")
                    ),
                    *(
                        fmt.na(metric(f"review_{n}"), ".3f")
                        for n in ("precision", "recall", "blocker_recall", "weighted_f1")
                    ),
                    "n/a"
                    if clean is None
                    else ("yes, passed" if metric("review_clean_pass") else "yes, failed")
                    if clean
                    else "no",
                ]
            )


def _review_table(model: SweepModel) -> Iterator[str]:
    header = [
        "case",
        "arm",
        "resolved",
        "TP",
        "FP",
        "FN",
        "precision",
        "recall",
        "blocker recall",
        "weighted F1",
        "clean control",
    ]
    return _titled("## Review quality per case", header, _review_rows(model))


def _health(model: SweepModel) -> list[str]:
    lines = ["## Measurement health (every arm)", ""]
    for arm in model.arms:
        verdict = model.arm_totals[arm].health
        c = verdict.counters
        line = (
            f"- `{arm}`: {verdict.status.value} (fresh attempts {c.fresh_attempts}, reused {c.reused}, "
            f"admissible {c.admissible}, execution failures {c.execution_failures}, "
            f"evidence failures {c.evidence_failures})"
        )
        lines.append(_cell(line + ("" if not verdict.reasons else " — " + "; ".join(verdict.reasons))))
    return [*lines, ""]


def _diagnostics(model: SweepModel) -> Iterator[str]:
    """``## Evidence diagnostics``: each row's ``evidence_diagnostics`` (shadowing, paths not diffed)."""
    if not model.diagnostics:
        return
    yield from ("## Evidence diagnostics", "")
    for task, arm, run, shown, total in model.diagnostics:
        yield f"- `{_cell(task)}` / `{_cell(arm)}` / run {run}:"
        yield from (f"  - {_cell(item)}" for item in shown)
        if total > len(shown):
            yield f"  - … and {total - len(shown)} more (results.jsonl has them all)"
    yield ""


def _oracle_outcomes(model: SweepModel) -> Iterator[str]:
    """``## Hidden oracle outcomes``: per arm, how many rows ended in each outcome class (the ids that
    failed are in each cell's harness-only ``oracle.json``, shown by ``wfbench view``)."""
    if not model.oracle_outcomes:
        return
    yield from ("## Hidden oracle outcomes", "")
    for arm, counts in model.oracle_outcomes.items():
        yield f"- `{_cell(arm)}`: " + ", ".join(f"{_cell(kind)} {n}" for kind, n in counts)
    yield ""


def _concurrency(model: SweepModel) -> list[str]:
    """``## Concurrency``: throttled retries and every change of the limit on concurrent cells."""
    lines = model.inputs.concurrency
    return ["## Concurrency", "", *(f"- {_cell(line)}" for line in lines), ""] if lines else []


def _notes(model: SweepModel) -> list[str]:
    notes = []
    excluded = sum(agg.excluded_runs for _, agg in model.table.items())
    if excluded:
        notes.append(
            f"{excluded} run(s) hit session/infra errors or had unverifiable evidence and were excluded "
            "from medians and resolve denominators — see error_kind in results.jsonl."
        )
    if model.skill_not_invoked:
        notes.append(
            f"{model.skill_not_invoked} run(s) never invoked the skill under test: they count as valid runs "
            "(they "
            "spent real tokens) but are kept out of quality medians; the gate requires equal scored runs "
            "per pair."
        )
    if model.transcripts_missing:
        notes.append(
            f"{model.transcripts_missing} run(s) had no locatable session transcript, so skill invocation "
            "could "
            "not be verified (skill_invoked=null) — see transcript_missing in results.jsonl."
        )
    notes += [f"results.jsonl: {problem}" for problem in model.inputs.problems]
    notes.append(
        "Medians are over valid runs; cost is the only figure that includes subagent spend; cell wall time "
        "is "
        "the harness's measured time per cell (cell_wall_s), not the agent's self-reported duration."
    )
    notes.append(
        "Each cell's transcripts, patch and review artifact are under cells/<task>/<arm>/run-<i>/ "
        "(see the row's transcript_artifacts); `wfbench view DIR` shows them per cell."
    )
    return ["## Notes", "", *[f"- {_cell(note)}" for note in notes], ""]


def _provenance(model: SweepModel) -> list[str]:
    lines = ["## Provenance", ""]
    lines += [f"- {name}: {_cell(fmt.na(value))}" for name, value in model.provenance]
    selected = model.inputs.selected_tasks or model.tasks
    lines.append(f"- tasks ({len(selected)}): {_cell(', '.join(selected) or 'none')}")
    if model.inputs.skipped_tasks:
        skipped = model.inputs.skipped_tasks
        lines.append(f"- skipped expensive tasks ({len(skipped)}): {_cell(', '.join(skipped))}")
    return [*lines, ""]


def render_markdown(model: SweepModel) -> str:
    """The whole ``report.md`` (ends with one newline)."""
    return "".join(markdown_parts(model))


#: Lines joined into one piece of the streamed document (fewer, larger writes).
_LINES_PER_PIECE = 512


def markdown_parts(model: SweepModel) -> Iterator[str]:
    """``report.md`` in pieces, each made when it is asked for (:func:`render_markdown` joins them)."""
    return joined_lines(_lines(model))


def joined_lines(lines: Iterable[str], per_piece: int = _LINES_PER_PIECE) -> Iterator[str]:
    """``"\\n".join(lines).rstrip("\\n") + "\\n"`` in pieces of about ``per_piece`` lines.

    Newlines at the end of a piece are held back until text follows them, so the document's
    trailing newlines fold into one without ever holding the whole document.
    """
    held = ""
    rest = iter(lines)
    first = next(rest, None)
    if first is not None:
        rest = itertools.chain((first,), ("\n" + line for line in rest))
    while batch := list(itertools.islice(rest, per_piece)):
        text = "".join(batch)
        kept = text.rstrip("\n")
        if kept:
            yield held + kept
            held = text[len(kept) :]
        else:
            held += text
    yield "\n"


def _lines(model: SweepModel) -> Iterator[str]:
    summary = (
        f"{model.rows} cell(s) · {len(model.tasks)} task(s) · {len(model.arms)} arm(s) · "
        f"run status {model.run_status or 'n/a'}"
    )
    yield from (f"# {model.inputs.title}", "", summary, "")
    for section in (
        _verdict_section,
        _paired_section,
        _arms_section,
        agents_section,
        _task_table,
        _review_table,
        _health,
        _diagnostics,
        _oracle_outcomes,
        _concurrency,
        _notes,
        _provenance,
    ):
        yield from section(model)
