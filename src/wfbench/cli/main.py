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
from typing import TYPE_CHECKING, Any

from wfbench.cli.exit_codes import EXIT_CODES_HELP

if TYPE_CHECKING:
    import typer

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
        import typer

        from wfbench import __version__

        typer.echo(f"wfbench {__version__}")
        raise typer.Exit(0)


#: The module that registers each command (``run``'s also registers ``doctor`` and ``tasks``).
#: A command named on the command line loads its module alone; anything else (the root help, a
#: typo) loads them all, in :data:`MODULES` order, which is the order the root help lists them.
COMMAND_MODULES: dict[str, str] = {
    "": "",  # ``--version``: no command module at all
    "--help": "",  # the root help: its listing alone
    "run": "wfbench.cli.run.command",
    "doctor": "wfbench.cli.run.command",
    "tasks": "wfbench.cli.run.command",
    "review": "wfbench.cli.commands.review",
    "gate": "wfbench.cli.commands.gate_command",
    "report": "wfbench.cli.commands.gate_command",
    "plan": "wfbench.cli.commands.plan",
    "provider": "wfbench.cli.commands.provider",
    "view": "wfbench.cli.commands.view",
    "compare": "wfbench.cli.commands.view",
    "promote": "wfbench.cli.commands.promote",
    "release": "wfbench.cli.commands.release",
    "evolve": "wfbench.cli.run.evolve",
    "export": "wfbench.cli.commands.export",
}
#: :func:`command_named` of a root help request: the listing alone (:data:`ROOT_LISTING`).
LISTING = "--help"
MODULES: tuple[str, ...] = (
    "wfbench.cli.run.command",
    "wfbench.cli.commands.review",
    "wfbench.cli.commands.gate_command",
    "wfbench.cli.commands.plan",
    "wfbench.cli.commands.provider",
    "wfbench.cli.commands.view",
    "wfbench.cli.commands.promote",
    "wfbench.cli.commands.release",
    "wfbench.cli.run.evolve",
    "wfbench.cli.commands.export",
)


#: The root help's listing without importing a command module: (name, short help, else the first
#: paragraph of its help) as each module registers it, in the order the root help lists them.
#: ``tests/cli/test_cli_surface.py`` checks it against the real command tree.
ROOT_LISTING: tuple[tuple[str, str | None, str | None], ...] = (
    ("run", "Run a sweep of task × arm × run cells.", None),
    ("doctor", "Check what this machine can run (exit 1 if a requirement fails).", None),
    ("gate", "Re-gate a results.jsonl: aggregates and decisions.", None),
    ("report", "Write report.md and report.html beside a results.jsonl.", None),
    (
        "plan",
        None,
        "Plan the next sweep from a pilot: the MDE over tasks x runs, its cost, the cheapest design.",
    ),
    ("view", None, "Browse a sweep, or every sweep under a directory, in the browser."),
    (
        "compare",
        None,
        "Compare two sweeps per task and arm (resolution, cost, quality); B against A, paired.",
    ),
    ("evolve", "Evolve candidate skills with a proposer agent, gated.", None),
    ("export", "Export trajectories (ATIF) or an Inspect AI log.", None),
    ("tasks", None, "Inspect and validate corpora."),
    ("review", None, "Score code-review artifacts against hidden labels."),
    ("provider", None, "The scripted model provider (offline model endpoint for tests and dry runs)."),
    ("promote", None, "Apply promoted skill evidence to a repository, transactionally."),
    ("release", None, "Gate an agent runtime release: one sweep per runtime, compared per task."),
)


def command_named(argv: list[str]) -> str | None:
    """The command ``argv`` invokes (its first word that is not a root option), if any.

    ``--version`` first (eager: it prints and exits before anything else is read) needs none: ``""``.
    """
    if argv[:1] == ["--version"]:
        return ""
    if all(word in ("-h", "--help") for word in argv):  # the root help (or none: the same help)
        return LISTING
    return next((word for word in argv if not word.startswith("-")), None)


def build_app(command: str | None = None) -> typer.Typer:
    """Build the Typer application (nothing is built at import time).

    ``command``: only the module that registers it is imported and registered (start-up: ``gate``
    need not import ``run``'s option tables); ``None`` or an unknown name: every command.
    """
    import importlib

    import typer

    module = None if command is None else COMMAND_MODULES.get(command)
    names = MODULES if module is None else () if module == "" else (module,)
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
        version: bool = typer.Option(  # a default, not ``Annotated``: typer is not a module global
            False, "--version", is_eager=True, callback=_print_version, help="Print the version and exit."
        ),
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

    for name in names:
        importlib.import_module(name).register(app)
    if command == LISTING:
        for name, short, text in ROOT_LISTING:
            app.command(name, short_help=short, help=text)(_listed_only)
    _plain_help(app)
    _word_metavars()
    return app


def _listed_only() -> None:
    """A command of the root help's listing (never run: that help exits first)."""
    raise AssertionError("a listing-only command ran")


def _word_metavars() -> None:
    """Arguments with a metavar show that word alone in help (Typer would add ``<str>``)."""
    import typer

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
    args = sys.argv[1:] if argv is None else argv
    if _answered_without_typer(args):
        sys.exit(0)
    if args[:1] == ["gate"] and os.environ.get(TYPER_ONLY) != "1":
        _gate_without_typer(args[1:])  # returns only when its front declines the command line
    import typer

    from wfbench.domain.errors import WfbenchError

    app = build_app(command_named(args))
    try:
        code = app(args=args, prog_name="wfbench", standalone_mode=False)
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


def _answered_without_typer(args: list[str]) -> bool:
    """``wfbench --version`` and the root help (at a width :mod:`~wfbench.cli.root_help` holds),
    printed as Typer would print them, without importing it: most of their start-up (issue 33)."""
    if args == ["--version"]:
        from wfbench import __version__

        sys.stdout.write(f"wfbench {__version__}\n")
        return True
    if args and command_named(args) == LISTING:
        from wfbench.cli.root_help import static_help

        text = static_help()
        if text is not None:
            sys.stdout.write(text + "\n")
            return True
    return False


#: ``WFBENCH_TYPER_ONLY=1``: every command line goes through Typer, ``gate``'s too (a test and
#: benchmark switch: the front must answer exactly as Typer does).
TYPER_ONLY = "WFBENCH_TYPER_ONLY"


def _gate_without_typer(args: list[str]) -> None:
    """``wfbench gate ARGS...`` through :mod:`~wfbench.cli.commands.gate_front` when it reads the
    command line (most of a small gate's start-up was Typer's and pydantic's import, issue 33);
    errors end as :func:`main`'s Typer path ends them. Returns when the front declines."""
    from wfbench.cli.commands import gate_front

    request = gate_front.request_of(args)
    if request is None:
        return
    from wfbench.domain.errors import WfbenchError

    try:
        code = gate_front.run(request)
    except KeyboardInterrupt:  # Typer: Exit(130)
        _exit(130)
    except EOFError:  # Typer: an empty line on stderr, then Abort
        gate_front.echo("", err=True)
        _exit(130)
    except WfbenchError as exc:
        print(f"wfbench: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except OSError as exc:
        if exc.errno == errno.EPIPE:  # Typer: exit 1, and no complaint from the closed pipe
            gate_front.pacify_streams()
            sys.exit(1)
        sys.exit(_os_error(exc))
    _exit(code)


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
