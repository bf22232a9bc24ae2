"""Test-infrastructure files an agent added or changed, found in what its sessions changed.

Any file that configures or extends the test runner — ``conftest.py`` at any depth,
``pytest.ini``, ``tox.ini``, a ``setup.cfg``/``pyproject.toml`` with a pytest section, ``*.pth``,
``sitecustomize``/``usercustomize``, ``*.dist-info``/``*.egg-info``/``*.egg-link`` in any letter
case, a module that shadows the runner. The oracle does not load them (``docs/security.md``,
"Oracle verdicts": its Python appends the workspace, plugin autoload is off, its ini and rootdir
are the harness's, the SWE-bench runner restores them to the base commit); each one is still
named in the row's ``evidence_diagnostics`` as ``shadowing file: <path> (<kind>): <why>``, and
such a row blocks its arm's promotion (:mod:`wfbench.domain.promotion.tampering`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wfbench.domain.workspace.rules import ChangeKind

__all__ = [
    "CONFIG_FILES",
    "DIAGNOSTIC_PREFIX",
    "MAX_SHADOW_DIAGNOSTICS",
    "RUNNER_MODULES",
    "has_pytest_section",
    "shadowing_diagnostics",
]

#: How every diagnostic of this module starts (the promotion gate looks for it).
DIAGNOSTIC_PREFIX = "shadowing file: "

#: Top-level modules of test runners: the oracle's Python imports these only from outside the
#: workspace, so a planted copy cannot stand in for a runner the environment lacks.
RUNNER_MODULES = frozenset(
    {"pytest", "_pytest", "pluggy", "py", "iniconfig", "unittest", "doctest", "nose", "nose2"}
)

#: Diagnostics listed before the rest is counted.
MAX_SHADOW_DIAGNOSTICS = 20
#: Module files and packages that would replace the test runner or the interpreter's start-up.
_MODULE_NAMES = frozenset({"pytest.py", "_pytest", "pytest", "pluggy", "pluggy.py", "py.py"})
_STARTUP_NAMES = frozenset({"sitecustomize.py", "usercustomize.py"})
#: Metadata directories that can declare a pytest plugin (``pytest11`` entry points).
_METADATA_SUFFIXES = (".dist-info", ".egg-info", ".egg-link")
#: Files pytest always reads as configuration or plugins when they apply.
_RUNNER_FILES = frozenset({"conftest.py", "pytest.ini"})
#: Shared configuration files: test infrastructure only when they hold a pytest section.
CONFIG_FILES = frozenset({"setup.cfg", "pyproject.toml", "tox.ini"})
_PYTEST_SECTION = re.compile(r"^\s*\[\s*(pytest|tool:pytest|tool\.pytest[^\]]*)\s*\]", re.MULTILINE)


def has_pytest_section(text: str) -> bool:
    """True when an ini/toml text configures pytest (``[pytest]``, ``[tool:pytest]``, ``[tool.pytest…]``)."""
    return _PYTEST_SECTION.search(text) is not None


def _why(path: str, kind: ChangeKind, pytest_configs: frozenset[str]) -> str | None:
    from wfbench.domain.workspace.rules import ChangeKind

    parts = path.lower().split("/")
    name = parts[-1]
    if kind is ChangeKind.DELETED:
        return None
    if name in _STARTUP_NAMES:
        return "runs at interpreter start-up"
    if name.endswith(".pth"):
        return "a .pth file runs at interpreter start-up from a site directory"
    if any(part in _MODULE_NAMES for part in path.split("/")):
        return "shadows the test runner"
    if any(part.endswith(_METADATA_SUFFIXES) for part in parts):
        return "package metadata can declare a pytest plugin"
    if name in _RUNNER_FILES:
        return "pytest configuration or plugin (conftest/ini)"
    if path in pytest_configs:
        return "a pytest section in a shared configuration file"
    return None


def shadowing_diagnostics(
    before: Mapping[str, str], after: Mapping[str, str], pytest_configs: frozenset[str] = frozenset()
) -> tuple[str, ...]:
    """One line per added or changed test-infrastructure path, sorted by path.

    ``before``/``after`` are workspace states (path -> fingerprint) around the agent's sessions;
    ``pytest_configs`` the changed ``setup.cfg``/``pyproject.toml``/``tox.ini`` paths whose text
    now holds a pytest section (:func:`has_pytest_section`, read by the caller).
    A package counts once (its top-most shadowing directory), and past
    :data:`MAX_SHADOW_DIAGNOSTICS` lines the rest is counted in a last line.
    """
    from wfbench.domain.workspace.rules import diff_states  # not at import: the gate reads only the prefix

    found: list[str] = []
    reported: list[str] = []
    for change in diff_states(before, after):
        why = _why(change.path, change.kind, pytest_configs)
        if why is None or any(change.path.startswith(prefix + "/") for prefix in reported):
            continue
        reported.append(change.path)
        found.append(f"{DIAGNOSTIC_PREFIX}{change.path} ({change.kind}): {why}")
    if len(found) > MAX_SHADOW_DIAGNOSTICS:
        rest = len(found) - MAX_SHADOW_DIAGNOSTICS
        found = [*found[:MAX_SHADOW_DIAGNOSTICS], f"{DIAGNOSTIC_PREFIX}… and {rest} more"]
    return tuple(found)
