"""The exit codes of every ``wfbench`` command, in one place (``--help`` and ``docs/cli.md`` cite them).

CI gates on them: ``0`` is the only success; ``3`` is reserved for ``--fail-on`` so a gate
can tell "the sweep worked and the decision was not the one I want" from a broken sweep.
"""

from __future__ import annotations

from collections.abc import Sequence

OK = 0
#: The outage breaker tripped, an arm whose health can fail the sweep produced no usable row, or
#: ``--max-cost`` stopped the sweep (cells were held back: partial evidence).
FAILED = 1
#: A usage error or bad input (a file, an id or line, a field named on one line); nothing ran.
USAGE = 2
#: The sweep (or the re-gate) worked, and a decision is one of those named by ``--fail-on``.
DECISION = 3
#: Cancelled by SIGINT/SIGTERM; every row already written is whole (continue with ``--resume``).
CANCELLED = 130

#: The epilog every command's ``--help`` ends with (``\b`` keeps click from rewrapping it).
EXIT_CODES_HELP = (
    "\b\nExit codes:\n"
    "  0    success\n"
    "  1    outage breaker tripped, an arm produced no usable measurement, or --max-cost\n"
    "       stopped the sweep\n"
    "  2    usage or input error (nothing ran)\n"
    "  3    a decision named by --fail-on (e.g. --fail-on keep_incumbent,insufficient_evidence)\n"
    "  130  cancelled (Ctrl-C / SIGTERM); continue with --resume DIR"
)


def exit_codes_help(codes: Sequence[tuple[int, str]]) -> str:
    """A command's own ``Exit codes:`` block (only the codes that command can return)."""
    width = max(5, *(len(str(code)) + 2 for code, _ in codes))  # aligned like EXIT_CODES_HELP
    return "\b\nExit codes:\n" + "\n".join(f"  {str(code).ljust(width)}{text}" for code, text in codes)
