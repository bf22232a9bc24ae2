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

import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence

import attrs

from wfbench.app.cell.context import RunSettings, overlaid_skill_digest
from wfbench.app.corpus.arms import Arm, TaskKind
from wfbench.app.corpus.binding import BoundTask, sha256_text
from wfbench.domain.errors import WfbenchError
from wfbench.domain.ports import ArtifactRef, PriorResults
from wfbench.domain.results.rows import Row
from wfbench.domain.sweep import layout
from wfbench.domain.sweep.reuse import (
    ArmIdentity,
    CellKey,
    ReuseBinding,
    TaskBinding,
    keep_paid_canary,
    select_reusable_comparators,
    stamp_reused,
)


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
        limits_digest=task.spec.limits.digest(),
    )


def arm_identities(
    task: BoundTask, arms: Iterable[Arm], settings: RunSettings | None = None
) -> dict[str, ArmIdentity]:
    """The identity of every non-candidate arm that evaluates a skill, as ``task``'s snapshot holds it.

    An arm with its own agent or model carries its own runtime digest and model (from ``settings``).
    """
    if task.snapshot is None:
        return {}
    identities: dict[str, ArmIdentity] = {}
    for arm in arms:
        if arm.is_candidate or not arm.evaluated_skills:
            continue
        runtime = None if settings is None else settings.runtime_for(arm.name)
        if arm.plugin is not None:  # identified by its plugin, not by skill bytes in the repository
            identities[arm.name] = ArmIdentity(
                plugin_version=arm.plugin.version,
                plugin_manifest_digest=arm.plugin.manifest_digest,
                review=arm.kind is TaskKind.REVIEW,
                model=arm.model,
                runtime_digest=None if runtime is None else runtime.runtime_digest,
            )
            continue
        incumbent = None if settings is None else settings.incumbent_overlay
        digest = overlaid_skill_digest(task.snapshot.path, arm.evaluated_skills, incumbent)
        identities[arm.name] = ArmIdentity(
            skill_digest=digest or None,
            review=arm.kind is TaskKind.REVIEW,
            model=arm.model,
            runtime_digest=None if runtime is None else runtime.runtime_digest,
        )
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
            arms=arm_identities(task, arms, settings),
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


def artifacts_of(row: Row) -> tuple[Row, list[ArtifactRef]]:
    """The files a reusable row names, relocated into this sweep's cell directory, and the row naming them.

    Transcripts (size and sha256 checked on copy) and the review artifact are required; the
    patch is copied when present. A prior sweep in the legacy flat layout is read from its flat
    paths and written to ``cells/<task>/<arm>/run-<i>/``, so the new sweep has one layout.

    Raises:
        ValueError: a path the row names is not one of its own cell's files.
    """
    task, arm, run = row.cell
    refs: list[ArtifactRef] = []
    moved: list[dict[str, object]] = []
    for entry in row.extra.get("transcript_artifacts") or ():
        source = str(entry["path"])
        dest = _relocated_transcript(source, task, arm, run)
        refs.append((source, dest, str(entry["sha256"]), int(entry["bytes"]), True))
        moved.append({**entry, "path": dest})
    extra: dict[str, object] = {**row.extra, "transcript_artifacts": moved}
    review = row.extra.get("review_artifact")
    if review:
        if not isinstance(review, str) or not layout.is_cell_artifact_path(review, task, arm, run):
            raise ValueError(f"unsafe review artifact name {review!r}")
        extra["review_artifact"] = layout.cell_file(task, arm, run, layout.REVIEW_NAME)
        refs.append((review, str(extra["review_artifact"]), None, None, True))
    own_patch = layout.cell_file(task, arm, run, layout.PATCH_NAME)
    for source in layout.patch_candidates(task, arm, run, row.extra.get("patch_artifact")):
        refs.append((source, own_patch, None, None, False))
    if row.extra.get("patch_artifact"):
        extra["patch_artifact"] = own_patch
    return attrs.evolve(row, extra=extra), refs


def _relocated_transcript(source: str, task: str, arm: str, run: int) -> str:
    """``source`` (either layout) as a path in the cell's ``transcripts/`` (legacy label prefix dropped)."""
    if not layout.is_cell_artifact_path(source, task, arm, run, transcript=True):
        raise ValueError(f"unsafe transcript path {source!r}")
    name = source.rsplit("/", 1)[-1]
    prefix = layout.legacy_label(task, arm, run) + "-"
    if name.startswith(prefix) and len(name) > len(prefix):
        name = name[len(prefix) :]
    return layout.cell_file(task, arm, run, f"{layout.TRANSCRIPTS_DIR}/{name}")


def select_reuse(
    prior_rows: Sequence[Row],
    *,
    tasks: Sequence[BoundTask],
    arms: Sequence[Arm],
    planned: Sequence[CellKey],
    settings: RunSettings,
) -> tuple[dict[CellKey, Row], tuple[CellKey, ...]]:
    """The prior rows that may stand in for planned cells (after keeping paid canaries), and the canaries.

    Nothing is copied: ``wfbench run --dry-run`` shows this selection; :func:`plan_reuse` then
    materializes it.
    """
    chosen: dict[CellKey, Row] = {}
    for task_id, binding in reuse_bindings(tasks, arms, settings).items():
        selection = select_reusable_comparators((r for r in prior_rows if r.task == task_id), binding=binding)
        chosen.update(selection.rows)
    kept, canaries = keep_paid_canary(chosen, planned)
    return dict(kept), tuple(canaries)


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
    kept, canaries = select_reuse(prior_rows, tasks=tasks, arms=arms, planned=planned, settings=settings)
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
            relocated, refs = artifacts_of(row)
            prior.copy_artifacts(refs, settings.out_dir)
        except (OSError, ValueError, WfbenchError) as exc:
            note(f"[{task}][{arm}][run {run}] comparator reuse failed ({exc}); running a paid cell")
            continue
        rows.append(stamp_reused(relocated, now=now))
        note(f"[{task}][{arm}][run {run}] reused comparator")
    return ReusePlan(rows=tuple(rows), canaries=canaries, durations=expected_durations(prior_rows))
