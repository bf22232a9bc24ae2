"""``wfbench tasks validate``: prepare the tasks as a sweep would, validate each, print a table or JSON."""

from __future__ import annotations

import json
import tempfile
import threading

import typer

from wfbench.app.cell.context import CellServices, RunSettings
from wfbench.app.corpus.binding import bind_tasks, prepare_snapshots
from wfbench.app.corpus.corpus import load_corpus
from wfbench.app.sweep.environments import prepare_environments
from wfbench.app.sweep.sweep import selected_tasks
from wfbench.app.sweep.validation import TaskValidation, validate_tasks
from wfbench.cli import bootstrap as boot
from wfbench.domain.sweep.task_selection import parse_patterns


def _mark(value: bool | None, good: bool = True) -> str:
    if value is None:
        return "n/a"
    return ("pass" if value else "FAIL") if good else ("PASS" if value else "fail")


def _line(result: TaskValidation) -> str:
    verdict = "valid" if result.valid else "INVALID"
    gold = f"{_mark(result.gold_verify)}/{_mark(result.gold_oracle)}"
    line = (
        f"{verdict:8} {result.task}  env={result.environment} setup={result.setup}"
        f" verify@base={_mark(result.verify_at_base)} oracle@base={_mark(result.oracle_at_base, good=False)}"
        f" gold(verify/oracle)={gold}"
        f" gold+test={_mark(result.honest_edit_oracle)}"
        f" shadow={_mark(result.shadowing_edit_oracle, good=False)}"
    )
    outcomes = "".join(f"\n         oracle {o}" for o in result.oracle_outcomes)
    return line + outcomes + "".join(f"\n         - {p}" for p in result.problems)


def validate(corpus: str, *, patterns: list[str], as_json: bool, sandbox: str) -> int:
    """Validate the selected tasks of ``corpus``; 0 when all are valid, 1 otherwise."""
    loaded = load_corpus(corpus)
    chosen = selected_tasks(loaded, include_expensive=True, only=parse_patterns(patterns))
    services = boot.bootstrap(sandbox=sandbox)
    bound = bind_tasks(loaded, chosen, workspaces=services.workspaces)
    cancel = threading.Event()
    with tempfile.TemporaryDirectory(prefix="wfbench-validate-") as work:
        notes: list[str] = []
        prepared = prepare_snapshots(bound, workspaces=services.workspaces, parent=work)
        prepared = prepare_environments(
            prepared, environments=services.environments, cancel=cancel, note=notes.append
        )
        settings = RunSettings(
            out_dir=work,
            work_dir=work,
            model="n/a",
            sandbox_backend=sandbox,
            command_env=boot.harness_command_env(),
            agent_env={},
            directory=services.directory_at(work),
        )
        cell = CellServices(
            services.sandbox,
            services.agent,
            services.workspaces,
            services.clock,
            environments=services.environments,
        )
        echo = (lambda _r: None) if as_json else (lambda r: typer.echo(_line(r)))
        if not as_json:
            for note in notes:
                typer.echo(note)
        results = validate_tasks(prepared, services=cell, settings=settings, cancel=cancel, on_result=echo)
    invalid = [r.task for r in results if not r.valid]
    if as_json:
        typer.echo(json.dumps({"tasks": [r.as_dict() for r in results], "invalid": invalid}, indent=2))
    else:
        typer.echo(
            f"{len(results) - len(invalid)}/{len(results)} task(s) valid"
            + (f"; invalid: {', '.join(invalid)}" if invalid else "")
        )
    return 1 if invalid else 0
