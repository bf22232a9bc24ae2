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

This module is the commands' work without the CLI framework: :mod:`.gate_command` declares them
to Typer, and :mod:`.gate_front` answers a plain ``wfbench gate`` command line without importing
Typer at all (start-up, issue 33); both call :func:`regate` with a :class:`GateRequest`.

``gate`` reads the file once, line by line, into the gate's one-pass input (never every row at
once: a million-row file is summarized as it streams). ``report`` still holds the rows (the
report model reads rows) and gates them from the same one-pass input.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from wfbench.cli.exit_codes import DECISION, OK
from wfbench.cli.options import gate_values as opt
from wfbench.domain.errors import InputError

if TYPE_CHECKING:
    from wfbench.app.gating.gating import GateInput, GateResult
    from wfbench.app.report.model import SweepModel
    from wfbench.domain.promotion.decision import Decision
    from wfbench.domain.promotion.evidence import PromotionEvidence
    from wfbench.domain.promotion.policy import PromotionPolicy

RESULTS_NAME = "results.jsonl"
EVIDENCE_NAME = "promotion.json"


class Echo(Protocol):
    """How the gate prints a line (``typer.echo``, or :func:`.gate_front.echo` without Typer)."""

    def __call__(self, message: str, *, err: bool = ...) -> None: ...


def _pairs(value: Sequence[str] | None) -> tuple[str, ...] | None:
    return tuple(value) if value else None


@attrs.frozen
class GateRequest:
    """``wfbench gate``'s command line as read (by Typer or :mod:`.gate_front`); the options' defaults."""

    results: Path
    as_json: bool = False
    out: Path | None = None
    tasks_out: Path | None = None
    force: bool = False
    fail_on: str | None = None
    metric: str = "cost_usd"
    min_runs: int = 3
    min_improvement: float = 5.0
    max_task_regression: float = 20.0
    pair: tuple[str, ...] | None = attrs.field(default=None, converter=_pairs)
    decision_policy: str | None = None


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


def make_policy(
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


def decision_policy_of(source: Path, given: str | None, *, command: str) -> str:
    """The rule that decides: ``--policy``, else the one the sweep's promotion.json records, else
    statistical (:func:`~wfbench.app.gating.sweep_facts.decision_policy_for`)."""
    from wfbench.app.gating.sweep_facts import decision_policy_for, read_sweep_facts
    from wfbench.cli import bootstrap as boot

    facts = read_sweep_facts(boot.sweep_directory(str(source.parent)))
    return decision_policy_for(facts, given, command=command, source=str(source))


def report_model(source: Path, policy: PromotionPolicy, given: dict[str, str] | None) -> SweepModel:
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


def regate(request: GateRequest, *, echo: Echo) -> int:
    """Re-gate RESULTS: print the aggregates and a decision per candidate arm; write only with --out.

    Returns the exit code: 3 when a decision is one ``--fail-on`` names, else 0.
    """
    given = opt.parse_pairs(request.pair)
    failing_on = opt.parse_fail_on(request.fail_on)
    with _fewer_collections():
        source, read = _stream(request.results)
        chosen = decision_policy_of(source, request.decision_policy, command="gate")
        policy = make_policy(
            request.metric, request.min_runs, request.min_improvement, request.max_task_regression, chosen
        )
        target, tasks_target = _targets(request.out, request.tasks_out, force=request.force, source=source)
        result = _gate(read, source, policy, given)
        written = _write_evidence(result.evidence, target)
        tasks_written = _write_task_lines(result.evidence, tasks_target)
        summary: dict[str, Any] | None = None
        if result.evidence is not None and request.as_json:
            from wfbench.domain.promotion.evidence_parts import evidence_summary

            summary = evidence_summary(result.evidence)  # no per-task list: small at 40,000 tasks
        shown = (written, tasks_written)
        _show(result, summary, as_json=request.as_json, source=source, written=shown, echo=echo)
        if not request.as_json:
            _say_unwritten((target, tasks_target), (written, tasks_written), echo=echo)
    failing = opt.failing_decisions([d.kind.value for d in result.decisions], failing_on)
    if failing:
        echo(f"wfbench: --fail-on {','.join(sorted(failing_on))}: {', '.join(failing)}", err=True)
    return DECISION if failing else OK


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
    echo: Echo,
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
        echo(dumps_indented(summary if summary is not None else empty))
        return
    echo(render_gate_text(result, source=source, written=written))


def _say_unwritten(targets: tuple[Path | None, ...], written: tuple[Path | None, ...], *, echo: Echo) -> None:
    """What ``--out`` or ``--tasks-out`` did not write, there being no decision."""
    for target, done in zip(targets, written, strict=True):
        if target is not None and done is None:
            echo(f"\nnothing written to {target}: no decision")


def write_report_pages(model: SweepModel, directory: Path) -> int:
    """The task, arm and cell pages beside report.html, for its links (none for a large sweep)."""
    from wfbench.adapters.store.sweep_dir import StaticTree, SweepDirectory
    from wfbench.app.report.cell_pages import write_cell_pages

    sweep = SweepDirectory(str(directory))
    return write_cell_pages(model, sweep.rows, source=sweep, write=StaticTree(sweep.path).write)
