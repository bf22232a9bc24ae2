"""The release evaluation and gate at their edges: each refusal stage's whole verdict, boundaries, order.

``test_release_gate.py`` has the §8.7 examples and ``test_release_rules.py`` each trust rule; these pin
what a user of ``release-quality-gate.json`` reads at every way the gate can fail (a failed gate is
``passed: false`` with no tasks and no measurements, whatever stopped it), the limits of the missing-cell
list, rounding of the descriptive figures, the order rows are kept in, and which rows the paired
statistics pair.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from tests.unit.release.test_release_gate import ARMS, DEP, NOW, PINS, TASKS, _row, evaluation, gate, rows
from wfbench.domain.release.evaluation import build_evaluation, validate_evaluation
from wfbench.domain.release.gate import INVALID, ReleaseGate, dependency_problems, paired_statistics


def _json(result: ReleaseGate) -> dict[str, Any]:
    return result.to_mapping(generated_at=NOW, candidate=None, stable=None)


def _refused_json(problems: list[str], diagnostics: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "schema": "wfbench.release-quality-gate/v1",
        "generated_at": NOW.isoformat(),
        "candidate_runtime": None,
        "stable_runtime": None,
        "passed": False,
        "problems": problems,
        "gated_arms": [],
        "tasks": {},
        "measurements": {},
        "diagnostics": diagnostics or {},
    }


def test_an_invalid_side_writes_a_failed_gate_with_its_diagnostics_only() -> None:
    """Both sides invalid: one fixed problem per side, the rules each failed, nothing measured."""
    result = gate(evaluation("rc", per_run=[]), evaluation("stable", runs=2))

    assert _json(result) == _refused_json(
        [f"candidate: {INVALID}", f"stable: {INVALID}"],
        {
            "candidate": [
                "incomplete",
                "no timezone-aware measurement times",
                "rebuilding it from its rows does not give a complete evaluation",
            ],
            "stable": [
                "incomplete",
                "fewer than 3 runs",
                "rebuilding it from its rows does not give a complete evaluation",
            ],
        },
    )


def test_sides_that_differ_write_a_failed_gate_naming_every_field() -> None:
    """Model and effort both differ: both named, in the documented order; nothing measured."""
    stable_rows = [{**row, "model": "other-model", "effort": "low"} for row in rows("stable")]
    result = gate(evaluation("rc"), evaluation("stable", stable_rows, model="other-model", effort="low"))

    assert _json(result) == _refused_json(
        ["candidate and stable use different model", "candidate and stable use different effort"]
    )


def test_different_dependencies_write_a_failed_gate_naming_every_task() -> None:
    """Both tasks graded against other dependencies on the stable side: one problem per task, sorted."""
    stable_rows = [{**row, "sandbox_dependency_content_digest": "e" * 64} for row in rows("stable")]
    result = gate(evaluation("rc"), evaluation("stable", stable_rows))

    assert _json(result) == _refused_json(
        [
            f"{task}: candidate and stable were not graded against identical task dependencies"
            for task in TASKS
        ]
    )


def test_an_unknown_gated_arm_writes_a_failed_gate() -> None:
    """The first arm that is not in the evaluations is named; nothing is measured."""
    result = gate(evaluation("rc"), evaluation("stable"), gated_arms=["baseline", "workflow", "other"])

    assert _json(result) == _refused_json(["gated arm workflow is not an arm of the evaluations"])


def test_a_passing_gate_measures_each_side_by_its_summary_and_pairs() -> None:
    """measurements: per side exactly its evaluation's summary and paired sections."""
    candidate, stable = evaluation("rc"), evaluation("stable")

    result = gate(candidate, stable)

    assert result.passed is True
    assert result.measurements == {
        "candidate": {"summary": candidate["summary"], "paired": candidate["paired"]},
        "stable": {"summary": stable["summary"], "paired": stable["paired"]},
    }


