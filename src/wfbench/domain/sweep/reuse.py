"""Comparator reuse: which prior rows may stand in for a paid cell of this sweep.

See ``docs/reuse-and-resume.md``. A prior incumbent or comparator row is carried forward only
when everything that could change its outcome is provably the same: model, effort, sandbox
backend, runtime, the task's bindings (base commit, prompt, hidden oracle, assets and
dependencies), and the skill bytes or plugin the arm loads. Any doubt sends the cell to a paid
run: every check fails closed on a missing value, on either side.

Deliberate decision (the reference asks re-implementations to make it explicitly): a *measured
negative* (``verify-failed``, ``oracle-failed``) is reusable like a resolved row. The reference
reuses only clean rows, so its failed incumbent cells are re-rolled while its resolved ones are
kept, which inflates the incumbent's resolution rate; reusing every valid measurement keeps the
carried-forward sample unbiased. Evidence failures, excluded kinds and every other kind are
never reused. Likewise a valid *clean-control* review row (``review_clean_control`` true) is
reusable although its weighted F1 is null by design; the reference's non-null weighted-F1 rule
would re-roll every clean control.

Candidate arms are never reused, and :func:`keep_paid_canary` keeps at least one paid cell per
arm so a sweep always observes fresh health for every incumbent.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs

from wfbench.domain.results.rows import ErrorKind, Row
from wfbench.domain.sweep.layout import is_cell_artifact_path

__all__ = [
    "EVIDENCE_MAX_AGE",
    "REUSABLE_ERROR_KINDS",
    "TRANSCRIPT_SOURCE",
    "ArmIdentity",
    "CellKey",
    "ReuseBinding",
    "ReuseSelection",
    "TaskBinding",
    "is_reusable_comparator",
    "keep_paid_canary",
    "reuse_refusal",
    "select_reusable_comparators",
    "stamp_reused",
]

#: Oldest first measurement a reused row may carry (the 90-day evidence lifetime).
EVIDENCE_MAX_AGE = timedelta(days=90)
#: Error kinds besides ``None`` whose rows may be reused: valid, measured negatives.
REUSABLE_ERROR_KINDS = frozenset({ErrorKind.VERIFY_FAILED, ErrorKind.ORACLE_FAILED})
#: The ``source`` every transcript artifact entry must carry.
TRANSCRIPT_SOURCE = "parent-captured-stream-json"
#: Largest transcript a row may point at (the capture cap, after redaction).
MAX_TRANSCRIPT_BYTES = 8 * 1024 * 1024

_SHA256 = re.compile(r"[0-9a-f]{64}")
_ARTIFACT_KEYS = frozenset({"path", "sha256", "bytes", "source"})

#: ``(task, arm, run)``: one cell of a sweep.
CellKey = tuple[str, str, int]


@attrs.frozen
class TaskBinding:
    """What a task was measured against; every field must match the prior row exactly.

    The two manifest digests are required to be non-empty on both sides (fail closed).
    """

    base_sha: str
    prompt_digest: str
    oracle_digest: str
    oracle_command_digest: str
    oracle_manifest_digest: str
    asset_manifest_digest: str | None
    dependency_manifest_digest: str | None
    #: The task's own limits (timeouts, CPUs, memory, storage); None when it declares none, so a
    #: row of a task without limits (or from before limits were recorded) still matches.
    limits_digest: str | None = None


@attrs.frozen
class ArmIdentity:
    """What an arm loads: a skill digest, or (for a plugin arm) a plugin version and manifest.

    ``review`` arms must also carry valid, scored review evidence to be reused. ``model`` and
    ``runtime_digest``, when set, are the arm's own (an arm that names its agent or model) and
    replace the sweep's in the comparison.
    """

    skill_digest: str | None = None
    plugin_version: str | None = None
    plugin_manifest_digest: str | None = None
    review: bool = False
    model: str | None = None
    runtime_digest: str | None = None

    @property
    def is_plugin(self) -> bool:
        """True when the arm is identified by its plugin rather than by skill bytes."""
        return self.plugin_version is not None or self.plugin_manifest_digest is not None


@attrs.frozen
class ReuseBinding:
    """Everything a prior row must match to stand in for a paid cell of this sweep.

    ``arms`` lists the arms that may be reused at all (with their identity); an arm missing
    from it, or listed in ``candidate_arms``, is never reused. ``now`` is the sweep's clock
    reading (timezone-aware).
    """

    model: str
    effort: str | None
    sandbox_backend: str
    runtime_digest: str | None
    tasks: Mapping[str, TaskBinding]
    arms: Mapping[str, ArmIdentity]
    now: datetime
    candidate_arms: frozenset[str] = frozenset()
    max_age: timedelta = EVIDENCE_MAX_AGE


def _text(value: Any) -> str | None:
    """A non-empty string, else ``None``."""
    return value if isinstance(value, str) and value else None


def _same(expected: str | None, actual: Any) -> bool:
    """Both sides present (non-empty) and equal: the fail-closed comparison."""
    return bool(expected) and expected == _text(actual)


def _parse_time(value: Any) -> datetime | None:
    """An ISO-8601 timestamp; a naive one is taken as UTC; anything else is ``None``."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _outcome_refusal(row: Row, identity: ArmIdentity) -> str | None:
    if row.error_kind is not None and row.error_kind not in REUSABLE_ERROR_KINDS:
        return f"error kind {row.error_kind.value} is not a reusable measurement"
    if not row.ok:
        return "the session was not ok"
    if row.transcript_missing:
        return "the transcript is missing"
    if row.extra.get("candidate_overlay_digest") not in (None, ""):
        return "the row carries a candidate overlay"
    if identity.review:
        if row.review_evidence_valid is not True:
            return "review evidence is not valid"
        if not _text(row.extra.get("review_artifact")):
            return "no review artifact"
        if not isinstance(row.extra.get("review_score"), Mapping):
            return "no review score"
        # A clean control (no labels) has no weighted F1 by design; it is still a measurement.
        clean_control = row.review.get("review_clean_control") is True
        if row.review.get("review_weighted_f1") is None and not clean_control:
            return "no review weighted F1"
    return None


