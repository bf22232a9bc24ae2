"""Decisions across agents and models: a candidate may differ from its incumbent on purpose, and says so.

A candidate arm that runs another agent or another model than its incumbent (a runtime or a
model migration: Claude Code → Codex, ``claude-sonnet-4-5`` → ``gpt-5.5``) declares it
(``migrates: [agent, model]`` in the corpus, recorded in each of its rows as ``migrates``,
``docs/arms.md``). The gate then decides across the declared difference, on the policy's metric
(``cost_usd`` by default: every agent's cost is its wire usage at its model's prices), with the
incumbent's model as the decision's benchmark model. A difference the candidate did not declare
is refused: the pair gets no model, so the gate can only answer ``insufficient_evidence``, with
the reason naming the difference and the declaration that would allow it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import attrs

__all__ = ["DIMENSIONS", "PairRuntimes", "declared", "disagreement", "pair_model"]

#: What a candidate may migrate.
DIMENSIONS = ("agent", "model")


def declared(value: object) -> frozenset[str]:
    """The dimensions a row's ``migrates`` field declares (``"agent,model"``); unknown words are ignored."""
    if not isinstance(value, str):
        return frozenset()
    return frozenset(part.strip() for part in value.split(",")) & frozenset(DIMENSIONS)


@attrs.frozen
class PairRuntimes:
    """What the rows of a pair's two arms attest: their agents, models, and the candidate's declaration."""

    incumbent_models: Sequence[str]
    candidate_models: Sequence[str]
    incumbent_agents: Sequence[str] = ()
    candidate_agents: Sequence[str] = ()
    migrates: frozenset[str] = frozenset()
    #: Every model of the pair's rows, first seen first (default: the incumbent's, then the candidate's).
    models_seen: Sequence[str] = ()

    def seen(self) -> tuple[str, ...]:
        """The pair's models in the order to name them."""
        ordered = self.models_seen or (*self.incumbent_models, *self.candidate_models)
        return tuple(dict.fromkeys(ordered))


def disagreement(models: Sequence[str]) -> str:
    """The reason a pair whose rows name more than one model gets (the reference's wording)."""
    return "rows disagree on the benchmark model (" + ", ".join(models) + ")"


def pair_model(candidate: str, incumbent: str, runtimes: PairRuntimes) -> tuple[str | None, tuple[str, ...]]:
    """The benchmark model to judge the pair with (``None``: refuse to decide) and the reasons to add.

    Each arm must agree on one model; a difference in agent or model must be declared. A declared
    migration is judged with the incumbent's model and says so in its reasons.
    """
    if len(runtimes.incumbent_models) > 1 or len(runtimes.candidate_models) > 1:
        return None, (disagreement(runtimes.seen()),)
    differences = [
        (dimension, inc[0], cand[0])
        for dimension, inc, cand in (
            ("agent", runtimes.incumbent_agents, runtimes.candidate_agents),
            ("model", runtimes.incumbent_models, runtimes.candidate_models),
        )
        if len(inc) == 1 and len(cand) == 1 and inc[0] != cand[0]
    ]
    model = _first(runtimes.incumbent_models) or _first(runtimes.candidate_models)
    undeclared = [d for d in differences if d[0] not in runtimes.migrates]
    if undeclared:
        first = (disagreement(runtimes.seen()),) if any(d[0] == "model" for d in undeclared) else ()
        return None, first + tuple(
            f"{candidate} runs {dimension} {cand}, its incumbent {incumbent} {dimension} {inc}: an"
            f" undeclared {dimension} change cannot be decided (declare `migrates: [{dimension}]` on"
            f" the arm to decide across it)"
            for dimension, inc, cand in undeclared
        )
    notes = tuple(
        f"declared {dimension} migration: {inc} → {cand} (decided on the policy's metric)"
        for dimension, inc, cand in differences
    )
    return model, notes


def _first(values: Iterable[str]) -> str | None:
    return next(iter(values), None)
