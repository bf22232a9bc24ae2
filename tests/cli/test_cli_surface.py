"""The command line's surface through the real console script: help, ``-h``, ``--version``, bare groups."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import get_args

import pytest

WFBENCH = [sys.executable, "-m", "wfbench"]
COMMANDS = (
    (),
    ("run",),
    ("gate",),
    ("report",),
    ("doctor",),
    ("tasks",),
    ("tasks", "check"),
    ("review",),
    ("review", "score"),
    ("provider",),
    ("provider", "serve"),
)


def wfbench(*args: str, columns: int = 80) -> subprocess.CompletedProcess[str]:
    env = {"COLUMNS": str(columns), "PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)}
    return subprocess.run([*WFBENCH, *args], capture_output=True, text=True, timeout=60, check=False, env=env)


@pytest.mark.parametrize("group", ["tasks", "provider", "review"])
def test_a_bare_group_prints_its_help_and_exits_0(group: str) -> None:
    """``wfbench tasks`` is a question, not an error: its help on stdout, nothing on stderr."""
    done = wfbench(group)

    assert done.returncode == 0
    assert done.stderr == ""
    assert done.stdout.startswith(f"Usage: wfbench {group} [OPTIONS] COMMAND [ARGS]...")
    assert "Commands:" in done.stdout


def test_bare_wfbench_prints_the_root_help_and_exits_0() -> None:
    done = wfbench()

    assert done.returncode == 0
    assert done.stderr == ""
    assert "Commands:" in done.stdout


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "root")
def test_dash_h_is_help_everywhere(command: tuple[str, ...]) -> None:
    """``-h`` prints the same text as ``--help``."""
    short, long = wfbench(*command, "-h"), wfbench(*command, "--help")

    assert short.returncode == long.returncode == 0
    assert short.stdout == long.stdout
    assert short.stdout.startswith("Usage: wfbench")


def test_version_flag_and_command_agree() -> None:
    from wfbench import __version__

    flag, command = wfbench("--version"), wfbench("version")

    assert flag.returncode == 0
    assert flag.stdout.strip() == f"wfbench {__version__}"
    assert command.stdout.strip() == __version__


def _option_names(help_text: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])--[a-z][a-z-]*[a-z]", help_text))


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "root")
def test_help_never_truncates_and_shows_no_python_types_off_a_tty(command: tuple[str, ...]) -> None:
    """At 40 columns, off a TTY: every option of the command appears whole; no ``…``, no ``<str>``."""
    narrow = wfbench(*command, "--help", columns=40).stdout
    wide = wfbench(*command, "--help", columns=200).stdout

    assert "…" not in narrow
    assert not re.search(r"<(str|int|float|bool|list\[str\]|path)[^>]*>", narrow)
    assert _option_names(wide) <= _option_names(narrow)
    assert "╭" not in narrow


def test_run_help_lists_choices_presets_environment_and_exit_codes() -> None:
    text = wfbench("run", "--help").stdout

    for expected in (
        "--sandbox <bwrap|podman|docker|host-unsafe>",
        "--agent <standin|claude|codex|gemini|opencode>",
        "candidate_workflow_direct",
        "WFBENCH_ANTHROPIC_API_KEY",
        "ANTHROPIC_API_KEY is NOT read",
        "WFBENCH_CLAUDE_BIN",
        "WFBENCH_CODEX_BIN",
        "WFBENCH_GEMINI_BIN",
        "WFBENCH_CACHE",
        "WFBENCH_HEARTBEAT_S",
        "--max-cost USD",
        "--executor <local|ray>",
        "Exit codes:",
        "130",
        "Examples:",
        "[default: 2;",
        "or --max-cost",
    ):
        assert expected in text, expected


def test_gate_help_lists_metrics_fail_on_and_exit_codes() -> None:
    text = wfbench("gate", "--help").stdout

    assert "--metric <cost_usd|output_tokens|duration_s|num_turns>" in text
    assert "--fail-on DECISION[,DECISION]" in text
    assert "3    a decision named by --fail-on" in text


def test_the_help_choices_are_the_ones_the_code_accepts() -> None:
    """The literal lists of the CLI modules (kept import-light) equal their sources."""
    from wfbench.app.corpus.arms import preset_arms
    from wfbench.cli import bootstrap
    from wfbench.cli.options import gate as gate_options
    from wfbench.cli.options import run as run_options
    from wfbench.cli.options import sweep as sweep_options
    from wfbench.cli.run import command as run_cmd
    from wfbench.domain.promotion.decision import DecisionKind
    from wfbench.domain.promotion.policy import PROMOTION_METRICS

    assert sweep_options.SANDBOX_CHOICES == bootstrap.SANDBOXES
    assert sweep_options.AGENT_CHOICES == bootstrap.AGENTS
    assert run_cmd.PRESET_ARMS == tuple(preset_arms())
    assert set(get_args(gate_options.Metric)) == set(PROMOTION_METRICS)
    assert gate_options.DECISIONS == run_options.DECISIONS == tuple(kind.value for kind in DecisionKind)


def test_importing_the_cli_loads_no_sweep_machinery() -> None:
    """Building the command tree imports typer and the command modules, nothing of app/adapters."""
    probe = (
        "import sys; from wfbench.cli.main import build_app; build_app();"
        "print(sorted(m for m in sys.modules if m.startswith(('wfbench.app', 'wfbench.adapters', 'rich',"
        " 'structlog', 'yaml'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )

    assert done.stdout.strip() == "[]"


def test_gate_of_a_results_file_loads_no_other_command_and_no_ports(tmp_path) -> None:
    """``wfbench gate FILE`` starts without ``run``'s modules or the ports' value types (start-up)."""
    results = tmp_path / "results.jsonl"
    results.write_text('{"task": "t", "arm": "workflow", "run": 0, "ok": true, "resolved": true}\n')
    probe = (
        "import sys\nfrom wfbench.cli.main import main\ntry:\n    main(['gate', sys.argv[1]])\n"
        "except SystemExit:\n    pass\nprint(sorted(m for m in sys.modules if m.startswith(("
        "'wfbench.cli.run', 'wfbench.cli.commands.view', 'wfbench.domain.ports', 'wfbench.app.report'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(results)], capture_output=True, text=True, check=True, timeout=60
    )

    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_each_command_alone_is_the_command_of_the_whole_tree() -> None:
    """The table of command modules names, for every command, the module that registers it."""
    import typer

    from wfbench.cli.main import COMMAND_MODULES, build_app

    def tree(app: typer.Typer) -> dict[str, tuple[str | None, list[str]]]:
        group = typer.main.get_command(app)
        commands = group.commands  # type: ignore[attr-defined]
        return {name: (cmd.help, [p.name for p in cmd.params]) for name, cmd in commands.items()}

    whole = tree(build_app())
    alone = {name: tree(build_app(name)).get(name) for name in whole if name != "version"}

    assert set(whole) - {"version"} == set(COMMAND_MODULES) - {"", "--help"}
    assert alone == {name: whole[name] for name in alone}


def test_the_root_help_listing_is_what_the_commands_register() -> None:
    """``wfbench --help`` lists the commands from a table; it must say what the modules say."""
    import typer

    from wfbench.cli.main import ROOT_LISTING, build_app

    group = typer.main.get_command(build_app())
    listed = [
        (name, cmd.short_help, None if cmd.short_help else (cmd.help or "").split("\n\n")[0])
        for name, cmd in group.commands.items()  # type: ignore[attr-defined]
    ]

    assert listed == [("version", None, "Print wfbench's version."), *ROOT_LISTING]


def test_importing_one_domain_module_does_not_load_the_whole_domain() -> None:
    """The CLI imports ``wfbench.domain.errors`` first; the gates and review scoring stay unloaded."""
    probe = (
        "import sys, wfbench.domain.errors;"
        "print(sorted(m for m in sys.modules"
        " if m.startswith('wfbench.domain.') and m != 'wfbench.domain.errors'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )

    assert done.stdout.strip() == "[]"


def _leaf_commands() -> list[tuple[str, ...]]:
    """Every command of the app (groups walked), built in this process."""
    import typer

    from wfbench.cli.main import build_app

    found: list[tuple[str, ...]] = []

    def walk(command: object, path: tuple[str, ...]) -> None:
        subcommands = getattr(command, "commands", None)
        if subcommands is None:
            found.append(path)
            return
        for name, sub in subcommands.items():
            walk(sub, (*path, name))

    walk(typer.main.get_command(build_app()), ())
    return found


#: Commands that run agent sessions and stop on SIGINT/SIGTERM with 130.
CANCELLABLE = {("run",), ("evolve",)}


def test_every_command_help_has_examples_and_only_its_own_exit_codes() -> None:
    """Each command's --help shows an example of itself and an Exit codes block that lists 3 only
    with --fail-on and 130 only for a command that can be cancelled mid-sweep."""
    import typer
    from click.testing import CliRunner

    from wfbench.cli.main import build_app

    app = typer.main.get_command(build_app())
    commands = _leaf_commands()
    assert len(commands) >= 18
    for command in commands:
        text = CliRunner().invoke(app, [*command, "--help"], terminal_width=200).output
        name = " ".join(command)
        assert "Examples:" in text, name
        assert f"wfbench {name}" in text.split("Examples:", 1)[1], name
        assert "Exit codes" in text, name
        codes = text.split("Exit codes", 1)[1]
        listed = set(re.findall(r"(?<![\w$.-])(0|1|2|3|130)(?=[ :,;]| the| a)", codes))
        assert ("3" in listed) == ("--fail-on" in text.split("Exit codes", 1)[0]), name
        assert ("130" in listed) == (command in CANCELLABLE), name
        assert "\\b" not in text, name  # click's no-rewrap marker, printed literally


def _option_block(help_text: str, flag: str) -> str:
    """The help lines of one option (its line and its wrapped continuation)."""
    lines = help_text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith(flag + " "))
    block = [lines[start]]
    for line in lines[start + 1 :]:
        if line.strip().startswith("-") or not line.strip():
            break
        block.append(line)
    return "\n".join(block)


@pytest.mark.parametrize(
    "flag",
    [
        "--workers",
        "--sandbox",
        "--agent",
        "--provider-script",
        "--base-url",
        "--no-provider-script",
        "--timeout",
        "--verify-timeout",
    ],
)
def test_run_and_evolve_share_their_sweep_options(flag: str) -> None:
    """``evolve`` runs sweeps: each option it shares with ``run`` reads and binds the same."""
    run_help, evolve_help = wfbench("run", "--help", columns=200), wfbench("evolve", "--help", columns=200)

    assert run_help.returncode == evolve_help.returncode == 0
    assert _option_block(evolve_help.stdout, flag) == _option_block(run_help.stdout, flag)


@pytest.mark.parametrize("command", ["run", "evolve"])
def test_the_worker_cap_is_the_same_for_run_and_evolve(command: str, tmp_path) -> None:
    """64 workers pass the option's bound in both commands; 65 is refused naming --workers."""
    corpus = tmp_path / "missing.yaml"
    extra = ["--generations", "1", "--out", str(tmp_path / "out")] if command == "evolve" else []

    over = wfbench(command, str(corpus), *extra, "--workers", "65")
    at_cap = wfbench(command, str(corpus), *extra, "--workers", "64")

    assert over.returncode == 2
    assert "--workers" in over.stderr
    assert "--workers" not in at_cap.stderr  # refused later, for the missing corpus, not the bound
    assert "missing.yaml" in at_cap.stderr + at_cap.stdout


