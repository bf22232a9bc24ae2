"""Task environments under bubblewrap: built once per digest, cached, read-only at /env in every cell,
no host site-packages importable, task variables everywhere, setup under ``set -eu``.

Builds here need no package registry: installs copy files the snapshot carries (a vendored module,
a shell tool), so the tests run offline; docs/real-repos.md shows registry installs.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require_or_skip
from tests.support.sweep_kit import (
    base_files,
    bash,
    bwrap_or_skip,
    by_task,
    impl_task,
    make_repo,
    rule,
    run_sweep,
    tell,
    turn,
    write_corpus,
)
from wfbench.adapters.repo.envbuild import CachedEnvironments, default_uv
from wfbench.adapters.repo.workspace import GitWorkspaces
from wfbench.adapters.sandbox.bwrap import BwrapSandbox
from wfbench.cli.bootstrap import harness_command_env
from wfbench.domain.environment.spec import EnvironmentSpec
from wfbench.domain.errors import SandboxError
from wfbench.domain.workspace.sandbox import Mount, SandboxPolicy

#: Installed on the host (the harness needs it), never in a task environment.
HOST_ONLY = "attrs"
VENDORED = {"vendor/greeting.py": "def hello():\n    return 'hello from the environment'\n"}
COPY_INTO_SITE = (
    'cp vendor/greeting.py "$(python -c "import sysconfig; print(sysconfig.get_path(\'purelib\'))")"/'
)


@pytest.fixture(scope="module")
def sandbox() -> BwrapSandbox:
    bwrap_or_skip()
    return BwrapSandbox()


@pytest.fixture
def snapshot(tmp_path: Path):
    repo = make_repo(tmp_path / "src", {**base_files(), **VENDORED})
    return GitWorkspaces().build_snapshot(str(repo), "main", str(tmp_path / "snapshot"))


def run_in(sandbox: BwrapSandbox, built, snapshot, command: str, env: dict[str, str] | None = None):
    """``command`` as a cell's verify would run it: workspace read-only, no network, the env at /env."""
    path = f"{built.bin_dir}:{harness_command_env()['PATH']}"
    mounts = (Mount(built.host_path, "/env"), *(Mount(p, p) for p in built.runtime_paths))
    policy = SandboxPolicy(
        workspace=snapshot.path,
        workspace_writable=False,
        network=False,
        timeout_s=60,
        env={**harness_command_env(), "PATH": path, **(env or {})},
        mounts=mounts,
    )
    return sandbox.run(["/bin/sh", "-c", command], policy=policy)


def test_a_package_installed_on_the_host_is_not_importable_in_the_sandbox(sandbox, snapshot, tmp_path):
    """attrs is installed for the harness; the environment's Python and the host's own cannot import it."""
    assert importlib.util.find_spec(HOST_ONLY) is not None  # control: the host really has it
    built = CachedEnvironments(sandbox, cache_dir=str(tmp_path / "cache")).ensure(
        EnvironmentSpec(install=(COPY_INTO_SITE,)), snapshot=snapshot, task_env={}
    )
    mine = run_in(sandbox, built, snapshot, "python -c 'import greeting; print(greeting.hello())'")
    assert mine.ok, mine.stderr_tail  # positive control: the environment's own package imports
    assert b"hello from the environment" in mine.stdout
    for python in (
        "python",
        os.path.realpath(sys.executable),
        os.path.realpath(sys._base_executable),
        "/usr/bin/python3",
    ):
        if not os.path.exists(python) and python != "python":
            continue
        leaked = run_in(sandbox, built, snapshot, f"{python} -c 'import {HOST_ONLY}'")
        assert not leaked.ok, python
        assert b"No module named" in leaked.stderr_tail, (python, leaked.stderr_tail)


def test_an_environment_is_built_once_and_then_comes_from_the_cache(sandbox, snapshot, tmp_path):
    cache = str(tmp_path / "cache")
    spec = EnvironmentSpec(install=(COPY_INTO_SITE,))
    first = CachedEnvironments(sandbox, cache_dir=cache).ensure(spec, snapshot=snapshot, task_env={})
    again = CachedEnvironments(sandbox, cache_dir=cache).ensure(spec, snapshot=snapshot, task_env={})
    assert (first.cached, again.cached) == (False, True)
    assert first.digest == again.digest
    assert first.build_s > 0
    assert again.build_s == 0.0
    other = CachedEnvironments(sandbox, cache_dir=cache).ensure(
        EnvironmentSpec(install=(COPY_INTO_SITE, "true")), snapshot=snapshot, task_env={}
    )
    assert other.digest != first.digest
    assert not other.cached


