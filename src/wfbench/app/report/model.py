"""One model of a sweep for every rendering: built in one pass over the rows, never holding them.

:func:`build_model` reads each row once (:class:`ModelBuilder`, beside the
:class:`~wfbench.domain.results.summary.SummaryBuilder` whose aggregates, per-arm resolve counts,
median costs and health it reuses) and keeps, besides the aggregates, only what the pages
need: a packed cell per row (its status, cost and real wall time, for the links from
every number to the cells behind it), per-arm totals (spend, wall time, resolve counts with a
Wilson interval, health counters), the review quality per arm, and the provenance the rows
carry (model, sandbox, runtime digest, recording dates). ``promotion.json`` gives the verdicts
(:mod:`wfbench.app.report.verdicts`) and ``manifest.json``, when the sweep has one, the rest of
the provenance. Unknown is ``None`` everywhere; the renderers print ``n/a``.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from wfbench import __version__
from wfbench.app.report import fmt
from wfbench.app.report.cells import CellRef, PackedCells
from wfbench.app.report.verdicts import Verdict, detectability_sentences, verdicts_of
from wfbench.domain.results.aggregation import Aggregate, AggregateTable
from wfbench.domain.results.health import ArmHealth
from wfbench.domain.results.rows import ErrorKind, Row
from wfbench.domain.results.summary import RowSummary, SummaryBuilder
from wfbench.domain.statistics.distributions import wilson_interval

__all__ = [
    "ArmTotals",
    "CellRef",
    "ModelBuilder",
    "ReportInputs",
    "SweepModel",
    "aggregates_only",
    "build_model",
]

CONFIDENCE = 0.9
#: Evidence diagnostics the reports show per row (the row keeps them all).
REPORT_DIAGNOSTICS = 10
_REVIEW_MEANS = ("review_weighted_f1", "review_precision", "review_recall", "review_blocker_recall")


#: The implementation arms' table, in Markdown and HTML alike: (header, numeric column).
IMPLEMENTATION_ARM_COLUMNS: tuple[tuple[str, bool], ...] = (
    ("arm", False),
    ("tasks", True),
    ("resolved / valid", True),
    ("resolve rate [90% Wilson]", True),
    ("median cost per run", True),
    ("spend", True),
    ("median cell wall s", True),
    ("total cell wall s", True),
    ("errors", False),
)
#: The review arms' table, in Markdown and HTML alike (every column but the first and last numeric).
REVIEW_ARM_COLUMNS: tuple[str, ...] = (
    "arm",
    "cases",
    "runs",
    "mean weighted F1",
    "mean precision",
    "mean recall",
    "mean blocker recall",
    "clean controls passed",
    "spend",
    "median cell wall s",
    "errors",
)


@attrs.frozen
class ReportInputs:
    """What the rows alone do not say. Every field is optional."""

    title: str = "wfbench report"
    promotion: Mapping[str, Any] | None = None
    manifest: Mapping[str, Any] | None = None
    #: "Sweep aborted: …" / "Sweep cancelled: …" when the sweep did not finish.
    status: str | None = None
    benchmark_model: str | None = None
    effort: str | None = None
    selected_tasks: tuple[str, ...] | None = None
    skipped_tasks: tuple[str, ...] = ()
    #: Candidate arm → the sentence saying what its sweep could detect.
    detectability: Mapping[str, str] = attrs.field(factory=dict)
    #: Lines of ``results.jsonl`` that were not rows (``view`` shows them; ``report`` refuses them).
    problems: tuple[str, ...] = ()
    #: The concurrency limit's history (``wfbench.app.sweep.concurrency.report_lines``); none: no section.
    concurrency: tuple[str, ...] = ()
    #: The scripted provider's reply counts by source (offline sweeps; None for a real endpoint).
    provider_replies: Mapping[str, int] | None = None


@attrs.frozen
class ArmTotals:
    """One arm over every task of the sweep."""

    arm: str
    kind: str
    tasks: int
    runs: int
    valid_runs: int
    resolved: int
    wilson: tuple[float, float] | None
    #: Sum of the known ``cost_usd`` over every row (excluded ones too: they were paid).
    spend: float
    spend_unknown: int
    #: Median ``cost_usd`` per valid run (``None`` when any is unknown).
    cost_median: float | None
    wall_median: float | None
    wall_total: float
    wall_unknown: int
    error_kinds: Mapping[str, int]
    health: ArmHealth
    #: Review arms: the mean over tasks of each task's median metric; clean controls passed/total.
    review_means: Mapping[str, float | None] = attrs.field(factory=dict)
    clean_passed: int = 0
    clean_total: int = 0

    @property
    def spend_text(self) -> str:
        """The arm's spend: ``n/a`` or a partial sum when some cells' cost is unknown (never ``$0``)."""
        return fmt.spend(self.spend, self.spend_unknown, self.runs)

    @property
    def rate(self) -> float | None:
        """Resolved over valid runs (0..1); ``None`` without valid runs."""
        return self.resolved / self.valid_runs if self.valid_runs else None


@attrs.frozen
class SweepModel:
    """Everything a report or a viewer page shows about one sweep."""

    inputs: ReportInputs
    table: AggregateTable
    tasks: tuple[str, ...]
    arms: tuple[str, ...]
    task_kinds: Mapping[str, str]
    cells: Mapping[tuple[str, str], tuple[CellRef, ...]]
    arm_totals: Mapping[str, ArmTotals]
    verdicts: tuple[Verdict, ...]
    provenance: tuple[tuple[str, str | None], ...]
    run_status: str | None
    rows: int
    skill_not_invoked: int
    transcripts_missing: int
    #: ``(task, arm, run, the first diagnostics, how many the row has)`` for rows with any.
    diagnostics: tuple[tuple[str, str, int, tuple[str, ...], int], ...] = ()
    #: Rows whose usage and cost were metered at the wire (``usage_source: wire``).
    wire_metered: int = 0
    #: arm -> ((oracle outcome class, rows), …) of the rows that record one (issue 25; for the author).
    oracle_outcomes: Mapping[str, tuple[tuple[str, int], ...]] = attrs.field(factory=dict)
    #: The sweep is still running (``wfbench view`` of a live sweep): its verdict is pending.
    pending: bool = False
    #: arm → the agent its rows name (``{}`` when none does): the per-agent view.
    arm_agent: Mapping[str, str] = attrs.field(factory=dict)

    @property
    def spend(self) -> float:
        """Known spend of the whole sweep (sum of the rows' ``cost_usd``)."""
        return sum(totals.spend for totals in self.arm_totals.values())

    @property
    def spend_unknown(self) -> int:
        """Rows whose cost was not reported."""
        return sum(totals.spend_unknown for totals in self.arm_totals.values())

    def spend_text(self, digits: int = 4) -> str:
        """The sweep's spend: ``n/a`` or a partial sum when some cells' cost is unknown (never ``$0``)."""
        return fmt.spend(self.spend, self.spend_unknown, self.rows, digits)

    @property
    def spend_source(self) -> str:
        """Where the spend figure comes from."""
        if self.rows and self.wire_metered == self.rows:
            return "usage metered at the wire by the key proxy, at the pinned model's prices"
        if self.wire_metered:
            return (
                f"usage metered at the wire for {self.wire_metered} of {self.rows} row(s), else self-reported"
            )
        return "the rows' self-reported cost_usd (wire metering is not recorded in this sweep)"

    def cells_of(self, task: str, arm: str) -> tuple[CellRef, ...]:
        """The cells of one (task, arm), by run."""
        return self.cells.get((task, arm), ())


def _number(value: Any) -> float | None:
    return None if isinstance(value, bool) or not isinstance(value, int | float) else float(value)


class ModelBuilder:
    """The one pass: what the pages need beyond the aggregates, row by row, never the rows.

    Feed it rows (:meth:`add`), then :meth:`build` the model from the pass's
    :class:`~wfbench.domain.results.summary.RowSummary` (the aggregate table, per-arm resolve
    counts, median cost and health). Per row it keeps one packed cell
    (:class:`~wfbench.app.report.cells.PackedCells`: 34 bytes; its :class:`CellRef` is made when
    a page reads the group, with the group's task and arm strings), the evidence diagnostics a
    row has, and counters; nothing else of the row outlives :meth:`add`. ``wfbench report`` feeds the same
    rows to the gate's builders in the same loop, so the file is read once.
    """

    def __init__(self) -> None:
        self.keys: dict[tuple[str, str], tuple[str, str]] = {}
        #: Every row's cell, packed (a few bytes each); its ``cost_usd`` is the spend, in row order.
        self.cells = PackedCells()
        self.tasks: dict[str, None] = {}
        self.arms: dict[str, None] = {}
        self.task_kinds: dict[str, str] = {}
        self.arm_kinds: dict[str, set[str]] = {}
        #: arm -> effective error kind -> rows.
        self.errors: dict[str, Counter[str]] = {}
        self.seen: dict[str, dict[str, None]] = {}
        #: arm → "agent `version` (model `m`)" as its rows record them (an arm may name its agent).
        self.arm_agents: dict[str, dict[str, None]] = {}
        #: arm → the agent its first row names (the report's per-agent view).
        self.agent_of: dict[str, str] = {}
        self.first_recorded: str | None = None
        self.last_recorded: str | None = None
        self.rows = self.uninvoked = self.missing = self.wire = 0
        self.diagnostics: list[tuple[str, str, int, tuple[str, ...], int]] = []
        self.oracle_outcomes: dict[str, Counter[str]] = {}

    def add(self, row: Row) -> None:
        """Observe one row."""
        key = self.keys.get((row.task, row.arm))
        if key is None:
            key = self.keys[(row.task, row.arm)] = (row.task, row.arm)
        task, arm = key
        self.rows += 1
        self.tasks.setdefault(task)
        self.arms.setdefault(arm)
        extra = row.extra
        kind = extra.get("kind")
        if not isinstance(kind, str):
            kind = "review" if row.review_evidence_valid is not None or row.review else "implementation"
        self.task_kinds.setdefault(task, kind)
        self.arm_kinds.setdefault(arm, set()).add(kind)
        outcome = extra.get("oracle_outcome")
        if isinstance(outcome, str) and outcome:
            self.oracle_outcomes.setdefault(arm, Counter())[outcome[:40]] += 1
        found = extra.get("evidence_diagnostics")
        if isinstance(found, list) and found:
            shown = tuple(str(item) for item in found[:REPORT_DIAGNOSTICS])
            self.diagnostics.append((task, arm, row.run, shown, len(found)))
        self.uninvoked += row.error_kind is ErrorKind.SKILL_NOT_INVOKED
        self.wire += extra.get("usage_source") == "wire"
        self.missing += row.transcript_missing
        effective = row.effective_kind
        if effective is not None:
            self.errors.setdefault(arm, Counter())[effective.value] += 1
        self.cells.add(
            key,
            CellRef(
                task=task,
                arm=arm,
                run=row.run,
                resolved=row.resolved,
                error_kind=None if effective is None else effective.value,
                excluded=row.excluded,
                reused=row.reused,
                cost_usd=row.cost_usd,
                cell_wall_s=_number(extra.get("cell_wall_s")),
                quality=_number(row.review.get("review_weighted_f1")),
            ),
        )
        for name in ("benchmark_model", "model", "sandbox_backend", "effort", "runtime_digest"):
            value = extra.get(name)
            if isinstance(value, str) and value:
                self.seen.setdefault(name, {}).setdefault(value)
        agent = extra.get("agent")
        if isinstance(agent, str) and agent:
            version, model = extra.get("agent_version") or "version n/a", extra.get("model") or "n/a"
            self.arm_agents.setdefault(arm, {}).setdefault(f"{agent} `{version}` (model `{model}`)")
            self.agent_of.setdefault(arm, agent)
        recorded = extra.get("reused_from_recorded_at") or extra.get("recorded_at")
        if isinstance(recorded, str):
            day = recorded[:10]
            if self.first_recorded is None or day < self.first_recorded:
                self.first_recorded = day
            if self.last_recorded is None or day > self.last_recorded:
                self.last_recorded = day

    def build(self, summary: RowSummary, inputs: ReportInputs | None = None) -> SweepModel:
        """The model of the rows added so far; ``summary`` is the summary of the same rows."""
        inputs = inputs or ReportInputs()
        arms = tuple(self.arms)
        health = summary.health(arms)
        totals = {arm: _arm_totals(arm, self.arm_kinds[arm], self, summary, health[arm]) for arm in arms}
        detect = inputs.detectability or detectability_sentences(inputs.promotion)
        return SweepModel(
            inputs=inputs,
            table=summary.table,
            tasks=_order(self.tasks, inputs.selected_tasks),
            arms=arms,
            task_kinds=self.task_kinds,
            cells=self.cells,
            arm_totals=totals,
            verdicts=verdicts_of(inputs.promotion, detect),
            provenance=_provenance(inputs, self),
            run_status=_run_status(inputs),
            rows=self.rows,
            skill_not_invoked=self.uninvoked,
            transcripts_missing=self.missing,
            diagnostics=tuple(self.diagnostics),
            wire_metered=self.wire,
            oracle_outcomes={a: tuple(sorted(c.items())) for a, c in self.oracle_outcomes.items()},
            arm_agent=dict(self.agent_of),
        )


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def _review(aggs: Sequence[Aggregate]) -> tuple[dict[str, float | None], int, int]:
    means: dict[str, float | None] = {}
    for name in _REVIEW_MEANS:
        values = [v for agg in aggs if (v := _number(agg.review.get(name))) is not None]
        means[name] = sum(values) / len(values) if values else None
    controls = [agg for agg in aggs if agg.review.get("review_clean_control") is True]
    passed = sum(1 for agg in controls if agg.review.get("review_clean_pass") is True)
    return means, passed, len(controls)


def _arm_totals(
    arm: str, kinds: set[str], builder: ModelBuilder, summary: RowSummary, health: ArmHealth
) -> ArmTotals:
    of_arm = summary.by_arm[arm]
    cells = [cell for key in builder.cells if key[1] == arm for cell in builder.cells.in_row_order(key)]
    costs = [float(cell.cost_usd) for cell in cells if cell.cost_usd is not None]
    walls = [cell.cell_wall_s for cell in cells]
    known_walls = [wall for wall in walls if wall is not None]
    aggs = [agg for (_, name), agg in summary.table.items() if name == arm]
    kind = "review" if kinds == {"review"} else "implementation" if kinds == {"implementation"} else "mixed"
    means, passed, controls = _review(aggs) if kind == "review" else ({}, 0, 0)
    valid = of_arm.valid_runs
    return ArmTotals(
        arm=arm,
        kind=kind,
        tasks=len(aggs),
        runs=of_arm.runs,
        valid_runs=valid,
        resolved=of_arm.resolved_valid,
        wilson=wilson_interval(of_arm.resolved_valid, valid, CONFIDENCE) if valid else None,
        spend=sum(costs),
        spend_unknown=of_arm.runs - len(costs),
        cost_median=of_arm.cost_usd,
        wall_median=_median(known_walls),
        wall_total=sum(known_walls),
        wall_unknown=len(walls) - len(known_walls),
        error_kinds=dict(sorted(builder.errors.get(arm, Counter()).items())),
        health=health,
        review_means=means,
        clean_passed=passed,
        clean_total=controls,
    )


def _single(collector: ModelBuilder, name: str) -> str | None:
    values = list(collector.seen.get(name, {}))
    return None if not values else values[0] if len(values) == 1 else ", ".join(values)


def _manifest(inputs: ReportInputs, key: str) -> str | None:
    manifest = inputs.manifest or {}
    value: Any = manifest
    for part in key.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    if isinstance(value, Mapping):
        return ", ".join(f"{k} {v}" for k, v in value.items()) or None
    return None if value is None or value == "" else str(value)


def _arm_agents(collector: ModelBuilder) -> str | None:
    """``arm: agent version (model m); …`` in arm order, or None when no row names its agent."""
    parts = [
        f"`{arm}`: " + ", ".join(collector.arm_agents[arm])
        for arm in collector.arms
        if arm in collector.arm_agents
    ]
    return "; ".join(parts) or None


def _provenance(inputs: ReportInputs, collector: ModelBuilder) -> tuple[tuple[str, str | None], ...]:
    promotion = inputs.promotion or {}
    first, last = collector.first_recorded, collector.last_recorded
    when = None if first is None else first if first == last else f"{first} – {last}"
    model = inputs.benchmark_model or _single(collector, "benchmark_model") or _single(collector, "model")
    return (
        ("wfbench", _manifest(inputs, "wfbench_version") or __version__),
        ("agent", _manifest(inputs, "agent.name") or _manifest(inputs, "agent")),
        ("agent version", _manifest(inputs, "agent.version") or _manifest(inputs, "agent_version")),
        ("model", model),
        ("effort", inputs.effort or _single(collector, "effort")),
        ("sandbox", _manifest(inputs, "sandbox") or _single(collector, "sandbox_backend")),
        ("corpus digest", _manifest(inputs, "corpus_digest") or _manifest(inputs, "corpus.digest")),
        ("environment digests", _manifest(inputs, "environment_digests")),
        ("runtime digest", _single(collector, "runtime_digest")),
        ("agents by arm", _arm_agents(collector)),
        ("candidate overlay digest", promotion.get("candidate_overlay_digest")),
        ("measured on", when),
        ("promotion evidence generated", promotion.get("generated_at")),
        ("evidence expires", promotion.get("evidence_expires_at")),
        ("scripted provider", _provider_replies(inputs.provider_replies)),
    )


def _provider_replies(replies: Mapping[str, int] | None) -> str | None:
    """``31 requests, 2 answered by default (…)``: a typo'd ``when:`` rule shows here."""
    if replies is None:
        return None
    unmatched = replies.get("default", 0)
    text = f"{sum(replies.values())} requests, {unmatched} answered by `default`"
    if unmatched:
        text += " (no `when:` rule matched them: check the script's rules; `wfbench run --provider-log FILE`)"
    return text


def _order(tasks: Iterable[str], selected: tuple[str, ...] | None) -> tuple[str, ...]:
    present = list(tasks)
    if selected is None:
        return tuple(present)
    have = set(present)
    chosen = set(selected)
    return tuple([t for t in selected if t in have] + [t for t in present if t not in chosen])


def _run_status(inputs: ReportInputs) -> str | None:
    if inputs.status:
        return (
            "aborted"
            if "aborted" in inputs.status
            else "cancelled"
            if "cancel" in inputs.status
            else "partial"
        )
    status = (inputs.promotion or {}).get("run_status") or _manifest(inputs, "run_status")
    return status if isinstance(status, str) else None


def aggregates_only(summary: RowSummary) -> RowSummary:
    """``summary`` without the per-row samples of its groups: all :meth:`ModelBuilder.build` reads.

    Once the gate has judged, a report needs the aggregates, orders and per-arm totals only; the
    samples (run, resolution and value of every valid row, for the paired statistics) were a
    third of what one pass over a million rows left. Its ``admissible_runs`` are empty.
    """
    return RowSummary(
        table=summary.table,
        tasks=summary.tasks,
        arms=summary.arms,
        by_arm=summary.by_arm,
        diagnostics=summary.diagnostics,
    )


def build_model(rows: Iterable[Row], inputs: ReportInputs | None = None) -> SweepModel:
    """The model of the sweep whose rows are ``rows`` (consumed once, never held)."""
    builder, summary = ModelBuilder(), SummaryBuilder()
    for row in rows:
        builder.add(row)
        summary.add(row)
    return builder.build(summary.build(), inputs)
