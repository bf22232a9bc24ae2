"""Comparator reuse eligibility, selection and the paid canary (promotion.md §5.1–5.4, §8.6)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import attrs
import pytest

from wfbench.domain.results.rows import ErrorKind, Row
from wfbench.domain.sweep.reuse import (
    MAX_TRANSCRIPT_BYTES,
    TRANSCRIPT_SOURCE,
    ArmIdentity,
    ReuseBinding,
    TaskBinding,
    is_reusable_comparator,
    keep_paid_canary,
    reuse_refusal,
    select_reusable_comparators,
    stamp_reused,
)

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
H = {name: name[0] * 64 for name in ("base", "prompt", "oracle", "command", "manifest", "assets", "deps")}
SKILL = "5" * 64
ARTIFACT = {
    "path": "transcripts/task0-review-run0-s1.jsonl",
    "sha256": "a" * 64,
    "bytes": 10,
    "source": TRANSCRIPT_SOURCE,
}

BINDING = ReuseBinding(
    model="claude-sonnet-4-5",
    effort="xhigh",
    sandbox_backend="bwrap",
    runtime_digest="r" * 8,
    tasks={
        task: TaskBinding(
            base_sha=H["base"],
            prompt_digest=H["prompt"],
            oracle_digest=H["oracle"],
            oracle_command_digest=H["command"],
            oracle_manifest_digest=H["manifest"],
            asset_manifest_digest=H["assets"],
            dependency_manifest_digest=H["deps"],
        )
        for task in ("task0", "task1")
    },
    arms={
        "review": ArmIdentity(skill_digest=SKILL, review=True),
        "workflow": ArmIdentity(skill_digest=SKILL),
        "ce_review": ArmIdentity(plugin_version="2.3.0", plugin_manifest_digest="c" * 64, review=True),
        "baseline": ArmIdentity(),
        "candidate_review": ArmIdentity(skill_digest=SKILL, review=True),
    },
    now=NOW,
    candidate_arms=frozenset({"candidate_review"}),
)


def prior(arm: str = "review", task: str = "task0", run: int = 0, **extra: Any) -> Row:
    """A prior row that matches BINDING in every respect (a review row for review arms)."""
    fields: dict[str, Any] = {
        "model": "claude-sonnet-4-5",
        "effort": "xhigh",
        "sandbox_backend": "bwrap",
        "runtime_digest": "r" * 8,
        "task_base_sha": H["base"],
        "task_prompt_digest": H["prompt"],
        "oracle_digest": H["oracle"],
        "oracle_command_digest": H["command"],
        "oracle_manifest_digest": H["manifest"],
        "task_asset_manifest_digest": H["assets"],
        "sandbox_dependency_manifest_digest": H["deps"],
        "skill_digest": SKILL,
        "candidate_overlay_digest": None,
        "recorded_at": (NOW - timedelta(days=1)).isoformat(),
        "transcript_artifacts": [dict(ARTIFACT)],
    }
    review: dict[str, Any] = {}
    if arm.endswith("review"):
        fields |= {
            "review_artifact": f"{task}-{arm}-run{run}.review.json",
            "review_score": {"weighted_f1": 0.8},
        }
        review = {"review_weighted_f1": 0.8}
    if arm == "ce_review":
        fields |= {"skill_digest": None, "ce_plugin_version": "2.3.0", "ce_plugin_manifest_digest": "c" * 64}
    fields.update(extra)
    return Row(
        task=task,
        arm=arm,
        run=run,
        ok=True,
        resolved=True,
        review_evidence_valid=True if review else None,
        review=review,
        extra=fields,
    )


def refusal(row: Row, binding: ReuseBinding = BINDING) -> str | None:
    """Why the row is refused (None when reusable)."""
    return reuse_refusal(row, binding=binding)


# --- §8.6 acceptance examples --------------------------------------------------------------


def test_a_matching_review_row_is_reusable() -> None:
    """§8.6: a review row matching every binding is reusable."""
    assert refusal(prior()) is None
    assert is_reusable_comparator(prior(), binding=BINDING)


def test_a_candidate_arm_is_never_reusable() -> None:
    """§8.6: candidate_review → not reusable, even when listed among the reusable arms."""
    assert refusal(prior("candidate_review")) == "candidate_review is a candidate arm"
    assert not is_reusable_comparator(prior("candidate_review"), binding=BINDING)


def test_skill_digest_drift_is_not_reusable() -> None:
    """§8.6: the arm's skill bytes changed since the prior run → paid."""
    assert refusal(prior(skill_digest="6" * 64)) == "skill digest differs or is missing"