def test_an_arm_of_another_kind_listed_first_does_not_hide_the_arms_after_it() -> None:
    """The per-task rule skips an arm whose kind is not the task's and goes on to the next arm."""
    arms = {"review": "review", **ARMS}
    candidate = evaluation("rc", arms=arms, control="baseline_nomcp")
    stable_rows = rows("stable")
    for row in stable_rows:
        if (row["task"], row["arm"], row["run"]) == ("task-1", "baseline", 0):
            row.update(resolved=True, oracle_passed=True, error_kind=None)

    result = gate(candidate, evaluation("stable", stable_rows, arms=arms))

    assert result.gated_arms == ("review", "baseline")
    assert result.tasks == {
        "task-1": {"baseline": {"candidate": 2, "stable": 3, "solve_delta": -1}},
        "task-2": {"baseline": {"candidate": 2, "stable": 2, "solve_delta": 0}},
    }
    assert result.problems == ("task-1 [baseline]: RC solved 2/3; stable solved 3/3",)
    assert result.passed is False


# --------------------------------------------------------------------------- dependency digests


def _side(*digests: Any, task: str = "t") -> dict[str, Any]:
    return {"per_run": [{"task": task, "sandbox_dependency_content_digest": d} for d in digests]}


def test_one_graded_row_with_a_digest_is_enough() -> None:
    """A task graded once, on one side, with a well-formed digest has no dependency problem."""
    assert dependency_problems(["t"], [_side(DEP), _side(task="other")]) == []


@pytest.mark.parametrize(
    "sides",
    [
        [_side(DEP), _side("e" * 64)],
        [_side(DEP, "e" * 64)],
        [_side(5), _side(5)],
        [_side(None)],
        [_side(DEP), _side(DEP.upper())],
    ],
)
def test_a_task_needs_one_well_formed_digest_on_every_row(sides: list[dict[str, Any]]) -> None:
    """Two digests, a number (even the same on both sides), a missing or an upper-case one: a problem."""
    assert dependency_problems(["t"], sides) == [
        "t: candidate and stable were not graded against identical task dependencies"
    ]


# --------------------------------------------------------------------------- the evaluation's edges


def test_twenty_missing_cells_are_all_listed_and_the_twenty_first_is_counted() -> None:
    """Exactly 20 missing: 20 lines, no count; 21 missing: 20 lines and "… and 1 more"."""
    twenty = evaluation("rc", [], runs=5)["problems"]  # 2 tasks x 5 runs x 2 arms
    assert len(twenty) == 20
    assert all(problem.endswith(": missing") for problem in twenty)

    twenty_one = evaluation("rc", rows("rc", 6)[:3], runs=6)["problems"]  # 24 cells, 3 present
    assert len(twenty_one) == 21
    assert twenty_one[-1] == "… and 1 more missing cells"


def test_a_row_without_identity_does_not_stop_the_other_rows_being_checked() -> None:
    """The bad row is reported and the rows after it are still matched to their cells."""
    bad = {**_row("task-1", 0, "baseline", "rc"), "run": "zero"}

    ev = evaluation("rc", [bad, *rows("rc")])

    assert ev["problems"] == ["a row has no valid (task, run, arm) identity"]


def test_runs_that_are_not_a_count_expect_no_cell() -> None:
    """runs=True is refused and no cell is expected: every row is unexpected, none missing."""
    ev = build_evaluation(
        rows("rc", 1),
        tasks=PINS,
        arms=ARMS,
        runs=True,
        model="pinned-model",
        effort="high",  # type: ignore[arg-type]
        runtime={"digest": "rc"},
        harness={},
    )

    assert ev["problems"] == [
        "runs must be an integer of at least 3",
        "task-1/baseline_nomcp/run 0: not an expected cell",
        "task-1/baseline/run 0: not an expected cell",
        "task-2/baseline_nomcp/run 0: not an expected cell",
        "task-2/baseline/run 0: not an expected cell",
    ]


