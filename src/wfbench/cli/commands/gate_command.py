"""``wfbench gate`` and ``wfbench report`` declared to Typer: their options, help and epilogs.

The work is :mod:`.gate`'s, which imports no CLI framework: a plain ``wfbench gate`` command line
is answered by :mod:`.gate_front` without Typer, and everything else (``--help``, a usage error, an
option it does not fully understand) comes here. Both build the same :class:`.gate.GateRequest`
and call :func:`.gate.regate`; ``tests/cli/test_gate_front.py`` fails when they drift apart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from wfbench.cli.commands import gate as work
from wfbench.cli.exit_codes import DECISION, OK, USAGE, exit_codes_help
from wfbench.cli.options import gate as opt

GATE_EPILOG = (
    "\b\nExamples:\n"
    "  wfbench gate results/wfbench-20260101-120000            # print aggregates and decisions\n"
    "  wfbench gate results/wfbench-20260101-120000 --json     # the decisions as JSON\n"
    "  wfbench gate RESULTS --out regated.json     # write the whole evidence (existing file: --force)\n"
    "  wfbench gate RESULTS --json --tasks-out tasks.jsonl     # and each task's detail, one line each\n"
    "  wfbench gate RESULTS --fail-on keep_incumbent,insufficient_evidence   # CI: exit 3 unless promoted\n"
    "\n"
    + exit_codes_help(
        (
            (OK, "the decisions were printed (and written)"),
            (USAGE, "usage or input error: a torn or invalid results.jsonl line, a bad option"),
            (DECISION, "a decision named by --fail-on"),
        )
    )
)

REPORT_EPILOG = (
    "\b\nExamples:\n"
    "  wfbench report results/wfbench-20260101-120000   # rewrite report.md and report.html from the rows\n"
    "  wfbench report RESULTS --metric output_tokens --policy statistical\n"
    "\n"
    + exit_codes_help(
        (
            (OK, "report.md and report.html were written"),
            (USAGE, "usage or input error: a torn or invalid results.jsonl line, a bad option"),
        )
    )
)

AsJson = Annotated[
    bool,
    typer.Option("--json", help="Print the decisions as JSON (the evidence without its per-task detail)."),
]
OutFile = Annotated[
    Path | None,
    typer.Option(
        "--out",
        metavar="FILE",
        help="Also write the whole evidence (promotion.json) to FILE.",
        show_default=False,
    ),
]
TasksOutFile = Annotated[
    Path | None,
    typer.Option(
        "--tasks-out",
        metavar="FILE",
        help="Also write each task's evidence and paired samples to FILE, as JSON Lines.",
        show_default=False,
    ),
]
Force = Annotated[
    bool,
    typer.Option("--force", help="Let --out overwrite an existing file (the sweep's promotion.json too)."),
]


def gate(
    results: opt.Results,
    *,
    as_json: AsJson = False,
    out: OutFile = None,
    tasks_out: TasksOutFile = None,
    force: Force = False,
    fail_on: opt.FailOn = None,
    metric: opt.MetricOption = "cost_usd",
    min_runs: opt.MinRuns = 3,
    min_improvement: opt.MinImprovement = 5.0,
    max_task_regression: opt.MaxRegression = 20.0,
    pair: opt.Pairs = None,
    decision_policy: opt.DecisionPolicy = None,
) -> None:
    """Re-gate RESULTS: print the aggregates and a decision per candidate arm; write only with --out."""
    request = work.GateRequest(
        results=results,
        as_json=as_json,
        out=out,
        tasks_out=tasks_out,
        force=force,
        fail_on=fail_on,
        metric=metric,
        min_runs=min_runs,
        min_improvement=min_improvement,
        max_task_regression=max_task_regression,
        pair=pair,
        decision_policy=decision_policy,
    )
    raise typer.Exit(work.regate(request, echo=typer.echo))


def report(
    results: opt.Results,
    *,
    metric: opt.MetricOption = "cost_usd",
    min_runs: opt.MinRuns = 3,
    min_improvement: opt.MinImprovement = 5.0,
    max_task_regression: opt.MaxRegression = 20.0,
    pair: opt.Pairs = None,
    decision_policy: opt.DecisionPolicy = None,
) -> None:
    """Write report.md and report.html beside RESULTS: the decision first, then the evidence."""
    from wfbench.adapters.store.streamed_files import write_texts_atomic
    from wfbench.app.report.render import report_parts

    given = opt.parse_pairs(pair)
    source = work.results_path(results)
    chosen = work.decision_policy_of(source, decision_policy, command="report")
    policy = work.make_policy(metric, min_runs, min_improvement, max_task_regression, chosen)
    model = work.report_model(source, policy, given)
    target, html = source.parent / "report.md", source.parent / "report.html"
    markdown, page = report_parts(model)
    pages = work.write_report_pages(model, source.parent)
    write_texts_atomic([(target, markdown), (html, page)])
    typer.echo(f"wrote {target}")
    typer.echo(f"wrote {html}" + (f" and {pages} page(s) of its tasks, arms and cells" if pages else ""))


def register(app: typer.Typer) -> None:
    """Add ``gate`` and ``report`` to ``app``."""
    short = "Re-gate a results.jsonl: aggregates and decisions."
    app.command("gate", epilog=GATE_EPILOG, short_help=short)(gate)
    short = "Write report.md and report.html beside a results.jsonl."
    app.command("report", epilog=REPORT_EPILOG, short_help=short)(report)