def test_a_session_error_row_is_not_reusable() -> None:
    """§8.6: session-error → paid."""
    row = attrs.evolve(prior(), error_kind=ErrorKind.SESSION_ERROR, ok=False)

    assert refusal(row) == "error kind session-error is not a reusable measurement"


def test_a_row_whose_session_was_not_ok_is_not_reusable() -> None:
    """§8.6: ok false → paid."""
    assert refusal(attrs.evolve(prior(), ok=False)) == "the session was not ok"


def test_a_row_with_invalid_review_evidence_is_not_reusable() -> None:
    """§8.6: review_evidence_valid false (or unknown) → paid."""
    assert refusal(attrs.evolve(prior(), review_evidence_valid=False)) == "review evidence is not valid"
    assert refusal(attrs.evolve(prior(), review_evidence_valid=None)) == "review evidence is not valid"


def test_a_row_first_measured_91_days_ago_is_not_reusable() -> None:
    """§8.6: recorded 91 days ago → too old; 90 days is still fine."""
    old = prior(recorded_at=(NOW - timedelta(days=91)).isoformat())
    assert refusal(old) == "first measured 91 days ago (at most 90 allowed)"
    assert refusal(prior(recorded_at=(NOW - timedelta(days=90)).isoformat())) is None


@pytest.mark.parametrize(
    ("row_digest", "expected_digest", "reusable"),
    [
        ("old", "new", False),
        ("same", "same", True),
        (None, "new", False),
        ("old", None, False),
        ("", "", False),
    ],
)
def test_the_runtime_digest_must_match_and_fails_closed(
    row_digest: str | None, expected_digest: str | None, reusable: bool
) -> None:
    """§8.6: old vs new → no; equal → yes; missing on either side → no."""
    binding = attrs.evolve(BINDING, runtime_digest=expected_digest)

    assert is_reusable_comparator(prior(runtime_digest=row_digest), binding=binding) is reusable
    expected_reason = None if reusable else "runtime digest differs or is missing"
    assert refusal(prior(runtime_digest=row_digest), binding) == expected_reason


def test_a_plugin_arm_is_matched_on_plugin_version_and_manifest() -> None:
    """§8.6: ce_review ignores skill digests; a changed plugin digest or version → no."""
    assert refusal(prior("ce_review")) is None
    assert refusal(prior("ce_review", ce_plugin_manifest_digest="d" * 64)) == (
        "plugin manifest digest differs or is missing"
    )
    assert refusal(prior("ce_review", ce_plugin_version="2.4.0")) == "plugin version differs or is missing"


def test_conflicting_duplicates_block_the_cell_and_identical_ones_are_kept() -> None:
    """§8.6: duplicate keys with F1 0.4 vs 0.9 → dropped; identical duplicates → one kept."""
    low = attrs.evolve(prior(), review={"review_weighted_f1": 0.4})
    high = attrs.evolve(prior(), review={"review_weighted_f1": 0.9})
    same = prior(run=1)

    selection = select_reusable_comparators([low, high, same, same], binding=BINDING)

    assert set(selection.rows) == {("task0", "review", 1)}
    assert selection.rows[("task0", "review", 1)] is same
    assert selection.blocked == frozenset({("task0", "review", 0)})
    assert selection.refusals == {("task0", "review", 0): "conflicting duplicate rows"}


def test_a_chained_row_keeps_its_original_measurement_age() -> None:
    """§8.6: reused_from_recorded_at 91 days ago → no, although recorded_at is fresh."""
    row = prior(reused_from_recorded_at=(NOW - timedelta(days=91)).isoformat(), recorded_at=NOW.isoformat())

    assert refusal(row) == "first measured 91 days ago (at most 90 allowed)"


def test_a_future_dated_row_is_not_reusable() -> None:
    """§8.6: a row recorded after now is corrupt."""
    assert refusal(prior(recorded_at=(NOW + timedelta(seconds=1)).isoformat())) == "recorded in the future"


