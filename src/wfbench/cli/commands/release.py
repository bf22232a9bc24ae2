"""``wfbench release gate`` and ``wfbench release evaluate``: gate an agent runtime release per task.

``gate`` compares a release-candidate runtime's sweep of the pinned tasks with the stable
runtime's, writes ``release-quality-gate.json`` and ``.md`` (always, also when an input is
missing or corrupt: that is failure evidence, never a traceback) and exits 0 when it passed, 1
when it did not. ``evaluate`` turns one sweep into a portable ``release-evaluation.json``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated

import typer

from wfbench.cli.exit_codes import EXIT_CODES_HELP, FAILED, OK

GATE_EPILOG = (
    "\b\nExamples:\n"
    "  WFBENCH_RUNTIME_DIGEST=stable-2.1.0 wfbench run corpus.yaml --arms baseline_nomcp,baseline --runs 3"
    " --out stable\n"
    "  WFBENCH_RUNTIME_DIGEST=rc-2.2.0 wfbench run corpus.yaml --arms baseline_nomcp,baseline --runs 3"
    " --out rc\n"
    "  wfbench release gate --candidate rc --stable stable --corpus corpus.yaml --out gate/\n"
    "\n\b\nEach side (a sweep directory, or a release-evaluation.json from `wfbench release evaluate`)\n"
    "must be complete, measured within 7 days, pinned to the corpus's tasks (commit, hidden-oracle digest),\n"
    "with at least 3 runs and every row trustworthy (bwrap, ok, graded, transcript kept, cost and time\n"
    "measured, dependency digest). Both sides must share harness, tasks, arms, model, effort and runs,\n"
    "and each task one dependency digest. Then: a task the candidate solves fewer times than stable, on\n"
    "any gated arm, fails the gate.\n\n"
    "\b\nExit codes: 0 the gate passed; 1 it failed (the evidence says why); 2 a usage or corpus error.\n"
    + EXIT_CODES_HELP.split("\n", 1)[0]
)

_Corpus = Annotated[
    Path,
    typer.Option("--corpus", metavar="CORPUS", help="The corpus whose tasks are pinned (refs, oracles)."),
]
_Control = Annotated[
    str | None,
    typer.Option(
        "--control",
        metavar="ARM",
        help="The arm each arm's solve delta is measured against (default: baseline_nomcp when swept).",
        show_default=False,
    ),
]
_Expensive = Annotated[bool, typer.Option("--include-expensive", help="The sweeps also ran expensive tasks.")]
_Tasks = Annotated[
    list[str] | None,
    typer.Option(
        "--tasks",
        metavar="ID[,ID...]",
        help="The pinned tasks (ids or globs, as given to run; default: every task of the corpus).",
        show_default=False,
    ),
]


def _rows_reader(path: str) -> object:
    from wfbench.adapters.store.jsonl_store import JsonlResultStore

    if not os.path.isfile(path):
        from wfbench.domain.errors import InputError

        raise InputError("does not exist", source=path)
    return JsonlResultStore(path).rows()


def _pins_and_kinds(
    corpus: Path, include_expensive: bool, tasks: list[str] | None
) -> tuple[dict[str, dict[str, object]], dict[str, str]]:
    from wfbench.adapters.repo.workspace import GitWorkspaces
    from wfbench.app.corpus.corpus import load_corpus
    from wfbench.app.promotion.release import release_pins
    from wfbench.domain.sweep.task_selection import parse_patterns

    loaded = load_corpus(str(corpus))
    only = parse_patterns(tasks or [])
    pins = release_pins(loaded, workspaces=GitWorkspaces(), include_expensive=include_expensive, only=only)
    return pins, {name: arm.kind.value for name, arm in loaded.arms.items()}


_Candidate = Annotated[
    str,
    typer.Option("--candidate", metavar="DIR|FILE", help="The release candidate runtime's sweep."),
]

_Stable = Annotated[str, typer.Option("--stable", metavar="DIR|FILE", help="The stable runtime's sweep.")]

_GateOut = Annotated[
    Path, typer.Option("--out", metavar="DIR", help="Where release-quality-gate.json and .md go.")
]

_Arm = Annotated[
    list[str] | None,
    typer.Option(
        "--arm",
        metavar="ARM",
        help="An arm the per-task rule applies to (repeatable; default: every arm but the control).",
        show_default=False,
    ),
]

_CandidateRuntime = Annotated[
    str | None,
    typer.Option(
        "--candidate-runtime",
        metavar="DIGEST",
        help="The runtime identity the candidate side must carry (its manifest's runtime_digest).",
        show_default=False,
    ),
]

_StableRuntime = Annotated[
    str | None,
    typer.Option(
        "--stable-runtime",
        metavar="DIGEST",
        help="The runtime identity the stable side must carry.",
        show_default=False,
    ),
]

_Sweep = Annotated[Path, typer.Argument(metavar="SWEEP_DIR", help="A sweep directory (results, manifest).")]

_EvaluationOut = Annotated[
    Path | None,
    typer.Option(
        "--out",
        metavar="FILE",
        help="Default: SWEEP_DIR/release-evaluation.json.",
        show_default=False,
    ),
]

EVALUATE_EPILOG = (
    "\b\nExamples:\n"
    "  wfbench release evaluate results/stable --corpus corpus.yaml   # writes its release-evaluation.json\n"
    "\n\b\nExit codes: 0 the evaluation was written (complete or not), 2 a usage or corpus error."
)


def register(app: typer.Typer) -> None:
    """Add the ``release`` command group (``gate``, ``evaluate``) to ``app``."""
    release = typer.Typer(
        name="release",
        help="Gate an agent runtime release: one sweep per runtime, compared per task.",
        no_args_is_help=True,
    )
    release.command(
        "gate", epilog=GATE_EPILOG, short_help="Compare a candidate runtime's sweep with stable's."
    )(gate)
    release.command(
        "evaluate", epilog=EVALUATE_EPILOG, short_help="Write one sweep's release-evaluation.json."
    )(evaluate)
    app.add_typer(release)


def gate(  # noqa: PLR0917 - Typer maps each parameter to one option
    candidate: _Candidate,
    stable: _Stable,
    corpus: _Corpus,
    out: _GateOut = Path("."),
    arm: _Arm = None,
    control: _Control = None,
    candidate_runtime: _CandidateRuntime = None,
    stable_runtime: _StableRuntime = None,
    include_expensive: _Expensive = False,
    tasks: _Tasks = None,
) -> None:
    """Gate the candidate runtime against stable per task; write the evidence; exit 0 or 1."""
    from wfbench.adapters.store.clock import SystemClock
    from wfbench.adapters.store.jsonl_store import write_json_atomic, write_text_atomic
    from wfbench.app.promotion.release import GATE_JSON, GATE_MD, load_side, run_release_gate

    pins, kinds = _pins_and_kinds(corpus, include_expensive, tasks)
    sides = [
        load_side(source, read_rows=_rows_reader, pins=pins, arm_kinds=kinds, control=control)
        for source in (candidate, stable)
    ]
    result, evidence, markdown = run_release_gate(
        sides[0],
        sides[1],
        pins=pins,
        now=SystemClock().now(),
        gated_arms=arm or None,
        candidate_runtime=candidate_runtime,
        stable_runtime=stable_runtime,
    )
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / GATE_JSON, evidence)
    write_text_atomic(out / GATE_MD, markdown)
    typer.echo(f"release gate: {'PASS' if result.passed else 'FAIL'}")
    for problem in result.problems:
        typer.echo(f"  - {problem}")
    typer.echo(f"wrote {out / GATE_JSON} and {out / GATE_MD}")
    raise typer.Exit(OK if result.passed else FAILED)


def evaluate(  # noqa: PLR0917 - Typer maps each parameter to one option
    sweep: _Sweep,
    corpus: _Corpus,
    out: _EvaluationOut = None,
    control: _Control = None,
    include_expensive: _Expensive = False,
    tasks: _Tasks = None,
) -> None:
    """Summarise SWEEP_DIR as a release evaluation (its rows, the pins, each row's trust)."""
    from wfbench.adapters.store.jsonl_store import write_json_atomic
    from wfbench.app.promotion.release import EVALUATION_NAME, load_side
    from wfbench.domain.errors import InputError

    pins, kinds = _pins_and_kinds(corpus, include_expensive, tasks)
    side = load_side(str(sweep), read_rows=_rows_reader, pins=pins, arm_kinds=kinds, control=control)
    if side.load_problem is not None or not sweep.is_dir():
        raise InputError(side.load_problem or "is not a sweep directory", source=str(sweep))
    target = out or sweep / EVALUATION_NAME
    write_json_atomic(target, side.evaluation)
    complete = side.evaluation["complete"]
    typer.echo(f"wrote {target} ({'complete' if complete else 'INCOMPLETE'})")
    for problem in side.evaluation["problems"][:20]:
        typer.echo(f"  - {problem}")
    typer.echo(json.dumps({"runtime": side.evaluation["runtime"]}))
