"""The bwrap sandbox with its runtime under the host's /tmp (a clone, a venv or a scratch tree there).

A tree bound at the same path needs a mount point in the sandbox's /tmp tmpfs when its host path is
under /tmp, and so does the empty tmpfs over its site-packages. Before, such a runtime was bound
before the /tmp tmpfs (which then hid it) and TMPDIR (/tmp) started with the mount points' directories
in it. Now /tmp and HOME are made first and TMPDIR is a tmpfs of its own beside them
(adapters/sandbox/tmpdir.py). Real bubblewrap, required under WFBENCH_REQUIRE_BWRAP=1.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import harness_pythonpath
from tests.support.sweep_kit import bwrap_or_skip
from wfbench.adapters.sandbox.bwrap import BwrapSandbox, bwrap_argv, python_runtime_paths
from wfbench.adapters.sandbox.common import private_root
from wfbench.adapters.sandbox.tmpdir import mount_targets
from wfbench.domain.workspace.sandbox import Mount, SandboxPolicy

REPO = Path(__file__).resolve().parents[3]
SITE = f"lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages"


@pytest.fixture
def under_tmp() -> Iterator[Path]:
    """A fresh directory in the host's /tmp itself (pytest's tmp_path follows $TMPDIR, which CI may move)."""
    path = Path(tempfile.mkdtemp(prefix="wfbench-tmprt-", dir="/tmp"))  # noqa: S108 - the case under test
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def runtime(under_tmp: Path) -> Path:
    """A runtime tree under /tmp: a marker file and a site-packages holding a host package."""
    root = under_tmp / "runtime"
    (root / SITE).mkdir(parents=True)
    (root / SITE / "hostpkg.py").write_text("X = 1\n")
    (root / "marker").write_text("runtime here\n")
    return root


def _policy(workspace: Path, **kw: object) -> SandboxPolicy:
    workspace.mkdir(exist_ok=True)
    return SandboxPolicy(
        workspace=str(workspace),
        workspace_writable=True,
        network=False,
        timeout_s=30.0,
        env={"PATH": "/usr/bin:/bin"},
        **kw,  # type: ignore[arg-type]
    )


def test_tmp_and_home_are_made_before_a_runtime_under_tmp_is_bound(runtime: Path, tmp_path: Path) -> None:
    """bwrap's command line: the tmpfs first, then the runtime, its masked site-packages, TMPDIR last."""
    with private_root(None) as private:
        argv, tmpdir = bwrap_argv(
            "bwrap", ["true"], policy=_policy(tmp_path / "ws"), private=private, runtime_paths=[str(runtime)]
        )
    targets = list(mount_targets(argv))
    assert targets.index("/tmp") < targets.index(str(runtime)) < targets.index(str(runtime / SITE))
    assert targets.index("/home/agent") < targets.index(str(runtime))
    assert tmpdir == "/tmp/wfbench-tmp"
    assert targets[-1] == tmpdir  # after every bind: no mount point is ever made in it
    at = argv.index(tmpdir)
    assert argv[at - 3 : at] == ["--size", argv[argv.index("/tmp") - 2], "--tmpfs"]  # bounded like /tmp


def _tmp_mount_points(paths: tuple[str, ...]) -> set[str]:
    """The names a bind of each of ``paths`` makes directly in the sandbox's /tmp."""
    return {Path(p).relative_to("/tmp").parts[0] for p in paths if p.startswith("/tmp/")}  # noqa: S108


