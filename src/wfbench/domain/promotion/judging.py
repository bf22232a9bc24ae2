"""The sweep-level judgement: every candidate pair's decision, statistics and both policies' verdicts.

:func:`judge` is what a sweep, ``wfbench gate`` and apply-time validation run. For each
candidate → incumbent pair it runs the reference gate (:func:`evaluate_pair`), analyses the
pair's run-level samples (:func:`~wfbench.domain.statistics.analysis.analyze_pair`), and runs the
statistical policy over all implementation pairs together (Holm's correction needs them all).
Each :class:`Decision` carries both verdicts (``by_policy``) and its ``statistics``; its
``kind`` and ``reasons`` are those of the policy in force (``PromotionPolicy.decision_policy``).
Review pairs keep the reference's review gate under either policy (its rules — verdicts,
blocker recall, clean controls — have no statistical counterpart yet); their statistics are
reported all the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import attrs

from wfbench.domain.promotion.decision import Decision, PolicyVerdict
from wfbench.domain.promotion.gates import evaluate_pair, infer_gate
from wfbench.domain.promotion.policy import (
    DEFAULT_POLICY,
    REVIEW_METRIC,
    DecisionPolicy,
    GateKind,
    PromotionPolicy,
)
from wfbench.domain.promotion.statistical_gate import StatisticalCase, judge_statistically
from wfbench.domain.promotion.tampering import refuse_tampered
from wfbench.domain.results.aggregation import AggregateTable
from wfbench.domain.results.rows import Row
from wfbench.domain.results.summary import RowSummary, summarize
from wfbench.domain.statistics.analysis import analyze_pair
from wfbench.domain.statistics.samples import PairedSamples, summary_samples

__all__ = ["PairSpec", "judge", "judge_rows", "judge_summary", "pair_metric", "sample_problems"]


@attrs.frozen
class PairSpec:
    """A candidate arm, its incumbent, and the gate that judges it (``None``: infer from data)."""

    candidate: str
    incumbent: str
    gate: GateKind | None = None
    #: The statistical gate's Holm family (the incumbent's agent; ``None``: the sweep's one family).
    family: str | None = None


def pair_metric(gate: GateKind, policy: PromotionPolicy) -> str:
    """The metric a pair's statistics are computed on: the review metric, or the policy's."""
    return REVIEW_METRIC if gate is GateKind.REVIEW else policy.metric


def judge(
    table: AggregateTable,
    samples: Mapping[str, PairedSamples],
    pairs: Sequence[PairSpec],
    *,
    model: str | None,
    policy: PromotionPolicy = DEFAULT_POLICY,
    pair_models: Mapping[str, str | None] | None = None,
) -> tuple[Decision, ...]:
    """One decision per pair, in ``pairs`` order; ``samples`` maps each candidate to its samples.

    ``pair_models`` gives a candidate's pair its own benchmark model (``None``: refuse to decide,
    :mod:`wfbench.domain.promotion.migration`); the others are judged with ``model``.

    Raises:
        KeyError: a pair's candidate has no samples.
    """
    config = policy.analysis
    judged = []
    models = pair_models or {}
    for spec in pairs:
        gate = spec.gate or infer_gate(table, candidate=spec.candidate, incumbent=spec.incumbent)
        own = models.get(spec.candidate, model)
        reference = evaluate_pair(
            table, candidate=spec.candidate, incumbent=spec.incumbent, model=own, policy=policy, gate=gate
        )
        judged.append((spec, gate, reference, analyze_pair(samples[spec.candidate], config), own))
    cases = [
        StatisticalCase(table, stats, spec.candidate, spec.incumbent, own, family=spec.family)
        for spec, gate, _, stats, own in judged
        if gate is GateKind.IMPLEMENTATION
    ]
    statistical = judge_statistically(cases, policy)
    decisions = []
    for spec, _gate, reference, stats, _ in judged:
        ref = PolicyVerdict(DecisionPolicy.REFERENCE, reference.kind, reference.reasons)
        stat = statistical.get(spec.candidate, attrs.evolve(ref, policy=DecisionPolicy.STATISTICAL))
        chosen = stat if policy.decision_policy is DecisionPolicy.STATISTICAL else ref
        decisions.append(
            attrs.evolve(
                reference,
                kind=chosen.kind,
                reasons=chosen.reasons,
                policy=policy.decision_policy,
                statistics=stats,
                verdicts=(ref, stat),
                family=spec.family,
            )
        )
    return tuple(decisions)


def judge_rows(
    rows: Iterable[Row],
    pairs: Sequence[PairSpec],
    *,
    model: str | None,
    policy: PromotionPolicy = DEFAULT_POLICY,
    pair_models: Mapping[str, str | None] | None = None,
) -> tuple[AggregateTable, tuple[Decision, ...]]:
    """Aggregate ``rows`` (read once), build each pair's samples from them, and :func:`judge`."""
    summary = summarize(rows)
    return summary.table, judge_summary(summary, pairs, model=model, policy=policy, pair_models=pair_models)


def judge_summary(
    summary: RowSummary,
    pairs: Sequence[PairSpec],
    *,
    model: str | None,
    policy: PromotionPolicy = DEFAULT_POLICY,
    pair_models: Mapping[str, str | None] | None = None,
) -> tuple[Decision, ...]:
    """:func:`judge` over a one-pass :class:`RowSummary`: its table and each pair's samples; a
    candidate whose rows edited test infrastructure is refused (:func:`refuse_tampered`)."""
    table = summary.table
    specs = [
        attrs.evolve(
            spec, gate=spec.gate or infer_gate(table, candidate=spec.candidate, incumbent=spec.incumbent)
        )
        for spec in pairs
    ]
    samples = {
        spec.candidate: summary_samples(
            summary,
            candidate=spec.candidate,
            incumbent=spec.incumbent,
            metric=pair_metric(spec.gate or GateKind.IMPLEMENTATION, policy),
        )
        for spec in specs
    }
    judged = judge(table, samples, specs, model=model, policy=policy, pair_models=pair_models)
    return tuple(refuse_tampered(decision, summary.diagnostics) for decision in judged)


def sample_problems(samples: PairedSamples, table: AggregateTable) -> list[str]:
    """Where stored samples disagree with the stored aggregates (run counts, resolved counts,
    which tasks both arms ran); empty when they agree."""
    problems = []
    expected = sorted(
        task
        for task in table.tasks()
        if (inc := table.get(task, samples.incumbent)) is not None
        and (cand := table.get(task, samples.candidate)) is not None
        and inc.valid_runs > 0
        and cand.valid_runs > 0
    )
    if [pair.task for pair in samples.tasks] != expected:
        problems.append("its samples do not cover exactly the tasks both arms ran")
    for pair in samples.tasks:
        for arm, runs in ((samples.incumbent, pair.incumbent), (samples.candidate, pair.candidate)):
            agg = table.get(pair.task, arm)
            if agg is None or (agg.valid_runs, agg.resolved) != (runs.runs, sum(runs.resolved)):
                problems.append(f"task {pair.task}: {arm}'s samples disagree with its aggregate")
    return problems