@pytest.mark.parametrize("field", ["sandbox_dependency_manifest_digest", "task_asset_manifest_digest"])
def test_changed_or_missing_manifest_digests_are_not_reusable(field: str) -> None:
    """§8.6: a changed or missing dependency/asset manifest digest → no, on either side."""
    assert refusal(prior(**{field: "9" * 64})) == f"{field} differs or is missing"
    assert refusal(prior(**{field: None})) == f"{field} differs or is missing"
    attr = "dependency_manifest_digest" if field.startswith("sandbox") else "asset_manifest_digest"
    tasks = {t: attrs.evolve(b, **{attr: None}) for t, b in BINDING.tasks.items()}
    assert (
        refusal(prior(**{field: None}), attrs.evolve(BINDING, tasks=tasks))
        == f"{field} differs or is missing"
    )


def test_a_row_measured_under_other_task_limits_is_not_reusable() -> None:
    limited = {t: attrs.evolve(b, limits_digest="1" * 64) for t, b in BINDING.tasks.items()}
    under_limits = attrs.evolve(BINDING, tasks=limited)
    assert refusal(prior(task_limits_digest="1" * 64), under_limits) is None
    assert refusal(prior(task_limits_digest="2" * 64), under_limits) == (
        "task_limits_digest differs (the task's limits changed)"
    )
    assert refusal(prior(), under_limits) is not None  # a row from before the task had limits
    assert refusal(prior(task_limits_digest="1" * 64)) is not None  # limits since removed


def test_a_row_of_a_task_without_limits_is_reusable_with_or_without_the_field() -> None:
    assert refusal(prior()) is None
    assert refusal(prior(task_limits_digest=None)) is None


@pytest.mark.parametrize("artifact", ["", None, "absent"])
def test_a_review_row_without_its_artifact_is_not_reusable(artifact: str | None) -> None:
    """§8.6: review_artifact empty or absent → no."""
    row = prior()
    extra = dict(row.extra)
    if artifact == "absent":
        del extra["review_artifact"]
    else:
        extra["review_artifact"] = artifact
    assert refusal(attrs.evolve(row, extra=extra)) == "no review artifact"


def test_a_review_artifact_that_is_not_a_file_name_is_not_reusable() -> None:
    """review_artifact must be a non-empty string (a number is not a file name)."""
    assert refusal(prior(review_artifact=5)) == "no review artifact"


def test_the_canary_keeps_one_planned_cell_per_fully_reusable_arm() -> None:
    """§8.6: 2 tasks × 5 prior runs, 3 planned → drops (task0, review, 0); a second call drops nothing."""
    prior_rows = [prior(task=t, run=r) for t in ("task0", "task1") for r in range(5)]
    selection = select_reusable_comparators(prior_rows, binding=BINDING)
    planned = [
        (t, arm, r) for t in ("task0", "task1") for r in range(3) for arm in ("review", "candidate_review")
    ]

    kept, canaries = keep_paid_canary(selection.rows, planned)

    assert canaries == (("task0", "review", 0),)
    assert len(kept) == 5
    assert ("task0", "review", 0) not in kept
    assert all(key in planned for key in kept)
    again, more = keep_paid_canary(kept, planned)
    assert more == ()
    assert again == kept


def test_an_arm_that_already_has_a_paid_cell_keeps_all_its_reusable_rows() -> None:
    """§8.6: when one planned cell is not reusable, no canary is taken from that arm."""
    rows = [prior(run=r) for r in (0, 1)]
    planned = [("task0", "review", r) for r in range(3)]

    kept, canaries = keep_paid_canary(select_reusable_comparators(rows, binding=BINDING).rows, planned)

    assert canaries == ()
    assert set(kept) == {("task0", "review", 0), ("task0", "review", 1)}


def test_every_fully_reusable_arm_gets_its_own_canary() -> None:
    """Two comparator arms, each entirely reusable → one paid cell each, sorted."""
    rows = [prior(arm, run=r) for arm in ("review", "ce_review") for r in (0, 1)]
    planned = [("task0", arm, r) for arm in ("review", "ce_review") for r in (0, 1)]

    kept, canaries = keep_paid_canary(select_reusable_comparators(rows, binding=BINDING).rows, planned)

    assert canaries == (("task0", "ce_review", 0), ("task0", "review", 0))
    assert list(kept) == [("task0", "ce_review", 1), ("task0", "review", 1)]


def test_stamping_a_reused_row_keeps_the_original_measurement_time() -> None:
    """§8.6 materialization (pure part): reused, reused_from_recorded_at = original, recorded_at = now."""
    first = prior(recorded_at="2025-05-01T00:00:00+00:00")

    once = stamp_reused(first, now=NOW)
    twice = stamp_reused(once, now=NOW + timedelta(days=7))

    assert once.reused is True
    assert once.extra["reused_from_recorded_at"] == "2025-05-01T00:00:00+00:00"
    assert once.extra["recorded_at"] == NOW.isoformat()
    assert twice.extra["reused_from_recorded_at"] == "2025-05-01T00:00:00+00:00"
    assert twice.extra["recorded_at"] == (NOW + timedelta(days=7)).isoformat()
    assert first.reused is False