def test_gate_gives_the_collector_its_thresholds_back(tmp_path) -> None:
    """``gate`` collects less often while it runs (start-up and width, issue 33), then restores it."""
    import gc

    from wfbench.cli.main import main

    results = tmp_path / "results.jsonl"
    results.write_text('{"task": "t", "arm": "workflow", "run": 0, "ok": true, "resolved": true}\n')
    before = gc.get_threshold()
    with pytest.raises(SystemExit) as done:
        main(["gate", str(results)])

    assert done.value.code == 0
    assert gc.get_threshold() == before


def test_the_root_help_printed_without_typer_is_what_typer_renders() -> None:
    """``wfbench --help`` at the widths ``cli/root_help`` holds is Typer's own rendering, byte for byte."""
    from typer.testing import CliRunner

    from wfbench.cli import root_help
    from wfbench.cli.main import LISTING, build_app

    assert sorted(root_help.ROOT_HELP) == [78, 98]
    for width, text in root_help.ROOT_HELP.items():
        result = CliRunner().invoke(build_app(LISTING), ["--help"], terminal_width=width, prog_name="wfbench")
        rendered = result.output.removesuffix("\n")
        assert rendered == text, f"cli/root_help.ROOT_HELP[{width}] must now be:\n{rendered!r}"


def test_the_root_help_and_the_version_do_not_import_typer() -> None:
    """Both are answered before Typer is imported (start-up); another width still goes through it."""
    probe = (
        "import sys\nfrom wfbench.cli.main import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit as exc:\n    code = exc.code\n"
        "print('typer' in sys.modules, code, file=sys.stderr)"
    )
    for columns, args, loaded in (
        ("80", ["--help"], "False"),
        ("200", ["--version"], "False"),
        ("90", ["-h"], "True"),
    ):
        done = subprocess.run(
            [sys.executable, "-c", probe, *args],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
            env={**os.environ, "COLUMNS": columns},
        )
        assert done.stderr.split() == [loaded, "0"], (columns, args)
        assert done.stdout.startswith(("Usage: wfbench", "wfbench "))
