"""report.md's per-agent view: which agent, with which skill, resolves most per dollar.

Shown when the sweep's arms run on more than one agent (arms with ``agent:``, docs/agents.md).
One line per agent: its arms, how many of their runs resolved (a review: passed), what they spent
(wire-metered, priced), the dollars per resolved run, and the decision of each of its candidate
arms — gated against its own agent's incumbent, so a mixed sweep decides once per agent.
"""

from __future__ import annotations

from collections.abc import Iterator

from wfbench.app.report import fmt
from wfbench.app.report.model import SweepModel

HEADER = ("agent", "arms", "resolved", "spend", "$ per resolved run", "decisions")


def agents_section(model: SweepModel) -> list[str]:
    """``## Per agent`` and its table, or nothing when fewer than two agents ran."""
    agents = list(dict.fromkeys(model.arm_agent[arm] for arm in model.arms if arm in model.arm_agent))
    if len(agents) < 2:
        return []
    rows = [_agent_row(model, agent) for agent in agents]
    header = "| " + " | ".join(HEADER) + " |"
    rule = "| " + " | ".join("---" for _ in HEADER) + " |"
    return ["## Per agent", "", header, rule, *("| " + " | ".join(row) + " |" for row in rows), ""]


def _agent_row(model: SweepModel, agent: str) -> list[str]:
    arms = [a for a in model.arms if model.arm_agent.get(a) == agent]
    totals = [model.arm_totals[a] for a in arms]
    resolved, valid = sum(t.resolved for t in totals), sum(t.valid_runs for t in totals)
    spend = sum(t.spend for t in totals)
    unknown = any(t.spend_unknown for t in totals) or not any(t.runs for t in totals)
    per_resolved = None if unknown or not resolved else spend / resolved
    return [
        f"`{agent}`",
        ", ".join(f"`{a}`" for a in arms),
        fmt.ratio(resolved, valid),
        "n/a" if unknown else fmt.money(spend),
        fmt.money(per_resolved),
        "; ".join(_decisions(model, arms)) or "—",
    ]


def _decisions(model: SweepModel, arms: list[str]) -> Iterator[str]:
    for verdict in model.verdicts:
        if verdict.candidate in arms:
            yield f"`{verdict.candidate}` vs `{verdict.incumbent}`: **{verdict.decision.upper()}**"
