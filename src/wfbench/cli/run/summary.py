"""The end of ``wfbench run``: a short summary a person reads first.

The decision per candidate arm, what the sweep directory has cost so far (the rows of
``results.jsonl`` and of ``results.cancelled.jsonl``: a cancelled cell's finished sessions were paid
for) and what this run's model traffic cost metered at the wire (sessions cut short included),
and where to look: ``report.html`` and, when installed, the ``wfbench view`` command. The demo
ends with what ``wfbench plan`` asks of the next sweep, this one taken as its pilot.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

CANCELLED_NAME = "results.cancelled.jsonl"
#: The effect the demo's closing ``plan`` line sizes a sweep for: a smaller saving than its candidate's.
DEMO_PLAN_EFFECT = "10%"


def directory_spend(out_dir: str) -> Any:
    """The :class:`~wfbench.app.sweep.spend.Spend` of every row the sweep directory holds.

    Set-aside rows too.
    """
    from wfbench.adapters.store.jsonl_store import JsonlResultStore
    from wfbench.app.sweep.spend import spend_of

    rows: list[Any] = []
    for name in ("results.jsonl", CANCELLED_NAME):
        path = os.path.join(out_dir, name)
        if os.path.isfile(path):
            rows += JsonlResultStore(path).rows()
    return spend_of(rows)


def summary_lines(out_dir: str, result: Any) -> list[str]:
    """The summary of a finished (or stopped) sweep."""
    lines = ["", "summary:"]
    if result.cancelled and not result.tripped:
        lines.append(f"  cancelled after {result.completed}/{result.planned} cells; nothing was decided")
    elif result.tripped:
        lines.append("  stopped by the outage breaker: partial evidence, nothing can promote")
    else:
        if result.budget_stopped:
            lines.append("  stopped by --max-cost: cells were held back; partial evidence cannot promote")
        if result.decisions:
            lines += [f"  {candidate}: {decision}" for candidate, decision in result.decisions]
        else:
            lines.append("  no candidate arm ran: nothing to decide")
    lines.append(f"  spent: {directory_spend(out_dir).text()}{_metered_text(result.metered)}")
    html = os.path.join(out_dir, "report.html")
    if os.path.isfile(html):
        viewer = importlib.util.find_spec("wfbench.cli.commands.view")
        view = f"  (or: wfbench view {out_dir})" if viewer else ""
        lines.append(f"  report: {html}{view}")
    return lines


def plan_lines(out_dir: str, effect: str = DEMO_PLAN_EFFECT) -> list[str]:
    """What ``wfbench plan OUT_DIR --effect EFFECT`` recommends per candidate pair (none: no lines)."""
    from wfbench.adapters.store.jsonl_store import JsonlResultStore
    from wfbench.cli.commands.plan import recommendation_text
    from wfbench.domain.errors import InputError
    from wfbench.domain.promotion.planning import PlanRequest, parse_effect, plan_pairs
    from wfbench.domain.promotion.policy import CANDIDATE_ARMS

    path = os.path.join(out_dir, "results.jsonl")
    if not os.path.isfile(path):
        return []
    request = PlanRequest(pairs=CANDIDATE_ARMS, targets=(parse_effect(effect),))
    try:
        plans = plan_pairs(JsonlResultStore(path).rows(), request)
    except InputError:  # no candidate pair ran
        return []
    lines = [f"  plan (wfbench plan {out_dir} --effect {effect}; this sweep as the pilot):"]
    for pair in plans:
        ((target, plan),) = pair.plans
        lines.append(f"    {pair.candidate}: {recommendation_text(target, plan)}")
    return lines


def _metered_text(metered: Any) -> str:
    """``; metered at the wire this run: $0.1234 of $5.0000`` (empty without a meter)."""
    if metered is None:
        return ""
    if getattr(metered, "spent_usd", 0) is None:  # the meter ran but had no price for the model
        return "; not priced at the wire this run (no price for the model): the spend is the agents' own"
    return f"; metered at the wire this run: {metered.describe()}"


def summary_event(out_dir: str, result: Any) -> dict[str, Any]:
    """The summary as one ``--json`` event."""
    from wfbench.app.sweep.budget import spend_fields

    spend = directory_spend(out_dir)
    html = os.path.join(out_dir, "report.html")
    return {
        "event": "summary",
        "exit_code": result.exit_code,
        "cancelled": result.cancelled,
        "tripped": result.tripped,
        "planned": result.planned,
        "completed": result.completed,
        "decisions": [{"candidate_arm": c, "decision": d} for c, d in result.decisions],
        "spent_usd": spend.usd,
        "cells_without_cost": spend.unmeasured,
        "cells_measured_in_part": spend.partial,
        "budget_stopped": result.budget_stopped,
        **spend_fields(result.metered),
        "report_html": html if os.path.isfile(html) else None,
        "out_dir": out_dir,
    }