def test_a_failing_install_line_fails_the_build_under_set_eu(sandbox, snapshot, tmp_path):
    """`false` in the middle stops the build (no silent success); the message names the log."""
    cache = tmp_path / "cache"
    spec = EnvironmentSpec(python=None, install=("echo before", "false", "touch /env/bin/after"))
    with pytest.raises(SandboxError, match="environment build failed") as caught:
        CachedEnvironments(sandbox, cache_dir=str(cache)).ensure(spec, snapshot=snapshot, task_env={})
    assert "before" in str(caught.value)
    assert not any(p.is_dir() and (p / "bin").exists() for p in cache.iterdir() if len(p.name) == 64)


def test_a_build_reaches_no_host_but_the_package_registries(sandbox, snapshot, tmp_path):
    """The build's only way out is the registry proxy: a request to another host is refused (403) by the
    proxy before anything is resolved or connected, and the build fails."""
    fetch = "python -c \"import urllib.request; urllib.request.urlopen('https://example.com/', timeout=20)\""
    spec = EnvironmentSpec(install=(fetch,))
    with pytest.raises(SandboxError, match="environment build failed") as caught:
        CachedEnvironments(sandbox, cache_dir=str(tmp_path)).ensure(spec, snapshot=snapshot, task_env={})
    assert "403" in str(caught.value)


def test_a_shell_only_environment_puts_its_tools_first_on_path(sandbox, snapshot, tmp_path):
    spec = EnvironmentSpec(
        python=None,
        install=(
            "printf '#!/bin/sh\\necho tool says $GREETING\\n' > /env/bin/greet",
            "chmod +x /env/bin/greet",
        ),
    )
    built = CachedEnvironments(sandbox, cache_dir=str(tmp_path / "cache")).ensure(
        spec, snapshot=snapshot, task_env={}
    )
    assert built.python is False
    done = run_in(sandbox, built, snapshot, "greet", env={"GREETING": "hi"})
    assert done.ok, done.stderr_tail
    assert done.stdout.strip() == b"tool says hi"
    readonly = run_in(sandbox, built, snapshot, "touch /env/bin/planted")
    assert not readonly.ok  # cells get the environment read-only


def test_a_sweep_stamps_the_digest_passes_task_variables_everywhere_and_reuses_the_build(tmp_path):
    """env: {WFB_MARK: on} reaches setup, the agent's Bash, verify and the oracle; setup is set -eu."""
    bwrap_or_skip()
    root = tmp_path / "c"
    make_repo(root, {**base_files(), **VENDORED})
    check = (
        'test "$WFB_MARK" = on && python -c "import greeting"'
        ' && test "$(command -v python)" = /env/bin/python'
    )
    env_spec = {"python": "harness", "install": [COPY_INTO_SITE]}
    oracle = f"{check} && test -f $WFBENCH_ORACLE_ROOT/oracle.txt"
    setup = f"{check} && echo setup-ran > setup.txt"
    tasks = [
        impl_task(
            "envtask", verify=check, oracle=oracle, setup=setup, environment=env_spec, env={"WFB_MARK": "on"}
        ),
        impl_task("strict-setup", setup="false\necho not-reached > setup.txt"),
    ]
    script = {
        "conversations": [
            rule("envtask", turn(bash(f"{check} && echo agent-saw-it > agent.txt")), turn(say="done")),
            rule("strict-setup", turn(say="done")),
        ]
    }
    corpus = write_corpus(root, tasks, script)
    env = {**os.environ, "WFBENCH_CACHE": str(tmp_path / "cache")}
    done = run_sweep(corpus, tmp_path / "out", "--arms", "baseline", env=env)
    assert done.returncode in (0, 1), tell(done)
    rows = by_task(tmp_path / "out")
    good = rows["envtask"]
    assert (good["resolved"], good["error_kind"]) == (True, None), good
    assert len(good["environment_digest"]) == 64
    patch = (tmp_path / "out" / good["patch_artifact"]).read_text()
    assert "agent-saw-it" in patch  # the agent's Bash saw the variable, the environment and its package
    assert "setup-ran" in patch  # setup did too (its uncommitted file is part of the cell's change)
    strict = rows["strict-setup"]
    assert strict["error_kind"] == "infra-error", strict
    assert "setup failed" in strict["error_detail"]
    assert strict["environment_digest"] is None
    again = run_sweep(corpus, tmp_path / "out2", "--arms", "baseline", env=env)
    assert f"environment {good['environment_digest'][:12]} cached" in again.stdout, tell(again)
    assert by_task(tmp_path / "out2")["envtask"]["environment_digest"] == good["environment_digest"]


