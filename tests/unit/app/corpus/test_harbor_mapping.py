"""Harbor's task.toml, key by key: mapped, reported, or refused — never silently dropped."""

from __future__ import annotations

from typing import Any

import pytest

from wfbench.app.corpus.harbor import HarborTask, ImportOptions, map_task, oracle_command
from wfbench.domain.errors import InputError
from wfbench.domain.workspace.oracle import OracleOutcome, parse_reward, reward_verdict


def _task(
    config: dict[str, Any], *, tests: tuple[str, ...] = ("test.sh",), solution: bool = True
) -> HarborTask:
    return HarborTask(
        id="t1",
        directory="/tasks/t1",
        config=config,
        instruction="Do it.\n",
        tests=tests,
        has_dockerfile=True,
        has_solution=solution,
    )


def _map(config: dict[str, Any], **options: Any) -> Any:
    return map_task(_task(config), ImportOptions(**options), base="tasks/t1")


def test_the_instruction_tests_dockerfile_and_solution_become_prompt_oracle_environment_and_gold():
    task = _map({"metadata": {"category": "bug-fix"}}).task
    assert task["prompt"] == "Do it.\n"
    assert task["class"] == "harbor:bug-fix"
    assert task["environment"] == {
        "containerfile": "tasks/t1/environment/Dockerfile",
        "context": "tasks/t1/environment",
    }
    assert task["oracle"]["report"] == "reward"
    assert task["oracle"]["mount"] == "/tests"
    assert task["oracle"]["files"] == [{"source": "tasks/t1/tests/test.sh", "target": "test.sh"}]
    assert task["gold_script"] == "tasks/t1/solution/solve.sh"


def test_a_task_without_a_solution_has_no_gold():
    assert "gold_script" not in map_task(_task({}, solution=False), ImportOptions(), base="b").task


def test_allow_internet_is_refused_without_the_host_network_opt_in_and_kept_with_it():
    with pytest.raises(InputError, match="--network host") as caught:
        _map({"environment": {"allow_internet": True}})
    assert caught.value.field == "environment.allow_internet"
    assert _map({"environment": {"allow_internet": True}}, network_host=True).task["network"] == "host"


def test_a_public_agent_network_is_the_internet_too_but_no_network_is_fine():
    with pytest.raises(InputError):
        _map({"agent": {"network_mode": "public"}})
    assert "network" not in _map({"environment": {"network_mode": "no-network"}}).task


def test_a_verifier_asking_for_the_network_is_reported_not_refused():
    mapped = _map({"verifier": {"network_mode": "public"}})
    assert any("verifier never has a network" in note for note in mapped.notes)


def test_the_agent_and_verifier_timeouts_become_the_tasks_limits():
    task = _map({"verifier": {"timeout_sec": 120}, "agent": {"timeout_sec": 900.0}}).task
    assert task["limits"] == {"agent_timeout": 900.0, "verifier_timeout": 120}


def test_cpus_and_the_mib_resources_become_the_tasks_limits():
    task = _map({"environment": {"cpus": 2, "memory_mb": 4096, "storage_mb": 10240}}).task
    assert task["limits"] == {"cpus": 2.0, "memory": "4096M", "storage": "10240M"}


def test_the_deprecated_size_strings_map_too_and_agree_with_their_mib_twins():
    task = _map({"environment": {"memory": "4g", "memory_mb": 4096, "storage": "1.5G"}}).task
    assert task["limits"] == {"memory": "4096M", "storage": "1.5G"}


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("cpus", -1),
        ("cpus", "two"),
        ("cpus", float("nan")),
        ("memory_mb", -512),
        ("memory_mb", "2G"),
        ("storage_mb", 0),
        ("memory", "4GB"),
        ("storage", "-1G"),
        ("memory", 4096),
    ],
)
def test_a_bad_resource_value_is_refused_naming_the_key(key: str, value: Any):
    with pytest.raises(InputError) as caught:
        _map({"environment": {key: value}})
    assert (caught.value.field, caught.value.locator) == (f"environment.{key}", "t1")
    assert caught.value.source == "/tasks/t1/task.toml"


def test_memory_and_memory_mb_that_disagree_are_refused():
    with pytest.raises(InputError, match="conflicts"):
        _map({"environment": {"memory_mb": 2048, "memory": "4G"}})


