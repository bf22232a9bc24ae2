"""``wfbench gate RESULTS`` and ``wfbench report RESULTS``: the file-level commands over the gate.

RESULTS is a ``results.jsonl`` or a directory holding one. ``gate`` recomputes the aggregates
and a decision for every candidate arm present and prints them (``--json``: the decisions as JSON,
``wfbench.gate/v1``: the promotion evidence without its per-task detail, which grows with every
task). It writes nothing unless asked: ``--out FILE`` writes the whole evidence (``promotion.json``,
schema 6) there, ``--tasks-out FILE`` the per-task detail (JSON Lines, ``wfbench.gate-tasks/v1``,
written line by line), each atomically; an existing file (the sweep's own ``promotion.json``
included) is refused unless ``--force``. The evidence keeps its original time: ``generated_at``
(and so the expiry) is the sweep's ``promotion.json``'s when there is one, else the newest
row's ``recorded_at``; a re-gate never makes old evidence look fresh. ``--fail-on`` turns chosen
decisions into exit code 3 for CI. ``report`` writes ``report.md`` and ``report.html`` beside the
results. A torn or invalid line exits 2 naming the file, the line and the field, before anything
is written.

``gate`` reads the file once, line by line, into the gate's one-pass input (never every row at
once: a million-row file is summarized as it streams). ``report`` still holds the rows (the
report model reads rows) and gates them from the same one-pass input.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
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
    from wfbench.domain.promotion.evidence import PromotionEvidence
    from wfbench.domain.promotion.policy import PromotionPolicy

RESULTS_NAME = "results.jsonl"
EVIDENCE_NAME = "promotion.json"
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


def render_gate_text(result: GateResult, *, source: Path, written: Sequence[Path | None] = ()) -> str:
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
    files = [path for path in written if path is not None]
    if files:
        lines += ["", *(f"wrote {path}" for path in files)]
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


def _target(out: Path | None, *, force: bool, source: Path, option: str = "--out") -> Path | None:
    """Where ``option`` writes; an existing file (above all the sweep's evidence) needs ``--force``."""
    if out is None:
        return None
    if out.is_dir():
        raise InputError("is a directory; name the file to write", field=option, source=str(out))
    if out.exists() and not force:
        own = out.resolve() == (source.parent / EVIDENCE_NAME).resolve()
        what = "is the sweep's own evidence" if own else "already exists"
        raise InputError(f"{what}; refusing to overwrite it without --force", field=option, source=str(out))
    if not out.parent.is_dir():
        raise InputError("its directory does not exist", field=option, source=str(out))
    return out


def _targets(
    out: Path | None, tasks_out: Path | None, *, force: bool, source: Path
) -> tuple[Path | None, Path | None]:
    """Where ``--out`` and ``--tasks-out`` write (never both to one file)."""
    target = _target(out, force=force, source=source)
    tasks_target = _target(tasks_out, force=force, source=source, option="--tasks-out")
    if target is not None and tasks_target is not None and target.resolve() == tasks_target.resolve():
        raise InputError(
            "names the --out file; give each its own", field="--tasks-out", source=str(tasks_out)
        )
    return target, tasks_target


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
    given = opt.parse_pairs(pair)
    failing_on = opt.parse_fail_on(fail_on)
    with _fewer_collections():
        source, read = _stream(results)
        chosen = _decision_policy(source, decision_policy, command="gate")
        policy = _policy(metric, min_runs, min_improvement, max_task_regression, chosen)
        target, tasks_target = _targets(out, tasks_out, force=force, source=source)
        result = _gate(read, source, policy, given)
        written = _write_evidence(result.evidence, target)
        tasks_written = _write_task_lines(result.evidence, tasks_target)
        summary: dict[str, Any] | None = None
        if result.evidence is not None and as_json:
            from wfbench.domain.promotion.evidence_parts import evidence_summary

            summary = evidence_summary(result.evidence)  # no per-task list: small at 40,000 tasks
        _show(result, summary, as_json=as_json, source=source, written=(written, tasks_written))
        if not as_json:
            _say_unwritten((target, tasks_target), (written, tasks_written))
    failing = opt.failing_decisions([d.kind.value for d in result.decisions], failing_on)
    if failing:
        typer.echo(f"wfbench: --fail-on {','.join(sorted(failing_on))}: {', '.join(failing)}", err=True)
    raise typer.Exit(DECISION if failing else OK)


#: The youngest generation's threshold while a file is gated (the interpreter's default is 700).
GATE_GC_THRESHOLD = 100_000


@contextlib.contextmanager
def _fewer_collections() -> Iterator[None]:
    """Collect cyclic garbage less often while a file is gated (the thresholds come back after).

    What a gate keeps (a tally, then an aggregate, per task and arm; with ``--json`` the evidence
    mapping) is thousands of long-lived containers that the collector would examine again and
    again although none is in a cycle: about a tenth of a 3,000-task gate's CPU (issue 33).
    Cycles are still collected, every 100,000 allocations instead of every 700.
    """
    import gc

    before = gc.get_threshold()
    gc.set_threshold(GATE_GC_THRESHOLD, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


def _write_evidence(evidence: PromotionEvidence | None, target: Path | None) -> Path | None:
    """``--out``: the whole evidence written there atomically; ``None`` when nothing was written."""
    if evidence is None or target is None:
        return None
    from wfbench.adapters.store.jsonl_store import write_json_atomic

    write_json_atomic(target, evidence.to_mapping())  # large at 40,000 tasks: only when asked
    return target


def _write_task_lines(evidence: PromotionEvidence | None, target: Path | None) -> Path | None:
    """``--tasks-out``: the per-task lines, encoded and written one by one, then renamed into place."""
    if evidence is None or target is None:
        return None
    import json

    from wfbench.adapters.store.streamed_files import write_texts_atomic
    from wfbench.domain.promotion.evidence_parts import task_lines

    encode = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode
    write_texts_atomic([(target, (encode(line) + "\n" for line in task_lines(evidence)))])
    return target


def _show(
    result: GateResult,
    summary: dict[str, Any] | None,
    *,
    as_json: bool,
    source: Path,
    written: tuple[Path | None, Path | None],
) -> None:
    """Print the decisions as JSON (``--json``), else the human summary."""
    if as_json:
        from wfbench.adapters.store.json_indent import dumps_indented
        from wfbench.domain.promotion.evidence_parts import GATE_SCHEMA

        empty = {
            "schema": GATE_SCHEMA,
            "decisions": [],
            "reason": "no candidate arm has rows; nothing to gate",
        }
        typer.echo(dumps_indented(summary if summary is not None else empty))
        return
    typer.echo(render_gate_text(result, source=source, written=written))


def _say_unwritten(targets: tuple[Path | None, ...], written: tuple[Path | None, ...]) -> None:
    """What ``--out`` or ``--tasks-out`` did not write, there being no decision."""
    for target, done in zip(targets, written, strict=True):
        if target is not None and done is None:
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
