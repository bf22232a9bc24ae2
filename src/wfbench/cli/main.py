"""The ``wfbench`` command: assembles the command groups and maps wfbench errors to exit codes."""

from __future__ import annotations

import errno
import sys

import typer

from wfbench.domain.errors import WfbenchError


def build_app() -> typer.Typer:
    """Build the Typer application (nothing is built at import time)."""
    from wfbench.cli import gate_cmd, provider_cmd, review_cmd, run_cmd

    app = typer.Typer(
        name="wfbench",
        help="Benchmark headless coding-agent workflows against baselines, with hidden oracles.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )

    @app.callback()
    def _root() -> None:
        """Benchmark headless coding-agent workflows against baselines, with hidden oracles."""

    @app.command("version")
    def version() -> None:
        """Print wfbench's version."""
        from wfbench import __version__

        typer.echo(__version__)

    for module in (run_cmd, review_cmd, gate_cmd, provider_cmd):
        module.register(app)
    return app


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point. Usage errors exit 2; a :class:`WfbenchError` is one line on stderr."""
    app = build_app()
    try:
        code = app(args=argv, prog_name="wfbench", standalone_mode=False)
    except typer.Abort:
        sys.exit(130)
    except WfbenchError as exc:
        print(f"wfbench: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        where = f" ({exc.filename})" if exc.filename else ""
        print(
            f"wfbench: error: {exc.strerror}{where}: stopped before the report; every row already in"
            " results.jsonl is whole (free space, then continue with --resume DIR)",
            file=sys.stderr,
        )
        sys.exit(1)
    except Exception as exc:
        if not _is_usage_error(exc):
            raise
        print(f"wfbench: error: {_usage_message(exc)}", file=sys.stderr)
        sys.exit(int(getattr(exc, "exit_code", 2)))
    sys.exit(code if isinstance(code, int) else 0)


def _is_usage_error(exc: Exception) -> bool:
    """A command-line usage error of the CLI framework (bad option, missing argument)."""
    return callable(getattr(exc, "format_message", None)) and isinstance(getattr(exc, "exit_code", None), int)


def _usage_message(exc: Exception) -> str:
    """One line: the command, then what is wrong with its usage."""
    ctx = getattr(exc, "ctx", None)
    where = f"{ctx.command_path}: " if ctx is not None else ""
    text: str = exc.format_message()  # type: ignore[attr-defined]
    return where + " ".join(text.split())