def test_a_runtime_under_tmp_stays_visible_and_tmpdir_starts_empty(runtime: Path, tmp_path: Path) -> None:
    """The runtime is readable at its path, its site-packages masked, TMPDIR writable, empty and fresh."""
    bwrap_or_skip()
    sandbox = BwrapSandbox(runtime_paths=[str(runtime)])
    env_tree = runtime.parent / "env-runtime"  # a task environment's runtime, bound at the same path
    env_tree.mkdir()
    (env_tree / "tool").write_text("tool\n")
    policy = _policy(tmp_path / "ws", mounts=(Mount(str(env_tree), str(env_tree)),))
    script = (
        'echo "tmpdir=$TMPDIR"; echo "listing=$(ls -A "$TMPDIR" | tr "\\n" " ")"; '
        f'cat {runtime}/marker {env_tree}/tool; echo "site=$(ls -A {runtime / SITE})"; '
        'echo x > "$TMPDIR/f" && echo x > /tmp/g && echo wrote'
    )
    first = sandbox.run(["/bin/sh", "-c", script], policy=policy)
    assert first.ok, first
    assert first.stdout.decode().splitlines() == [
        "tmpdir=/tmp/wfbench-tmp",
        "listing=",
        "runtime here",
        "tool",
        "site=",
        "wrote",
    ]
    second = sandbox.run(["/bin/sh", "-c", 'ls -A "$TMPDIR"; ls -A /tmp'], policy=policy)
    assert second.ok, second
    # Fresh: only TMPDIR and the mount points of the trees bound under /tmp (this runtime, and the
    # harness's own interpreter when the checkout or its venv lives under /tmp, e.g. /tmp/<clone>/.venv).
    assert sorted(second.stdout.decode().split()) == sorted(
        {runtime.parent.name, "wfbench-tmp", *_tmp_mount_points(python_runtime_paths())}
    )
    assert not (runtime / "f").exists()
    assert sorted(p.name for p in runtime.parent.iterdir()) == ["env-runtime", "runtime"]


def test_without_a_mount_under_tmp_tmpdir_is_still_slash_tmp(tmp_path: Path) -> None:
    """Control: the usual layout keeps TMPDIR=/tmp, empty."""
    bwrap_or_skip()
    result = BwrapSandbox().run(
        ["/bin/sh", "-c", 'echo "$TMPDIR"; ls -A "$TMPDIR"'], policy=_policy(tmp_path / "ws")
    )
    assert result.ok, result
    if not any(
        p.startswith("/tmp/") for p in (os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix))
    ):
        assert result.stdout == b"/tmp\n"
    else:  # this interpreter itself lives under /tmp
        assert result.stdout == b"/tmp/wfbench-tmp\n"


VENV_PROBE = """
import json, sys
from wfbench.adapters.sandbox.bwrap import BwrapSandbox
from wfbench.domain.workspace.sandbox import SandboxPolicy
venv, ws = sys.argv[1], sys.argv[2]
script = (
    'echo "$TMPDIR"; ls -A "$TMPDIR" | wc -l; test -f "$1/pyvenv.cfg" && echo venv-visible; '
    'echo x > "$TMPDIR/f" && echo wrote'
)
policy = SandboxPolicy(workspace=ws, workspace_writable=True, network=False, timeout_s=30.0,
                       env={"PATH": "/usr/bin:/bin"})
sandbox = BwrapSandbox()
runs = [sandbox.run(["/bin/sh", "-c", script, "sh", venv], policy=policy) for _ in range(2)]
print(json.dumps({"prefix": sys.prefix, "runs": [[r.ok, r.stdout.decode()] for r in runs]}))
"""


def test_a_harness_running_from_a_venv_under_tmp_gives_the_command_an_empty_tmpdir(
    under_tmp: Path, tmp_path: Path
) -> None:
    """The case CI's clean clone hit: wfbench's interpreter is a venv in /tmp (sys.prefix under /tmp)."""
    bwrap_or_skip()
    venv = under_tmp / "venv"
    python = os.path.realpath(sys.executable)
    subprocess.run(
        [python, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    (tmp_path / "ws").mkdir()
    # The venv is made from the base interpreter (as a user's would be); wfbench and its dependencies
    # are put on its path explicitly, never taken from whatever the base interpreter has installed.
    env = {**os.environ, "PYTHONPATH": harness_pythonpath()}
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", VENV_PROBE, str(venv), str(tmp_path / "ws")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert os.path.realpath(found["prefix"]) == str(venv.resolve())
    expected = [True, "/tmp/wfbench-tmp\n0\nvenv-visible\nwrote\n"]
    assert found["runs"] == [expected, expected]
