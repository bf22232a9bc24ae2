"""``wfbench gate`` without Typer (``cli/commands/gate_front``) reads and answers as the Typer command.

The front reads a plain command line itself and declines the rest to Typer. These tests fail when
the two drift: a parameter added to the Typer command and not to the front's table, a value the
front reads differently, an output or exit code that differs. The comparisons run in this process
(``main`` with and without ``WFBENCH_TYPER_ONLY``); one subprocess checks what a small gate loads.
"""

from __future__ import annotations

import subprocess
import sys
import types
import typing
from pathlib import Path
from typing import Any

import attrs
import pytest

from tests.cli.test_gate_cmd import promoting_rows, write_results
from wfbench.cli import main as cli_main
from wfbench.cli.commands import gate as work
from wfbench.cli.commands import gate_front as front

#: Command lines the front answers; each must be read exactly as Typer reads it.
PLAIN = [
    ["R"],
    ["R", "--json"],
    ["--json", "R"],
    ["R", "--out", "o.json", "--force"],
    ["R", "--out=o.json"],
    ["R", "--json", "--tasks-out", "t.jsonl", "--out", "o.json"],
    ["R", "--fail-on", "keep_incumbent,insufficient_evidence"],
    ["R", "--fail-on="],
    ["R", "--metric", "output_tokens"],
    ["R", "--metric=num_turns"],
    ["R", "--min-runs", "0"],
    ["R", "--min-runs=12"],
    ["R", "--min-improvement", "7"],
    ["R", "--min-improvement", "2.5", "--max-task-regression", "0.125"],
    ["R", "--pair", "candidate_workflow=workflow"],
    ["R", "--pair", "a=b", "--pair=c=d", "--pair", "e=f"],
    ["R", "--policy", "reference"],
    ["R", "--policy=statistical", "--json", "--metric", "duration_s"],
    ["dir with space/results.jsonl", "--pair", "x=y=z"],
]
#: Command lines the front leaves to Typer (help, usage errors, anything it does not fully read).
DECLINED = [
    [],
    ["R", "-h"],
    ["--help", "R"],
    ["R", "S"],
    ["-", "--json"],
    ["R", "--"],
    ["R", "--jsn"],
    ["R", "--js"],
    ["R", "--json=1"],
    ["R", "--json", "--json"],
    ["R", "--out"],
    ["R", "--out="],
    ["R", "--out", "--json"],
    ["R", "--metric", "COST_USD"],
    ["R", "--metric", "cost"],
    ["R", "--metric", "cost_usd", "--metric", "num_turns"],
    ["R", "--min-runs", "-1"],
    ["R", "--min-runs", "+3"],
    ["R", "--min-runs", "03"],
    ["R", "--min-runs", "3.0"],
    ["R", "--min-runs", "3_0"],
    ["R", "--min-runs", "٣"],
    ["R", "--min-improvement", "1e3"],
    ["R", "--min-improvement", ".5"],
    ["R", "--min-improvement", "nan"],
    ["R", "--policy", "Reference"],
    ["R", "--pair", "-x=y"],
]


def typer_gate_command() -> Any:
    import typer

    return typer.main.get_command(cli_main.build_app("gate")).commands["gate"]  # type: ignore[attr-defined]


def typer_request(args: list[str], monkeypatch: pytest.MonkeyPatch) -> work.GateRequest | None:
    """The request the Typer command makes of ``wfbench gate ARGS...`` (``None``: a usage error)."""
    seen: list[work.GateRequest] = []
    monkeypatch.setenv(cli_main.TYPER_ONLY, "1")
    monkeypatch.setattr(work, "regate", lambda request, *, echo: seen.append(request) or 0)
    with pytest.raises(SystemExit):
        cli_main.main(["gate", *args])
    monkeypatch.undo()
    return seen[0] if seen else None


def test_the_front_knows_exactly_the_parameters_of_the_typer_gate_command() -> None:
    """Names, flags, repetition, defaults and value types: the front's table is the command's."""
    readers = {int: front._int, float: front._float, Path: front._path, str: front._text}
    command = typer_gate_command()
    argument, *options = command.params
    defaults = {field.name: field.default for field in attrs.fields(work.GateRequest)}

    def value_type(param: Any) -> Any:
        """The type a parameter's value has (``None`` aside); a ``Literal``: its choices."""
        hint = param.type_descriptor.annotation
        if typing.get_origin(hint) in (typing.Union, types.UnionType):
            hint = next(kind for kind in typing.get_args(hint) if kind is not type(None))
        if typing.get_origin(hint) is typing.Literal:
            return typing.get_args(hint)
        return typing.get_args(hint)[0] if typing.get_origin(hint) is list else hint

    assert (argument.name, value_type(argument)) == (front.ARGUMENT[0], Path)
    assert front.ARGUMENT[1] is front._path
    assert {name for param in options for name in param.opts + param.secondary_opts} == set(front.OPTIONS)
    assert set(defaults) == {param.name for param in command.params}
    for param in options:
        field, read = front.OPTIONS[param.opts[0]]
        assert field == param.name
        assert (read is None) == param.is_flag
        assert (param.opts[0] in front.REPEATABLE) == param.multiple
        assert param.envvar is None
        assert defaults[field] == param.default
        kind = value_type(param)
        if isinstance(kind, tuple):  # a Literal: exactly its choices, nothing else
            assert read is not None
            assert [read(choice) for choice in kind] == list(kind)
            assert [read(kind[0].upper()), read(kind[0] + "x")] == [None, None]
        elif read is not None:
            assert read is readers[kind]