def test_the_host_really_has_the_package_the_sandbox_hides():
    """Negative control for the site-packages test: outside the sandbox the import works."""
    done = subprocess.run([sys.executable, "-c", f"import {HOST_ONLY}"], check=False)
    assert done.returncode == 0


#: A's build script (what `pip install -e .` would run as a build backend) plants into every cache
#: it can write; B's records what its own build can see of any cache.
HOSTILE_BUILD = (
    'for dir in "$PIP_CACHE_DIR" "$UV_CACHE_DIR" "$PIP_CACHE_DIR/.."; do\n'
    '  echo poisoned > "$dir/planted"\n'
    "done\n"
    "echo poisoned > /env/bin/planted\n"
)
RECORDING_BUILD = 'find "$PIP_CACHE_DIR/.." -mindepth 1 -print > /env/seen.txt\n'


@pytest.mark.parametrize("key_files", [None, ("requirements.txt",)], ids=["tree-keyed", "same-lockfile"])
def test_a_hostile_build_of_one_corpus_makes_nothing_appear_in_another_corpus_build(
    sandbox, tmp_path, key_files
):
    """Two repositories, one spec (and, keyed on it, one lockfile): B gets its own build and caches."""
    spec = EnvironmentSpec(python=None, install=("sh build.sh",), key_files=key_files)
    lock = {"requirements.txt": "attrs==23.1.0\n"}
    built = {}
    for name, script in (("a", HOSTILE_BUILD), ("b", RECORDING_BUILD)):
        repo = make_repo(tmp_path / f"repo-{name}", {**base_files(), **lock, "build.sh": script})
        snap = GitWorkspaces().build_snapshot(str(repo), "main", str(tmp_path / f"snap-{name}"))
        built[name] = CachedEnvironments(sandbox, cache_dir=str(tmp_path / "cache")).ensure(
            spec, snapshot=snap, task_env={}
        )
    a, b = built["a"], built["b"]
    assert b.digest != a.digest
    assert not b.cached
    seen = (Path(b.host_path) / "seen.txt").read_text().split()
    assert sorted(Path(line).name for line in seen) == ["pip", "uv"]  # its own caches, empty
    assert not (Path(b.host_path) / "bin" / "planted").exists()
    assert (tmp_path / "cache" / "caches" / a.digest / "pip" / "planted").is_file()  # A did plant


def _uv_or_skip() -> str:
    found = default_uv(os.environ)
    if found is None:
        require_or_skip("WFBENCH_REQUIRE_UV", "uv is not installed (scripts/install-tools pins it)")
    assert found is not None
    return found


def test_with_uv_an_environment_is_made_by_uv_and_its_pip_commands_run_as_uv_pip(sandbox, snapshot, tmp_path):
    uv = _uv_or_skip()
    spec = EnvironmentSpec(install=(COPY_INTO_SITE, "pip list --format freeze > /env/installed.txt"))
    cache = str(tmp_path / "cache")
    with_uv = CachedEnvironments(sandbox, cache_dir=cache, uv=uv)
    built = with_uv.ensure(spec, snapshot=snapshot, task_env={})
    env = Path(built.host_path)
    assert "uv = " in (env / "pyvenv.cfg").read_text()  # made by uv venv
    assert not list(env.glob("lib/python3*/site-packages/pip"))  # no pip bundled
    assert (env / "installed.txt").is_file()  # `pip list` ran (as uv pip list)
    assert run_in(sandbox, built, snapshot, "python -c 'import greeting; print(greeting.hello())'").ok
    assert with_uv.installer(spec) is not None
    plain = CachedEnvironments(sandbox, cache_dir=cache)
    assert plain.digest(spec, snapshot=snapshot, task_env={}) != built.digest  # the installer is an input


def test_with_uv_an_environment_with_nothing_to_install_is_still_the_interpreters_venv(
    sandbox, snapshot, tmp_path
):
    uv = _uv_or_skip()
    spec = EnvironmentSpec()
    cache = str(tmp_path / "cache")
    with_uv = CachedEnvironments(sandbox, cache_dir=cache, uv=uv)
    assert with_uv.installer(spec) is None
    assert (
        with_uv.installer(EnvironmentSpec(install=("python -m pip install .",))) is None
    )  # needs pip itself
    plain = CachedEnvironments(sandbox, cache_dir=cache)
    assert with_uv.digest(spec, snapshot=snapshot, task_env={}) == plain.digest(
        spec, snapshot=snapshot, task_env={}
    )
