"""Apply-time validation: every mutation of the reference's baseline fixture (promotion.md §8.5)."""

from __future__ import annotations

import copy
import datetime as dt
import hashlib
import json
from collections.abc import Callable
from typing import Any

import attrs
import pytest

from tests.unit.promotion.promotion_fixtures import MODEL, resolved_of, review_runs, runs, same, table
from wfbench.domain.promotion.evidence import EvidenceBindings, PromotionEvidence, RunStatus
from wfbench.domain.promotion.gates import evaluate_candidate, evaluate_review_candidate
from wfbench.domain.promotion.policy import REFERENCE_POLICY, DecisionPolicy, PromotionPolicy
from wfbench.domain.promotion.validation import ApplyExpectation, validate_for_apply

NOW = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
ARM = "candidate_workflow"


def _task(task_id: str) -> dict[str, Any]:
    digest = hashlib.sha256(task_id.encode()).hexdigest()
    return {
        "id": task_id,
        "sha": "a" * 40,
        "prompt_digest": digest,
        "oracle_digest": digest,
        "oracle_command_digest": digest,
        "oracle_manifest_digest": digest,
        "sandbox_dependency_content_digest": digest,
        "sandbox_dependency_manifest_digest": digest,
        "oracle_files": [{"target": "tests/test_hidden.py", "sha256": digest, "size": 120}],
    }


def _bindings(task_ids: tuple[str, ...], proposer: str | None = "proposer-model") -> EvidenceBindings:
    return EvidenceBindings(
        benchmark_model=MODEL,
        proposer_model=proposer,
        effort="xhigh",
        candidate_overlay="overlays/next",
        candidate_overlay_digest="b" * 64,
        target_base_digests={".claude/skills/gitnexus-work/SKILL.md": "c" * 64},
        selected_tasks=tuple(_task(task_id) for task_id in task_ids),
    )


def _rows(impossible: tuple[str, ...] = ("task-impossible",)):
    rows = [*runs("task-a", "workflow", same(3, cost_usd=1.0)), *runs("task-a", ARM, same(3, cost_usd=0.8))]
    for task in impossible:
        rows += runs(task, "workflow", resolved_of(0, 3, cost_usd=1.0))
        rows += runs(task, ARM, resolved_of(0, 3, cost_usd=1.0))
    return rows


def _fixture(
    impossible: tuple[str, ...] = ("task-impossible",), proposer: str | None = "proposer-model"
) -> tuple[dict[str, Any], ApplyExpectation]:
    """Schema 6, complete, expiring in one day; the decision is built by the real producer."""
    task_ids = ("task-a", *impossible)
    bindings = _bindings(task_ids, proposer)
    decision = evaluate_candidate(
        table(_rows(impossible)), candidate=ARM, incumbent="workflow", model=MODEL, tasks=task_ids
    )
    evidence = PromotionEvidence.build(
        [decision], policy=REFERENCE_POLICY, generated_at=NOW - dt.timedelta(days=89), bindings=bindings
    )
    raw = json.loads(json.dumps(evidence.to_mapping()))
    return raw, ApplyExpectation(bindings=bindings, required_candidate_arms=(ARM,), policy=REFERENCE_POLICY)


def problems_after(mutate: Callable[[dict[str, Any]], Any] | None = None, **kw: Any) -> tuple[str, ...]:
    raw, expected = _fixture(**kw)
    if mutate is not None:
        mutate(raw)
    return validate_for_apply(raw, expected=expected, now=NOW)


def mentions(problems: tuple[str, ...], text: str) -> bool:
    """Some problem ends with ``text`` (problems start with the arm or task they concern)."""
    return any(problem.endswith(text) for problem in problems)


def test_the_unmutated_fixture_is_accepted() -> None:
    """The baseline evidence (promote on task-a, task-impossible ungated) passes every check."""
    raw, _ = _fixture()

    assert problems_after() == ()
    assert raw["decisions"][0]["decision"] == "promote"
    assert raw["required_candidate_arms"] == [ARM]