def test_the_build_timeout_image_and_workdir_are_mapped():
    mapped = _map(
        {"environment": {"build_timeout_sec": 900, "docker_image": "ghcr.io/x/y:1", "workdir": "/srv"}}
    )
    assert mapped.task["environment"] == {"timeout": 900, "image": "ghcr.io/x/y:1"}
    assert mapped.workdir == "/srv"


def test_unknown_keys_anywhere_are_reported_by_name():
    notes = _map({"flavour": 1, "environment": {"colour": "red"}, "agent": {"user": "bob"}}).notes
    assert "t1: flavour: unknown key, not used" in notes
    assert any(n.startswith("t1: environment.colour:") for n in notes)
    assert any(n.startswith("t1: agent.user:") for n in notes)


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"steps": [{"name": "a"}]}, "steps"),
        ({"environment": {"gpus": 1}}, "environment.gpus"),
        ({"environment": {"os": "windows"}}, "environment.os"),
        ({"environment": {"mcp_servers": [{"name": "x"}]}}, "environment.mcp_servers"),
        ({"verifier": {"environment_mode": "separate"}}, "verifier.environment_mode"),
        ({"environment": {"env": {"TOKEN": "${GITHUB_TOKEN}"}}}, "environment.env.TOKEN"),
        ({"agent": {"timeout_sec": -1}}, "agent.timeout_sec"),
    ],
)
def test_what_wfbench_cannot_honour_is_refused_naming_the_key(config, field):
    with pytest.raises(InputError) as caught:
        _map(config)
    assert caught.value.field == field


def test_the_verifiers_variables_prefix_test_sh_and_the_environments_become_task_variables():
    task = _map(
        {"verifier": {"env": {"NAME": "Ada Lovelace"}}, "environment": {"env": {"MODE": "fast"}}}
    ).task
    assert task["oracle"]["command"] == "NAME='Ada Lovelace' bash /tests/test.sh"
    assert task["env"] == {"MODE": "fast"}
    assert oracle_command({}) == "bash /tests/test.sh"


def test_more_test_files_than_the_oracle_stages_are_refused():
    many = tuple(f"f{i}.py" for i in range(8))
    with pytest.raises(InputError, match="at most 7"):
        map_task(_task({}, tests=many), ImportOptions(), base="b")


def test_the_reward_threshold_is_the_users_choice():
    assert _map({}, reward_above=0.5).task["oracle"]["reward_above"] == 0.5


@pytest.mark.parametrize(
    ("text", "data", "reward"),
    [
        (b"1\n", None, 1.0),
        (b" 0.25 ", b'{"reward": 9}', 0.25),
        (None, b'{"reward": 0.5, "x": 1}', 0.5),
        (None, b'{"score": 2}', 2.0),
    ],
)
def test_the_reward_comes_from_reward_txt_first_then_reward_json(text, data, reward):
    assert parse_reward(text, data) == (reward, None)


@pytest.mark.parametrize(
    ("text", "data"),
    [
        (None, None),
        (b"", None),
        (b"nan", None),
        (b"yes", None),
        (None, b"[1]"),
        (None, b'{"a": 1, "b": 2}'),
        (None, b'{"reward": true}'),
    ],
)
def test_a_missing_or_malformed_reward_is_a_problem_never_zero(text, data):
    value, problem = parse_reward(text, data)
    assert value is None
    assert problem


def test_the_verdict_needs_exit_zero_and_a_reward_above_the_threshold_and_keeps_the_reward():
    passed = reward_verdict(exit_ok=True, returncode=0, reward=0.7, problem=None, above=0.5)
    assert passed.passed
    assert passed.reward == 0.7
    assert passed.evidence == "reward"
    low = reward_verdict(exit_ok=True, returncode=0, reward=0.5, problem=None, above=0.5)
    assert not low.passed
    assert low.outcome is OracleOutcome.REWARD_LOW
    assert low.reward == 0.5
    crashed = reward_verdict(exit_ok=False, returncode=2, reward=1.0, problem=None, above=0.0)
    assert not crashed.passed
    assert crashed.outcome is OracleOutcome.EXIT_STATUS
    missing = reward_verdict(exit_ok=True, returncode=0, reward=None, problem="no reward.txt", above=0.0)
    assert not missing.passed
    assert missing.outcome is OracleOutcome.NO_REPORT
    assert "no reward.txt" in missing.detail
