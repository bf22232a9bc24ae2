"""The run manifest: what a resume may change, what it may not, and the model-name rule."""

from __future__ import annotations

import attrs
import pytest

from wfbench.domain.errors import InputError
from wfbench.domain.results.rows import Row
from wfbench.domain.sweep.manifest import (
    CONFIG_OPTIONS,
    MANIFEST_SCHEMA_VERSION,
    OPERATIONAL_OPTIONS,
    Conflict,
    RunManifest,
    check_model_name,
    drift_conflicts,
    option_conflicts,
    row_conflicts,
)

TASK = {
    "id": "t1",
    "sha": "a" * 40,
    "prompt_digest": "p",
    "setup_digest": None,
    "verify_digest": "v",
    "oracle_digest": "o",
    "oracle_command_digest": "c",
    "oracle_manifest_digest": "m",
    "sandbox_dependency_content_digest": "dc",
    "sandbox_dependency_manifest_digest": "dm",
}


def manifest(**changes: object) -> RunManifest:
    base = RunManifest(
        started_at="2026-01-01T00:00:00+00:00",
        argv=("run", "corpus.yaml"),
        wfbench_version="0.1.0",
        corpus_path="/c/corpus.yaml",
        corpus_digest="cd",
        demo=False,
        arms=("workflow", "candidate_workflow"),
        runs=3,
        model="claude-sonnet-4-5",
        agent="standin",
        agent_version="standin 0.1.0",
        sandbox="bwrap",
        provider_script="/c/provider.yaml",
        provider_script_digest="pd",
        base_url=None,
        candidate_overlay="/c/overlay",
        candidate_overlay_digest="od",
        reuse_results=None,
        include_expensive=False,
        session_timeout_s=5400.0,
        verify_timeout_s=600.0,
        runtime_digest="rd",
        workers=2,
        window=None,
        outage_streak=5,
        tasks=(TASK,),
    )
    return attrs.evolve(base, **changes)


@pytest.mark.parametrize(
    "name", ["claude-sonnet-4-5", "  claude-opus-4-5  ", "m", "gpt-5.1-codex", "autopilot-1"]
)
def test_a_pinned_model_name_is_accepted_stripped(name: str) -> None:
    assert check_model_name(name) == name.strip()


@pytest.mark.parametrize(
    "name",
    [
        "latest",
        "auto",
        "AUTO",
        "claude-latest",
        "claude-sonnet@LATEST",
        "org/auto",
        "model:latest",
        "x-Latest",
    ],
)
def test_a_mutable_alias_is_refused_naming_the_option(name: str) -> None:
    with pytest.raises(InputError) as caught:
        check_model_name(name)

    assert caught.value.field == "--model"
    assert "mutable alias" in caught.value.reason


@pytest.mark.parametrize("name", [None, "", "   "])
def test_a_blank_model_is_refused(name: str | None) -> None:
    with pytest.raises(InputError, match="blank"):
        check_model_name(name)


def test_the_manifest_round_trips_and_keeps_fields_it_does_not_know() -> None:
    recorded = manifest()
    raw = {**recorded.to_mapping(), "agent_versions": {"codex": "0.171.0"}}

    back = RunManifest.from_mapping(raw)

    assert back == attrs.evolve(recorded, extra={"agent_versions": {"codex": "0.171.0"}})
    assert back.to_mapping() == raw
    assert raw["schema_version"] == MANIFEST_SCHEMA_VERSION


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("runs", "3", "a non-negative integer"),
        ("arms", "workflow", "a list of strings"),
        ("demo", 1, "true or false"),
        ("model", None, "a string"),
        ("tasks", [1], "a list of objects"),
    ],
)
def test_a_mistyped_field_is_named(field: str, value: object, expected: str) -> None:
    raw = {**manifest().to_mapping(), field: value}

    with pytest.raises(InputError) as caught:
        RunManifest.from_mapping(raw, source="DIR/manifest.json")

    assert caught.value.field == field
    assert caught.value.source == "DIR/manifest.json"
    assert expected in caught.value.reason