def _decision(raw: dict[str, Any]) -> dict[str, Any]:
    return raw["decisions"][0]


def _keep(raw: dict[str, Any]) -> None:
    _decision(raw)["decision"] = "keep_incumbent"


def _duplicate(raw: dict[str, Any]) -> None:
    raw["decisions"].append(copy.deepcopy(_decision(raw)))


def _wrong_arm(raw: dict[str, Any]) -> None:
    _decision(raw)["candidate_arm"] = "candidate_review"


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda raw: raw.update(decisions=[]), "one decision per required candidate arm"),
        (_keep, "is keep_incumbent, not promote"),
        (_duplicate, "repeat a candidate arm"),
        (_wrong_arm, "not a required candidate arm"),
        (lambda raw: raw.update(decisions="promote"), "must be a list of decision objects"),
    ],
)
def test_decision_list_mutations_are_refused(mutate: Callable[[dict[str, Any]], Any], message: str) -> None:
    """No decision, a keep, a duplicate, a wrong arm or a non-list: refused."""
    assert mentions(problems_after(mutate), message)


def _drop_tasks(raw: dict[str, Any]) -> None:
    del _decision(raw)["tasks"]
    del _decision(raw)["ungated_tasks"]


def _row(raw: dict[str, Any], index: int = 0) -> dict[str, Any]:
    row: dict[str, Any] = _decision(raw)["tasks"][index]
    return row


def _all_ungated(raw: dict[str, Any]) -> None:
    for row in _decision(raw)["tasks"]:
        row["gated"] = False
    _decision(raw)["ungated_tasks"] = [row["task"] for row in _decision(raw)["tasks"]]


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (_drop_tasks, "no per-task gate evidence"),
        (lambda raw: _row(raw).pop("gated"), "malformed per-task gate evidence"),
        (lambda raw: _row(raw).update(gated="yes"), "malformed per-task gate evidence"),
        (lambda raw: _row(raw).update(task=""), "malformed per-task gate evidence"),
        (lambda raw: _decision(raw)["tasks"].append("task-a"), "malformed per-task gate evidence"),
        (lambda raw: _decision(raw)["tasks"].append(copy.deepcopy(_row(raw))), "repeats a task"),
        (lambda raw: _row(raw).update(task="task-fabricated"), "does not match selected tasks"),
        (lambda raw: _decision(raw).pop("ungated_tasks"), "missing its ungated task list"),
        (lambda raw: _decision(raw).update(ungated_tasks=[1]), "missing its ungated task list"),
        (lambda raw: _decision(raw).update(ungated_tasks=[]), "disagree with its per-task evidence"),
        (_all_ungated, "no gated task"),
    ],
)
def test_per_task_gate_evidence_mutations_are_refused(
    mutate: Callable[[dict[str, Any]], Any], message: str
) -> None:
    """Each malformed or inconsistent task list is refused with its own message."""
    problems = problems_after(mutate)

    assert mentions(problems, message), problems


def test_one_gated_task_of_three_is_too_thin() -> None:
    """Two impossible tasks out of three selected: too thin a gated evidence base."""
    raw, expected = _fixture(impossible=("task-x", "task-y"))
    _decision(raw)["decision"] = "promote"

    assert mentions(
        validate_for_apply(raw, expected=expected, now=NOW), "rests on too thin a gated evidence base (1/3)"
    )


def test_a_manual_overlay_without_a_proposer_is_accepted() -> None:
    """proposer null and origin manual-initial-overlay: accepted."""
    raw, expected = _fixture(proposer=None)

    assert raw["candidate_origin"] == "manual-initial-overlay"
    assert validate_for_apply(raw, expected=expected, now=NOW) == ()


def test_an_old_schema_is_refused_alone() -> None:
    """schema_version 3: unsupported schema, nothing else checked."""
    assert problems_after(lambda raw: raw.update(schema_version=3)) == (
        "promotion evidence has an unsupported schema; regenerate evidence with schema 6",
    )


