"""The end of a sweep: aggregates → report.md + report.html → promotion.json → arm health.

Everything here is computed from the persisted rows, so ``wfbench report DIR`` regenerates the
same reports from ``results.jsonl`` alone.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from wfbench.app.corpus.arms import Arm, Overlay
from wfbench.app.corpus.binding import BoundTask
from wfbench.app.corpus.corpus import Corpus
from wfbench.app.gating.gating import gate_input, pair_model_of, pair_specs
from wfbench.app.report.cell_pages import DirectoryArtifacts, write_cell_pages
from wfbench.app.report.model import ReportInputs, build_model
from wfbench.app.report.render import render_model
from wfbench.app.sweep import concurrency
from wfbench.domain.metering.evidence import Spend
from wfbench.domain.ports import SweepDirectory
from wfbench.domain.promotion.evidence import EvidenceBindings, PromotionEvidence, RunStatus
from wfbench.domain.promotion.judging import judge_rows
from wfbench.domain.promotion.policy import DEFAULT_POLICY, PromotionPolicy
from wfbench.domain.results.health import classify_sweep_health, unusable_arms
from wfbench.domain.results.rows import Row


@attrs.frozen
class FinishInput:
    """What the finish step needs (all of it data)."""

    corpus: Corpus | None
    tasks: Sequence[BoundTask]
    arms: Sequence[Arm]
    rows: Sequence[Row]
    out_dir: str
    model: str | None
    tripped: bool
    cancelled: bool
    now: dt.datetime
    #: ``--max-cost`` was reached: cells were held back and later model requests refused.
    budget_stopped: bool = False
    #: The sweep's metered spend (None without a metered endpoint).
    spend: Spend | None = None
    overlay: Overlay | None = None
    overlay_digest: str | None = None
    policy: PromotionPolicy = DEFAULT_POLICY
    effort: str | None = None
    #: The incumbent bytes the candidate overlay replaces (``app.skill_bindings``; {}: unbound).
    target_base_digests: Mapping[str, str] = attrs.field(factory=dict)
    #: The model that proposed the overlay (``wfbench evolve``), None for a manual overlay.
    proposer_model: str | None = None
    #: The scripted provider's reply counts by source (``default``: no ``when:`` rule matched).
    provider_replies: Mapping[str, int] | None = None
    #: ``out_dir`` as a port: the reports and ``promotion.json`` are written through it.
    directory: SweepDirectory = attrs.field(kw_only=True)


def candidate_pairs(arms: Sequence[Arm]) -> list[tuple[str, str]]:
    """(candidate, incumbent) for every candidate arm present with its incumbent, in arm order."""
    names = {arm.name for arm in arms}
    return [(a.name, a.incumbent) for a in arms if a.incumbent is not None and a.incumbent in names]


def health_arms(arms: Sequence[Arm]) -> list[str]:
    """The arms whose health can fail a sweep: incumbents of candidates, and review arms."""
    incumbents = {a.incumbent for a in arms if a.incumbent}
    return [a.name for a in arms if not a.is_candidate and (a.name in incumbents or a.kind.value == "review")]


def promotion_evidence(data: FinishInput) -> dict[str, Any]:
    """``promotion.json``: one decision per candidate arm; an aborted sweep can never promote."""
    complete = not (data.tripped or data.cancelled or data.budget_stopped)
    attested = gate_input(data.rows).attested
    specs = pair_specs(attested, candidate_pairs(data.arms))
    own = {s.candidate: pair_model_of(attested, s.candidate, s.incumbent) for s in specs}
    # each pair with its own model (a Gemini pair is judged as gemini-2.5-pro, whatever --model says)
    pair_models = {
        name: None if pair is None and notes else pair or data.model for name, (pair, notes) in own.items()
    }
    _, judged = judge_rows(
        data.rows, specs, model=data.model, policy=sweep_policy(data), pair_models=pair_models
    )
    decisions = [attrs.evolve(d, reasons=(*own[d.candidate_arm][1], *d.reasons)) for d in judged]
    bindings = EvidenceBindings(
        benchmark_model=data.model,
        proposer_model=data.proposer_model,
        effort=data.effort,
        candidate_overlay=None if data.overlay is None else data.overlay.root,
        candidate_overlay_digest=data.overlay_digest,
        target_base_digests=dict(data.target_base_digests),
        selected_tasks=tuple(task.binding() for task in data.tasks),
        ce_plugin=next((a.plugin.to_mapping() for a in data.arms if a.plugin is not None), None),
    )
    evidence = PromotionEvidence.build(
        decisions,
        policy=sweep_policy(data),
        generated_at=data.now,
        run_status=RunStatus.COMPLETE if complete else RunStatus.ABORTED,
        bindings=bindings,
    )
    return evidence.to_mapping()


def sweep_policy(data: FinishInput) -> PromotionPolicy:
    """The sweep's policy, with the corpus's ``defaults.policy`` deciding which rule decides."""
    chosen = None if data.corpus is None else data.corpus.defaults.policy
    return data.policy if chosen is None else attrs.evolve(data.policy, decision_policy=chosen)


@attrs.frozen
class FinishOutcome:
    """What the finish step found: the UNUSABLE arms, and ``(candidate, decision)`` per candidate."""

    unusable: tuple[str, ...]
    decisions: tuple[tuple[str, str], ...]


def finish_sweep(data: FinishInput, *, note: Callable[[str], None]) -> FinishOutcome:
    """Write report.md, report.html and promotion.json (when candidates ran); what it found.

    After a cancellation (the user stopped the sweep) nothing is judged: the health of arms
    whose last cells were cut short, and decisions over partial evidence, would read like
    regressions. The terminal says "cancelled" and how to finish; the files still hold the partial
    evidence (``promotion.json`` with ``run_status: aborted``, which never promotes).
    """
    promotion = promotion_evidence(data) if candidate_pairs(data.arms) else None
    write_reports(data.rows, data.directory, promotion=promotion, context=report_context(data))
    if promotion is not None:
        _write_json(data.directory, "promotion.json", promotion)
    decisions = (
        ()
        if promotion is None
        else tuple((str(d["candidate_arm"]), str(d["decision"])) for d in promotion["decisions"])
    )
    _note_defaults(data.provider_replies, note)
    if data.cancelled and not data.tripped:
        note("[measurement-health] not assessed: the sweep was cancelled before it finished")
        for candidate, _ in decisions:
            note(f"[promotion] {candidate}: not decided — the sweep was cancelled; resume it to decide")
        note(f"Written to {data.out_dir}/")
        return FinishOutcome(unusable=(), decisions=decisions)
    health = classify_sweep_health(data.rows, health_arms(data.arms))
    for arm, verdict in sorted(health.items()):
        c = verdict.counters
        reason = f" reason={','.join(verdict.reasons)}" if verdict.reasons else ""
        note(
            f"[measurement-health] {arm}: {verdict.status.value} fresh_attempts={c.fresh_attempts}"
            f" admissible={c.admissible} execution_failures={c.execution_failures}"
            f" evidence_failures={c.evidence_failures}{reason}"
        )
    bad = unusable_arms(health)
    if bad:
        note(
            f"[measurement-health] {', '.join(bad)} produced no usable measurement this sweep — see"
            " error_detail in results.jsonl. Exiting non-zero rather than reporting a quiet no-promotion."
        )
    if promotion is not None:
        for decision in promotion["decisions"]:
            note(
                f"[promotion] {decision['candidate_arm']}: {decision['decision']} — "
                + "; ".join(decision["reasons"])
            )
    note(f"Written to {data.out_dir}/")
    return FinishOutcome(unusable=bad, decisions=decisions)


def _note_defaults(replies: Mapping[str, int] | None, note: Callable[..., None]) -> None:
    """Warn when the scripted provider answered with ``default`` (no ``when:`` rule matched)."""
    unmatched = (replies or {}).get("default", 0)
    if unmatched:
        total = sum((replies or {}).values())
        note(
            f"[provider] {unmatched} of {total} request(s) matched no `when:` rule and were answered by"
            " `default`: check the script's rules (run with --provider-log FILE to see which prompts;"
            " docs/provider-script.md)",
            "warning",
        )


def _status(data: FinishInput) -> str | None:
    if data.tripped:
        return "Sweep aborted: partial evidence; promotion is disabled."
    if data.cancelled:
        return "Sweep cancelled: partial evidence; promotion is disabled."
    if data.budget_stopped and data.spend is not None:
        return (
            f"Sweep stopped by --max-cost (metered spend {data.spend.describe()}): partial evidence;"
            " promotion is disabled."
        )
    return None


def report_context(data: FinishInput) -> ReportInputs:
    """What the reports show beyond the rows: model, effort, selected/skipped tasks, status, manifest."""
    selected = tuple(task.spec.id for task in data.tasks)
    skipped = () if data.corpus is None else tuple(t.id for t in data.corpus.tasks if t.id not in selected)
    return ReportInputs(
        title="wfbench workflow benchmark",
        benchmark_model=data.model,
        effort=data.effort,
        selected_tasks=selected,
        skipped_tasks=skipped,
        status=_status(data),
        manifest=_read_manifest(data.out_dir),
        concurrency=concurrency.report_lines(concurrency.read_history(data.out_dir)),
        provider_replies=data.provider_replies,
    )


def _read_manifest(out_dir: str) -> Mapping[str, Any] | None:
    """The sweep's ``manifest.json`` when it has a readable one (provenance for the report)."""
    try:
        with open(os.path.join(out_dir, "manifest.json"), encoding="utf-8") as handle:
            value = json.load(handle)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, Mapping) else None


def write_reports(
    rows: Sequence[Row],
    directory: SweepDirectory,
    *,
    promotion: Mapping[str, Any] | None,
    context: ReportInputs | None = None,
) -> None:
    """report.md and report.html, both from rows alone (plus the provenance in ``context``)."""
    inputs = attrs.evolve(context or ReportInputs(), promotion=promotion)
    model = build_model(rows, inputs)
    markdown, page = render_model(model)
    directory.write("report.md", markdown.encode("utf-8"))
    write_cell_pages(model, lambda: rows, source=DirectoryArtifacts(directory), write=directory.write)
    directory.write("report.html", page.encode("utf-8"))


def _write_json(directory: SweepDirectory, rel: str, obj: Mapping[str, Any]) -> None:
    text = json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    directory.write(rel, text.encode("utf-8"))
