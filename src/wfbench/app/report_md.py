"""report.md from rows alone, in the reference harness's layout (scheduler_tasks.md §5.4).

Differences from the reference, on purpose: every unknown value (usage, cost, a median over
unmeasured rows, a saving against a zero baseline) prints as ``n/a`` — never as 0; runs that
never invoked the skill under test are called out (they are kept out of quality medians); and
a measurement-health section and the promotion decisions (when given) are included.

:func:`render_report_md` is a pure function of the rows, a small frozen :class:`ReportContext`
and, optionally, the ``promotion.json`` mapping; the same rows always give the same text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from wfbench.domain.errors import InputError
from wfbench.domain.redaction import escape_controls
from wfbench.domain.results.aggregation import Aggregate, AggregateTable, aggregate, savings
from wfbench.domain.results.health import classify_sweep_health
from wfbench.domain.results.rows import USAGE_FIELDS, ErrorKind, Row
from wfbench.domain.statistics.view import statistics_view

__all__ = ["ReportContext", "render_report_md"]

_HEADER = (
    "| task | class | arm | resolved | input | cache_create | cache_read | output | cost $ | wall s | turns "
    "| churn | errors |"
)
_REVIEW_HEADER = (
    "| case | arm | TP | FP | FN | precision | recall | blocker recall | weighted F1 | grounding |"
)


@attrs.frozen
class ReportContext:
    """Provenance the rows alone do not carry. Every field is optional."""

    title: str = "wfbench workflow benchmark"
    benchmark_model: str | None = None
    proposer_model: str | None = None
    effort: str | None = None
    #: Selected task ids in sweep order (default: tasks in the order their rows appear).
    selected_tasks: tuple[str, ...] | None = None
    skipped_tasks: tuple[str, ...] = ()
    #: Compound Engineering plugin provenance, e.g. ``("1.2.0", "sha256…")``.
    ce_plugin: tuple[str, str] | None = None
    #: "Sweep aborted: …" or "Sweep cancelled: …" when the sweep did not finish.
    status: str | None = None
    #: The arm savings rows are computed against (no savings rows when it has no rows).
    baseline_arm: str = "baseline"
    #: Arms whose measurement health is listed (default: every arm).
    health_arms: tuple[str, ...] | None = None


def _cell(text: str) -> str:
    return escape_controls(text.replace("\n", " ")).replace("|", "\\|")


def _num(value: float | None, spec: str = ".0f") -> str:
    return "n/a" if value is None else format(value, spec)


def _resolved(agg: Aggregate) -> str:
    text = f"{agg.resolved}/{agg.valid_runs}"
    return f"{text} ({agg.excluded_runs} excluded)" if agg.excluded_runs else text


def _churn(agg: Aggregate) -> str:
    parts = (agg.diff_files, agg.diff_insertions, agg.diff_deletions)
    if all(part is None for part in parts):
        return "n/a"
    files, ins, dels = (_num(part) for part in parts)
    return f"{files}/+{ins}/−{dels}"


def _errors(agg: Aggregate) -> str:
    return ", ".join(f"{kind}×{count}" for kind, count in sorted(agg.error_kinds.items())) or "—"


def _arm_row(agg: Aggregate) -> str:
    usage = " | ".join(_num(getattr(agg, name)) for name in USAGE_FIELDS)
    cells = [
        _cell(agg.task),
        _cell(agg.task_class or "n/a"),
        _cell(agg.arm),
        _resolved(agg),
        usage,
        _num(agg.cost_usd, ".4f"),
        _num(agg.duration_s),
        _num(agg.num_turns),
        _churn(agg),
        _errors(agg),
    ]
    return "| " + " | ".join(cells) + " |"


def _savings_row(base: Aggregate, agg: Aggregate) -> str:
    saved = savings(base, agg)
    usage = " | ".join(_num(saved.get(name), ".1f") for name in USAGE_FIELDS)
    cost, wall = _num(saved.cost_usd, ".1f"), _num(saved.duration_s, ".1f")
    task_class = _cell(agg.task_class or "n/a")
    label = f"**{_cell(agg.arm)} savings %**"
    return f"| {_cell(agg.task)} | {task_class} | {label} | — | {usage} | {cost} | {wall} | — | — | — |"


def _order(rows: Sequence[Row], context: ReportContext) -> tuple[list[str], list[str]]:
    tasks = list(dict.fromkeys(row.task for row in rows))
    if context.selected_tasks is not None:
        tasks = [task for task in context.selected_tasks if task in tasks] + [
            task for task in tasks if task not in context.selected_tasks
        ]
    return tasks, list(dict.fromkeys(row.arm for row in rows))


def _main_table(table: AggregateTable, tasks: Sequence[str], arms: Sequence[str], baseline: str) -> list[str]:
    lines = [_HEADER, "|" + "---|" * 13]
    for task in tasks:
        present = [table[(task, arm)] for arm in arms if (task, arm) in table]
        lines += [_arm_row(agg) for agg in present]
        base = table.get(task, baseline)
        if base is not None:
            lines += [_savings_row(base, agg) for agg in present if agg.arm != baseline]
    return lines


def _review_table(table: AggregateTable, tasks: Sequence[str], arms: Sequence[str]) -> list[str]:
    cells = [table[(t, a)] for t in tasks for a in arms if (t, a) in table]
    reviewed = [agg for agg in cells if agg.review.get("review_clean_control") is not None]
    if not reviewed:
        return []
    lines = ["## Review quality", "", _REVIEW_HEADER, "|" + "---|" * 10]
    for agg in reviewed:
        metric = agg.review.get
        counts = [
            _num(_float(metric(f"review_{n}")), ".1f")
            for n in ("true_positives", "false_positives", "false_negatives")
        ]
        rates = [
            _num(_float(metric(f"review_{n}")), ".3f")
            for n in ("precision", "recall", "blocker_recall", "weighted_f1", "grounded_evidence")
        ]
        lines.append("| " + " | ".join([_cell(agg.task), _cell(agg.arm), *counts, *rates]) + " |")
    return [*lines, ""]


def _float(value: Any) -> float | None:
    return None if value is None or isinstance(value, bool) else float(value)


def _footers(rows: Sequence[Row], table: AggregateTable) -> list[str]:
    lines: list[str] = []
    excluded = sum(agg.excluded_runs for _, agg in table.items())
    if excluded:
        lines.append(
            f"{excluded} run(s) hit session/infra errors or had unverifiable evidence and were excluded "
            "from medians and resolve denominators — see error_kind in results.jsonl."
        )
    uninvoked = sum(1 for row in rows if row.error_kind is ErrorKind.SKILL_NOT_INVOKED)
    if uninvoked:
        lines.append(
            f"{uninvoked} run(s) never invoked the skill under test: they count as valid runs (they spent "
            "real tokens) but are kept out of quality medians; the gate requires equal scored runs per pair."
        )
    missing = sum(agg.transcripts_missing for _, agg in table.items())
    if missing:
        lines.append(
            f"{missing} run(s) had no locatable session transcript, so skill invocation could not be "
            "verified (skill_invoked=null) — see transcript_missing in results.jsonl."
        )
    lines.append(
        "Session ids for every run are in results.jsonl — each cell's transcripts, patch and review "
        "artifact are under cells/<task>/<arm>/run-<i>/ (see the row's transcript_artifacts)."
    )
    return lines


#: Diagnostic lines the report shows per row (the row keeps them all).
REPORT_DIAGNOSTICS = 10


def _diagnostics(rows: Sequence[Row]) -> list[str]:
    """``## Evidence diagnostics``: each row's ``evidence_diagnostics`` (shadowing files, paths not
    diffed…), control characters escaped; nothing when no row has any."""
    lines: list[str] = []
    for row in rows:
        found = row.extra.get("evidence_diagnostics") or []
        if not isinstance(found, list) or not found:
            continue
        lines.append(f"- `{_cell(row.task)}` / `{_cell(row.arm)}` / run {row.run}:")
        lines += [f"  - {_cell(str(item))}" for item in found[:REPORT_DIAGNOSTICS]]
        if len(found) > REPORT_DIAGNOSTICS:
            lines.append(f"  - … and {len(found) - REPORT_DIAGNOSTICS} more (results.jsonl has them all)")
    if not lines:
        return []
    return ["## Evidence diagnostics", "", *lines, ""]


def _health(rows: Sequence[Row], arms: Sequence[str]) -> list[str]:
    lines = ["## Measurement health", ""]
    for arm, verdict in classify_sweep_health(rows, arms).items():
        c = verdict.counters
        line = (
            f"- `{arm}`: {verdict.status.value} (fresh attempts {c.fresh_attempts}, "
            f"admissible {c.admissible}, execution failures {c.execution_failures}, "
            f"evidence failures {c.evidence_failures})"
        )
        lines.append(line + ("" if not verdict.reasons else " — " + "; ".join(verdict.reasons)))
    return lines


def _promotion(promotion: Mapping[str, Any] | None) -> list[str]:
    decisions = [] if promotion is None else promotion.get("decisions") or []
    if not decisions:
        return []
    lines = ["## Promotion", ""]
    if promotion is not None and promotion.get("run_status") == "aborted":
        lines += ["Run status: aborted — partial evidence cannot promote.", ""]
    for decision in decisions:
        lines.append(
            f"- `{decision.get('candidate_arm')}` vs `{decision.get('incumbent_arm')}` "
            f"({decision.get('metric')}): **{decision.get('decision')}**"
        )
        lines += [f"  - {_cell(str(reason))}" for reason in decision.get("reasons") or []]
        lines += _statistics(decision, (promotion or {}).get("policy") or {})
    return [*lines, ""]


def _statistics(decision: Mapping[str, Any], policy: Mapping[str, Any]) -> list[str]:
    """The pair's effects with their intervals, the other policy's decision, and what the sweep
    could detect (``docs/statistics.md``, "Reading the report")."""
    raw = decision.get("statistics")
    if not isinstance(raw, Mapping):
        return []
    entry = policy.get(str(decision.get("candidate_arm"))) or {}
    target = entry.get("min_improvement_pct") if isinstance(entry, Mapping) else None
    try:
        view = statistics_view(
            raw,
            candidate=str(decision.get("candidate_arm")),
            incumbent=str(decision.get("incumbent_arm")),
            target=target if isinstance(target, int | float) else None,
        )
    except InputError as exc:
        return [f"  - statistics: unreadable ({_cell(str(exc))})"]
    others = [
        f"{name}: {verdict.get('decision')}"
        for name, verdict in (decision.get("by_policy") or {}).items()
        if name != decision.get("policy") and isinstance(verdict, Mapping)
    ]
    decided = f"decided by the {decision.get('policy')} policy" + (
        f" ({'; '.join(others)})" if others else ""
    )
    texts = (decided, view.resolution.text(), view.metric.text(), view.detectability.sentence)
    return [f"  - {_cell(text)}" for text in texts]


def _provenance(
    tasks: Sequence[str], context: ReportContext, promotion: Mapping[str, Any] | None
) -> list[str]:
    bound = promotion or {}
    model = context.benchmark_model or bound.get("benchmark_model")
    proposer = context.proposer_model or bound.get("proposer_model")
    effort = context.effort or bound.get("effort")
    skipped = ", ".join(context.skipped_tasks) or "none"
    lines = [
        "## Run provenance",
        "",
        f"- Benchmark model: `{model}`",
        f"- Proposer model: `{proposer}`",
        f"- Reasoning effort: `{effort}`",
        f"- Selected tasks ({len(tasks)}): {', '.join(tasks) or 'none'}",
        f"- Skipped expensive tasks ({len(context.skipped_tasks)}): {skipped}",
    ]
    if context.ce_plugin is not None:
        lines.append(f"- Compound Engineering plugin: `{context.ce_plugin[0]}` (`{context.ce_plugin[1]}`)")
    if context.status:
        lines.append(f"- {context.status}")
    return lines


def render_report_md(
    rows: Sequence[Row],
    context: ReportContext | None = None,
    *,
    promotion: Mapping[str, Any] | None = None,
    status: str | None = None,
) -> str:
    """The whole report.md (ends with a newline).

    ``promotion`` is the ``promotion.json`` mapping, when candidate arms ran; ``status`` is a
    shorthand for ``context.status`` ("Sweep aborted: …").
    """
    context = context or ReportContext()
    if status is not None:
        context = attrs.evolve(context, status=status)
    table = aggregate(rows)
    tasks, arms = _order(rows, context)
    lines = [
        f"# {context.title}",
        "",
        "Medians across runs; savings rows = (baseline − arm) / baseline per arm. "
        "`n/a` marks a value that was not measured (unknown is never shown as 0).",
        "",
        "Churn = files changed/+lines inserted/−lines deleted against the post-setup HEAD (median).",
        "",
        "**WARNING:** the token columns count the main-loop session only; cost $ is the only column "
        "that includes subagent spend.",
        "",
        *_main_table(table, tasks, arms, context.baseline_arm),
        "",
        *_review_table(table, tasks, arms),
        *_footers(rows, table),
        "",
        *_diagnostics(rows),
        *_health(rows, list(context.health_arms) if context.health_arms is not None else arms),
        "",
        *_promotion(promotion),
        *_provenance(context.selected_tasks or tuple(tasks), context, promotion),
    ]
    return "\n".join(lines) + "\n"