def test_evidence_that_is_not_an_object_is_refused() -> None:
    """A list is not promotion evidence."""
    _, expected = _fixture()

    assert validate_for_apply([], expected=expected, now=NOW) == ("promotion evidence must be a JSON object",)


def test_an_aborted_sweep_is_refused() -> None:
    """run_status aborted: not complete."""
    assert mentions(problems_after(lambda raw: raw.update(run_status="aborted")), "not from a complete sweep")


@pytest.mark.parametrize("digest", ["oracle_digest", "sandbox_dependency_manifest_digest"])
def test_a_task_without_oracle_or_dependency_digests_is_refused(digest: str) -> None:
    """A missing or short digest on a selected task: refused, in evidence and expectation alike."""
    raw, expected = _fixture()
    raw["selected_tasks"][0].pop(digest)
    tasks = tuple(
        {k: v for k, v in task.items() if not (task["id"] == "task-a" and k == digest)}
        for task in expected.bindings.selected_tasks
    )
    expected = attrs.evolve(expected, bindings=attrs.evolve(expected.bindings, selected_tasks=tasks))

    problems = validate_for_apply(raw, expected=expected, now=NOW)

    assert mentions(problems, "selected task task-a lacks hidden-oracle or dependency digests")
    assert not mentions(problems, "binding")


@pytest.mark.parametrize(
    "files",
    [
        [],
        None,
        [{"target": "", "sha256": "0" * 64, "size": 1}],
        [{"target": "t", "sha256": "0" * 63, "size": 1}],
        [{"target": "t", "sha256": "0" * 64, "size": -1}],
        [{"target": "t", "sha256": "0" * 64, "size": True}],
        ["x"],
    ],
)
def test_malformed_oracle_files_are_refused(files: Any) -> None:
    """oracle_files must be a non-empty list of {target, sha256, size}."""
    assert mentions(
        problems_after(lambda raw: raw["selected_tasks"][0].update(oracle_files=files)),
        "malformed oracle_files",
    )


@pytest.mark.parametrize(
    "tasks",
    [[], "task-a", [1], [{"id": ""}], [{"id": "x"}, {"id": "x"}]],
)
def test_malformed_selected_task_lists_are_refused(tasks: Any) -> None:
    """Empty, non-list, non-object, empty id or repeated id: refused."""
    problems = problems_after(lambda raw: raw.update(selected_tasks=tasks))

    assert mentions(problems, "selected_tasks must be a non-empty list of task bindings") or mentions(
        problems, "selected_tasks must have unique, non-empty string ids"
    )


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("benchmark_model", "other-model"),
        ("proposer_model", "another-proposer"),
        ("effort", "low"),
        ("candidate_origin", "manual-initial-overlay"),
        ("candidate_overlay_digest", "d" * 64),
        ("target_base_digests", {".claude/skills/gitnexus-work/SKILL.md": "e" * 64}),
        ("required_candidate_arms", ["candidate_workflow", "candidate_workflow_direct"]),
    ],
)
def test_each_binding_mismatch_is_refused(field: str, value: Any) -> None:
    """Any bound field that differs from what the applier computed: binding mismatch."""
    assert mentions(
        problems_after(lambda raw: raw.update({field: value})), f"promotion binding mismatch for {field}"
    )


def test_a_different_task_selection_is_a_binding_mismatch() -> None:
    """A selected task whose digest differs from the applier's pin."""

    def mutate(raw: dict[str, Any]) -> None:
        raw["selected_tasks"][0]["oracle_digest"] = "f" * 64

    assert mentions(problems_after(mutate), "promotion binding mismatch for selected_tasks")


def test_a_policy_drift_is_a_binding_mismatch() -> None:
    """min_runs 4 in the stored policy: refused as a binding mismatch."""
    assert mentions(
        problems_after(lambda raw: raw["policy"][ARM].update(min_runs=4)), "binding mismatch for policy"
    )