# --- each rule -------------------------------------------------------------------------------


def test_an_arm_without_an_identity_is_not_reusable() -> None:
    """Arms not listed in the binding (e.g. an unknown arm) are never reused."""
    assert refusal(prior("baseline_nomcp")) == "baseline_nomcp is not a reusable arm"


def test_an_arm_with_no_expected_skill_digest_is_not_reusable() -> None:
    """Reference consequence kept: a baseline has no evaluated skill digest, so it fails closed."""
    assert refusal(prior("baseline")) == "skill digest differs or is missing"


@pytest.mark.parametrize("kind", [ErrorKind.VERIFY_FAILED, ErrorKind.ORACLE_FAILED])
def test_a_measured_negative_is_reusable(kind: ErrorKind) -> None:
    """Deliberate decision (promotion.md §5.1 NOTE): verify-failed / oracle-failed rows are reused too.

    The reference reuses only clean rows, re-rolling the incumbent's failures: a bias. Ours
    carries every valid measurement forward.
    """
    assert refusal(attrs.evolve(prior(), error_kind=kind, resolved=False)) is None


@pytest.mark.parametrize(
    "kind",
    [k for k in ErrorKind if k not in (ErrorKind.VERIFY_FAILED, ErrorKind.ORACLE_FAILED)],
)
def test_every_other_error_kind_is_not_reusable(kind: ErrorKind) -> None:
    """Skill, evidence, phase, oracle-unavailable, no-work and excluded kinds always pay."""
    assert (
        refusal(attrs.evolve(prior(), error_kind=kind))
        == f"error kind {kind.value} is not a reusable measurement"
    )


def test_a_row_with_a_missing_transcript_is_not_reusable() -> None:
    """transcript_missing true → paid."""
    assert refusal(attrs.evolve(prior(), transcript_missing=True)) == "the transcript is missing"


def test_a_row_measured_with_a_candidate_overlay_is_not_reusable() -> None:
    """A non-empty candidate_overlay_digest means the row measured a candidate → paid."""
    assert refusal(prior(candidate_overlay_digest="f" * 64)) == "the row carries a candidate overlay"
    assert refusal(prior(candidate_overlay_digest="")) is None
    assert refusal(prior(candidate_overlay_digest=1)) == "the row carries a candidate overlay"


def test_a_review_row_needs_a_score_object_and_a_weighted_f1() -> None:
    """review_score must be an object and review_weighted_f1 non-null."""
    assert refusal(prior(review_score=None)) == "no review score"
    assert refusal(prior(review_score="0.8")) == "no review score"
    assert refusal(attrs.evolve(prior(), review={"review_weighted_f1": None})) == "no review weighted F1"
    assert refusal(attrs.evolve(prior(), review={})) == "no review weighted F1"


def test_an_implementation_row_needs_no_review_evidence() -> None:
    """Review checks apply only to review arms."""
    assert refusal(prior("workflow")) is None


@pytest.mark.parametrize("recorded_at", [None, "", "yesterday", 1717243200])
def test_an_unparseable_recording_time_is_not_reusable(recorded_at: Any) -> None:
    """A missing or malformed timestamp → paid."""
    assert refusal(prior(recorded_at=recorded_at)) == "no parseable recording time"


def test_a_naive_timestamp_is_read_as_utc() -> None:
    """A timestamp without a zone is UTC: 1 hour before now (naive) is fresh, not in the future."""
    naive = (NOW - timedelta(hours=1)).replace(tzinfo=None).isoformat()
    assert refusal(prior(recorded_at=naive)) is None
    future = (NOW + timedelta(hours=1)).replace(tzinfo=None).isoformat()
    assert refusal(prior(recorded_at=future)) == "recorded in the future"


def test_an_aware_timestamp_keeps_its_own_offset() -> None:
    """A +05:00 timestamp one hour ago is one hour ago, not five hours in the future."""
    plus_five = timezone(timedelta(hours=5))
    assert refusal(prior(recorded_at=(NOW - timedelta(hours=1)).astimezone(plus_five).isoformat())) is None


