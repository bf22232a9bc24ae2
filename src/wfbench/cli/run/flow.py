"""What ``wfbench run`` does with its options: resolve them, call the run use case, render, map errors.

In order, and nothing runs until every step before it succeeded:

1. ``--resume DIR``: read ``DIR/manifest.json`` and take the sweep's configuration from it; an
   option that contradicts it is refused (:mod:`wfbench.cli.run.manifest`).
2. ``--dry-run`` stops here with the plan (:mod:`wfbench.cli.run.dry`).
3. The run use case (:func:`wfbench.app.sweep.run.claimed_sweep`) claims the output directory
   (lock, a resume's repairs), builds the sweep inside the claim (:mod:`wfbench.cli.run.compose`:
   the corpus, the adapters, the endpoint), writes the manifest once tasks are bound (a resume
   checks instead that nothing drifted) and runs every cell. SIGINT/SIGTERM cancel it; the
   partial report is written; exit 130.
4. The summary, then the exit code (``--fail-on``: :data:`~wfbench.cli.exit_codes.DECISION`).

A run that fails before its first cell leaves nothing behind: the claim removes the lock file and
what this run created in the directory.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import threading
from typing import TYPE_CHECKING, Any

from wfbench.cli import bootstrap as boot
from wfbench.cli.exit_codes import DECISION, OK
from wfbench.cli.run.out_dir import check_out_dir
from wfbench.cli.run.request import RunRequest
from wfbench.cli.run.signals import cancel_on_signals

if TYPE_CHECKING:
    from wfbench.app.sweep.sweep import SweepResult
    from wfbench.domain.sweep.manifest import RunManifest


def explicit_options(ctx: Any) -> frozenset[str]:
    """The parameters of ``ctx`` (a click context) the user gave on the command line."""
    sources = {name: ctx.get_parameter_source(name) for name in ctx.params}
    return frozenset(name for name, source in sources.items() if getattr(source, "name", "") == "COMMANDLINE")


def execute(request: RunRequest) -> int:
    """Run the sweep ``request`` describes; its exit code (:mod:`wfbench.cli.exit_codes`)."""
    from wfbench.cli.options.gate import failing_decisions, parse_fail_on
    from wfbench.cli.run.manifest import read_manifest, resumed_request

    fail_on = parse_fail_on(request.fail_on)
    recorded = None
    resuming = request.resume is not None
    if request.resume is not None:
        recorded = read_manifest(os.path.abspath(request.resume))
        request = resumed_request(request, recorded)
    out_dir = os.path.abspath(request.out or _default_out())
    check_out_dir(out_dir, resume=resuming)
    if request.dry_run:
        from wfbench.cli.run.dry import dry_run

        return dry_run(request, out_dir=out_dir, resuming=resuming)
    cancel = threading.Event()
    # Installed until the end (the summary included): a late Ctrl-C force-quits, never a traceback.
    with cancel_on_signals(cancel, out_dir):
        result = _claimed_sweep(request, out_dir, recorded, cancel)
        _render(request, out_dir, result)
    failing = failing_decisions([decision for _, decision in result.decisions], fail_on) if fail_on else []
    if result.exit_code not in (OK, DECISION):
        return int(result.exit_code)
    if failing:  # the sweep's own exit code (its events') is already DECISION
        print(f"wfbench: --fail-on {','.join(sorted(fail_on))}: {', '.join(failing)}", file=sys.stderr)
        return DECISION
    return OK


def _claimed_sweep(
    request: RunRequest, out_dir: str, recorded: RunManifest | None, cancel: threading.Event
) -> SweepResult:
    """The run use case on ``out_dir``, the sweep built inside its claim by :func:`~.compose.prepared`."""
    from wfbench.app.sweep.run import claimed_sweep
    from wfbench.cli.run.compose import Context, human, prepared

    prior = None
    if request.reuse_results is not None:
        from wfbench.adapters.store.prior_results import PriorResultsDir

        prior = PriorResultsDir.open(request.reuse_results, out_dir=out_dir)
    context = Context(out_dir, recorded, prior)
    return claimed_sweep(
        directory=boot.sweep_directory(out_dir),
        resume=request.resume is not None,
        note=human(request),
        cancel=cancel,
        prepare=lambda: prepared(request, context),
    )


def _render(request: RunRequest, out_dir: str, result: SweepResult) -> None:
    """The summary: one JSON event (``--json``) or lines; how to resume an interrupted sweep."""
    from wfbench.cli.run.summary import plan_lines, summary_event, summary_lines

    human = sys.stderr if request.json_events else sys.stdout
    if request.json_events:
        print(json.dumps(summary_event(out_dir, result)), flush=True)
    else:
        lines = summary_lines(out_dir, result)
        if request.corpus is None and result.decisions and not result.cancelled:
            lines += plan_lines(out_dir)  # the demo: what a sweep the gate stands behind would take
        print("\n".join(lines), flush=True)
    if result.cancelled and not result.tripped:
        print(
            f"interrupted after {result.completed}/{result.planned} cells; resume with: wfbench run"
            f" --resume {out_dir}",
            file=human,
            flush=True,
        )


def _default_out() -> str:
    return os.path.join("results", "wfbench-" + dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S"))
