"""``wfbench gate RESULTS`` and ``wfbench report RESULTS``: the file-level commands over the gate.

RESULTS is a ``results.jsonl`` or a directory holding one. ``gate`` recomputes the aggregates
and a decision for every candidate arm present and prints them (``--json``: the promotion
evidence as JSON). It writes nothing unless asked: ``--out FILE`` writes the evidence there,
atomically, and refuses an existing file (the sweep's own ``promotion.json`` included) unless
``--force``. The evidence keeps its original time: ``generated_at`` (and so the expiry) is the
sweep's ``promotion.json``'s when there is one, else the newest row's ``recorded_at``; a re-gate
never makes old evidence look fresh. ``--fail-on`` turns chosen decisions into exit code 3 for
CI. ``report`` writes ``report.md`` and ``report.html`` beside the results. A torn or invalid
line exits 2 naming the file, the line and the field, before anything is written.

``gate`` reads the file once, line by line, into the gate's one-pass input (never every row at
once: a million-row file is summarized as it streams). ``report`` still holds the rows (the
report model reads rows) and gates them from the same one-pass input.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from wfbench.cli.exit_codes import DECISION, OK, USAGE, exit_codes_help
from wfbench.cli.options import gate as opt
from wfbench.domain.errors import InputError

if TYPE_CHECKING:
    from wfbench.app.gating.gating import GateInput, GateResult
    from wfbench.app.report.model import SweepModel
    from wfbench.domain.promotion.decision import Decision
    from wfbench.domain.promotion.policy import PromotionPolicy

RESULTS_NAME = "results.jsonl"
EVIDENCE_NAME = "promotion.json"
GATE_EPILOG = (
    "\b\nExamples:\n"
    "  wfbench gate results/wfbench-20260101-120000            # print aggregates and decisions\n"
    "  wfbench gate results/wfbench-20260101-120000 --json     # the promotion evidence as JSON\n"
    "  wfbench gate RESULTS --out regated.json     # also write it (an existing file needs --force)\n"
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


def results_path(target: Path) -> Path:
    """The results file named by ``target`` (the file itself, or ``DIR/results.jsonl``).

    Raises:
        InputError: nothing readable there.
    """
    if target.is_dir():
        candidate = target / RESULTS_NAME
        if not candidate.is_file():
            raise InputError(f"no {RESULTS_NAME} in this directory", source=str(target))
        return candidate
    if not target.is_file():
        raise InputError("no such results file or directory", source=str(target))
    return target


def _fmt(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def _statistics_lines(decision: Decision) -> list[str]:
    """The pair's effects with their intervals (``docs/statistics.md``)."""
    from wfbench.domain.statistics.view import effect_line

    stats = decision.statistics
    if stats is None:
        return []
    confidence = stats.config.confidence
    return [f"  = {effect_line(s, confidence).text()}" for s in (stats.resolution, stats.metric)]


def render_gate_text(result: GateResult, *, source: Path, written: Path | None) -> str:
    """The human summary: one line per (task, arm) aggregate, then each decision and its reasons."""
    lines = [
        f"results: {source}",
        "",
        "aggregates (task, arm: resolved/valid, scored, cost $, wall s, errors):",
    ]
    for (task, arm), agg in result.table.items():
        errors = ", ".join(f"{kind}×{n}" for kind, n in sorted(agg.error_kinds.items())) or "—"
        excluded = f" ({agg.excluded_runs} excluded)" if agg.excluded_runs else ""
        lines.append(
            f"  {task}  {arm}: {agg.resolved}/{agg.valid_runs}{excluded}, scored {agg.scored_runs}, "
            f"cost {_fmt(agg.cost_usd, '.4f')}, wall {_fmt(agg.duration_s, '.0f')}, {errors}"
        )
    lines.append("")
    if not result.decisions:
        lines.append("decisions: no candidate arm has rows; nothing to gate")
    for decision in result.decisions:
        lines.append(
            f"decision: {decision.candidate_arm} vs {decision.incumbent_arm} "
            f"({decision.gate.value}, {decision.metric}): {decision.kind.value.upper()}"
        )
        lines += [f"  - {reason}" for reason in decision.reasons]
        lines += [
            f"  ({verdict.policy.value} policy: {verdict.kind.value})"
            for verdict in decision.verdicts
            if verdict.policy is not decision.policy
        ]
        lines += _statistics_lines(decision)
    if written is not None:
        lines += ["", f"wrote {written}"]
    return "\n".join(lines)