def test_an_applier_with_a_stricter_policy_refuses_the_evidence() -> None:
    """The expected policy is the applier's: min_runs 4 there blocks apply."""
    raw, expected = _fixture()

    problems = validate_for_apply(
        raw,
        expected=attrs.evolve(
            expected, policy=PromotionPolicy(decision_policy=DecisionPolicy.REFERENCE, min_runs=4)
        ),
        now=NOW,
    )

    assert mentions(problems, "binding mismatch for policy")
    assert mentions(
        problems, "recomputed decision for candidate_workflow is insufficient_evidence, not promote"
    )


@pytest.mark.parametrize(
    "arms",
    [[], "candidate_workflow", ["baseline"], ["candidate_workflow", "candidate_workflow"], [1]],
)
def test_malformed_required_arms_are_refused(arms: Any) -> None:
    """required_candidate_arms must be unique candidate arms."""
    assert mentions(
        problems_after(lambda raw: raw.update(required_candidate_arms=arms)),
        "required_candidate_arms must be a non-empty list of unique candidate arms",
    )


def _set_times(generated: dt.datetime, expires: dt.datetime) -> Callable[[dict[str, Any]], None]:
    def mutate(raw: dict[str, Any]) -> None:
        raw["generated_at"], raw["evidence_expires_at"] = generated.isoformat(), expires.isoformat()

    return mutate


@pytest.mark.parametrize(
    ("generated", "expires"),
    [
        (NOW - dt.timedelta(days=90), NOW - dt.timedelta(seconds=1)),
        (NOW - dt.timedelta(days=1), NOW - dt.timedelta(days=1) + dt.timedelta(days=91)),
        (NOW - dt.timedelta(days=1), NOW - dt.timedelta(days=1)),
    ],
)
def test_expired_evidence_is_refused(generated: dt.datetime, expires: dt.datetime) -> None:
    """Expired 1 s ago, a 91-day window, or expiry not after generation: expired."""
    assert mentions(
        problems_after(_set_times(generated, expires)),
        "promotion evidence has expired; re-run the paired suite",
    )


def test_evidence_generated_in_the_future_is_refused() -> None:
    """Generated a day from now: refused; five minutes of skew is tolerated."""
    ahead = NOW + dt.timedelta(days=1)
    skew = NOW + dt.timedelta(minutes=5)

    assert mentions(
        problems_after(_set_times(ahead, ahead + dt.timedelta(days=2))), "generated in the future"
    )
    assert not mentions(problems_after(_set_times(skew, skew + dt.timedelta(days=2))), "future")


def test_an_expiry_exactly_now_is_still_valid() -> None:
    """now == expires is not yet expired; a 90-day window exactly is allowed."""
    assert problems_after(_set_times(NOW - dt.timedelta(days=90), NOW)) == ()


@pytest.mark.parametrize("value", ["yesterday", "2026-01-01T00:00:00", None])
def test_unparseable_or_naive_timestamps_are_refused(value: Any) -> None:
    """Timestamps must parse and carry a timezone."""
    assert mentions(
        problems_after(lambda raw: raw.update(generated_at=value)),
        "promotion evidence timestamps must be ISO-8601 times with a timezone",
    )


def test_a_decision_metric_that_disagrees_with_the_policy_is_refused() -> None:
    """Decision metric output_tokens while the policy says cost_usd: metric mismatch."""
    assert mentions(
        problems_after(lambda raw: _decision(raw).update(metric="output_tokens")),
        "metric mismatch (output_tokens vs cost_usd)",
    )


def test_a_wrong_incumbent_is_refused() -> None:
    """The decision must name the pair's incumbent."""
    assert mentions(
        problems_after(lambda raw: _decision(raw).update(incumbent_arm="baseline")), "wrong incumbent"
    )


def test_an_edited_reason_fails_the_recomputation() -> None:
    """The recomputed decision must deep-equal the stored one, reasons included."""
    problems = problems_after(lambda raw: _decision(raw)["reasons"].append("trust me"))

    assert problems == ("recomputed decision for candidate_workflow does not match the stored evidence",)


