"""Acceptance: a real-shaped library (src/ layout, editable install, its own pytest suite) and one of
its upstream-style fixes, end to end with no workaround — `tasks validate`, then `run` under bwrap
with the stand-in: the real fix resolves, a plausible wrong fix that keeps the old tests green is
`oracle-failed`, a no-op is `oracle-failed`. Then the same fix as a SWE-bench-format instance,
imported from a bare mirror, validated and run (the gold patch as the agent's edit resolves).

Environment builds install setuptools and pytest from PyPI: skipped when it is unreachable, required
in CI (WFBENCH_REQUIRE_REGISTRY=1).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.realrepo_kit import (
    BUGGY,
    ENVIRONMENT,
    FIXED,
    ORACLE,
    PYTEST,
    WRONG,
    bare_mirror,
    make_library,
    registry_or_skip,
    swebench_instance,
)
from tests.support.sweep_kit import MODEL, WFBENCH, bwrap_or_skip, by_task, rule, run_sweep, tell, turn

pytestmark = pytest.mark.registry
TARGET = "{workspace}/src/intervals/__init__.py"


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    bwrap_or_skip()
    registry_or_skip()
    root = tmp_path_factory.mktemp("real")
    made: dict[str, Any] = make_library(root)
    made["root"] = root
    made["env"] = {**os.environ, "WFBENCH_CACHE": str(root / "cache")}
    return made


def wfbench(lib: dict[str, Any], *args: str, timeout: float = 900):
    import subprocess

    return subprocess.run(
        [*WFBENCH, *args], capture_output=True, text=True, timeout=timeout, check=False, env=lib["env"]
    )


def edit_to(text: str) -> list[dict[str, Any]]:
    """Read the module, then rewrite its merge condition as ``text`` has it (the real CLI's order)."""
    old = "start < merged[-1][1]"
    new = next(line.strip() for line in text.splitlines() if "if merged and" in line).split("and ", 1)[1][:-1]
    return [
        {"name": "Read", "input": {"file_path": TARGET}},
        {"name": "Edit", "input": {"file_path": TARGET, "old_string": old, "new_string": new}},
    ]


def corpus(lib: dict[str, Any], ref: str, name: str) -> Path:
    root = lib["root"] / name
    (root / "oracles").mkdir(parents=True)
    (root / "oracles" / "test_touching.py").write_text(ORACLE)
    (root / "gold.patch").write_text(lib["gold"])
    task: dict[str, Any] = {
        "class": "bug-fix",
        "repo": "../intervals",
        "ref": ref,
        "verify": f"{PYTEST} tests",
        "oracle": {
            "command": f'{PYTEST} "$WFBENCH_ORACLE_ROOT/test_touching.py"',
            "files": [{"source": "oracles/test_touching.py", "target": "test_touching.py"}],
        },
        "gold_patch": "gold.patch",
    }
    tasks = [
        {
            "id": case,
            **task,
            "prompt": f"CASE {case}: merge() must merge touching intervals such as (1, 2), (2, 3).",
        }
        for case in ("fix-real", "fix-wrong", "fix-noop")
    ]
    swap = {"file_path": TARGET, "old_string": "sorted(ranges)", "new_string": "sorted(set(ranges))"}
    wrong_swap = [{"name": "Read", "input": {"file_path": TARGET}}, {"name": "Edit", "input": swap}]
    assert WRONG != BUGGY
    assert "sorted(set(ranges))" in WRONG
    script = {
        "conversations": [
            rule("fix-real", turn(*edit_to(FIXED)), turn(say="Fixed.")),
            rule("fix-wrong", turn(*wrong_swap), turn(say="Fixed.")),
            rule("fix-noop", turn(say="Nothing to change.")),
        ]
    }
    (root / "script.yaml").write_text(yaml.safe_dump(script, sort_keys=False, width=10_000))
    spec = {
        "name": name,
        "provider_script": "script.yaml",
        "defaults": {"model": MODEL},
        "environment": ENVIRONMENT,
        "tasks": tasks,
    }
    (root / "corpus.yaml").write_text(yaml.safe_dump(spec, sort_keys=False, width=10_000))
    return root / "corpus.yaml"


def test_tasks_validate_says_the_real_fix_task_is_valid(lib):
    done = wfbench(
        lib, "tasks", "validate", str(corpus(lib, lib["base"], "validate")), "--tasks", "fix-real", "--json"
    )
    assert done.returncode == 0, tell(done)
    [task] = json.loads(done.stdout)["tasks"]
    assert task["valid"] is True, task
    assert (task["oracle_at_base"], task["gold_verify"], task["gold_oracle"]) == (False, True, True)
    assert task["verify_at_base"] is True  # the old suite passes at the base commit
    assert len(task["environment_digest"]) == 64


def test_an_oracle_that_already_passes_at_the_base_commit_is_invalid(lib):
    """Negative control: based on the fix commit itself, the oracle measures nothing: exit 1."""
    done = wfbench(
        lib, "tasks", "validate", str(corpus(lib, lib["fix"], "already-fixed")), "--tasks", "fix-noop"
    )
    assert done.returncode == 1, tell(done)
    assert "INVALID" in done.stdout
    assert "already passes at the base commit" in done.stdout


def test_the_real_fix_resolves_and_a_wrong_fix_and_a_noop_are_oracle_failed(lib):
    out = lib["root"] / "out"
    done = run_sweep(
        corpus(lib, lib["base"], "sweep"),
        out,
        "--arms",
        "baseline",
        "--workers",
        "2",
        env=lib["env"],
        timeout=900,
    )
    rows = by_task(out)
    assert set(rows) == {"fix-real", "fix-wrong", "fix-noop"}, tell(done)
    real, wrong, noop = rows["fix-real"], rows["fix-wrong"], rows["fix-noop"]
    assert (real["resolved"], real["error_kind"]) == (True, None), real
    assert (wrong["resolved"], wrong["error_kind"], wrong["authored_tests_passed"]) == (
        False,
        "oracle-failed",
        True,
    )
    assert (noop["resolved"], noop["error_kind"]) == (False, "oracle-failed"), noop
    assert real["environment_digest"] == wrong["environment_digest"] == noop["environment_digest"]


def test_an_imported_swebench_instance_validates_and_its_gold_edit_resolves(lib):
    root = lib["root"] / "swe"
    repos = root / "mirrors"
    bare_mirror(lib, repos)
    instances = root / "instances.jsonl"
    instances.write_text(json.dumps(swebench_instance(lib)) + "\n")
    out_corpus = root / "corpus"
    done = wfbench(
        lib, "tasks", "import", "swebench", str(instances), "--repos", str(repos), "--out", str(out_corpus)
    )
    assert done.returncode == 0, tell(done)
    path = out_corpus / "corpus.yaml"
    valid = wfbench(lib, "tasks", "validate", str(path), "--json")
    assert valid.returncode == 0, tell(valid)
    [task] = json.loads(valid.stdout)["tasks"]
    assert (task["valid"], task["oracle_at_base"], task["gold_oracle"]) == (True, False, True), task
    loaded = yaml.safe_load(path.read_text())
    script = {
        "conversations": [
            {"when": ["touching intervals"], "turns": [turn(*edit_to(FIXED)), turn(say="done")]}
        ]
    }
    (out_corpus / "script.yaml").write_text(yaml.safe_dump(script, sort_keys=False, width=10_000))
    loaded["provider_script"] = "script.yaml"
    loaded["defaults"]["model"] = MODEL
    path.write_text(yaml.safe_dump(loaded, sort_keys=False, width=10_000))
    out = root / "out"
    swept = run_sweep(path, out, env=lib["env"], timeout=900)
    row = by_task(out)["acme__intervals-12"]
    assert (row["resolved"], row["error_kind"]) == (True, None), tell(swept) + json.dumps(row)[:2000]