def _policy(
    metric: str, min_runs: int, min_improvement: float, max_regression: float, decision: str = "statistical"
) -> PromotionPolicy:
    from wfbench.domain.promotion.policy import PromotionPolicy

    try:
        return PromotionPolicy(
            metric=metric,
            min_runs=min_runs,
            min_improvement_pct=min_improvement,
            max_task_regression_pct=max_regression,
            decision_policy=decision,  # the converter validates it
        )
    except InputError as exc:
        name = "policy" if exc.field == "decision_policy" else exc.field.replace("_", "-")
        raise InputError(exc.reason, field=f"--{name}") from None


def _stream(target: Path) -> tuple[Path, GateInput]:
    """The results file of ``target``, read once, line by line, into the gate's input."""
    from wfbench.adapters.store.jsonl_store import JsonlResultStore
    from wfbench.app.gating.gating import gate_input

    source = results_path(target)
    return source, gate_input(JsonlResultStore(source).iter_rows())


def _gate(read: GateInput, source: Path, policy: PromotionPolicy, given: dict[str, str] | None) -> GateResult:
    """The gate use case over ``read``, with the facts of the sweep beside ``source``."""
    from wfbench.app.gating.sweep_facts import gate_sweep
    from wfbench.cli import bootstrap as boot

    directory = boot.sweep_directory(str(source.parent))
    return gate_sweep(read, policy=policy, pairs=given, directory=directory, clock=boot.system_clock())


def _decision_policy(source: Path, given: str | None, *, command: str) -> str:
    """The rule that decides: ``--policy``, else the one the sweep's promotion.json records, else
    statistical (:func:`~wfbench.app.gating.sweep_facts.decision_policy_for`)."""
    from wfbench.app.gating.sweep_facts import decision_policy_for, read_sweep_facts
    from wfbench.cli import bootstrap as boot

    facts = read_sweep_facts(boot.sweep_directory(str(source.parent)))
    return decision_policy_for(facts, given, command=command, source=str(source))


def _report_model(source: Path, policy: PromotionPolicy, given: dict[str, str] | None) -> SweepModel:
    """The report's model of ``source``: one pass over its rows, the gate, then the model.

    What only the gate needs is dropped as soon as it has judged (the per-row samples of every
    group, the attested bindings, the decisions' statistics objects), before the evidence mapping
    and the model are made; the rest of what is not the model goes when this returns.
    """
    from wfbench.adapters.store.jsonl_store import JsonlResultStore
    from wfbench.adapters.store.sweep_dir import SweepDirectory
    from wfbench.app.report.model import ReportInputs, aggregates_only
    from wfbench.app.report.render import read_for_report
    from wfbench.app.report.verdicts import detectability_of
    from wfbench.app.sweep import concurrency

    read, builder = read_for_report(JsonlResultStore(source).iter_rows())
    result = _gate(read, source, policy, given)
    summary, evidence, decisions = aggregates_only(read.summary), result.evidence, result.decisions
    del read, result  # the per-row samples the statistics read (a third of the pass at 1M rows)
    promotion = None if evidence is None else evidence.to_mapping()
    del evidence
    manifest, _ = SweepDirectory(str(source.parent)).json_file("manifest.json")
    inputs = ReportInputs(
        title="wfbench workflow benchmark",
        promotion=promotion,
        detectability=detectability_of(decisions, promotion),
        manifest=manifest if isinstance(manifest, dict) else None,
        concurrency=concurrency.report_lines(concurrency.read_history(str(source.parent))),
    )
    del decisions
    return builder.build(summary, inputs)


