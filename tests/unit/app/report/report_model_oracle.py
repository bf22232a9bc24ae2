"""The report model as it was built before it streamed (rows held per group): a test oracle.

``wfbench.app.report.model`` now builds the same :class:`SweepModel` from one pass that keeps no
row (:class:`ModelBuilder` over the gate's summary); the property tests compare the two.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from typing import Any

from wfbench import __version__
from wfbench.app.report.model import (
    CONFIDENCE,
    REPORT_DIAGNOSTICS,
    ArmTotals,
    CellRef,
    ReportInputs,
    SweepModel,
    _manifest,
    _order,
    _provider_replies,
    _run_status,
)
from wfbench.app.report.verdicts import detectability_sentences, verdicts_of
from wfbench.domain.results.aggregation import Aggregate, AggregateTable
from wfbench.domain.results.health import classify_health
from wfbench.domain.results.rows import ErrorKind, Row
from wfbench.domain.statistics.distributions import wilson_interval

_REVIEW_MEANS = ("review_weighted_f1", "review_precision", "review_recall", "review_blocker_recall")


def _number(value: Any) -> float | None:
    return None if isinstance(value, bool) or not isinstance(value, int | float) else float(value)


class _Collector:
    """The one pass: rows grouped by (task, arm), cell refs and the provenance they carry."""

    def __init__(self) -> None:
        self.groups: dict[tuple[str, str], list[Row]] = {}
        self.cells: dict[tuple[str, str], list[CellRef]] = {}
        self.tasks: dict[str, None] = {}
        self.arms: dict[str, None] = {}
        self.task_kinds: dict[str, str] = {}
        self.arm_kinds: dict[str, set[str]] = {}
        self.seen: dict[str, dict[str, None]] = {}
        #: arm → "agent `version` (model `m`)" as its rows record them (an arm may name its agent).
        self.arm_agents: dict[str, dict[str, None]] = {}
        self.recorded: list[str] = []
        self.rows = self.uninvoked = self.missing = self.wire = 0
        self.diagnostics: list[tuple[str, str, int, tuple[str, ...], int]] = []

    def add(self, row: Row) -> None:
        key = (row.task, row.arm)
        self.rows += 1
        self.tasks.setdefault(row.task)
        self.arms.setdefault(row.arm)
        self.groups.setdefault(key, []).append(row)
        kind = row.extra.get("kind")
        if not isinstance(kind, str):
            kind = "review" if row.review_evidence_valid is not None or row.review else "implementation"
        self.task_kinds.setdefault(row.task, kind)
        self.arm_kinds.setdefault(row.arm, set()).add(kind)
        found = row.extra.get("evidence_diagnostics")
        if isinstance(found, list) and found:
            shown = tuple(str(item) for item in found[:REPORT_DIAGNOSTICS])
            self.diagnostics.append((row.task, row.arm, row.run, shown, len(found)))
        self.uninvoked += row.error_kind is ErrorKind.SKILL_NOT_INVOKED
        self.wire += row.extra.get("usage_source") == "wire"
        self.missing += row.transcript_missing
        self.cells.setdefault(key, []).append(
            CellRef(
                task=row.task,
                arm=row.arm,
                run=row.run,
                resolved=row.resolved,
                error_kind=None if row.effective_kind is None else row.effective_kind.value,
                excluded=row.excluded,
                reused=row.reused,
                cost_usd=row.cost_usd,
                cell_wall_s=_number(row.extra.get("cell_wall_s")),
                quality=_number(row.review.get("review_weighted_f1")),
            )
        )
        for name in ("benchmark_model", "model", "sandbox_backend", "effort", "runtime_digest"):
            value = row.extra.get(name)
            if isinstance(value, str) and value:
                self.seen.setdefault(name, {}).setdefault(value)
        agent = row.extra.get("agent")
        if isinstance(agent, str) and agent:
            version, model = row.extra.get("agent_version") or "version n/a", row.extra.get("model") or "n/a"
            self.arm_agents.setdefault(row.arm, {}).setdefault(f"{agent} `{version}` (model `{model}`)")
        recorded = row.extra.get("reused_from_recorded_at") or row.extra.get("recorded_at")
        if isinstance(recorded, str):
            self.recorded.append(recorded[:10])


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


def _arm_totals(arm: str, kinds: set[str], collector: _Collector, table: AggregateTable) -> ArmTotals:
    rows = [row for (_, name), group in collector.groups.items() if name == arm for row in group]
    valid = [row for row in rows if not row.excluded]
    costs = [row.cost_usd for row in rows if row.cost_usd is not None]
    valid_costs = [row.cost_usd for row in valid]
    walls = [c.cell_wall_s for key, refs in collector.cells.items() if key[1] == arm for c in refs]
    known_walls = [wall for wall in walls if wall is not None]
    resolved = sum(1 for row in valid if row.resolved)
    errors: dict[str, int] = {}
    for row in rows:
        if row.effective_kind is not None:
            errors[row.effective_kind.value] = errors.get(row.effective_kind.value, 0) + 1
    aggs = [agg for (_, name), agg in table.items() if name == arm]
    kind = "review" if kinds == {"review"} else "implementation" if kinds == {"implementation"} else "mixed"
    means, passed, controls = _review(aggs) if kind == "review" else ({}, 0, 0)
    return ArmTotals(
        arm=arm,
        kind=kind,
        tasks=len(aggs),
        runs=len(rows),
        valid_runs=len(valid),
        resolved=resolved,
        wilson=wilson_interval(resolved, len(valid), CONFIDENCE) if valid else None,
        spend=sum(costs),
        spend_unknown=len(rows) - len(costs),
        cost_median=None
        if any(c is None for c in valid_costs)
        else _median([c for c in valid_costs if c is not None]),
        wall_median=_median(known_walls),
        wall_total=sum(known_walls),
        wall_unknown=len(walls) - len(known_walls),
        error_kinds=dict(sorted(errors.items())),
        health=classify_health(rows, arm),
        review_means=means,
        clean_passed=passed,
        clean_total=controls,
    )


def _single(collector: _Collector, name: str) -> str | None:
    values = list(collector.seen.get(name, {}))
    return None if not values else values[0] if len(values) == 1 else ", ".join(values)


def _arm_agents(collector: _Collector) -> str | None:
    """``arm: agent version (model m); …`` in arm order, or None when no row names its agent."""
    parts = [
        f"`{arm}`: " + ", ".join(collector.arm_agents[arm])
        for arm in collector.arms
        if arm in collector.arm_agents
    ]
    return "; ".join(parts) or None


def _provenance(inputs: ReportInputs, collector: _Collector) -> tuple[tuple[str, str | None], ...]:
    promotion = inputs.promotion or {}
    dates = sorted(collector.recorded)
    when = None if not dates else dates[0] if dates[0] == dates[-1] else f"{dates[0]} – {dates[-1]}"
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


def naive_build_model(rows: Iterable[Row], inputs: ReportInputs | None = None) -> SweepModel:
    """The model of the sweep whose rows are ``rows`` (consumed once)."""
    inputs = inputs or ReportInputs()
    collector = _Collector()
    for row in rows:
        collector.add(row)
    table = AggregateTable(
        {key: Aggregate.from_rows(key[0], key[1], group) for key, group in sorted(collector.groups.items())}
    )
    arms = tuple(collector.arms)
    totals = {arm: _arm_totals(arm, collector.arm_kinds[arm], collector, table) for arm in arms}
    cells = {key: tuple(sorted(refs, key=lambda c: c.run)) for key, refs in collector.cells.items()}
    detect = inputs.detectability or detectability_sentences(inputs.promotion)
    return SweepModel(
        inputs=inputs,
        table=table,
        tasks=_order(collector.tasks, inputs.selected_tasks),
        arms=arms,
        task_kinds=collector.task_kinds,
        cells=cells,
        arm_totals=totals,
        verdicts=verdicts_of(inputs.promotion, detect),
        provenance=_provenance(inputs, collector),
        run_status=_run_status(inputs),
        rows=collector.rows,
        skill_not_invoked=collector.uninvoked,
        transcripts_missing=collector.missing,
        diagnostics=tuple(collector.diagnostics),
        wire_metered=collector.wire,
        arm_agent={arm: next(iter(agents)).split(" ", 1)[0] for arm, agents in collector.arm_agents.items()},
    )