def test_edited_aggregates_that_no_longer_promote_are_refused() -> None:
    """Lowering the candidate's resolved count on task-a makes the recomputation keep the incumbent."""

    def mutate(raw: dict[str, Any]) -> None:
        _row(raw)["candidate"]["resolved"] = 1

    assert mentions(
        problems_after(mutate), "recomputed decision for candidate_workflow is keep_incumbent, not promote"
    )


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("runs", -1, "counts must be non-negative integers"),
        ("valid_runs", True, "counts must be non-negative integers"),
        ("runs", 4, "counts are inconsistent"),
        ("resolved", 4, "counts are inconsistent"),
        ("cost_usd", -1.0, "cost_usd must be null or a finite number >= 0"),
        ("cost_usd", "1", "cost_usd must be null or a finite number >= 0"),
        ("error_kinds", {"oracle-failed": -1}, "error_kinds must map kinds to counts"),
        ("error_kinds", [], "error_kinds must map kinds to counts"),
    ],
)
def test_implausible_implementation_aggregates_are_refused(field: str, value: Any, message: str) -> None:
    """Counts, the metric and error kinds are checked before recomputing."""
    problems = problems_after(lambda raw: _row(raw)["candidate"].update({field: value}))

    assert mentions(problems, f"task-a: candidate aggregate {message}")


def test_an_aggregate_of_another_cell_is_refused() -> None:
    """An aggregate relabelled to another arm cannot stand in for the pair."""
    assert mentions(
        problems_after(lambda raw: _row(raw)["candidate"].update(arm="workflow")), "belongs to another cell"
    )


def test_an_unreadable_aggregate_is_refused() -> None:
    """An aggregate whose optional fields are malformed is reported, not raised."""
    assert mentions(
        problems_after(lambda raw: _row(raw)["candidate"].update(health_reasons="x")),
        "candidate.health_reasons: must be a list",
    )


def test_a_null_model_binding_cannot_recompute_a_promotion() -> None:
    """Without a benchmark model the recomputed gate is insufficient."""
    raw, expected = _fixture()
    expected = attrs.evolve(expected, bindings=attrs.evolve(expected.bindings, benchmark_model=None))
    raw["benchmark_model"] = None

    problems = validate_for_apply(raw, expected=expected, now=NOW)

    assert mentions(problems, "is insufficient_evidence, not promote")


# --- review evidence ----------------------------------------------------------------------


def _review_fixture(clean_case: bool = False) -> tuple[dict[str, Any], ApplyExpectation]:
    rows = [
        *review_runs("case-1", "review", weighted_f1=0.6),
        *review_runs("case-1", "candidate_review", weighted_f1=0.8),
    ]
    task_ids: tuple[str, ...] = ("case-1",)
    if clean_case:
        clean = {"weighted_f1": None, "clean_control": True, "clean_pass": True, "blocker_recall": None}
        rows += [
            *review_runs("case-2", "review", **clean),
            *review_runs("case-2", "candidate_review", **clean),
        ]
        task_ids = ("case-1", "case-2")
    bindings = _bindings(task_ids)
    decision = evaluate_review_candidate(
        table(rows), candidate="candidate_review", incumbent="review", model=MODEL
    )
    evidence = PromotionEvidence.build(
        [decision], policy=REFERENCE_POLICY, generated_at=NOW, bindings=bindings
    )
    raw = json.loads(json.dumps(evidence.to_mapping()))
    return raw, ApplyExpectation(
        bindings=bindings, required_candidate_arms=("candidate_review",), policy=REFERENCE_POLICY
    )


def test_review_evidence_is_accepted_including_a_clean_control_without_f1() -> None:
    """A review promotion over a defect case and a clean control (F1 null) passes."""
    raw, expected = _review_fixture(clean_case=True)

    assert raw["policy"]["candidate_review"]["metric"] == "review_weighted_f1"
    assert validate_for_apply(raw, expected=expected, now=NOW) == ()


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("review_verdict_correct", None, "flags must be booleans"),
        ("review_clean_pass", None, "flags must be booleans"),
        ("review_weighted_f1", 1.5, "review_weighted_f1 must be in [0, 1] (null only on a clean control)"),
        ("review_weighted_f1", None, "review_weighted_f1 must be in [0, 1] (null only on a clean control)"),
        ("review_blocker_recall", -0.1, "review_blocker_recall must be in [0, 1] or null"),
        ("review_false_positives", None, "review_false_positives must be a finite number >= 0"),
        ("review_clean_control", True, "disagree on the clean control"),
    ],
)
def test_implausible_review_aggregates_are_refused(field: str, value: Any, message: str) -> None:
    """Review flags, ranges and the paired clean-control flag are checked."""
    raw, expected = _review_fixture()
    _row(raw)["candidate"][field] = value

    assert mentions(validate_for_apply(raw, expected=expected, now=NOW), message)