def test_a_missing_required_field_and_a_newer_schema_are_refused() -> None:
    raw = manifest().to_mapping()
    del raw["runs"]
    with pytest.raises(InputError, match="is missing"):
        RunManifest.from_mapping(raw)
    with pytest.raises(InputError, match="unsupported run manifest schema"):
        RunManifest.from_mapping({**manifest().to_mapping(), "schema_version": MANIFEST_SCHEMA_VERSION + 1})
    with pytest.raises(InputError, match="JSON object"):
        RunManifest.from_mapping([])


def test_options_equal_to_the_manifest_are_no_conflict() -> None:
    given = {
        "--runs": 3,
        "--arms": ["workflow", "candidate_workflow"],
        "--timeout": 5400,
        "--model": "claude-sonnet-4-5",
    }

    assert option_conflicts(manifest(), given) == ()


def test_each_contradicting_option_is_named_with_both_values() -> None:
    given = {"--runs": 5, "--arms": ["workflow"], "--model": "other", "--include-expensive": True}

    conflicts = option_conflicts(manifest(), given)

    assert [c.message() for c in conflicts] == [
        "--runs 5 contradicts this sweep's --runs 3",
        "--arms workflow contradicts this sweep's --arms workflow,candidate_workflow",
        "--model other contradicts this sweep's --model claude-sonnet-4-5",
        "--include-expensive on contradicts this sweep's --include-expensive off",
    ]


def test_every_configuration_option_is_compared_and_operational_ones_never_are() -> None:
    """Each option of CONFIG_OPTIONS conflicts when changed (a rule removed fails this test)."""
    recorded = manifest()
    for option in CONFIG_OPTIONS:
        assert option_conflicts(recorded, {option: "something-else"}), option
    assert option_conflicts(recorded, dict.fromkeys(OPERATIONAL_OPTIONS, 99)) == ()


def test_drift_names_the_file_the_runtime_and_the_task_field_that_changed() -> None:
    moved = {**TASK, "sha": "b" * 40}
    current = manifest(
        corpus_digest="cd2", agent_version="standin 0.2.0", runtime_digest="rd2", tasks=(moved,)
    )

    conflicts = drift_conflicts(manifest(), current)

    assert [c.what for c in conflicts] == [
        "the corpus file",
        "the agent version",
        "the runtime (wfbench, Python, agent, script)",
        "task t1 sha",
    ]
    assert conflicts[0].message() == "the corpus file changed since the sweep started (was cd, now cd2)"


def test_no_drift_when_nothing_changed_and_unknown_dependency_digests_are_not_drift() -> None:
    unprepared = {**TASK, "sandbox_dependency_content_digest": None}

    assert drift_conflicts(manifest(), manifest()) == ()
    assert drift_conflicts(manifest(), manifest(tasks=(unprepared,))) == ()


def test_a_different_task_selection_is_drift() -> None:
    other = {**TASK, "id": "t2"}

    assert drift_conflicts(manifest(), manifest(tasks=(other,))) == (
        Conflict("the selected tasks", "t1", "t2", drift=True),
    )


def _row(**fields: object) -> Row:
    base = {
        "task": "t1",
        "arm": "workflow",
        "run": 0,
        "ok": True,
        "resolved": True,
        "benchmark_model": "claude-sonnet-4-5",
        "sandbox_backend": "bwrap",
        "runtime_digest": "rd",
        "task_base_sha": "a" * 40,
    }
    return Row.from_mapping({**base, **fields})


def test_rows_that_agree_with_the_configuration_are_no_conflict() -> None:
    assert row_conflicts(manifest(), [_row(), _row(run=2, arm="candidate_workflow")]) == ()


@pytest.mark.parametrize(
    ("fields", "what"),
    [
        ({"benchmark_model": "claude-opus-4-5"}, "--model"),
        ({"sandbox_backend": "host-unsafe"}, "--sandbox"),
        ({"runtime_digest": "other"}, "the runtime (wfbench, Python, agent, script)"),
        ({"arm": "baseline"}, "--arms"),
        ({"run": 3}, "--runs"),
        ({"task_base_sha": "b" * 40}, "task t1 sha"),
    ],
)
def test_each_way_rows_contradict_the_configuration_is_named(fields: dict[str, object], what: str) -> None:
    """Every rule of row_conflicts has a row that trips it (a rule removed fails its case)."""
    conflicts = row_conflicts(manifest(), [_row(), _row(**fields)])

    assert [c.what for c in conflicts] == [what]
