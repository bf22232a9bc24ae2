"""`wfbench release gate` end to end: demo sweeps under two runtime identities, through the real CLI.

Three sweeps of the demo's first two implementation tasks (``baseline_nomcp``, ``baseline``, 3 runs) with
the stand-in agent under bwrap: ``stable`` (runtime ``stable-2.1.0``), ``rc`` (``rc-2.2.0``,
the same scripted behaviour) and ``rc-regressed`` (``rc-2.2.0``, a provider script whose
baseline writes a wrong ``mode()``, so the candidate loses ``add-mode``). The runtime identity is
pinned with ``WFBENCH_RUNTIME_DIGEST``, as a lockfile-pinned harness does.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import attrs
import pytest
import yaml

from tests.support.demo_run import WFBENCH, bwrap_or_skip, wfbench

ARMS = "baseline_nomcp,baseline"
#: The demo's first two implementation tasks: what the sweeps ran and what the gate pins.
TASKS = ("--tasks", "fix-median,add-mode")


@attrs.frozen
class Sweeps:
    root: Path
    stable: Path
    rc: Path
    regressed: Path

    @property
    def corpus(self) -> Path:
        return self.stable / "demo-corpus" / "corpus.yaml"


def _sweep(out: Path, runtime: str, *extra: str) -> None:
    env = {**os.environ, "WFBENCH_RUNTIME_DIGEST": runtime}
    argv = [
        *WFBENCH,
        "run",
        "--out",
        str(out),
        "--arms",
        ARMS,
        "--runs",
        "3",
        "--workers",
        "3",
        *TASKS,
        *extra,
    ]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]


def _regressed_script(root: Path) -> Path:
    """The demo's provider script with one rule first: the baseline's mode() returns the largest value."""
    from importlib import resources

    script = yaml.safe_load(resources.files("wfbench.demo").joinpath("provider.yaml").read_text())
    wrong = (
        "    return ordered[len(ordered) // 2]\n\n\ndef mode(values):\n    counts = {}\n"
        "    for value in values:\n"
        "        counts[value] = counts.get(value, 0) + 1\n    best = max(counts.values())\n"
        "    return max(value for value, count in counts.items() if count == best)\n"
    )
    usage = {
        "input_tokens": 2200,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 9000,
        "output_tokens": 700,
    }
    rule = {
        "when": ["Add mode(values)", "Implement the change and verify"],
        "turns": [
            {
                "tools": [
                    {"name": "Read", "input": {"file_path": "{workspace}/calc/stats.py"}},
                    {
                        "name": "Edit",
                        "input": {
                            "file_path": "{workspace}/calc/stats.py",
                            "old_string": "    return ordered[len(ordered) // 2]\n",
                            "new_string": wrong,
                        },
                    },
                ],
                "usage": usage,
            },
            {"say": "Done.", "usage": usage},
        ],
    }
    script["conversations"].insert(0, rule)
    path = root / "regressed.yaml"
    path.write_text(yaml.safe_dump(script, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory: pytest.TempPathFactory) -> Sweeps:
    bwrap_or_skip()
    root = tmp_path_factory.mktemp("release")
    measured = Sweeps(root, root / "stable", root / "rc", root / "rc-regressed")
    _sweep(measured.stable, "stable-2.1.0")
    _sweep(measured.rc, "rc-2.2.0")
    _sweep(measured.regressed, "rc-2.2.0", "--provider-script", str(_regressed_script(root)))
    return measured


def _gate(sweeps: Sweeps, out: Path, candidate: Path | str, *extra: str) -> subprocess.CompletedProcess[str]:
    return wfbench(
        "release",
        "gate",
        "--candidate",
        str(candidate),
        "--stable",
        str(sweeps.stable),
        "--corpus",
        str(sweeps.corpus),
        "--out",
        str(out),
        *TASKS,
        *extra,
    )


def _evidence(out: Path) -> tuple[dict[str, Any], str]:
    return (
        json.loads((out / "release-quality-gate.json").read_text()),
        (out / "release-quality-gate.md").read_text(),
    )


def test_two_runtimes_with_the_same_behaviour_pass(sweeps: Sweeps, tmp_path: Path) -> None:
    """rc vs stable: exit 0, every delta 0; the markdown names both runtimes and the caveats."""
    done = _gate(sweeps, tmp_path, sweeps.rc)

    evidence, markdown = _evidence(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert evidence["passed"] is True
    assert evidence["problems"] == []
    assert {arm: v["solve_delta"] for arms in evidence["tasks"].values() for arm, v in arms.items()} == {
        "baseline": 0
    }
    assert set(evidence["tasks"]) == {"fix-median", "add-mode"}
    assert evidence["candidate_runtime"]["digest"] == "rc-2.2.0"
    assert evidence["stable_runtime"]["digest"] == "stable-2.1.0"
    assert "**PASS**" in markdown
    for text in ("rc-2.2.0", "stable-2.1.0", "no-GitNexus", "statistical"):
        assert text in markdown
    assert evidence["statistics"]["baseline"]["resolution"].startswith("resolution: +0.0 points")


def test_a_runtime_that_solves_a_task_fewer_times_fails(sweeps: Sweeps, tmp_path: Path) -> None:
    """rc-regressed vs stable: add-mode 0/3 against 3/3 → exit 1, the problem names the task."""
    done = _gate(sweeps, tmp_path, sweeps.regressed)

    evidence, markdown = _evidence(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert evidence["passed"] is False
    assert evidence["problems"] == ["add-mode [baseline]: RC solved 0/3; stable solved 3/3"]
    assert evidence["tasks"]["add-mode"]["baseline"]["solve_delta"] == -3
    assert "**FAIL**" in markdown
    for text in ("rc-2.2.0", "stable-2.1.0", "no-GitNexus", "statistical"):
        assert text in markdown


@pytest.mark.parametrize("content", [None, "{corrupt", '{"schema": "wfbench.release-evaluation/v1"}'])
def test_a_missing_or_corrupt_candidate_still_writes_failure_evidence(
    sweeps: Sweeps, tmp_path: Path, content: str | None
) -> None:
    """§8.7: the candidate file missing or corrupt → exit 1, no traceback, the fixed problem, **FAIL**."""
    candidate = tmp_path / "candidate.json"
    if content is not None:
        candidate.write_text(content)

    done = _gate(sweeps, tmp_path / "gate", candidate)

    evidence, markdown = _evidence(tmp_path / "gate")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert evidence["problems"] == ["candidate: invalid, incomplete, stale, or mismatched evidence/pins"]
    assert evidence["tasks"] == {}
    assert "**FAIL**" in markdown


def test_stored_evaluations_gate_like_the_sweeps_and_an_edit_is_caught(
    sweeps: Sweeps, tmp_path: Path
) -> None:
    """`release evaluate` writes a portable evaluation; gating it passes; editing a count fails."""
    stored = tmp_path / "rc.json"
    done = wfbench(
        "release", "evaluate", str(sweeps.rc), "--corpus", str(sweeps.corpus), "--out", str(stored), *TASKS
    )
    assert done.returncode == 0, done.stderr
    assert "complete" in done.stdout

    assert _gate(sweeps, tmp_path / "ok", stored).returncode == 0
    raw = json.loads(stored.read_text())
    raw["summary"]["baseline"]["solved"] = 999
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(raw))
    failed = _gate(sweeps, tmp_path / "edited", edited)
    evidence, _ = _evidence(tmp_path / "edited")
    assert failed.returncode == 1
    assert evidence["problems"] == ["candidate: invalid, incomplete, stale, or mismatched evidence/pins"]
    assert "rebuilding it from its rows gives a different evaluation" in evidence["diagnostics"]["candidate"]


def test_the_expected_runtime_identity_is_enforced(sweeps: Sweeps, tmp_path: Path) -> None:
    """--candidate-runtime naming another runtime than the sweep's: FAIL."""
    done = _gate(sweeps, tmp_path, sweeps.rc, "--candidate-runtime", "rc-2.3.0")

    evidence, _ = _evidence(tmp_path)
    assert done.returncode == 1
    assert evidence["problems"] == ["candidate: invalid, incomplete, stale, or mismatched evidence/pins"]