def test_review_evidence_with_an_ungated_task_is_refused() -> None:
    """Review decisions have no ungated tasks."""
    raw, expected = _review_fixture(clean_case=True)
    _row(raw, 1)["gated"] = False
    _decision(raw)["ungated_tasks"] = ["case-2"]

    assert mentions(
        validate_for_apply(raw, expected=expected, now=NOW),
        "review decision for candidate_review has ungated tasks",
    )


def test_review_evidence_must_carry_the_review_metric() -> None:
    """A review decision whose metric is cost_usd is a metric mismatch."""
    raw, expected = _review_fixture()
    _decision(raw)["metric"] = "cost_usd"

    assert mentions(
        validate_for_apply(raw, expected=expected, now=NOW),
        "metric mismatch (cost_usd vs review_weighted_f1)",
    )


def test_recomputation_uses_the_default_gate_for_the_arm() -> None:
    """An arm the expectation does not declare is judged by the implementation gate."""
    _, expected = _fixture()

    assert expected.gate("candidate_something") == expected.gate(ARM)
    assert expected.gate("candidate_review") != expected.gate(ARM)


def test_run_status_enum_values_are_the_references() -> None:
    """complete and aborted, spelled as in promotion.json."""
    assert [status.value for status in RunStatus] == ["complete", "aborted"]


def test_an_oracle_file_of_zero_bytes_is_fine() -> None:
    """size 0 is a valid oracle file size."""
    problems = problems_after(lambda raw: raw["selected_tasks"][0]["oracle_files"][0].update(size=0))

    assert not mentions(problems, "malformed oracle_files")


def test_evidence_that_expires_the_moment_it_is_generated_is_expired() -> None:
    """expires == generated is expired even while now is before both (within the skew)."""
    moment = NOW + dt.timedelta(minutes=1)

    assert problems_after(_set_times(moment, moment)) == (
        "promotion evidence has expired; re-run the paired suite",
    )


@pytest.mark.parametrize("decisions", [[1], ["promote"]])
def test_decisions_that_are_not_objects_are_refused(decisions: Any) -> None:
    """A list of non-objects is not a decision list."""
    problems = problems_after(lambda raw: raw.update(decisions=decisions))

    assert mentions(problems, "decisions must be a list of decision objects")


@pytest.mark.parametrize("tasks", [[], "abc", None])
def test_an_empty_or_non_list_task_list_has_no_gate_evidence(tasks: Any) -> None:
    """tasks [] or a string: no per-task gate evidence."""
    problems = problems_after(lambda raw: _decision(raw).update(tasks=tasks))

    assert problems == ("decision for candidate_workflow has no per-task gate evidence",)


def test_aggregate_problems_name_the_arm_and_task() -> None:
    """The full problem says which decision, task and side is implausible."""
    problems = problems_after(lambda raw: _row(raw)["candidate"].update(runs=-1))

    assert (
        "decision for candidate_workflow, task task-a: "
        "candidate aggregate counts must be non-negative integers" in problems
    )


def test_consistent_counts_with_exclusions_are_not_called_inconsistent() -> None:
    """runs = valid + excluded holds with an excluded run; only the recomputation objects."""

    def mutate(raw: dict[str, Any]) -> None:
        _row(raw)["candidate"].update(runs=4, excluded_runs=1)

    problems = problems_after(mutate)

    assert not mentions(problems, "counts are inconsistent")
    assert mentions(
        problems, "recomputed decision for candidate_workflow is insufficient_evidence, not promote"
    )


