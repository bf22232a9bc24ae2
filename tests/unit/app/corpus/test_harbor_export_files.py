"""The files ``tasks export harbor`` writes for one task, as text."""

from __future__ import annotations

import tomllib

import attrs

from wfbench.app.corpus.corpus import OracleSpec, TaskKind, TaskSpec
from wfbench.app.corpus.harbor_export import build_script, dockerfile, task_toml
from wfbench.app.corpus.harbor_export import test_script as harbor_test_script
from wfbench.app.corpus.task_limits import TaskLimits
from wfbench.domain.environment.spec import EnvironmentSpec
from wfbench.domain.workspace.oracle import OracleFileSpec

SPEC = TaskSpec(
    id="fix-median",
    task_class='bug "fix"',
    kind=TaskKind.IMPLEMENTATION,
    repo="/repo",
    ref="main",
    prompt="Fix median.",
    verify="true",
    oracle=OracleSpec(
        command='python "$WFBENCH_ORACLE_ROOT/run.py"', files=(OracleFileSpec("o/run.py", "run.py"),)
    ),
    setup="touch ready",
    environment=EnvironmentSpec(install=("pip install pytest",), timeout_s=900.0),
    env=(("MODE", "a b"),),
)


def test_task_toml_says_the_category_timeouts_and_no_network_in_harbors_keys():
    parsed = tomllib.loads(task_toml(SPEC))
    assert parsed["metadata"]["category"] == 'bug "fix"'
    assert parsed["environment"] == {
        "build_timeout_sec": 900.0,
        "network_mode": "no-network",
        "workdir": "/app",
    }
    assert parsed["verifier"]["timeout_sec"] == 600.0


def test_a_tasks_own_limits_become_harbors_timeouts_and_resources_in_mib():
    limits = TaskLimits(agent_timeout_s=900.0, cpus=1.5, memory_bytes=1024**3, storage_bytes=10**9)
    parsed = tomllib.loads(task_toml(attrs.evolve(SPEC, limits=limits)))
    assert parsed["agent"]["timeout_sec"] == 900.0
    assert parsed["verifier"]["timeout_sec"] == 600.0
    assert (parsed["environment"]["cpus"], parsed["environment"]["memory_mb"]) == (1.5, 1024)
    assert parsed["environment"]["storage_mb"] == 954  # 10**9 bytes, rounded up to whole MiB
    assert "cpus" not in tomllib.loads(task_toml(SPEC))["environment"]


def test_a_host_network_task_is_public_in_harbor():
    assert (
        tomllib.loads(task_toml(attrs.evolve(SPEC, network="host")))["environment"]["network_mode"]
        == "public"
    )


def test_the_dockerfile_copies_the_snapshot_to_app_then_runs_the_installs_and_setup_in_a_script():
    lines = dockerfile(SPEC, "python:3.12-slim").splitlines()
    assert lines[:4] == ["FROM python:3.12-slim", "WORKDIR /app", "ENV MODE='a b'", "COPY workspace/ /app/"]
    assert lines[5] == "RUN /bin/sh /tmp/wfbench-build.sh && rm /tmp/wfbench-build.sh"
    assert build_script(attrs.evolve(SPEC, setup="a\nb")) == "set -eu\npip install pytest\na\nb\n"


def test_a_task_with_nothing_to_install_or_set_up_has_no_build_script():
    bare = attrs.evolve(SPEC, environment=None, setup=None)
    assert build_script(bare) is None
    assert "RUN" not in dockerfile(bare, "x")


def test_test_sh_runs_the_oracle_in_app_and_writes_the_reward_from_its_exit_status():
    script = harbor_test_script(SPEC)
    assert "export WFBENCH_ORACLE_ROOT=/tests" in script
    assert "cd /app\n/bin/sh -c 'python \"$WFBENCH_ORACLE_ROOT/run.py\"'" in script
    assert 'echo "$reward" > /logs/verifier/reward.txt' in script
    assert "WFBENCH_ORACLE_REPORT" not in script


def test_a_junit_oracle_writes_its_report_under_logs_verifier():
    junit = attrs.evolve(SPEC, oracle=attrs.evolve(SPEC.oracle, report="junit"))
    assert "export WFBENCH_ORACLE_REPORT=/logs/verifier/junit.xml" in harbor_test_script(junit)
