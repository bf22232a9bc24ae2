"""Each rule of the release evaluation and gate on its own (each test fails when its rule is removed).

The §8.7 examples are in ``test_release_gate.py``; these pin the single rules behind them: every
trust rule a row can break, the evaluation's own refusals and summaries, and the gate's output.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
from typing import Any

import pytest

from tests.unit.release.test_release_gate import ARMS, NOW, PINS, TASKS, _row, evaluation, gate, rows
from wfbench.domain.release.evaluation import (
    MAX_AGE,
    build_evaluation,
    canonical,
    task_set_digest,
    validate_evaluation,
)
from wfbench.domain.release.gate import GATE_SCHEMA, INVALID, paired_statistics

WHERE = "task-1/baseline/run 1"


def _build(per_run: list[dict[str, Any]], **overrides: Any) -> dict[str, Any]:
    return evaluation("rc", per_run, **overrides)


def _with(**changes: Any) -> list[dict[str, Any]]:
    out = rows("rc")
    for row in out:
        if (row["task"], row["run"], row["arm"]) == ("task-1", 1, "baseline"):
            row.update(changes)
    return out


@pytest.mark.parametrize(
    ("changes", "rule"),
    [
        ({"task_base_sha": "0" * 40}, "task or oracle differs from the pin"),
        ({"oracle_digest": "0" * 64}, "task or oracle differs from the pin"),
        ({"model": "other-model"}, "model or effort differs from the evaluation's"),
        ({"effort": "low"}, "model or effort differs from the evaluation's"),
        ({"runtime_digest": "stable"}, "runtime differs from the evaluation's"),
        ({"sandbox_backend": "host-unsafe"}, "not measured under bwrap"),
        ({"ok": False}, "the session did not end ok"),
        ({"ok": 1}, "the session did not end ok"),
        ({"resolved": "yes"}, "resolved is not authored tests and oracle passed"),
        ({"authored_tests_passed": None}, "resolved is not authored tests and oracle passed"),
        ({"oracle_passed": 1}, "resolved is not authored tests and oracle passed"),
        ({"oracle_passed": False}, "resolved is not authored tests and oracle passed"),
        ({"authored_tests_passed": False}, "resolved is not authored tests and oracle passed"),
        ({"error_kind": "timeout"}, "an error kind other than verify-failed or oracle-failed"),
        ({"error_kind": "infra-error"}, "an error kind other than verify-failed or oracle-failed"),
        ({"transcript_missing": True}, "transcript missing"),
        ({"transcript_missing": None}, "transcript missing"),
        ({"cost_usd": None}, "cost or duration not measured"),
        ({"cost_usd": -0.01}, "cost or duration not measured"),
        ({"cost_usd": True}, "cost or duration not measured"),
        ({"duration_s": math.inf}, "cost or duration not measured"),
        ({"duration_s": "60"}, "cost or duration not measured"),
        ({"sandbox_dependency_content_digest": "d" * 63}, "no dependency digest"),
        ({"sandbox_dependency_content_digest": "D" * 64}, "no dependency digest"),
        ({"sandbox_dependency_content_digest": None}, "no dependency digest"),
        ({"recorded_at": "2026-06-01T11:00:00"}, "no recorded_at time"),
        ({"recorded_at": "yesterday"}, "no recorded_at time"),
        ({"recorded_at": None}, "no recorded_at time"),
    ],
)
def test_each_trust_rule_makes_the_row_and_the_evaluation_untrusted(
    changes: dict[str, Any], rule: str
) -> None:
    ev = _build(_with(**changes))

    assert ev["problems"] == [f"{WHERE}: {rule}"]
    assert ev["complete"] is False
    assert "incomplete" in validate_evaluation(ev, pins=PINS, now=NOW, runtime_digest="rc")


@pytest.mark.parametrize(
    "changes",
    [
        {"error_kind": "verify-failed", "resolved": False, "authored_tests_passed": False},
        {"error_kind": "oracle-failed", "resolved": False, "oracle_passed": False},
        {"cost_usd": 0, "duration_s": 0.0},
        {"recorded_at": "2026-06-01T11:00:00+02:00"},
    ],
)
def test_a_wrong_answer_zero_cost_or_any_timezone_is_trusted(changes: dict[str, Any]) -> None:
    """Positive controls: a wrong answer is a measurement, not a broken one."""
    ev = _build(_with(**changes))

    assert ev["problems"] == []
    assert ev["complete"] is True


@pytest.mark.parametrize(
    ("overrides", "problem"),
    [
        ({"runs": 2}, "runs must be an integer of at least 3"),
        ({"model": ""}, "no pinned model"),
        ({"model": None}, "no pinned model"),
        ({"runtime": {"agent": "claude"}}, "no runtime identity"),
        ({"runtime": {"digest": ""}}, "no runtime identity"),
    ],
)
def test_the_evaluation_refuses_what_it_cannot_pin(overrides: dict[str, Any], problem: str) -> None:
    options: dict[str, Any] = {
        "tasks": PINS,
        "arms": ARMS,
        "runs": 3,
        "model": "pinned-model",
        "effort": "high",
        "runtime": {"digest": "rc"},
        "harness": {},
    }
    ev = build_evaluation(rows("rc"), **{**options, **overrides})

    assert problem in ev["problems"]
    assert ev["complete"] is False


def test_runs_must_be_an_integer() -> None:
    ev = build_evaluation(
        rows("rc"),
        tasks=PINS,
        arms=ARMS,
        runs=True,
        model="pinned-model",
        effort="high",  # type: ignore[arg-type]
        runtime={"digest": "rc"},
        harness={},
    )
    assert ev["problems"][0] == "runs must be an integer of at least 3"


def test_no_pinned_task_is_refused() -> None:
    ev = build_evaluation(
        [],
        tasks={},
        arms=ARMS,
        runs=3,
        model="pinned-model",
        effort="high",
        runtime={"digest": "rc"},
        harness={},
    )
    assert ev["problems"] == ["no pinned task"]
    assert ev["generated_at"] is None
    assert ev["measured_until"] is None


@pytest.mark.parametrize("identity", [{"run": "1"}, {"run": -1}, {"run": True}, {"task": None}, {"arm": 3}])
def test_a_row_without_a_valid_identity_is_a_problem(identity: dict[str, Any]) -> None:
    extra = _row("task-1", 0, "baseline", "rc")
    extra.update(identity)
    per_run = [*rows("rc"), extra]

    ev = _build(per_run)

    assert ev["problems"] == ["a row has no valid (task, run, arm) identity"]


def test_missing_cells_are_listed_up_to_twenty_then_counted() -> None:
    ev = evaluation("rc", [], runs=4)  # 2 tasks x 4 runs x 2 arms = 16 missing
    assert len([p for p in ev["problems"] if p.endswith(": missing")]) == 16
    assert not any(p.startswith("…") for p in ev["problems"])

    ev = evaluation("rc", [], runs=6)  # 24 missing
    missing = [p for p in ev["problems"] if p.endswith(": missing")]
    assert len(missing) == 20
    assert ev["problems"][-1] == "… and 4 more missing cells"
    assert missing[0] == "task-1/baseline/run 0: missing"


def test_a_third_copy_of_a_cell_is_reported_once() -> None:
    per_run = rows("rc") + [_row("task-1", 0, "baseline", "rc"), _row("task-1", 0, "baseline", "rc")]

    assert _build(per_run)["problems"] == ["task-1/baseline/run 0: appears more than once"]


def test_rows_are_kept_in_task_arm_run_order_with_only_the_run_fields() -> None:
    per_run = list(reversed(rows("rc")))
    per_run[0]["secret_extra"] = "x"

    ev = _build(per_run)

    keys = [(r["task"], r["arm"], r["run"]) for r in ev["per_run"]]
    assert keys == sorted(keys)
    assert all("secret_extra" not in row for row in ev["per_run"])


def test_generated_at_is_the_oldest_measurement_and_measured_until_the_newest() -> None:
    per_run = rows("rc")
    per_run[0]["recorded_at"] = (NOW - dt.timedelta(days=2)).isoformat()
    per_run[1]["recorded_at"] = (NOW - dt.timedelta(minutes=5)).isoformat()

    ev = _build(per_run)

    assert ev["generated_at"] == (NOW - dt.timedelta(days=2)).isoformat()
    assert ev["measured_until"] == (NOW - dt.timedelta(minutes=5)).isoformat()


def test_mean_cost_and_wall_changes_against_the_control() -> None:
    per_run = rows("rc")
    for row in per_run:
        if row["arm"] == "baseline":
            row["cost_usd"], row["duration_s"] = 1.5, 30.0

    ev = _build(per_run)

    assert ev["summary"]["baseline"]["mean_cost_usd"] == 1.5
    assert ev["summary"]["baseline_nomcp"]["mean_duration_s"] == 60.0
    assert ev["paired"] == {
        "control": "baseline_nomcp",
        "arms": {"baseline": {"solve_delta": 0, "cost_change_pct": 50.0, "duration_change_pct": -50.0}},
    }


def test_a_zero_control_cost_has_no_percentage_and_no_control_has_no_pairs() -> None:
    per_run = rows("rc")
    for row in per_run:
        if row["arm"] == "baseline_nomcp":
            row["cost_usd"] = 0.0

    assert _build(per_run)["paired"]["arms"]["baseline"]["cost_change_pct"] is None
    assert evaluation("rc", control=None)["paired"] == {"control": None, "arms": {}}
    assert evaluation("rc", control="workflow")["paired"] == {"control": None, "arms": {}}


def test_an_arm_without_rows_has_unknown_means() -> None:
    ev = evaluation("rc", rows("rc"), arms={**ARMS, "review": "review"})

    unknown = {"cells": 0, "solved": 0, "mean_cost_usd": None, "mean_duration_s": None}
    assert ev["summary"]["review"] == unknown
    assert ev["complete"] is True  # no review task is pinned: no review cell is expected


# --------------------------------------------------------------------------- the gate's output


def test_the_gate_json_holds_the_verdict_the_tasks_and_the_shared_fields() -> None:
    result = gate(evaluation("rc"), evaluation("stable"))
    stamp = dt.datetime(2026, 6, 1, 12, 30, tzinfo=dt.UTC)

    out = result.to_mapping(generated_at=stamp, candidate={"digest": "rc"}, stable={"digest": "stable"})

    assert out["schema"] == GATE_SCHEMA
    assert out["generated_at"] == "2026-06-01T12:30:00+00:00"
    assert out["candidate_runtime"] == {"digest": "rc"}
    assert out["stable_runtime"] == {"digest": "stable"}
    assert out["passed"] is True
    assert out["problems"] == []
    assert out["gated_arms"] == ["baseline"]
    assert out["tasks"] == {t: {"baseline": {"candidate": 2, "stable": 2, "solve_delta": 0}} for t in TASKS}
    assert set(out["measurements"]) == {"candidate", "stable"}
    assert out["measurements"]["stable"]["summary"]["baseline"]["solved"] == 4
    assert out["diagnostics"] == {}
    assert out["harness"] == {"wfbench_version": "0.9.0"}
    assert out["model"] == "pinned-model"
    assert out["effort"] == "high"
    assert out["runs"] == 3
    assert out["task_set_digest"] == evaluation("rc")["task_set_digest"]


def test_an_invalid_side_is_diagnosed_alone_and_the_json_lists_it() -> None:
    stale = evaluation("stable")
    result = gate(evaluation("rc"), evaluation("stable", per_run=rows("stable")[:-1]))

    out = result.to_mapping(generated_at=NOW, candidate=None, stable=None)

    assert out["problems"] == [f"stable: {INVALID}"]
    assert out["passed"] is False
    assert list(out["diagnostics"]) == ["stable"]
    assert "incomplete" in out["diagnostics"]["stable"]
    assert out["tasks"] == {}
    assert out["measurements"] == {}
    assert "model" not in out
    assert stale["complete"]


def test_an_equal_count_is_no_loss_and_a_loss_names_the_counts() -> None:
    stable_rows = rows("stable")
    for row in stable_rows:
        if (row["task"], row["run"], row["arm"]) == ("task-2", 0, "baseline"):
            row.update(resolved=True, oracle_passed=True, error_kind=None)

    result = gate(evaluation("rc"), evaluation("stable", stable_rows))

    assert result.problems == ("task-2 [baseline]: RC solved 2/3; stable solved 3/3",)
    assert result.tasks["task-1"]["baseline"] == {"candidate": 2, "stable": 2, "solve_delta": 0}
    assert result.tasks["task-2"]["baseline"] == {"candidate": 2, "stable": 3, "solve_delta": -1}
    assert not result.passed
    assert result.shared["runs"] == 3


def test_an_arm_is_gated_only_on_tasks_of_its_kind() -> None:
    arms = {**ARMS, "review": "review"}

    result = gate(evaluation("rc", arms=arms), evaluation("stable", arms=arms))

    assert result.passed
    assert result.gated_arms == ("baseline", "review")
    assert all(set(per_arm) == {"baseline"} for per_arm in result.tasks.values())


def test_the_given_gated_arms_replace_the_default() -> None:
    result = gate(evaluation("rc"), evaluation("stable"), gated_arms=["baseline_nomcp"])

    assert result.gated_arms == ("baseline_nomcp",)
    assert all(set(per_arm) == {"baseline_nomcp"} for per_arm in result.tasks.values())


def test_without_a_control_every_arm_is_gated() -> None:
    result = gate(evaluation("rc", control=None), evaluation("stable", control=None))

    assert result.gated_arms == ("baseline_nomcp", "baseline")


def test_paired_statistics_pair_each_task_with_stable_as_the_incumbent() -> None:
    changed = rows("rc")
    for row in changed:
        if row["arm"] == "baseline":
            row["cost_usd"] = 0.5

    stats = paired_statistics(evaluation("rc", changed), evaluation("stable"), "baseline")

    assert stats is not None
    assert stats.candidate == "candidate"
    assert stats.incumbent == "stable"
    assert stats.resolution.estimate == 0.0
    assert [pair.task for pair in stats.samples.tasks] == list(TASKS)
    for pair in stats.samples.tasks:
        assert pair.candidate.metric == (0.5, 0.5, 0.5)
        assert pair.incumbent.metric == (1.0, 1.0, 1.0)
        assert pair.incumbent.resolved == (False, True, True)
    assert stats.metric.estimate is not None


# --------------------------------------------------------------------- validate_evaluation, rule by rule


def _check(ev: Any, *, now: dt.datetime = NOW, runtime: str | None = "rc") -> tuple[str, ...]:
    return validate_evaluation(ev, pins=PINS, now=now, runtime_digest=runtime)


def test_canonical_json_is_sorted_compact_and_refuses_nan() -> None:
    assert canonical({"b": 1, "a": [1, 2.5]}) == '{"a":[1,2.5],"b":1}'
    assert task_set_digest({"t": {"sha": "s"}}) == hashlib.sha256(b'{"t":{"sha":"s"}}').hexdigest()
    with pytest.raises(ValueError, match="JSON"):
        canonical({"a": math.nan})


@pytest.mark.parametrize("raw", [None, [], "x", {"schema": "wfbench.release-evaluation/v0"}])
def test_what_is_not_an_evaluation_fails_on_its_schema_alone(raw: Any) -> None:
    assert _check(raw) == ("not a release evaluation (schema)",)


def test_an_unexpected_runtime_fails_on_that_alone() -> None:
    assert _check(evaluation("rc"), runtime="stable") == ("runtime identity differs from the one expected",)
    assert _check(evaluation("rc"), runtime=None) == ()


def test_a_runtime_that_is_not_an_object_fails() -> None:
    ev = evaluation("rc")
    ev["runtime"] = "rc"

    assert "runtime identity differs from the one expected" in _check(ev, runtime=None)


def test_a_stored_completeness_flag_is_not_trusted() -> None:
    ev = evaluation("rc")
    ev["complete"] = "yes"

    assert _check(ev) == ("incomplete", "rebuilding it from its rows gives a different evaluation")


def test_a_tampered_task_set_digest_fails_on_the_pins() -> None:
    ev = evaluation("rc")
    ev["task_set_digest"] = "0" * 64

    assert _check(ev) == (
        "tasks differ from the pins",
        "rebuilding it from its rows gives a different evaluation",
    )


def test_freshness_is_seven_days_inclusive_and_nothing_may_be_in_the_future() -> None:
    ev = evaluation("rc")
    generated = dt.datetime.fromisoformat(ev["generated_at"])
    until = dt.datetime.fromisoformat(ev["measured_until"])

    assert _check(ev, now=generated + MAX_AGE) == ()
    assert _check(ev, now=generated + MAX_AGE + dt.timedelta(microseconds=1)) == ("stale or future-dated",)
    assert _check(ev, now=until) == ()
    assert _check(ev, now=until - dt.timedelta(microseconds=1)) == ("stale or future-dated",)


def test_measurement_times_must_carry_a_timezone() -> None:
    for field in ("generated_at", "measured_until"):
        ev = evaluation("rc")
        ev[field] = ev[field][:19]  # drop the offset
        assert _check(ev)[0] == "no timezone-aware measurement times", field


def test_an_extra_field_anywhere_fails_the_rebuild() -> None:
    ev = evaluation("rc")
    ev["summary"]["baseline"]["note"] = "edited"

    assert _check(ev) == ("rebuilding it from its rows gives a different evaluation",)


def test_an_evaluation_missing_a_field_cannot_be_rebuilt() -> None:
    ev = evaluation("rc")
    del ev["harness"]

    assert _check(ev) == ("rebuilding it from its rows does not give a complete evaluation",)


def test_a_value_canonical_json_cannot_hold_fails_the_rebuild() -> None:
    ev = evaluation("rc")
    ev["extra"] = math.nan

    assert _check(ev) == ("rebuilding it from its rows gives a different evaluation",)
