"""``wfbench tasks``: inspect and validate corpora without running them (``tasks check``)."""

from __future__ import annotations

from typing import Annotated

import typer

TASKS_HELP = "Inspect and validate corpora."


def register(app: typer.Typer) -> None:
    """Add the ``tasks`` group (a bare ``wfbench tasks`` prints its help)."""
    tasks = typer.Typer(help=TASKS_HELP, no_args_is_help=True)
    tasks.command("check", short_help="Validate a corpus without running it.")(tasks_check)
    app.add_typer(tasks, name="tasks")


def tasks_check(
    corpus: Annotated[str, typer.Argument(metavar="CORPUS", help="Corpus YAML to validate.")],
) -> None:
    """Validate a corpus (fields, arms, repositories, refs, oracle files) without running it."""
    from wfbench.adapters.provider_script import ProviderScript
    from wfbench.adapters.workspace import GitWorkspaces
    from wfbench.app.binding import bind_tasks
    from wfbench.app.corpus import load_corpus
    from wfbench.app.sweep import selected_tasks

    loaded = load_corpus(corpus)
    if loaded.provider_script is not None:  # `run` loads it before any session; so does the check
        ProviderScript.load(loaded.provider_script)
    tasks = selected_tasks(loaded, include_expensive=True)
    bound = bind_tasks(loaded, tasks, workspaces=GitWorkspaces())
    for task in bound:
        typer.echo(
            f"ok  {task.spec.id}  {task.spec.kind.value}  {task.commit[:12]}"
            f"  oracle {task.oracle_digests['oracle_digest'][:12]}"
        )
    typer.echo(f"{len(bound)} task(s) valid; arms available: {', '.join(loaded.arms)}")
