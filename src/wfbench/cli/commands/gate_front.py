"""``wfbench gate`` answered without importing Typer, when its command line is plain (issue 33).

Typer 0.29 converts every typed parameter through a pydantic ``TypeAdapter``: importing Typer and
pydantic is most of a small gate's start-up. So :func:`request_of` reads the common, valid command
lines itself and :func:`run` calls :func:`.gate.regate` exactly as the Typer command
(:mod:`.gate_command`) does, with the same :class:`.gate.GateRequest`. Anything it does not fully
understand — ``-h``/``--help``, an unknown or repeated option, a missing or odd value (a number
that is not plain digits, a value starting with ``-``), a second argument, ``--``, shell
completion, a stream click would re-wrap — is declined (``None``) and goes to Typer as before, so
every help text, usage error and exit code stays Typer's own.

A hand parser, not :mod:`argparse`: the front must *decline* whatever click might read differently,
and argparse's grammar is not click's (it abbreviates long options, exits on its own errors, reads
``-1`` by its own rules); a table of :data:`OPTIONS` and one loop is less to keep equal to click
than argparse configured to imitate it. ``tests/cli/test_gate_front.py`` pins the table to the Typer
command's parameters and the front's requests and output to Typer's.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

from wfbench.cli.options.gate_values import Metric, Policy

if TYPE_CHECKING:
    from wfbench.cli.commands.gate import GateRequest

#: How each kind of option value is read; ``None``: declined (Typer reads it, or says what is wrong).
Reader = Callable[[str], Any]
_INT = re.compile(r"0|[1-9][0-9]*")
_FLOAT = re.compile(r"(0|[1-9][0-9]*)(\.[0-9]+)?")


def _int(text: str) -> int | None:
    return int(text) if _INT.fullmatch(text) else None


def _float(text: str) -> float | None:
    return float(text) if _FLOAT.fullmatch(text) else None


def _path(text: str) -> Path | None:
    return Path(text) if text else None


def _text(text: str) -> str:
    return text


def _choice(choices: tuple[str, ...]) -> Reader:
    return lambda text: text if text in choices else None


#: The options of ``wfbench gate``: name → (the :class:`.gate.GateRequest` field, how its value is
#: read; ``None`` for a flag, which takes no value). ``--pair`` alone may be repeated.
OPTIONS: dict[str, tuple[str, Reader | None]] = {
    "--json": ("as_json", None),
    "--out": ("out", _path),
    "--tasks-out": ("tasks_out", _path),
    "--force": ("force", None),
    "--fail-on": ("fail_on", _text),
    "--metric": ("metric", _choice(get_args(Metric))),
    "--min-runs": ("min_runs", _int),
    "--min-improvement": ("min_improvement", _float),
    "--max-task-regression": ("max_task_regression", _float),
    "--pair": ("pair", _text),
    "--policy": ("decision_policy", _choice(get_args(Policy))),
}
#: The options that may be given more than once (their values are collected in order).
REPEATABLE = frozenset({"--pair"})
#: The argument: the results file or its directory.
ARGUMENT = ("results", _path)
#: The variable click's shell completion reads (``_WFBENCH_COMPLETE``): Typer answers it.
COMPLETION_VARIABLE = "_WFBENCH_COMPLETE"


def request_of(args: list[str]) -> GateRequest | None:
    """The request ``wfbench gate ARGS...`` makes, read as Typer would read it; ``None`` when the
    front declines (see the module docstring)."""
    if os.environ.get(COMPLETION_VARIABLE) or not _plain_streams():
        return None
    fields: dict[str, Any] = {}
    words = iter(args)
    for word in words:
        name, equals, inline = word.partition("=") if word.startswith("--") else (word, "", "")
        if not word.startswith("-"):
            value = ARGUMENT[1](word)
            if ARGUMENT[0] in fields or value is None:
                return None
            fields[ARGUMENT[0]] = value
            continue
        if name not in OPTIONS or (name in fields and name not in REPEATABLE):
            return None
        field, read = OPTIONS[name]
        if read is None:
            if equals:
                return None
            fields[name], fields[field] = True, True
            continue
        text = inline if equals else next(words, None)
        value = None if text is None or text.startswith("-") else read(text)
        if value is None:
            return None
        fields[name] = True
        fields[field] = [*fields.get(field, []), value] if name in REPEATABLE else value
    if ARGUMENT[0] not in fields:
        return None
    from wfbench.cli.commands.gate import GateRequest

    return GateRequest(**{key: value for key, value in fields.items() if not key.startswith("--")})


def _plain_streams() -> bool:
    """stdout and stderr are text streams click would write to as they are (not re-wrapped: click
    wraps a stream without an encoding, or with an ASCII one, in its own UTF-8 writer)."""
    import codecs

    for stream in (sys.stdout, sys.stderr):
        encoding, errors = getattr(stream, "encoding", None), getattr(stream, "errors", None)
        if not isinstance(encoding, str) or errors is None:
            return False
        if type(stream).__module__.startswith("ipykernel."):  # click never strips styles there
            return False
        try:
            if codecs.lookup(encoding).name == "ascii":
                return False
        except LookupError:
            return False
    return True


_ANSI = re.compile(r"\033\[[;?0-9]*[a-zA-Z]")


def echo(message: str, *, err: bool = False) -> None:
    """``typer.echo(message, err=err)`` for a plain stream: the line, ANSI styles stripped unless
    the stream is a terminal, flushed."""
    stream = sys.stderr if err else sys.stdout
    text = message + "\n"
    if "\033" in text and not _isatty(stream):
        text = _ANSI.sub("", text)
    stream.write(text)
    stream.flush()


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except Exception:  # click's own test: a stream that cannot say is not a terminal
        return False


def run(request: GateRequest) -> int:
    """Run ``gate`` as the Typer command does: :func:`.gate.regate` over the same request."""
    from wfbench.cli.commands.gate import regate

    return regate(request, echo=echo)


class _Pacified:
    """A stream whose flush ignores a closed pipe (click's ``PacifyFlushWrapper``)."""

    def __init__(self, wrapped: Any) -> None:
        self.wrapped = wrapped

    def flush(self) -> None:
        try:
            self.wrapped.flush()
        except OSError as exc:
            import errno

            if exc.errno != errno.EPIPE:
                raise

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.wrapped, attr)


def pacify_streams() -> None:
    """After a closed pipe (``wfbench gate … | head``), what click does: the interpreter's last
    flush of stdout and stderr no longer complains."""
    sys.stdout = _Pacified(sys.stdout)
    sys.stderr = _Pacified(sys.stderr)
