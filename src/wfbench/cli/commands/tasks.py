"""``wfbench tasks``: inspect and validate corpora without running them (``tasks check``)."""

from __future__ import annotations

from typing import Annotated

import typer

TASKS_HELP = "Inspect and validate corpora."
CHECK_EPILOG = (
    "\b\nExamples:\n"
    "  wfbench tasks check corpus.yaml     # ok lines per task, or one error naming file, task and field\n"
    "\n\b\nExit codes: 0 valid, 2 a bad corpus (one `wfbench: error:` line)."
)

VALIDATE_EPILOG = (
    "\b\nExamples:\n"
    "  wfbench tasks validate corpus.yaml                 # every task: the gold patch resolves it\n"
    "  wfbench tasks validate corpus.yaml --tasks 'fix-*'\n"
    "\n\b\nExit codes: 0 every task can measure something, 1 a task cannot (named), 2 a bad corpus."
)
EXPORT_EPILOG = "\b\nExit codes: 0 the task directories were written, 2 a bad corpus or --out."
IMPORT_EPILOG = (
    "\b\nExit codes: 0 the corpus was written, 2 a bad instance, clone or --out (nothing written)."
)


def register(app: typer.Typer) -> None:
    """Add the ``tasks`` group (a bare ``wfbench tasks`` prints its help)."""
    tasks = typer.Typer(help=TASKS_HELP, no_args_is_help=True)
    tasks.command("check", epilog=CHECK_EPILOG, short_help="Validate a corpus without running it.")(
        tasks_check
    )
    tasks.command(
        "validate", epilog=VALIDATE_EPILOG, short_help="Check each task can measure anything (no agent)."
    )(tasks_validate)
    import_group = typer.Typer(help="Import tasks from other benchmark formats.", no_args_is_help=True)
    from wfbench.cli.commands import tasks_import as import_cmd

    import_group.command(
        "swebench", epilog=IMPORT_EPILOG, short_help="SWE-bench-format instances → a wfbench corpus."
    )(import_cmd.import_swebench)
    import_group.command(
        "harbor", epilog=IMPORT_EPILOG, short_help="Harbor tasks (Terminal-Bench 2.0) → a wfbench corpus."
    )(import_cmd.import_harbor)
    tasks.add_typer(import_group, name="import")
    export_group = typer.Typer(help="Export a corpus to other benchmark formats.", no_args_is_help=True)
    export_group.command(
        "harbor", epilog=EXPORT_EPILOG, short_help="A wfbench corpus → Harbor task directories."
    )(import_cmd.export_harbor)
    tasks.add_typer(export_group, name="export")
    app.add_typer(tasks, name="tasks")


TASKS_OPTION = typer.Option(
    "--tasks",
    metavar="IDS",
    help="Only these tasks: ids or globs (comma-separated or repeated).",
    show_default=False,
)


def tasks_check(
    corpus: Annotated[str, typer.Argument(metavar="CORPUS", help="Corpus YAML to validate.")],
    tasks: Annotated[list[str] | None, TASKS_OPTION] = None,
) -> None:
    """Validate a corpus (fields, arms, repositories, refs, oracle files) without running it."""
    from wfbench.adapters.provider.script import ProviderScript
    from wfbench.adapters.repo.workspace import GitWorkspaces
    from wfbench.app.corpus.binding import bind_tasks
    from wfbench.app.corpus.corpus import load_corpus
    from wfbench.app.sweep.sweep import selected_tasks
    from wfbench.domain.sweep.task_selection import parse_patterns

    loaded = load_corpus(corpus)
    if loaded.provider_script is not None:  # `run` loads it before any session; so does the check
        ProviderScript.load(loaded.provider_script)
    chosen = selected_tasks(loaded, include_expensive=True, only=parse_patterns(tasks or []))
    bound = bind_tasks(loaded, chosen, workspaces=GitWorkspaces())
    for task in bound:
        typer.echo(
            f"ok  {task.spec.id}  {task.spec.kind.value}  {task.commit[:12]}"
            f"  oracle {task.oracle_digests['oracle_digest'][:12]}"
        )
    typer.echo(f"{len(bound)} task(s) valid; arms available: {', '.join(loaded.arms)}")


def tasks_validate(
    corpus: Annotated[str, typer.Argument(metavar="CORPUS", help="Corpus YAML to validate.")],
    tasks: Annotated[list[str] | None, TASKS_OPTION] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
    sandbox: Annotated[
        str, typer.Option(help="bwrap (default), podman (image tasks) or host-unsafe.")
    ] = "bwrap",
) -> None:
    """Per task, without an agent: the environment builds, setup succeeds, verify at the base commit
    gives its result, the hidden oracle FAILS at the base commit, and with a gold_patch verify and the
    oracle PASS. Exit 1 when any task is invalid.

    \b
    Examples:
      wfbench tasks validate corpus.yaml
      wfbench tasks validate corpus.yaml --tasks 'django__*' --json
    """
    from wfbench.cli.commands.validate import validate

    raise typer.Exit(validate(corpus, patterns=tasks or [], as_json=as_json, sandbox=sandbox))
