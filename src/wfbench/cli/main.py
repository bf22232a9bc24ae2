"""The ``wfbench`` command: assembles the command groups and maps errors to exit codes.

Start-up is kept short for the file-level commands (``--help``, ``review score``, ``gate``):
every command module imports only :mod:`typer` at module level and the rest inside the
command, and help is click's plain formatter (rich's would cost ~65 ms to import and truncates
option names on a narrow or non-TTY stream). ``bench/startup_bench.py`` measures it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from typing import Annotated, Any

import typer

from wfbench.cli.exit_codes import EXIT_CODES_HELP

HELP = "Benchmark headless coding-agent workflows against baselines, with hidden oracles."
#: Shared by every command: ``-h`` works like ``--help``; help is wide enough not to wrap option names.
CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
ROOT_EPILOG = (
    "\b\nExamples:\n"
    "  wfbench run                                 # the built-in offline demo\n"
    "  wfbench run corpus.yaml --arms workflow,candidate_workflow --runs 3\n"
    "  wfbench run --resume results/wfbench-20260101-120000\n"
    "  wfbench gate results/wfbench-20260101-120000 --fail-on keep_incumbent\n"
    "  wfbench doctor\n\n" + EXIT_CODES_HELP + "\n\n"
    "Run `wfbench COMMAND -h` for a command's options and the environment variables it reads."
)


def _print_version(value: bool) -> None:
    if value:
        from wfbench import __version__

        typer.echo(f"wfbench {__version__}")
        raise typer.Exit(0)


def build_app() -> typer.Typer:
    """Build the Typer application (nothing is built at import time)."""
    from wfbench.cli.commands import (
        export as export_cmd,
    )
    from wfbench.cli.commands import (
        gate as gate_cmd,
    )
    from wfbench.cli.commands import (
        plan as plan_cmd,
    )
    from wfbench.cli.commands import (
        promote as promote_cmd,
    )
    from wfbench.cli.commands import (
        provider as provider_cmd,
    )
    from wfbench.cli.commands import (
        release as release_cmd,
    )
    from wfbench.cli.commands import (
        review as review_cmd,
    )
    from wfbench.cli.commands import (
        view as view_cmd,
    )
    from wfbench.cli.run import command as run_cmd
    from wfbench.cli.run import evolve as evolve_cmd

    app = typer.Typer(
        name="wfbench",
        help=HELP,
        epilog=ROOT_EPILOG,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
        context_settings=CONTEXT_SETTINGS,
    )

    @app.callback()
    def _root(
        version: Annotated[
            bool,
            typer.Option(
                "--version", is_eager=True, callback=_print_version, help="Print the version and exit."
            ),
        ] = False,
    ) -> None:
        """Benchmark headless coding-agent workflows against baselines, with hidden oracles."""
        del version

    @app.command(
        "version", epilog="\b\nExamples:\n  wfbench version\n\n\b\nExit codes: 0 the version was printed."
    )
    def version() -> None:
        """Print wfbench's version."""
        from wfbench import __version__

        typer.echo(__version__)

    commands = (
        run_cmd,
        review_cmd,
        gate_cmd,
        plan_cmd,
        provider_cmd,
        view_cmd,
        promote_cmd,
        release_cmd,
        evolve_cmd,
        export_cmd,
    )
    for module in commands:
        module.register(app)
    _plain_help(app)
    _word_metavars()
    return app


def _word_metavars() -> None:
    """Arguments with a metavar show that word alone in help (Typer would add ``<str>``)."""
    argument = getattr(getattr(typer, "core", None), "TyperArgument", None)
    original = getattr(argument, "display_type_rich", None)
    if argument is None or original is None or getattr(original, "_wfbench", False):
        return

    def display(self: Any, ctx: Any) -> str | None:
        return None if self.metavar is not None else original(self, ctx)

    display._wfbench = True  # type: ignore[attr-defined]
    argument.display_type_rich = display


def _plain_help(app: typer.Typer) -> None:
    """Every group, whoever created it, uses click's plain help (``-h`` is inherited from the root)."""
    app.rich_markup_mode = None
    for info in app.registered_groups:
        if info.typer_instance is not None:
            _plain_help(info.typer_instance)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: the exit codes of :mod:`wfbench.cli.exit_codes`.

    A :class:`WfbenchError`, a usage error or an OS error is one ``wfbench: error:`` line on stderr.
    """
    from wfbench.domain.errors import WfbenchError

    app = build_app()
    try:
        code = app(args=argv, prog_name="wfbench", standalone_mode=False)
    except (typer.Abort, KeyboardInterrupt):
        _exit(130)
    except WfbenchError as exc:
        print(f"wfbench: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except OSError as exc:
        sys.exit(_os_error(exc))
    except Exception as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # a bare group: its help is the answer
            print(exc.format_message())  # type: ignore[attr-defined]
            sys.exit(0)
        if not _is_usage_error(exc):
            raise
        print(f"wfbench: error: {_usage_message(exc)}", file=sys.stderr)
        sys.exit(int(getattr(exc, "exit_code", 2)))
    _exit(code if isinstance(code, int) else 0)


def _exit(code: int) -> None:
    """Exit with ``code``; a cancelled run (130) leaves without the interpreter's shutdown.

    Python's shutdown gives SIGINT back to its default action before the process is gone, so a
    second Ctrl-C in that window would end the process *by* SIGINT (a signal status, not 130).
    Everything worth keeping is written and flushed by then (rows, report, summary).
    """
    if code != 130:
        sys.exit(code)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(130)


def _os_error(exc: OSError) -> int:
    """One line for an OS error; exit 1 when the disk filled mid-sweep, else 2 (nothing usable ran)."""
    where = f" ({exc.filename})" if exc.filename else ""
    what = exc.strerror or str(exc)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        print(
            f"wfbench: error: {what}{where}: stopped before the report; every row already in"
            " results.jsonl is whole (free space, then continue with --resume DIR)",
            file=sys.stderr,
        )
        return 1
    print(f"wfbench: error: {what}{where}", file=sys.stderr)
    return 2


def _is_usage_error(exc: Exception) -> bool:
    """A command-line usage error of the CLI framework (bad option, missing argument)."""
    return callable(getattr(exc, "format_message", None)) and isinstance(getattr(exc, "exit_code", None), int)


def _usage_message(exc: Exception) -> str:
    """One line: the command, then what is wrong with its usage."""
    ctx = getattr(exc, "ctx", None)
    where = f"{ctx.command_path}: " if ctx is not None else ""
    text: str = exc.format_message()  # type: ignore[attr-defined]
    return where + " ".join(text.split()).replace(": Value error, ", ": ")