def _age_refusal(row: Row, binding: ReuseBinding) -> str | None:
    raw = row.extra.get("reused_from_recorded_at") or row.extra.get("recorded_at")
    recorded = _parse_time(raw)
    if recorded is None:
        return "no parseable recording time"
    age = binding.now - recorded
    if age < timedelta(0):
        return "recorded in the future"
    if age > binding.max_age:
        return f"first measured {age.days} days ago (at most {binding.max_age.days} allowed)"
    return None


def _environment_refusal(row: Row, binding: ReuseBinding, identity: ArmIdentity) -> str | None:
    extra = row.extra
    if (identity.model or binding.model) not in (extra.get("model"), extra.get("benchmark_model")):
        return "model differs"
    if extra.get("effort") != binding.effort:
        return "effort differs"
    if extra.get("sandbox_backend") != binding.sandbox_backend:
        return "sandbox backend differs"
    if not _same(identity.runtime_digest or binding.runtime_digest, extra.get("runtime_digest")):
        return "runtime digest differs or is missing"
    return None


def _task_refusal(row: Row, binding: ReuseBinding) -> str | None:
    task = binding.tasks.get(row.task)
    if task is None:
        return "task is not in this sweep"
    extra = row.extra
    exact = (
        ("task_base_sha", task.base_sha),
        ("task_prompt_digest", task.prompt_digest),
        ("oracle_digest", task.oracle_digest),
        ("oracle_command_digest", task.oracle_command_digest),
        ("oracle_manifest_digest", task.oracle_manifest_digest),
        ("task_asset_manifest_digest", task.asset_manifest_digest),
        ("sandbox_dependency_manifest_digest", task.dependency_manifest_digest),
    )
    for field, expected in exact:
        if not _same(expected, extra.get(field)):
            return f"{field} differs or is missing"
    if extra.get("task_limits_digest") != task.limits_digest:
        return "task_limits_digest differs (the task's limits changed)"
    return None


def _identity_refusal(row: Row, identity: ArmIdentity) -> str | None:
    extra = row.extra
    if identity.is_plugin:
        if not _same(identity.plugin_version, extra.get("ce_plugin_version")):
            return "plugin version differs or is missing"
        if not _same(identity.plugin_manifest_digest, extra.get("ce_plugin_manifest_digest")):
            return "plugin manifest digest differs or is missing"
        return None
    if not _same(identity.skill_digest, extra.get("skill_digest")):
        return "skill digest differs or is missing"
    return None


def _artifact_refusal(row: Row) -> str | None:
    artifacts = row.extra.get("transcript_artifacts")
    if not isinstance(artifacts, list | tuple) or not artifacts:
        return "no transcript artifacts"
    for entry in artifacts:
        if not isinstance(entry, Mapping) or set(entry) != _ARTIFACT_KEYS:
            return "malformed transcript artifact entry"
        size = entry["bytes"]
        if (
            entry["source"] != TRANSCRIPT_SOURCE
            or not isinstance(entry["sha256"], str)
            or not _SHA256.fullmatch(entry["sha256"])
            or isinstance(size, bool)
            or not isinstance(size, int)
            or not 0 <= size <= MAX_TRANSCRIPT_BYTES
            or not isinstance(entry["path"], str)
            or not is_cell_artifact_path(entry["path"], row.task, row.arm, row.run, transcript=True)
        ):
            return "malformed transcript artifact entry"
    return None


