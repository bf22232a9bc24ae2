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

from wfbench.app.arms import Arm, Overlay
from wfbench.app.binding import BoundTask
from wfbench.app.corpus import Corpus
from wfbench.app.report_html import render_report_html
from wfbench.domain.aggregation import aggregate
from wfbench.domain.health import classify_sweep_health, unusable_arms
from wfbench.domain.promotion import evaluate_pair
from wfbench.domain.promotion_policy import DEFAULT_POLICY, PromotionPolicy
from wfbench.domain.rows import Row

EVIDENCE_DAYS = 90
PARTIAL_REASON = "sweep aborted; partial evidence cannot promote"


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
    overlay: Overlay | None = None
    overlay_digest: str | None = None
    policy: PromotionPolicy = DEFAULT_POLICY


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
    table = aggregate(data.rows)
    complete = not (data.tripped or data.cancelled)
    decisions = []
    policies: dict[str, Any] = {}
    for candidate, incumbent in candidate_pairs(data.arms):
        decision = evaluate_pair(
            table, candidate=candidate, incumbent=incumbent, model=data.model, policy=data.policy
        )
        mapping = decision.to_mapping()
        policies[candidate] = data.policy.for_gate(decision.gate)
        if not complete:
            mapping["decision"] = "insufficient_evidence"
            mapping["reasons"] = [*mapping["reasons"], PARTIAL_REASON]
        decisions.append(mapping)
    return {
        "schema_version": 6,
        "run_status": "complete" if complete else "aborted",
        "generated_at": data.now.isoformat(),
        "evidence_expires_at": (data.now + dt.timedelta(days=EVIDENCE_DAYS)).isoformat(),
        "benchmark_model": data.model,
        "proposer_model": None,
        "candidate_origin": "manual-initial-overlay",
        "candidate_overlay": None if data.overlay is None else data.overlay.root,
        "candidate_overlay_digest": data.overlay_digest,
        "required_candidate_arms": [c for c, _ in candidate_pairs(data.arms)],
        "selected_tasks": [task.binding() for task in data.tasks],
        "policy": policies,
        "decisions": decisions,
    }


def finish_sweep(data: FinishInput, *, note: Callable[[str], None]) -> tuple[str, ...]:
    """Write report.md, report.html and promotion.json (when candidates ran); the UNUSABLE arms."""
    promotion = promotion_evidence(data) if candidate_pairs(data.arms) else None
    write_reports(data.rows, data.out_dir, promotion=promotion, status=_status(data))
    if promotion is not None:
        _write_json(os.path.join(data.out_dir, "promotion.json"), promotion)
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
    return bad


def _status(data: FinishInput) -> str | None:
    if data.tripped:
        return "Sweep aborted: partial evidence; promotion is disabled."
    if data.cancelled:
        return "Sweep cancelled: partial evidence; promotion is disabled."
    return None


def write_reports(
    rows: Sequence[Row], out_dir: str, *, promotion: Mapping[str, Any] | None, status: str | None = None
) -> None:
    """report.md (C's renderer) and report.html, both from rows alone."""
    md = _report_md(rows, promotion=promotion, status=status)
    _write_text(os.path.join(out_dir, "report.md"), md)
    _write_text(
        os.path.join(out_dir, "report.html"), render_report_html(rows, promotion=promotion, status=status)
    )


def _write_text(path: str, text: str) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def _write_json(path: str, obj: Mapping[str, Any]) -> None:
    _write_text(path, json.dumps(obj, indent=2, sort_keys=False) + "\n")


def _report_md(rows: Sequence[Row], *, promotion: Mapping[str, Any] | None, status: str | None) -> str:
    """report.md from the report module when present, else a compact table (same data)."""
    try:
        from wfbench.app.report_md import render_report_md  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return _compact_md(rows, promotion=promotion, status=status)
    text: str = render_report_md(rows, promotion=promotion, status=status)
    return text


def _compact_md(rows: Sequence[Row], *, promotion: Mapping[str, Any] | None, status: str | None) -> str:
    table = aggregate(rows)
    lines = [
        "# wfbench report",
        "",
        "| task | arm | resolved | cost $ | wall s | errors |",
        "|---|---|---|---|---|---|",
    ]
    for (task, arm), agg in table.items():
        cost = "n/a" if agg.cost_usd is None else f"{agg.cost_usd:.4f}"
        wall = "n/a" if agg.duration_s is None else f"{agg.duration_s:.1f}"
        errors = ", ".join(f"{k}×{v}" for k, v in sorted(agg.error_kinds.items())) or "—"
        lines.append(f"| {task} | {arm} | {agg.resolved}/{agg.valid_runs} | {cost} | {wall} | {errors} |")
    for decision in (promotion or {}).get("decisions", []):
        lines += ["", f"**{decision['candidate_arm']}**: {decision['decision']}"]
        lines += [f"- {reason}" for reason in decision["reasons"]]
    if status:
        lines += ["", status]
    return "\n".join(lines) + "\n"
