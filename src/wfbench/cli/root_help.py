"""The root help (``wfbench --help``) as it is rendered, printed without importing Typer.

Typer's import (its vendored click, its parameter machinery) is most of ``wfbench --help``'s
start-up, and the root help lists commands that are registered only to be listed
(``cli/main.ROOT_LISTING``). :func:`static_help` gives the text click renders for the help
formatter's width — ``min(terminal columns, 100) − 2``, as click computes it — when this module
holds it: 78 (an 80-column terminal, or no terminal at all: pipes, CI) and 98 (100 columns or
more). Any other width goes through Typer as before. ``tests/cli/test_cli_surface.py`` renders
both widths with Typer and fails when they differ from these, printing the texts to paste back.
"""

from __future__ import annotations

__all__ = ["ROOT_HELP", "static_help"]

#: The root help's text at each formatter width this module holds (without click's final newline).
ROOT_HELP: dict[int, str] = {
    78: "\n".join(
        (
            "Usage: wfbench [OPTIONS] COMMAND [ARGS]...",
            "",
            "  Benchmark headless coding-agent workflows against baselines, with hidden",
            "  oracles.",
            "",
            "Options:",
            "  --version   Print the version and exit.",
            "  -h, --help  Show this message and exit.",
            "",
            "Commands:",
            "  version   Print wfbench's version.",
            "  run       Run a sweep of task × arm × run cells.",
            "  doctor    Check what this machine can run (exit 1 if a requirement fails).",
            "  gate      Re-gate a results.jsonl: aggregates and decisions.",
            "  report    Write report.md and report.html beside a results.jsonl.",
            "  plan      Plan the next sweep from a pilot: the MDE over tasks x runs,...",
            "  view      Browse a sweep, or every sweep under a directory, in the...",
            "  compare   Compare two sweeps per task and arm (resolution, cost,...",
            "  evolve    Evolve candidate skills with a proposer agent, gated.",
            "  export    Export trajectories (ATIF) or an Inspect AI log.",
            "  tasks     Inspect and validate corpora.",
            "  review    Score code-review artifacts against hidden labels.",
            "  provider  The scripted model provider (offline model endpoint for tests...",
            "  promote   Apply promoted skill evidence to a repository, transactionally.",
            "  release   Gate an agent runtime release: one sweep per runtime,...",
            "",
            "  Examples:",
            "    wfbench run                                 # the built-in offline demo",
            "    wfbench run corpus.yaml --arms workflow,candidate_workflow --runs 3",
            "    wfbench run --resume results/wfbench-20260101-120000",
            "    wfbench gate results/wfbench-20260101-120000 --fail-on keep_incumbent",
            "    wfbench doctor",
            "",
            "  Exit codes:",
            "    0    success",
            "    1    outage breaker tripped, an arm produced no usable measurement, or --max-cost",
            "         stopped the sweep",
            "    2    usage or input error (nothing ran)",
            "    3    a decision named by --fail-on (e.g. --fail-on keep_incumbent,insufficient_evidence)",
            "    130  cancelled (Ctrl-C / SIGTERM); continue with --resume DIR",
            "",
            "  Run `wfbench COMMAND -h` for a command's options and the environment",
            "  variables it reads.",
        )
    ),
    98: "\n".join(
        (
            "Usage: wfbench [OPTIONS] COMMAND [ARGS]...",
            "",
            "  Benchmark headless coding-agent workflows against baselines, with hidden oracles.",
            "",
            "Options:",
            "  --version   Print the version and exit.",
            "  -h, --help  Show this message and exit.",
            "",
            "Commands:",
            "  version   Print wfbench's version.",
            "  run       Run a sweep of task × arm × run cells.",
            "  doctor    Check what this machine can run (exit 1 if a requirement fails).",
            "  gate      Re-gate a results.jsonl: aggregates and decisions.",
            "  report    Write report.md and report.html beside a results.jsonl.",
            "  plan      Plan the next sweep from a pilot: the MDE over tasks x runs, its cost, the...",
            "  view      Browse a sweep, or every sweep under a directory, in the browser.",
            "  compare   Compare two sweeps per task and arm (resolution, cost, quality); B against A,...",
            "  evolve    Evolve candidate skills with a proposer agent, gated.",
            "  export    Export trajectories (ATIF) or an Inspect AI log.",
            "  tasks     Inspect and validate corpora.",
            "  review    Score code-review artifacts against hidden labels.",
            "  provider  The scripted model provider (offline model endpoint for tests and dry runs).",
            "  promote   Apply promoted skill evidence to a repository, transactionally.",
            "  release   Gate an agent runtime release: one sweep per runtime, compared per task.",
            "",
            "  Examples:",
            "    wfbench run                                 # the built-in offline demo",
            "    wfbench run corpus.yaml --arms workflow,candidate_workflow --runs 3",
            "    wfbench run --resume results/wfbench-20260101-120000",
            "    wfbench gate results/wfbench-20260101-120000 --fail-on keep_incumbent",
            "    wfbench doctor",
            "",
            "  Exit codes:",
            "    0    success",
            "    1    outage breaker tripped, an arm produced no usable measurement, or --max-cost",
            "         stopped the sweep",
            "    2    usage or input error (nothing ran)",
            "    3    a decision named by --fail-on (e.g. --fail-on keep_incumbent,insufficient_evidence)",
            "    130  cancelled (Ctrl-C / SIGTERM); continue with --resume DIR",
            "",
            "  Run `wfbench COMMAND -h` for a command's options and the environment variables it reads.",
        )
    ),
}

#: ``max_content_width`` of the root command (``cli/main.CONTEXT_SETTINGS``).
MAX_CONTENT_WIDTH = 100


def formatter_width() -> int:
    """The width click's help formatter takes here (``typer._click.formatting.HelpFormatter``)."""
    import shutil

    return max(min(shutil.get_terminal_size().columns, MAX_CONTENT_WIDTH) - 2, 50)


def static_help() -> str | None:
    """The root help for this terminal's width, when this module holds it."""
    return ROOT_HELP.get(formatter_width())
