"""The hidden oracle of an imported SWE-bench instance (standard library only; run by the task's Python).

``python swebench_oracle.py ORACLE_ROOT`` (docs/swebench.md):

1. copy the (read-only) workspace to a private directory;
2. **restore** there, as SWE-bench's harness does before it applies the test patch, every file the
   test patch touches to its base-commit version and remove the files it adds — whatever the agent
   did to them — and do the same for every test-infrastructure file (``conftest.py`` at any depth,
   ``pytest.ini``, ``tox.ini``, ``setup.cfg``, ``pyproject.toml``, ``*.pth``, ``sitecustomize``/
   ``usercustomize``, ``*.dist-info``/``*.egg-info`` in any letter case): base-commit version, or
   removed when the base commit has none, and the same for every file that holds an expected test
   and the ``__init__.py`` files above it (``ORACLE_ROOT/restore.json``); no ``__pycache__`` is kept;
3. apply ``ORACLE_ROOT/test.patch`` (exit 97 when it does not apply);
4. put the harness's canary module (``$WFBENCH_ORACLE_CANARY``) beside the first ``FAIL_TO_PASS``
   test file, importing what that file imports;
5. run exactly the ``FAIL_TO_PASS`` and ``PASS_TO_PASS`` tests and the canaries with pytest, plugin
   autoload off (the environment's own plugins named with ``-p``), a JUnit report written to
   ``$WFBENCH_ORACLE_REPORT`` (a path only the harness and this run know), and exit with pytest's
   status. The harness decides from that report **and** the status, never from output.
"""

from __future__ import annotations

import ast
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile

PATCH_NOT_APPLIED = 97
_CONFIG_NAMES = frozenset(
    {
        "conftest.py",
        "pytest.ini",
        "tox.ini",
        "setup.cfg",
        "pyproject.toml",
        "sitecustomize.py",
        "usercustomize.py",
    }
)
_METADATA = (".dist-info", ".egg-info", ".egg-link")
_RUNNERS = frozenset({"pytest", "_pytest", "pluggy", "py", "iniconfig", "unittest", "__future__"})
#: The standard library's modules; an image's env may run a Python older than 3.10 (no such list):
#: then only the interpreter's built-in modules count, and the canary imports a few packages more.
_STDLIB = frozenset(getattr(sys, "stdlib_module_names", sys.builtin_module_names))


def is_infrastructure(path: str) -> bool:
    """True for a file that configures or extends the test runner (any depth, any letter case)."""
    parts = path.lower().split("/")
    return (
        parts[-1] in _CONFIG_NAMES
        or parts[-1].endswith(".pth")
        or any(part.endswith(_METADATA) for part in parts)
    )


def restore(copy: str, files: dict[str, str | None]) -> None:
    """Base-commit versions of ``files`` (None: absent at base), and no other infrastructure file."""
    for dirpath, dirnames, filenames in os.walk(copy):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in [*filenames, *dirnames]:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, copy)
            stale = name == "__pycache__" or name.endswith(".pyc")  # no cache the agent wrote
            if (stale or (is_infrastructure(rel) and rel not in files)) and os.path.lexists(path):
                _remove(path)
    for rel, data in files.items():
        path = os.path.join(copy, rel)
        if os.path.lexists(path):
            _remove(path)
        if data is not None:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as handle:
                handle.write(base64.b64decode(data))


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def imported(path: str) -> tuple[str, ...]:
    """Top-level non-standard packages a test file imports (for the canary)."""
    try:
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError):
        return ()
    found: dict[str, None] = {}
    for node in tree.body:
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        for name in names:
            top = name.split(".", 1)[0]
            if top not in _STDLIB and top not in _RUNNERS:
                found[top] = None
    return tuple(found)


def place_canary(copy: str, first_test: str) -> str | None:
    """Copy the harness canary beside ``first_test``; its path relative to ``copy``."""
    source = os.environ.get("WFBENCH_ORACLE_CANARY")
    if not source:
        return None
    with open(source, encoding="utf-8") as handle:
        text = handle.read()
    packages = imported(os.path.join(copy, first_test))
    text = text.replace("PACKAGES = ()", f"PACKAGES = {packages!r}", 1)
    rel = os.path.join(os.path.dirname(first_test), os.path.basename(source))
    with open(os.path.join(copy, rel), "w", encoding="utf-8") as handle:
        handle.write(text)
    return rel


def environment_plugins(hidden: str) -> list[str]:
    """``-p MODULE`` for each pytest plugin the environment installs (never one from ``hidden``)."""
    from importlib import metadata

    path = [p for p in sys.path if p and not os.path.abspath(p).startswith(hidden)]
    modules: dict[str, None] = {}
    for dist in metadata.distributions(path=path):
        for entry in dist.entry_points:
            if entry.group == "pytest11":
                modules[entry.value.split(":")[0].strip()] = None
    return [option for module in modules for option in ("-p", module)]


def main(argv: list[str]) -> int:
    root = argv[1]
    with open(os.path.join(root, "tests.json"), encoding="utf-8") as handle:
        tests = json.load(handle)
    with open(os.path.join(root, "restore.json"), encoding="utf-8") as handle:
        files = json.load(handle)["files"]
    wanted = list(tests["FAIL_TO_PASS"]) + list(tests["PASS_TO_PASS"])
    copy = os.path.join(tempfile.mkdtemp(prefix="swebench-oracle-"), "workspace")
    shutil.copytree(os.getcwd(), copy, symlinks=True)
    restore(copy, files)
    patch = os.path.join(root, "test.patch")
    applied = subprocess.run(
        ["git", "-c", "core.fsmonitor=false", "apply", "--whitespace=nowarn", patch], cwd=copy, check=False
    )
    if applied.returncode != 0:
        print("the test patch does not apply", file=sys.stderr)
        return PATCH_NOT_APPLIED
    canary = place_canary(copy, tests["FAIL_TO_PASS"][0].split("::", 1)[0])
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    hidden = os.pathsep.join(p for p in (env.get("WFBENCH_METADATA_HIDDEN"), copy) if p)
    env["WFBENCH_METADATA_HIDDEN"] = hidden
    report = os.environ["WFBENCH_ORACLE_REPORT"]
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        *environment_plugins(copy),
        "--rootdir",
        copy,
        "-rA",
        "--tb=short",
        "-q",
        "--junitxml",
        report,
        *wanted,
        *([canary] if canary else []),
    ]
    return subprocess.run(command, cwd=copy, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv))