def test_a_row_measured_exactly_now_is_reusable() -> None:
    """Age 0 is allowed."""
    assert refusal(prior(recorded_at=NOW.isoformat())) is None


def test_the_model_may_match_on_model_or_benchmark_model() -> None:
    """Either the row's model or its benchmark_model must equal the expected model."""
    assert refusal(prior(model="other", benchmark_model="claude-sonnet-4-5")) is None
    assert refusal(prior(model="claude-sonnet-4-5", benchmark_model="other")) is None
    assert refusal(prior(model="other", benchmark_model="other")) == "model differs"
    assert refusal(prior(model=None)) == "model differs"


def test_effort_and_sandbox_backend_must_match() -> None:
    """A different effort or sandbox backend → paid."""
    assert refusal(prior(effort="low")) == "effort differs"
    assert refusal(prior(sandbox_backend="host-unsafe")) == "sandbox backend differs"


def test_a_task_outside_the_sweep_is_not_reusable() -> None:
    """The row's task must be bound in this sweep."""
    assert refusal(prior(task="task9")) == "task is not in this sweep"


@pytest.mark.parametrize(
    "field",
    [
        "task_base_sha",
        "task_prompt_digest",
        "oracle_digest",
        "oracle_command_digest",
        "oracle_manifest_digest",
    ],
)
def test_each_task_binding_digest_must_match(field: str) -> None:
    """Base commit, prompt and hidden-oracle digests must equal the sweep's task binding."""
    assert refusal(prior(**{field: "0" * 64})) == f"{field} differs or is missing"


@pytest.mark.parametrize(
    "mutate",
    [
        lambda a: {**a, "extra": 1},
        lambda a: {k: v for k, v in a.items() if k != "source"},
        lambda a: {**a, "source": "other"},
        lambda a: {**a, "sha256": "A" * 64},
        lambda a: {**a, "sha256": "a" * 63},
        lambda a: {**a, "sha256": None},
        lambda a: {**a, "bytes": -1},
        lambda a: {**a, "bytes": MAX_TRANSCRIPT_BYTES + 1},
        lambda a: {**a, "bytes": True},
        lambda a: {**a, "bytes": 1.0},
        lambda a: {**a, "path": "elsewhere/x.jsonl"},
        lambda a: {**a, "path": "cells/task0/review/run-1/transcripts/x.jsonl"},
        lambda a: {**a, "path": "cells/task0/workflow/run-0/transcripts/x.jsonl"},
        lambda a: {**a, "path": "cells/task0/review/run-0/x.jsonl"},
        lambda a: {**a, "path": "transcripts/../x"},
        lambda a: {**a, "path": "transcripts/" + "x" * 201},
        lambda a: {**a, "path": None},
        lambda a: "transcripts/x.jsonl",
    ],
)
def test_a_malformed_transcript_artifact_entry_is_not_reusable(mutate: Any) -> None:
    """Each entry has exactly path, sha256, bytes, source with the shapes the capture writes."""
    row = prior(transcript_artifacts=[dict(ARTIFACT), mutate(dict(ARTIFACT))])

    assert refusal(row) == "malformed transcript artifact entry"


def test_a_transcript_in_the_rows_own_cell_directory_is_reusable() -> None:
    """The current layout (cells/<task>/<arm>/run-<i>/transcripts/) and the legacy flat one both pass."""
    own = {**ARTIFACT, "path": "cells/task0/review/run-0/transcripts/review-s1.jsonl"}
    assert refusal(prior(transcript_artifacts=[own, dict(ARTIFACT)])) is None


def test_transcript_artifact_limits_are_inclusive() -> None:
    """0 bytes and exactly the cap are allowed; a 200-character name is allowed."""
    edge = [
        {**ARTIFACT, "bytes": 0},
        {**ARTIFACT, "bytes": MAX_TRANSCRIPT_BYTES, "path": "transcripts/" + "x" * 200},
    ]
    assert refusal(prior(transcript_artifacts=edge)) is None
    assert refusal(prior(transcript_artifacts=tuple(edge))) is None


@pytest.mark.parametrize("artifacts", [[], None, "transcripts/x.jsonl", {"path": "x"}])
def test_a_row_without_transcript_artifacts_is_not_reusable(artifacts: Any) -> None:
    """transcript_artifacts must be a non-empty list."""
    assert refusal(prior(transcript_artifacts=artifacts)) == "no transcript artifacts"


