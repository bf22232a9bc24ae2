"""The options of ``gate`` and ``report`` (some shared with ``run`` and ``plan``), declared once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from wfbench.cli.options.gate_values import (
    DECISIONS,
    Metric,
    Policy,
    failing_decisions,
    parse_fail_on,
    parse_pairs,
)

#: The option types, and the values they take (:mod:`.gate_values`, read without Typer too).
__all__ = [
    "DECISIONS",
    "DecisionPolicy",
    "FailOn",
    "MaxRegression",
    "Metric",
    "MetricOption",
    "MinImprovement",
    "MinRuns",
    "Pairs",
    "Policy",
    "Results",
    "failing_decisions",
    "parse_fail_on",
    "parse_pairs",
]


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
