"""Use case: re-gate persisted rows — aggregates, one decision per candidate arm, the evidence.

This is what ``wfbench gate RESULTS`` runs, and what a sweep's finish step can run on its own
rows. It receives rows (or a :class:`~wfbench.domain.ports.ResultStore`) and the time; it never
builds an adapter. Rows with the reference harness's field names are re-gated as they are.

What the rows do not say is taken as unknown, never guessed: the benchmark model is the single
``benchmark_model`` (or ``model``) the paired rows agree on, else ``None`` (which the gates
refuse); bindings the rows carry (task digests, overlay digest) are recorded, the rest is null.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from wfbench.domain.ports import ResultStore
from wfbench.domain.promotion.evidence import EvidenceBindings, PromotionEvidence, RunStatus
from wfbench.domain.promotion.gates import Decision
from wfbench.domain.promotion.judging import PairSpec, judge_rows
from wfbench.domain.promotion.policy import (
    CANDIDATE_ARMS,
    DEFAULT_GATES,
    DEFAULT_POLICY,
    GateKind,
    PromotionPolicy,
)
from wfbench.domain.results.aggregation import AggregateTable
from wfbench.domain.results.rows import ErrorKind, Row

__all__ = ["GateResult", "derive_bindings", "regate", "regate_store", "resolve_model"]

#: Per-task row fields recorded as the task's binding when every row of the task agrees.
TASK_BINDING_FIELDS = (
    ("sha", "task_base_sha"),
    ("prompt_digest", "task_prompt_digest"),
    ("oracle_digest", "oracle_digest"),
    ("oracle_command_digest", "oracle_command_digest"),
    ("oracle_manifest_digest", "oracle_manifest_digest"),
    ("sandbox_dependency_content_digest", "sandbox_dependency_content_digest"),
    ("sandbox_dependency_manifest_digest", "sandbox_dependency_manifest_digest"),
)


@attrs.frozen
class GateResult:
    """Everything a re-gate produced: the aggregates, the decisions, and the evidence (if any)."""

    table: AggregateTable
    decisions: tuple[Decision, ...]
    #: ``None`` when no candidate arm has rows (nothing to promote, no promotion.json).
    evidence: PromotionEvidence | None
    model: str | None


def _agreed(values: Iterable[Any]) -> tuple[Any, ...]:
    """The distinct non-empty values, in first-seen order."""
    seen: dict[Any, None] = {}
    for value in values:
        if value not in (None, "") and isinstance(value, str | int | float):
            seen.setdefault(value, None)
    return tuple(seen)


def resolve_model(rows: Sequence[Row]) -> tuple[str | None, str | None]:
    """The benchmark model the rows agree on, and a problem when they name more than one."""
    models = _agreed(row.extra.get("benchmark_model") or row.extra.get("model") for row in rows)
    if len(models) == 1:
        return str(models[0]), None
    if len(models) > 1:
        return None, "rows disagree on the benchmark model (" + ", ".join(map(str, models)) + ")"
    return None, None


def derive_bindings(rows: Sequence[Row], *, model: str | None, candidates: Sequence[str]) -> EvidenceBindings:
    """What the rows themselves attest: model, proposer, effort, overlay digest, task digests."""

    def single(name: str, subset: Sequence[Row] = rows) -> Any:
        values = _agreed(row.extra.get(name) for row in subset)
        return values[0] if len(values) == 1 else None

    tasks: list[dict[str, Any]] = []
    for task in dict.fromkeys(row.task for row in rows):
        of_task = [row for row in rows if row.task == task]
        binding: dict[str, Any] = {"id": task}
        for key, field in TASK_BINDING_FIELDS:
            if (value := single(field, of_task)) is not None:
                binding[key] = value
        tasks.append(binding)
    candidate_rows = [row for row in rows if row.arm in candidates]
    plugin = {"version": single("ce_plugin_version"), "manifest_digest": single("ce_plugin_manifest_digest")}
    return EvidenceBindings(
        benchmark_model=model,
        proposer_model=single("proposer_model"),
        effort=single("effort"),
        candidate_overlay_digest=single("candidate_overlay_digest", candidate_rows),
        selected_tasks=tuple(tasks),
        ce_plugin=plugin if any(plugin.values()) else None,
    )


def _inferred_status(rows: Sequence[Row]) -> RunStatus:
    cancelled = any(row.error_kind is ErrorKind.CANCELLED for row in rows)
    return RunStatus.ABORTED if cancelled else RunStatus.COMPLETE


def regate(
    rows: Sequence[Row],
    *,
    now: dt.datetime,
    policy: PromotionPolicy = DEFAULT_POLICY,
    pairs: Mapping[str, str] = CANDIDATE_ARMS,
    gates: Mapping[str, GateKind] = DEFAULT_GATES,
    run_status: RunStatus | None = None,
    bindings: EvidenceBindings | None = None,
) -> GateResult:
    """Aggregate ``rows`` and judge every candidate arm of ``pairs`` that has rows.

    ``gates`` names the gate per candidate arm (others are inferred from the data);
    ``run_status`` defaults to ``aborted`` when a row was cancelled, else ``complete``;
    ``bindings`` default to what the rows attest (:func:`derive_bindings`).
    """
    present = {row.arm for row in rows}
    candidates = [arm for arm in pairs if arm in present]
    paired = [row for row in rows if row.arm in candidates or row.arm in {pairs[arm] for arm in candidates}]
    model, problem = resolve_model(paired)
    if bindings is not None:
        model = bindings.benchmark_model
    specs = [PairSpec(candidate, pairs[candidate], gates.get(candidate)) for candidate in candidates]
    table, judged = judge_rows(rows, specs, model=model, policy=policy)
    decisions = [
        attrs.evolve(decision, reasons=(problem, *decision.reasons))
        if problem is not None and bindings is None
        else decision
        for decision in judged
    ]
    evidence = None
    if decisions:
        evidence = PromotionEvidence.build(
            decisions,
            policy=policy,
            generated_at=now,
            run_status=run_status or _inferred_status(rows),
            bindings=bindings or derive_bindings(rows, model=model, candidates=candidates),
        )
        decisions = list(evidence.decisions)
    return GateResult(table=table, decisions=tuple(decisions), evidence=evidence, model=model)


def regate_store(store: ResultStore, *, now: dt.datetime, **options: Any) -> GateResult:
    """:func:`regate` over every row of ``store`` (raises what ``store.rows()`` raises)."""
    return regate(store.rows(), now=now, **options)
