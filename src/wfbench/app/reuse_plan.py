"""``--reuse-results DIR``: carry a prior sweep's comparator cells forward (promotion.md §5).

The domain decides which prior rows may stand in for a paid cell
(:func:`~wfbench.domain.sweep.reuse.select_reusable_comparators`, fail-closed on every binding) and
keeps one paid canary cell per incumbent arm (:func:`~wfbench.domain.sweep.reuse.keep_paid_canary`).
This module builds the bindings of *this* sweep (model, effort, backend, runtime digest, each
task's digests, each arm's skill digest as the task's snapshot holds it), asks the domain, and
materializes the chosen rows: their transcripts (size and sha256 re-checked on the copied
bytes), review artifact and patch are copied by a :class:`PriorResults` adapter, all or nothing;
a failed copy sends the cell to a paid run. Candidate arms always run. Arms without an
evaluated skill (``baseline``) have no identity to compare and are never reused.

The prior rows' durations also give the scheduler its longest-expected-first order
(:func:`expected_durations`).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol

import attrs

from wfbench.app.arms import Arm, TaskKind
from wfbench.app.binding import BoundTask, sha256_text
from wfbench.app.cell_checks import RunSettings, skill_digest
from wfbench.domain.errors import WfbenchError
from wfbench.domain.results.rows import Row
from wfbench.domain.sweep.reuse import (
    ArmIdentity,
    CellKey,
    ReuseBinding,
    TaskBinding,
    keep_paid_canary,
    select_reusable_comparators,
    stamp_reused,
)

#: ``(relative path, sha256 or None, size or None, required)``: one file a reused row names.
ArtifactRef = tuple[str, str | None, int | None, bool]
_SAFE = re.compile(r"[^A-Za-z0-9._-]")
_ARTIFACT_NAME = re.compile(r"[A-Za-z0-9._-]{1,255}")


class PriorResults(Protocol):
    """A prior sweep's output directory (an adapter reads it; the app never touches its files)."""

    @property
    def path(self) -> str:
        """The directory (for messages)."""

    def rows(self) -> tuple[Row, ...]:
        """Every row of its ``results.jsonl``."""

    def copy_artifacts(self, artifacts: Sequence[ArtifactRef], dest_dir: str) -> None:
        """Copy every artifact into ``dest_dir``, all or nothing.

        Raises:
            OSError, ValueError: a required file is missing or unsafe, or its bytes drifted from
                the recorded size or sha256 (nothing is left behind).
        """


@attrs.frozen
class ReusePlan:
    """What reuse decided: stamped rows to persist (canonical order), canaries, prior durations."""

    rows: tuple[Row, ...] = ()
    canaries: tuple[CellKey, ...] = ()
    durations: Mapping[tuple[str, str], float] = attrs.field(factory=dict)


def task_binding(task: BoundTask) -> TaskBinding:
    """What a prior row of ``task`` must have been measured against."""
    oracle = task.oracle_digests
    assets = task.asset_digests
    return TaskBinding(
        base_sha=task.commit,
        prompt_digest=sha256_text(task.spec.prompt),
        oracle_digest=oracle["oracle_digest"],
        oracle_command_digest=oracle["oracle_command_digest"],
        oracle_manifest_digest=oracle["oracle_manifest_digest"],
        asset_manifest_digest=assets["task_asset_manifest_digest"],
        dependency_manifest_digest=assets["sandbox_dependency_manifest_digest"],
    )


def arm_identities(task: BoundTask, arms: Iterable[Arm]) -> dict[str, ArmIdentity]:
    """The identity of every non-candidate arm that evaluates a skill, as ``task``'s snapshot holds it."""
    if task.snapshot is None:
        return {}
    identities: dict[str, ArmIdentity] = {}
    for arm in arms:
        if arm.is_candidate or not arm.evaluated_skills:
            continue
        digest = skill_digest(task.snapshot.path, arm.evaluated_skills)
        identities[arm.name] = ArmIdentity(skill_digest=digest or None, review=arm.kind is TaskKind.REVIEW)
    return identities


def reuse_bindings(
    tasks: Sequence[BoundTask], arms: Sequence[Arm], settings: RunSettings
) -> dict[str, ReuseBinding]:
    """One binding per prepared task (skill bytes live in each task's repository)."""
    candidates = frozenset(arm.name for arm in arms if arm.is_candidate)
    now = settings.now()
    return {
        task.spec.id: ReuseBinding(
            model=settings.model,
            effort=settings.effort,
            sandbox_backend=settings.sandbox_backend,
            runtime_digest=settings.runtime_digest,
            tasks={task.spec.id: task_binding(task)},
            arms=arm_identities(task, arms),
            now=now,
            candidate_arms=candidates,
        )
        for task in tasks
        if task.snapshot is not None
    }


def expected_durations(rows: Iterable[Row]) -> dict[tuple[str, str], float]:
    """Median prior cell wall time (else session time) per (task, arm), for longest-first order."""
    samples: dict[tuple[str, str], list[float]] = {}
    for row in rows:
        wall = row.extra.get("cell_wall_s")
        value = wall if isinstance(wall, int | float) and not isinstance(wall, bool) else row.duration_s
        if value is not None:
            samples.setdefault((row.task, row.arm), []).append(float(value))
    return {key: statistics.median(values) for key, values in samples.items()}


def artifacts_of(row: Row) -> list[ArtifactRef]:
    """The files a reusable row names: transcripts (checked), its review artifact, its patch (if any)."""
    refs: list[ArtifactRef] = [
        (str(entry["path"]), str(entry["sha256"]), int(entry["bytes"]), True)
        for entry in row.extra.get("transcript_artifacts") or ()
    ]
    review = row.extra.get("review_artifact")
    if review:
        if not isinstance(review, str) or not _ARTIFACT_NAME.fullmatch(review) or review.startswith("."):
            raise ValueError(f"unsafe review artifact name {review!r}")
        refs.append((review, None, None, True))
    refs.append((_SAFE.sub("_", f"{row.task}-{row.arm}-run{row.run}") + ".patch", None, None, False))
    return refs


def plan_reuse(
    prior: PriorResults,
    *,
    tasks: Sequence[BoundTask],
    arms: Sequence[Arm],
    planned: Sequence[CellKey],
    settings: RunSettings,
    note: Callable[[str], None],
) -> ReusePlan:
    """Select, canary-trim and materialize the prior rows this sweep may reuse."""
    prior_rows = prior.rows()
    chosen: dict[CellKey, Row] = {}
    for task_id, binding in reuse_bindings(tasks, arms, settings).items():
        selection = select_reusable_comparators((r for r in prior_rows if r.task == task_id), binding=binding)
        chosen.update(selection.rows)
    kept, canaries = keep_paid_canary(chosen, planned)
    for task, arm, run in canaries:
        note(
            f"reuse-results: keeping one paid {arm} cell ({task} run {run}) so incumbent health is"
            " measured this sweep"
        )
    note(
        f"reuse-results {prior.path}: {len(kept)} comparator cell(s) match this sweep; candidate arms"
        " always run"
    )
    now = settings.now()
    rows: list[Row] = []
    for (task, arm, run), row in kept.items():
        try:
            prior.copy_artifacts(artifacts_of(row), settings.out_dir)
        except (OSError, ValueError, WfbenchError) as exc:
            note(f"[{task}][{arm}][run {run}] comparator reuse failed ({exc}); running a paid cell")
            continue
        rows.append(stamp_reused(row, now=now))
        note(f"[{task}][{arm}][run {run}] reused comparator")
    return ReusePlan(rows=tuple(rows), canaries=canaries, durations=expected_durations(prior_rows))