def test_a_row_with_a_bad_run_is_kept_before_the_runs_of_its_cell() -> None:
    """Rows are ordered by task, arm and run; a run that is not a count sorts first in its (task, arm)."""
    per_run = rows("rc")
    bad = {**per_run.pop(0), "run": "first"}  # task-1, run 0, baseline_nomcp, given last
    per_run.append(bad)

    kept = evaluation("rc", per_run)["per_run"]

    assert [(r["task"], r["arm"], r["run"]) for r in kept[:4]] == [
        ("task-1", "baseline", 0),
        ("task-1", "baseline", 1),
        ("task-1", "baseline", 2),
        ("task-1", "baseline_nomcp", "first"),
    ]
    assert [r["run"] for r in kept[3:6]] == ["first", 1, 2]


def test_means_are_rounded_to_six_decimals_and_changes_to_two() -> None:
    """mean cost 0.1234567 → 0.123457; a third more than the control is +33.33 %, a third less −33.33 %."""
    per_run = rows("rc")
    for row in per_run:
        if row["arm"] == "baseline_nomcp":
            row.update(cost_usd=0.1234567, duration_s=3.0)
        else:
            row.update(cost_usd=0.1234567 * 4 / 3, duration_s=2.0)

    ev = evaluation("rc", per_run)

    assert ev["summary"]["baseline_nomcp"]["mean_cost_usd"] == 0.123457
    assert ev["summary"]["baseline"]["mean_duration_s"] == 2.0
    assert ev["paired"]["arms"]["baseline"] == {
        "solve_delta": 0,
        "cost_change_pct": 33.33,
        "duration_change_pct": -33.33,
    }


def test_a_first_measurement_in_the_future_is_future_dated_even_when_the_last_is_not() -> None:
    """A tampered evaluation whose oldest time is after its newest still fails on freshness."""
    ev = evaluation("rc")
    ev["generated_at"] = (NOW + dt.timedelta(hours=1)).isoformat()

    failed = validate_evaluation(ev, pins=PINS, now=NOW, runtime_digest="rc")

    assert failed == (
        "stale or future-dated",
        "rebuilding it from its rows gives a different evaluation",
    )


# --------------------------------------------------------------------------- paired statistics


def _runs(task: str, arm: str, costs: list[float], solved: list[bool]) -> list[dict[str, Any]]:
    return [
        {"task": task, "arm": arm, "run": run, "resolved": ok, "cost_usd": cost, "duration_s": 10.0 * run}
        for run, (cost, ok) in enumerate(zip(costs, solved, strict=True))
    ]


def test_paired_statistics_pair_only_the_arms_runs_on_tasks_both_sides_ran() -> None:
    """Rows of other arms and tasks stable never ran are left out; each task gets its own runs."""
    candidate = {
        "per_run": [
            *_runs("t1", "a", [1.0, 2.0], [True, False]),
            *_runs("t2", "a", [3.0, 4.0], [True, True]),
            *_runs("t3", "a", [5.0], [True]),  # stable never ran t3
            *_runs("t4", "b", [9.0], [False]),  # another arm only
        ]
    }
    stable = {
        "per_run": [
            *_runs("t1", "a", [1.5, 2.5], [False, False]),
            *_runs("t2", "a", [3.5], [True]),
            *_runs("t4", "a", [7.0], [True]),  # the candidate never ran arm a on t4
        ]
    }

    stats = paired_statistics(candidate, stable, "a", metric="duration_s")

    assert stats is not None
    assert stats.samples.metric == "duration_s"
    assert [(p.task, p.candidate.metric, p.incumbent.metric) for p in stats.samples.tasks] == [
        ("t1", (0.0, 10.0), (0.0, 10.0)),
        ("t2", (0.0, 10.0), (0.0,)),
    ]
    assert [(p.candidate.resolved, p.incumbent.resolved) for p in stats.samples.tasks] == [
        ((True, False), (False, False)),
        ((True, True), (True,)),
    ]


def test_no_task_run_on_both_sides_has_no_paired_statistics() -> None:
    """Only the candidate ran the arm: nothing to pair."""
    candidate = {"per_run": _runs("t1", "a", [1.0], [True])}

    assert paired_statistics(candidate, {"per_run": _runs("t1", "b", [1.0], [True])}, "a") is None
