"""The options of ``gate`` and ``report`` (some shared with ``run`` and ``plan``), declared once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from wfbench.domain.errors import InputError

#: The promotion metrics (``wfbench.domain.promotion.policy.PROMOTION_METRICS``; pinned equal by a test).
Metric = Literal["cost_usd", "output_tokens", "duration_s", "num_turns"]
#: The decision policies (``wfbench.domain.promotion.policy.DecisionPolicy``; pinned equal by a test).
Policy = Literal["reference", "statistical"]
#: The decisions ``--fail-on`` may name (``DecisionKind``; pinned equal by a test).
DECISIONS = ("promote", "keep_incumbent", "insufficient_evidence")

Results = Annotated[
    Path, typer.Argument(metavar="RESULTS", help="A results.jsonl, or a directory holding one.")
]
MetricOption = Annotated[
    Metric,
    typer.Option("--metric", help="Implementation metric the spend gate compares."),
]
MinRuns = Annotated[
    int, typer.Option("--min-runs", metavar="N", help="Valid (and scored) runs required per arm and task.")
]
MinImprovement = Annotated[
    float,
    typer.Option(
        "--min-improvement", metavar="PCT", help="Median improvement (%) needed to promote on spend."
    ),
]
MaxRegression = Annotated[
    float,
    typer.Option(
        "--max-task-regression", metavar="PCT", help="Largest tolerated per-task spend regression (%)."
    ),
]
DecisionPolicy = Annotated[
    Policy | None,
    typer.Option(
        "--policy",
        help="Which rule decides: statistical (paired per-task intervals, non-inferiority, Holm"
        " across candidates) or the reference's thresholds. Default: the rule the sweep's"
        " promotion.json was decided by, else statistical. Both decisions are recorded.",
        show_default=False,
    ),
]
Pairs = Annotated[
    list[str] | None,
    typer.Option(
        "--pair",
        metavar="CANDIDATE=INCUMBENT",
        help="Repeatable; replaces the default pairing (the pairs the sweep's promotion.json"
        " judged, then the presets' candidate_workflow=workflow, candidate_review=review).",
        show_default=False,
    ),
]
FailOn = Annotated[
    str | None,
    typer.Option(
        "--fail-on",
        metavar="DECISION[,DECISION]",
        help="Exit 3 when a decision is one of these (" + ", ".join(DECISIONS) + "); no candidate at all"
        " counts as insufficient_evidence.",
        show_default=False,
    ),
]


def parse_fail_on(value: str | None) -> frozenset[str]:
    """``--fail-on keep_incumbent,insufficient_evidence`` as a set of decision names.

    Raises:
        InputError: an unknown decision name (naming the option and the choices).
    """
    names = frozenset(part for part in (value or "").replace(",", " ").split())
    unknown = sorted(names - set(DECISIONS))
    if unknown:
        raise InputError(
            f"unknown decision {unknown[0]!r} (choose from {', '.join(DECISIONS)})", field="--fail-on"
        )
    return names


def failing_decisions(decisions: list[str], fail_on: frozenset[str]) -> list[str]:
    """The decisions ``--fail-on`` names; with no decision at all, ``insufficient_evidence`` stands in."""
    judged = decisions or ["insufficient_evidence"]
    return [kind for kind in judged if kind in fail_on]


def parse_pairs(specs: list[str] | None) -> dict[str, str] | None:
    """``["cand=inc", ...]`` as a pairing map; ``None`` when no ``--pair`` was given."""
    if not specs:
        return None
    pairs: dict[str, str] = {}
    for spec in specs:
        candidate, sep, incumbent = spec.partition("=")
        if not sep or not candidate or not incumbent or candidate == incumbent:
            raise InputError(f"expected CANDIDATE=INCUMBENT, got {spec!r}", field="--pair")
        pairs[candidate] = incumbent
    return pairs