def _two_arm_fixture() -> tuple[dict[str, Any], ApplyExpectation]:
    arms = ("candidate_workflow", "candidate_workflow_direct")
    rows = []
    for inc, cand in (("workflow", arms[0]), ("workflow_direct", arms[1])):
        rows += runs("task-a", inc, same(3, cost_usd=1.0)) + runs("task-a", cand, same(3, cost_usd=0.5))
    bindings = _bindings(("task-a",))
    agg = table(rows)
    decisions = [
        evaluate_candidate(agg, candidate=arms[0], incumbent="workflow", model=MODEL),
        evaluate_candidate(agg, candidate=arms[1], incumbent="workflow_direct", model=MODEL),
    ]
    evidence = PromotionEvidence.build(
        decisions, policy=REFERENCE_POLICY, generated_at=NOW, bindings=bindings
    )
    raw = json.loads(json.dumps(evidence.to_mapping()))
    return raw, ApplyExpectation(bindings=bindings, required_candidate_arms=arms, policy=REFERENCE_POLICY)


def test_a_problem_in_an_earlier_decision_is_not_lost() -> None:
    """Two required arms: a keep on the first is reported even though the second is fine."""
    raw, expected = _two_arm_fixture()
    assert validate_for_apply(raw, expected=expected, now=NOW) == ()

    raw["decisions"][0]["decision"] = "keep_incumbent"

    assert validate_for_apply(raw, expected=expected, now=NOW) == (
        "decision for candidate_workflow is keep_incumbent, not promote",
    )


def test_arms_and_decisions_bind_by_name_in_any_order() -> None:
    """A sweep run with --arms in another order than the corpus's applies all the same."""
    raw, expected = _two_arm_fixture()
    raw["decisions"].reverse()
    raw["required_candidate_arms"].reverse()

    assert validate_for_apply(raw, expected=expected, now=NOW) == ()
    assert validate_for_apply(raw, expected=attrs.evolve(expected, required_candidate_arms=()), now=NOW)


def test_the_applier_recomputes_with_the_declared_gate_not_an_inferred_one() -> None:
    """Implementation rows that also carry review metrics are still judged by the implementation gate."""
    extra = {"review": {"review_weighted_f1": 0.5, "review_clean_control": False}}
    rows = runs("task-a", "workflow", same(3, cost_usd=1.0, **extra))
    rows += runs("task-a", ARM, same(3, cost_usd=0.5, **extra))
    bindings = _bindings(("task-a",))
    decision = evaluate_candidate(table(rows), candidate=ARM, incumbent="workflow", model=MODEL)
    evidence = PromotionEvidence.build(
        [decision], policy=REFERENCE_POLICY, generated_at=NOW, bindings=bindings
    )
    raw = json.loads(json.dumps(evidence.to_mapping()))

    assert (
        validate_for_apply(raw, expected=ApplyExpectation(bindings, (ARM,), policy=REFERENCE_POLICY), now=NOW)
        == ()
    )


def test_a_decision_covers_the_selected_tasks_of_its_arms_kind_only() -> None:
    """A sweep that also selected review tasks: the implementation decision covers its own tasks."""
    raw, expected = _fixture()
    review = _task("review-case")
    raw["selected_tasks"].append(review)
    bindings = attrs.evolve(expected.bindings, selected_tasks=(*expected.bindings.selected_tasks, review))
    mixed = attrs.evolve(expected, bindings=bindings)

    assert mentions(validate_for_apply(raw, expected=mixed, now=NOW), "does not match selected tasks")
    scoped = attrs.evolve(mixed, arm_tasks={ARM: frozenset({"task-a", "task-impossible"})})
    assert validate_for_apply(raw, expected=scoped, now=NOW) == ()
    narrower = attrs.evolve(scoped, arm_tasks={ARM: frozenset({"task-a"})})
    assert mentions(validate_for_apply(raw, expected=narrower, now=NOW), "does not match selected tasks")
