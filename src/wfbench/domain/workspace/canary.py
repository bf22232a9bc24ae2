"""Harness canaries: a must-pass and a must-fail test staged beside every hidden test (docs/security.md).

Each oracle run gets one pair with names no agent can guess (a fresh random token per cell),
written as a ``unittest.TestCase`` so that pytest and ``unittest`` discovery both run it, in the
hidden tests' directory, importing the package(s) the hidden tests import. A verdict forged in
bulk — a plugin or hook that turns failures into passes, a rewritten exit status, a report
written by the code under test, printed ``PASSED`` lines — flips the must-fail canary too, or
leaves it out; :func:`wfbench.domain.workspace.oracle.oracle_verdict` then says
``canary-tripped``. What canaries cannot catch is code that reads the hidden tests at run time
and flips only them (docs/security.md, "Canaries").
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable

from wfbench.domain.workspace.oracle import Canaries
from wfbench.domain.workspace.shadowing import RUNNER_MODULES

__all__ = ["PACKAGES_LINE", "canaries_for", "canary_file_name", "canary_source", "imported_packages"]

#: The line of the canary that names the packages it imports (the SWE-bench runner rewrites it
#: with the packages its hidden test file imports).
PACKAGES_LINE = "PACKAGES = ()"
_NOT_UNDER_TEST = frozenset(sys.stdlib_module_names) | RUNNER_MODULES | {"__future__"}


def canaries_for(token: str) -> Canaries:
    """The pair for one cell; ``token`` is random (``secrets.token_hex(8)``) and never reused.

    Nothing in a name says "canary" or which one must fail: code that flips failures in the
    report cannot spare the must-fail canary by its name.
    """
    half = len(token) // 2
    return Canaries(holds=f"test_{token[:half]}", trips=f"test_{token[half:]}")


def canary_file_name(token: str) -> str:
    """The canary module's file name (``test_*.py``, so default discovery collects it)."""
    return f"test_{token}.py"


def imported_packages(sources: Iterable[str]) -> tuple[str, ...]:
    """Top-level packages the hidden tests import, minus the standard library and test runners."""
    found: dict[str, None] = {}
    for text in sources:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        for node in tree.body:
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".", 1)[0]
                if top not in _NOT_UNDER_TEST:
                    found[top] = None
    return tuple(found)


def canary_source(canaries: Canaries, token: str, packages: Iterable[str] = ()) -> str:
    """The canary module: the must-pass test imports ``packages``; the must-fail test fails."""
    listed = tuple(packages)
    line = f"PACKAGES = {listed!r}" if listed else PACKAGES_LINE
    return (
        "import importlib\nimport unittest\n\n"
        f"{line}\n\n\n"
        f"class Test{token}(unittest.TestCase):\n"
        f"    def {canaries.holds}(self):\n"
        "        for name in PACKAGES:\n"
        "            importlib.import_module(name)\n\n"
        f"    def {canaries.trips}(self):\n"
        "        self.assertEqual(len(PACKAGES), -1)\n"
    )