def _target(out: Path | None, *, force: bool, source: Path) -> Path | None:
    """Where ``--out`` writes; an existing file (above all the sweep's evidence) needs ``--force``."""
    if out is None:
        return None
    if out.is_dir():
        raise InputError("is a directory; name the file to write", field="--out", source=str(out))
    if out.exists() and not force:
        own = out.resolve() == (source.parent / EVIDENCE_NAME).resolve()
        what = "is the sweep's own evidence" if own else "already exists"
        raise InputError(f"{what}; refusing to overwrite it without --force", field="--out", source=str(out))
    if not out.parent.is_dir():
        raise InputError("its directory does not exist", field="--out", source=str(out))
    return out


AsJson = Annotated[bool, typer.Option("--json", help="Print the promotion evidence as JSON.")]
OutFile = Annotated[
    Path | None,
    typer.Option("--out", metavar="FILE", help="Also write the evidence to FILE.", show_default=False),
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
    given = opt.parse_pairs(pair)
    failing_on = opt.parse_fail_on(fail_on)
    source, read = _stream(results)
    chosen = _decision_policy(source, decision_policy, command="gate")
    policy = _policy(metric, min_runs, min_improvement, max_task_regression, chosen)
    target = _target(out, force=force, source=source)
    result = _gate(read, source, policy, given)
    evidence: dict[str, Any] | None = None
    if result.evidence is not None and (as_json or target is not None):
        evidence = result.evidence.to_mapping()  # only to write or print it: large at 40,000 tasks
    written = _write_evidence(evidence, target)
    _show(result, evidence, as_json=as_json, source=source, target=target, written=written)
    failing = opt.failing_decisions([d.kind.value for d in result.decisions], failing_on)
    if failing:
        typer.echo(f"wfbench: --fail-on {','.join(sorted(failing_on))}: {', '.join(failing)}", err=True)
    raise typer.Exit(DECISION if failing else OK)


def _write_evidence(evidence: dict[str, Any] | None, target: Path | None) -> Path | None:
    """``--out``: the evidence written there atomically; ``None`` when nothing was written."""
    if evidence is None or target is None:
        return None
    from wfbench.adapters.store.jsonl_store import write_json_atomic

    write_json_atomic(target, evidence)
    return target


def _show(
    result: GateResult,
    evidence: dict[str, Any] | None,
    *,
    as_json: bool,
    source: Path,
    target: Path | None,
    written: Path | None,
) -> None:
    """Print the evidence as JSON (``--json``), else the human summary."""
    if as_json:
        from wfbench.adapters.store.json_indent import dumps_indented

        empty = {"decisions": [], "reason": "no candidate arm has rows; nothing to gate"}
        typer.echo(dumps_indented(evidence if evidence is not None else empty))
        return
    typer.echo(render_gate_text(result, source=source, written=written))
    if target is not None and written is None:
        typer.echo(f"\nnothing written to {target}: no decision")


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
    source = results_path(results)
    chosen = _decision_policy(source, decision_policy, command="report")
    policy = _policy(metric, min_runs, min_improvement, max_task_regression, chosen)
    model = _report_model(source, policy, given)
    target, html = source.parent / "report.md", source.parent / "report.html"
    markdown, page = report_parts(model)
    pages = _write_cell_pages(model, source.parent)
    write_texts_atomic([(target, markdown), (html, page)])
    typer.echo(f"wrote {target}")
    typer.echo(f"wrote {html}" + (f" and {pages} page(s) of its tasks, arms and cells" if pages else ""))


def _write_cell_pages(model: SweepModel, directory: Path) -> int:
    """The task, arm and cell pages beside report.html, for its links (none for a large sweep)."""
    from wfbench.adapters.store.sweep_dir import StaticTree, SweepDirectory
    from wfbench.app.report.cell_pages import write_cell_pages

    sweep = SweepDirectory(str(directory))
    return write_cell_pages(model, sweep.rows, source=sweep, write=StaticTree(sweep.path).write)


def register(app: typer.Typer) -> None:
    """Add ``gate`` and ``report`` to ``app``."""
    short = "Re-gate a results.jsonl: aggregates and decisions."
    app.command("gate", epilog=GATE_EPILOG, short_help=short)(gate)
    short = "Write report.md and report.html beside a results.jsonl."
    app.command("report", epilog=REPORT_EPILOG, short_help=short)(report)