@pytest.mark.parametrize("args", PLAIN, ids=" ".join)
def test_the_front_reads_a_plain_command_line_as_typer_does(
    args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same request, field for field and type for type (``2.5`` a float, ``0`` an int)."""
    read = front.request_of(args)

    assert read is not None
    expected = typer_request(args, monkeypatch)
    assert read == expected
    assert [type(value) for value in attrs.astuple(read, recurse=False)] == [
        type(value) for value in attrs.astuple(expected, recurse=False)
    ]


@pytest.mark.parametrize("args", DECLINED, ids=lambda args: " ".join(args) or "none")
def test_the_front_leaves_what_it_does_not_fully_read_to_typer(args: list[str]) -> None:
    """Help, usage errors and any value click might read otherwise go to Typer as before."""
    assert front.request_of(args) is None


def test_the_front_leaves_shell_completion_to_typer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(front.COMPLETION_VARIABLE, "bash_complete")

    assert front.request_of(["R"]) is None


def answered(
    args: list[str], capsys: pytest.CaptureFixture[str], *, typer_only: bool
) -> tuple[Any, str, str]:
    """Exit code, stdout and stderr of ``wfbench gate ARGS...`` in this process."""
    with pytest.MonkeyPatch.context() as patch:
        if typer_only:
            patch.setenv(cli_main.TYPER_ONLY, "1")
        else:
            patch.delenv(cli_main.TYPER_ONLY, raising=False)
        with pytest.raises(SystemExit) as done:
            cli_main.main(["gate", *args])
    out, err = capsys.readouterr()
    return done.value.code, out, err


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_results(tmp_path_factory.mktemp("sweep"), promoting_rows())


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--json"],
        ["--policy", "reference", "--fail-on", "promote"],
        ["--json", "--out", "OUT"],
        ["--json", "--tasks-out", "OUT"],
        ["--out", "OUT", "--pair", "candidate_workflow=workflow", "--metric", "output_tokens"],
        ["--pair", "no-equals-sign"],
        ["--fail-on", "bogus"],
        ["--min-runs", "5", "--min-improvement", "60"],
    ],
    ids=" ".join,
)
def test_the_front_answers_as_typer_does(
    args: list[str], sweep: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Byte for byte on stdout and stderr, and the same exit code (a decision's 3, an input's 2)."""
    out = tmp_path / "regated.json"
    argv = [str(sweep), *[str(out) if word == "OUT" else word for word in args]]

    assert front.request_of(argv) is not None
    by_front = answered(argv, capsys, typer_only=False)
    written = out.read_bytes() if out.exists() else None
    out.unlink(missing_ok=True)
    by_typer = answered(argv, capsys, typer_only=True)

    assert by_front == by_typer
    assert written == (out.read_bytes() if out.exists() else None)


def test_a_torn_line_exits_2_with_the_message_typer_gives(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bad input through the front: one line naming the file, the line and the field, exit 2."""
    rows = write_results(tmp_path, promoting_rows())
    with rows.open("a") as handle:
        handle.write('{"task": "t", "arm": "workflow", "run": "zero"}\n{"task": \n')

    by_front = answered([str(rows)], capsys, typer_only=False)

    assert by_front == answered([str(rows)], capsys, typer_only=True)
    code, out, err = by_front
    assert (code, out) == (2, "")
    assert err.startswith(f"wfbench: error: {rows}:")
    assert err.count("\n") == 1
    assert "line 10" in err


#: What a gate loads only when it needs it: to write (tempfile, shutil), to judge a pair (the rest).
LAZY = (
    "tempfile",
    "shutil",
    "statistics",
    "random",
    "fractions",
    "hashlib",
    "wfbench.domain.workspace.rules",
)
#: What no gate of a small sweep loads: the CLI framework, its pydantic, numpy, the run's logging.
NEVER = ("typer", "click", "pydantic", "pydantic_core", "numpy", "structlog", "cattrs", "rich")


def test_a_small_gate_imports_neither_typer_nor_pydantic_nor_numpy(tmp_path: Path) -> None:
    """The console path: a pair-less file first (nothing of a pair's judgement), then a small sweep
    with a judged pair (still no CLI framework, no numpy for its small bootstrap)."""
    lone = write_results(tmp_path / "lone", promoting_rows()[:1])
    rows = write_results(tmp_path / "pair", promoting_rows())
    probe = (
        "import sys\nfrom wfbench.cli.main import main\n"
        "def gate(*args):\n    try:\n        main(['gate', *args])\n"
        "    except SystemExit as done:\n        assert done.code == 0, done.code\n"
        "def loaded(names):\n"
        "    return sorted(m for m in sys.modules if m.split('.')[0] in names or m in names)\n"
        f"gate(sys.argv[1])\nprint('loaded', loaded({LAZY!r} + {NEVER!r}))\n"
        f"gate(sys.argv[2], '--json')\nprint('loaded', loaded({NEVER!r}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(lone), str(rows)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )

    assert '"decision": "promote"' in done.stdout
    assert [line for line in done.stdout.splitlines() if line.startswith("loaded")] == ["loaded []"] * 2
