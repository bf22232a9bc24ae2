"""`wfbench plan RESULTS --effect 10%` as a real subprocess over a pilot's results.jsonl."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tests.cli.test_gate_cmd import reference_row, wfbench, write_results
from wfbench.domain.promotion.planning import Target, parse_effect


def pilot(tmp_path: Path, tasks: int = 10) -> Path:
    """A 10-task × 3-run pilot: the candidate ~10% cheaper, resolution alike, noisy costs."""
    rnd = random.Random(1)
    rows = []
    for index in range(tasks):
        rate = rnd.uniform(0.3, 0.8)
        for arm, factor in (("workflow", 1.0), ("candidate_workflow", 0.9)):
            for run in range(3):
                resolved = rnd.random() < rate
                extra = {} if resolved else {"oracle_passed": False, "error_kind": "oracle-failed"}
                cost = round(factor * rnd.lognormvariate(0, 0.3), 4)
                rows.append(
                    reference_row(f"t{index:02d}", arm, run, resolved=resolved, cost_usd=cost, **extra)
                )
    write_results(tmp_path, rows)
    return tmp_path


def test_plan_prints_the_pilot_the_grid_and_the_cheapest_design(tmp_path: Path) -> None:
    done = wfbench("plan", pilot(tmp_path), "--effect", "10%", "--tasks", "10,40,160", "--runs", "1,3")

    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "pair candidate_workflow vs workflow: 10 tasks x 3 runs per arm; median session cost $" in out
    assert "cost_usd saving: " in out
    assert "between-task tau2 " in out
    assert "target 10%: per design the gate's MDE of a cost_usd saving, the chance the gate promotes" in out
    assert "(one-sided alpha 0.025 per claim after Holm; resolution equal, 'refused' below" in out
    assert "    tasks  runs=1" in out
    assert " refused " in out  # one run per arm is below the default --min-runs 3
    assert "  cheapest design reaching 10%: " in out
    assert "x 3 runs per arm" in out.split("cheapest design reaching 10%: ")[1]
    assert "(the gate promotes it with 8" in out or "(the gate promotes it with 9" in out
    assert "target 10 points" not in out


def test_plan_honours_min_runs_and_may_then_recommend_one_run(tmp_path: Path) -> None:
    done = wfbench("plan", pilot(tmp_path), "--effect", "10%", "--runs", "1", "--min-runs", "1", "--json")

    assert done.returncode == 0, done.stderr
    (pair,) = json.loads(done.stdout)
    (saving,) = pair["targets"]
    assert saving["recommended"]["runs"] == 1
    assert saving["recommended"]["power"] >= 0.8
    assert not any(cell["refused"] for cell in saving["grid"])


def test_plan_as_json_has_a_grid_and_a_recommendation_per_target(tmp_path: Path) -> None:
    done = wfbench(
        "plan", pilot(tmp_path), "--effect", "10%", "--effect", "20pts", "--json", "--runs", "1,2,3"
    )

    assert done.returncode == 0, done.stderr
    (pair,) = json.loads(done.stdout)
    saving, resolution = pair["targets"]
    assert (saving["on"], saving["unit"], resolution["on"], resolution["unit"]) == (
        "cost_usd",
        "savings_pct",
        "resolution",
        "points",
    )
    cheapest = saving["recommended"]
    assert cheapest["reaches"]
    assert cheapest["runs"] >= 3  # the gate refuses fewer than --min-runs (3)
    assert cheapest["power"] >= 0.8
    assert cheapest["mde"] <= 10.0
    assert cheapest["sessions"] == 2 * cheapest["tasks"] * cheapest["runs"]
    assert cheapest["cost"] == pytest.approx(cheapest["sessions"] * pair["session_cost"])
    reaching = [cell for cell in saving["grid"] if cell["reaches"]]
    assert all(cheapest["cost"] <= cell["cost"] for cell in reaching)
    assert pair["statistics"]["resolution"]["n_tasks"] == 10


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--effect", "10"), "--effect: give a unit"),
        (("--effect", "abc%"), "--effect: not a number"),
        (("--effect", "120%"), "--effect: must be positive"),
        (("--tasks", "ten"), "--tasks: expected comma-separated integers"),
        (("--runs", "0"), "--runs: expected positive integers"),
        (("--power", "1.5"), "--power: must be a number strictly between 0 and 1"),
        (("--pair", "x=y"), "no candidate=incumbent pair has rows of both arms"),
    ],
)
def test_bad_plan_options_exit_2_naming_the_option(
    tmp_path: Path, args: tuple[str, ...], needle: str
) -> None:
    done = wfbench("plan", pilot(tmp_path, tasks=3), *args)

    assert done.returncode == 2
    assert needle in done.stderr


@pytest.mark.parametrize(
    ("text", "target"),
    [
        ("10%", Target(10.0, False)),
        ("15pts", Target(15.0, True)),
        (" 7.5 PT ", Target(7.5, True)),
        ("2points", Target(2.0, True)),
    ],
)
def test_effects_carry_their_unit(text: str, target: Target) -> None:
    assert parse_effect(text) == target