def reuse_refusal(row: Row, *, binding: ReuseBinding) -> str | None:
    """Why ``row`` may not stand in for a paid cell, or ``None`` when it may."""
    if row.arm in binding.candidate_arms:
        return f"{row.arm} is a candidate arm"
    identity = binding.arms.get(row.arm)
    if identity is None:
        return f"{row.arm} is not a reusable arm"
    for check in (
        _outcome_refusal(row, identity),
        _age_refusal(row, binding),
        _environment_refusal(row, binding, identity),
        _task_refusal(row, binding),
        _identity_refusal(row, identity),
        _artifact_refusal(row),
    ):
        if check is not None:
            return check
    return None


def is_reusable_comparator(row: Row, *, binding: ReuseBinding) -> bool:
    """True when ``row`` may be carried forward instead of paying for its cell."""
    return reuse_refusal(row, binding=binding) is None


@attrs.frozen
class ReuseSelection:
    """Reusable prior rows by cell, the cells blocked by conflicting duplicates, and refusals."""

    rows: Mapping[CellKey, Row] = attrs.field(factory=dict)
    blocked: frozenset[CellKey] = frozenset()
    refusals: Mapping[CellKey, str] = attrs.field(factory=dict)


def _identity_tuple(row: Row) -> tuple[Any, ...]:
    extra = row.extra
    return (
        extra.get("skill_digest"),
        extra.get("oracle_digest"),
        row.review.get("review_weighted_f1"),
        extra.get("ce_plugin_manifest_digest"),
        extra.get("recorded_at"),
    )


def select_reusable_comparators(rows: Iterable[Row], *, binding: ReuseBinding) -> ReuseSelection:
    """Pick the reusable prior rows, one per cell.

    Duplicate rows for one cell with the same identity (skill digest, oracle digest, weighted
    F1, plugin manifest, recording time) are one row: the first is kept. Duplicates that differ
    are conflicting evidence: the cell is blocked and paid for, whichever of them is reusable.
    """
    first: dict[CellKey, Row] = {}
    blocked: set[CellKey] = set()
    for row in rows:
        key = row.cell
        if key in first and _identity_tuple(first[key]) != _identity_tuple(row):
            blocked.add(key)
        first.setdefault(key, row)
    chosen: dict[CellKey, Row] = {}
    refusals: dict[CellKey, str] = {}
    for key in sorted(first):
        reason = (
            "conflicting duplicate rows" if key in blocked else reuse_refusal(first[key], binding=binding)
        )
        if reason is None:
            chosen[key] = first[key]
        else:
            refusals[key] = reason
    return ReuseSelection(rows=chosen, blocked=frozenset(blocked), refusals=refusals)


def keep_paid_canary(
    reusable: Mapping[CellKey, Row], planned: Iterable[CellKey]
) -> tuple[Mapping[CellKey, Row], tuple[CellKey, ...]]:
    """Keep one paid cell per arm whose every planned cell would otherwise be reused.

    Returns the reusable rows restricted to ``planned`` cells minus the canaries, and the
    canary cells (the lexicographically smallest planned cell of each such arm). Only planned
    cells count, so a prior sweep with more runs cannot defeat the canary; applying it to its
    own output removes nothing more (it is idempotent).
    """
    by_arm: dict[str, list[CellKey]] = {}
    for key in planned:
        by_arm.setdefault(key[1], []).append(key)
    kept = {key: reusable[key] for cells in by_arm.values() for key in cells if key in reusable}
    canaries = tuple(sorted(min(cells) for cells in by_arm.values() if all(key in reusable for key in cells)))
    for key in canaries:
        del kept[key]
    return dict(sorted(kept.items())), canaries


def stamp_reused(row: Row, *, now: datetime) -> Row:
    """The row as carried into this sweep: ``reused``, original measurement time kept, ``recorded_at`` now.

    ``reused_from_recorded_at`` survives chains of reuse, so the evidence clock never resets.
    """
    extra = dict(row.extra)
    extra["reused_from_recorded_at"] = extra.get("reused_from_recorded_at") or extra.get("recorded_at")
    extra["recorded_at"] = now.isoformat()
    return attrs.evolve(row, reused=True, extra=extra)