def test_refusals_are_reported_per_cell_in_sorted_order() -> None:
    """select_reusable_comparators keeps reusable rows and says why each other cell pays."""
    rows = [prior(run=1), attrs.evolve(prior(run=0), ok=False), prior("candidate_review", run=0)]

    selection = select_reusable_comparators(rows, binding=BINDING)

    assert list(selection.rows) == [("task0", "review", 1)]
    assert selection.refusals == {
        ("task0", "candidate_review", 0): "candidate_review is a candidate arm",
        ("task0", "review", 0): "the session was not ok",
    }
    assert selection.blocked == frozenset()


@pytest.mark.parametrize(
    "field", ["skill_digest", "oracle_digest", "ce_plugin_manifest_digest", "recorded_at"]
)
def test_duplicates_that_differ_in_any_identity_field_conflict(field: str) -> None:
    """The identity tuple is skill digest, oracle digest, weighted F1, plugin manifest, recording time."""
    first = prior()
    other = prior(**{field: "2025-05-30T00:00:00+00:00" if field == "recorded_at" else "x"})

    assert select_reusable_comparators([first, other], binding=BINDING).blocked == {("task0", "review", 0)}


def test_duplicates_that_differ_outside_the_identity_are_one_row() -> None:
    """Rows equal on the identity tuple are treated as one: the first is kept."""
    first = prior()
    second = prior(sandbox_backend="host-unsafe")

    selection = select_reusable_comparators([first, second], binding=BINDING)

    assert selection.rows == {("task0", "review", 0): first}
    assert selection.blocked == frozenset()


def test_the_max_age_is_part_of_the_binding() -> None:
    """A binding may shorten the evidence lifetime."""
    binding = attrs.evolve(BINDING, max_age=timedelta(days=0))

    assert refusal(prior(), binding) == "first measured 1 days ago (at most 0 allowed)"


# --- clean controls (no labels: precision, recall and weighted F1 are null by design) ----------


def clean_control(**review: Any) -> Row:
    """A valid review row of a clean-control case (approve, no findings): weighted F1 null."""
    metrics = {"review_weighted_f1": None, "review_clean_control": True, "review_clean_pass": True}
    return attrs.evolve(
        prior(review_score={"weighted_f1": None, "clean_control": True}), review={**metrics, **review}
    )


def test_a_valid_clean_control_review_row_is_reusable_without_a_weighted_f1() -> None:
    """A clean control has no weighted F1 by design; with valid evidence it is reusable."""
    assert refusal(clean_control()) is None
    assert refusal(clean_control(review_clean_pass=False)) is None  # a failed clean control is a measurement


def test_a_null_weighted_f1_is_refused_unless_the_row_is_a_clean_control() -> None:
    """Only review_clean_control true (not false, missing or truthy non-bool) excuses a null weighted F1."""
    for value in (False, None, 1):
        assert refusal(clean_control(review_clean_control=value)) == "no review weighted F1"
    no_flag = attrs.evolve(clean_control(), review={"review_weighted_f1": None})
    assert refusal(no_flag) == "no review weighted F1"


def test_a_clean_control_row_still_needs_valid_evidence_an_artifact_and_a_score() -> None:
    """The clean-control exception lifts only the weighted-F1 check."""
    row = clean_control()
    assert refusal(attrs.evolve(row, review_evidence_valid=False)) == "review evidence is not valid"
    assert refusal(attrs.evolve(row, extra={**row.extra, "review_artifact": ""})) == "no review artifact"
    assert refusal(attrs.evolve(row, extra={**row.extra, "review_score": None})) == "no review score"


def test_an_arm_with_its_own_agent_is_compared_on_its_own_model_and_runtime() -> None:
    """A Codex arm's identity carries its model and runtime digest; they replace the sweep's."""
    codex = ArmIdentity(skill_digest=SKILL, model="gpt-5.5", runtime_digest="c" * 8)
    binding = attrs.evolve(BINDING, arms={**BINDING.arms, "codex_workflow": codex})
    own = prior(arm="codex_workflow", model="gpt-5.5", runtime_digest="c" * 8)
    assert refusal(own, binding) is None
    assert (
        refusal(attrs.evolve(own, extra={**own.extra, "model": "claude-sonnet-4-5"}), binding)
        == "model differs"
    )
    assert (
        refusal(attrs.evolve(own, extra={**own.extra, "runtime_digest": "r" * 8}), binding)
        == "runtime digest differs or is missing"
    )
    assert refusal(prior(arm="workflow"), binding) is None  # the other arms keep the sweep's
