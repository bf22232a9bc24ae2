"""The promotion gates: may a candidate arm replace its incumbent? (``docs/domain.md`` §6-§7).

Two gates return a :class:`Decision` — ``promote``, ``keep_incumbent`` or
``insufficient_evidence`` with the reasons, per-task details and the raw aggregates behind them:

- :func:`evaluate_candidate` for implementation arms: quality (per-task resolution) first,
  then spend on the policy's metric;
- :func:`evaluate_review_candidate` for review arms: weighted F1, blocker recall, verdicts
  and clean controls.

Both follow the reference's rules and reason strings. Where wfbench deliberately differs
(``docs/domain.md`` §10): aggregation keeps skill-not-invoked rows
out of quality medians, so on every gated task the gate also requires both arms to have the
same number of *scored* runs (``Aggregate.scored_runs``), and at least ``min_runs`` of them.
A shortfall can never let the candidate be promoted: it yields ``insufficient_evidence``,
unless a measured regression already keeps the incumbent (a regression is evidence enough).
"""

from __future__ import annotations

from collections.abc import Iterable

from wfbench.domain.promotion.decision import Decision, DecisionKind, ImplementationTask, ReviewTask
from wfbench.domain.promotion.implementation_gate import evaluate_candidate
from wfbench.domain.promotion.policy import DEFAULT_POLICY, GateKind, PromotionPolicy
from wfbench.domain.promotion.review_gate import evaluate_review_candidate
from wfbench.domain.results.aggregation import AggregateTable

__all__ = [
    "Decision",
    "DecisionKind",
    "ImplementationTask",
    "ReviewTask",
    "evaluate_candidate",
    "evaluate_pair",
    "evaluate_review_candidate",
    "infer_gate",
]


def infer_gate(table: AggregateTable, *, candidate: str, incumbent: str) -> GateKind:
    """REVIEW when either arm's aggregates carry review metrics, else IMPLEMENTATION."""
    for (_, arm), agg in table.items():
        if arm in (candidate, incumbent) and agg.review:
            return GateKind.REVIEW
    return GateKind.IMPLEMENTATION


def evaluate_pair(
    table: AggregateTable,
    *,
    candidate: str,
    incumbent: str,
    model: str | None,
    policy: PromotionPolicy = DEFAULT_POLICY,
    gate: GateKind | None = None,
    tasks: Iterable[str] | None = None,
) -> Decision:
    """Run the gate that fits the pair (``gate``, else :func:`infer_gate`)."""
    kind = gate if gate is not None else infer_gate(table, candidate=candidate, incumbent=incumbent)
    evaluate = evaluate_review_candidate if kind is GateKind.REVIEW else evaluate_candidate
    return evaluate(table, candidate=candidate, incumbent=incumbent, model=model, policy=policy, tasks=tasks)
