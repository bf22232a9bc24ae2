"""scripts/venv on a fresh clone: it installs once, prints only its bin directory, and says nothing else.

The first install on a fresh machine used to print ``scripts/venv: line 40: …/.wfbench-installed: No
such file or directory`` (issue 23): the stamp's input redirect failed before ``2>/dev/null`` applied.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.support.realrepo_kit import registry_or_skip

REPO = Path(__file__).resolve().parents[2]


def _venv(clone: Path, venv: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "WFBENCH_VENV": str(venv)}
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run(
        ["bash", "scripts/venv"], cwd=clone, env=env, capture_output=True, text=True, timeout=600, check=False
    )


@pytest.mark.registry
@pytest.mark.slow
@pytest.mark.nightly
def test_scripts_venv_twice_from_a_fresh_clone_prints_only_its_bin_directory(tmp_path: Path) -> None:
    registry_or_skip()
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True, timeout=120)
    venv = tmp_path / "venv"
    first = _venv(clone, venv)
    assert first.returncode == 0, first.stderr
    assert first.stdout == f"{venv}/bin\n"
    # The script's own lines only: pip may print the machine's own index warnings, never a shell error.
    own = [line for line in first.stderr.splitlines() if line.startswith("scripts/venv")]
    assert own == [f"scripts/venv: installing wfbench into {venv}"], first.stderr
    assert not re.search(r"line \d+:|No such file or directory", first.stderr), first.stderr
    second = _venv(clone, venv)
    assert second.returncode == 0, second.stderr
    assert (second.stdout, second.stderr) == (f"{venv}/bin\n", "")  # installed already: silent
    done = subprocess.run(
        [f"{venv}/bin/python", "-c", "import wfbench, structlog; print(wfbench.__file__)"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(str(clone / "src"))
