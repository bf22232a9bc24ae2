"""scripts/hide-base-site: the test suite cannot lean on packages installed by hand into the base interpreter.

A throwaway venv stands in for a polluted base interpreter (a ``structlog`` planted in its
site-packages). As root the guard hides that site dir in a private mount namespace, so the command
cannot import it; ``check`` mode (what runs without root) refuses with one line naming the package and
what to remove. Positive controls: without the guard the planted package imports; a clean base passes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "hide-base-site"
SITE = f"lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages"


def _base(tmp_path: Path, *, polluted: bool) -> Path:
    venv = tmp_path / ("polluted" if polluted else "clean")
    subprocess.run(
        [os.path.realpath(sys.executable), "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120
    )
    if polluted:
        (venv / SITE / "structlog.py").write_text("PLANTED = True\n")
    return venv / "bin" / "python"


def _guard(base: Path, *argv: str, mode: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WFBENCH_BASE", "WFBENCH_HIDDEN"))}
    env["WFBENCH_BASE_PYTHON"] = str(base)
    env["PATH"] = f"{os.path.dirname(sys.executable)}:{env.get('PATH', '/usr/bin:/bin')}"
    if mode is not None:
        env["WFBENCH_BASE_SITE"] = mode
    return subprocess.run(
        ["bash", str(SCRIPT), *argv],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _imports_structlog(base: Path) -> list[str]:
    return [str(base), "-s", "-c", "import structlog; print(structlog.__file__)"]


def test_without_the_guard_a_planted_package_imports(tmp_path: Path) -> None:
    """Positive control: the planted package is what a polluted base interpreter would offer."""
    base = _base(tmp_path, polluted=True)
    done = _guard(base, *_imports_structlog(base), mode="visible")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(base.parent.parent / SITE / "structlog.py")


def test_as_root_the_base_site_packages_are_hidden_from_the_command(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("hiding the base's site-packages needs root (a private mount namespace)")
    base = _base(tmp_path, polluted=True)
    done = _guard(base, *_imports_structlog(base))
    assert done.returncode == 1, done  # the command ran and could not import it
    assert "No module named 'structlog'" in done.stderr
    assert "site-packages hidden for this run" in done.stderr
    assert (base.parent.parent / SITE / "structlog.py").exists()  # hidden, not removed


def test_the_check_refuses_a_polluted_base_with_one_line_naming_the_package(tmp_path: Path) -> None:
    base = _base(tmp_path, polluted=True)
    done = _guard(base, "true", mode="check")
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert "can import structlog" in lines[0]
    assert f"{base} -m pip uninstall structlog" in lines[0]


def test_a_clean_base_runs_the_command(tmp_path: Path) -> None:
    base = _base(tmp_path, polluted=False)
    done = _guard(base, "echo", "ran", mode="check")
    assert (done.returncode, done.stdout) == (0, "ran\n"), done.stderr
    assert sysconfig.get_path("purelib") != str(base.parent.parent / SITE)  # the suite's own venv is not it
