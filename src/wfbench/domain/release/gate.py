"""The release gate: did a release-candidate agent runtime lose quality against the stable one?

:func:`compare_evaluations` takes two release evaluations (:mod:`.evaluation`) — one sweep of
the pinned tasks per runtime — and decides fail-closed, in this order, stopping early:

1. each side must validate (complete, fresh, pinned, rebuilt identically from its own rows);
   an invalid side is the one fixed problem ``"<side>: invalid, incomplete, stale, or
   mismatched evidence/pins"`` (what failed is listed apart, never an untrusted value);
2. both sides must use the same harness, task set, tasks, arms, model, effort and runs;
3. every task must have been graded against one and the same dependency digest on both sides;
4. **per task and gated arm**, the candidate must solve at least as many runs as stable —
   gains on one task never offset a loss on another.

The measurements (per-arm summaries, the solve delta against the control arm) are descriptive;
so is the paired statistics section (:func:`paired_statistics`), which never changes ``passed``.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from wfbench.domain.release.evaluation import validate_evaluation
from wfbench.domain.statistics.analysis import PairStatistics, analyze_pair
from wfbench.domain.statistics.samples import ArmRuns, PairedSamples, TaskPair

__all__ = [
    "GATE_SCHEMA",
    "INVALID",
    "ReleaseGate",
    "compare_evaluations",
    "dependency_problems",
    "paired_statistics",
]

GATE_SCHEMA = "wfbench.release-quality-gate/v1"
INVALID = "invalid, incomplete, stale, or mismatched evidence/pins"
SAME_FIELDS = ("harness", "task_set_digest", "tasks", "arms", "model", "effort", "runs")
_HEX64 = re.compile(r"[0-9a-f]{64}")


@attrs.frozen
class ReleaseGate:
    """The gate's verdict and everything ``release-quality-gate.json`` holds."""

    passed: bool
    problems: tuple[str, ...]
    #: ``{task: {arm: {candidate, stable, solve_delta}}}``; empty when a precondition failed.
    tasks: Mapping[str, Mapping[str, Mapping[str, int]]]
    #: ``{candidate|stable: {summary, paired}}``; empty when a precondition failed.
    measurements: Mapping[str, Any]
    #: What failed validation on each side (rule names only).
    diagnostics: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict)
    #: The fields both sides share (harness, task set, model, effort, runs), on the success path.
    shared: Mapping[str, Any] = attrs.field(factory=dict)
    gated_arms: tuple[str, ...] = ()

    def to_mapping(self, *, generated_at: dt.datetime, candidate: Any, stable: Any) -> dict[str, Any]:
        """``release-quality-gate.json``."""
        return {
            "schema": GATE_SCHEMA,
            "generated_at": generated_at.isoformat(),
            "candidate_runtime": candidate,
            "stable_runtime": stable,
            "passed": self.passed,
            "problems": list(self.problems),
            "gated_arms": list(self.gated_arms),
            "tasks": {task: {arm: dict(v) for arm, v in arms.items()} for task, arms in self.tasks.items()},
            "measurements": dict(self.measurements),
            "diagnostics": {side: list(items) for side, items in self.diagnostics.items()},
            **dict(self.shared),
        }


def dependency_problems(tasks: Sequence[str], sides: Sequence[Mapping[str, Any]]) -> list[str]:
    """One problem per task whose rows (all of them, on every side) do not share one 64-hex digest."""
    return [p for task in sorted(tasks) if (p := _dependency_problem(task, sides)) is not None]


def _dependency_problem(task: str, sides: Sequence[Mapping[str, Any]]) -> str | None:
    digests = [
        row.get("sandbox_dependency_content_digest")
        for side in sides
        for row in side["per_run"]
        if row.get("task") == task
    ]
    if not digests:  # no arm of the evaluations runs on this task's kind: nothing was graded
        return None
    first = digests[0]
    if isinstance(first, str) and _HEX64.fullmatch(first) and all(digest == first for digest in digests):
        return None
    return f"{task}: candidate and stable were not graded against identical task dependencies"


def _solved(side: Mapping[str, Any], task: str, arm: str) -> int:
    return sum(
        1
        for row in side["per_run"]
        if row.get("task") == task and row.get("arm") == arm and row.get("resolved") is True
    )


def _refused(
    problems: tuple[str, ...], diagnostics: Mapping[str, tuple[str, ...]] | None = None
) -> ReleaseGate:
    """A gate that failed before the per-task rule: no tasks, no measurements."""
    return ReleaseGate(False, problems, {}, {}, dict(diagnostics or {}))


def compare_evaluations(
    candidate: Any,
    stable: Any,
    *,
    pins: Mapping[str, Mapping[str, Any]],
    now: dt.datetime,
    gated_arms: Sequence[str] | None = None,
    candidate_runtime: str | None = None,
    stable_runtime: str | None = None,
) -> ReleaseGate:
    """The release gate over two evaluations (see the module docstring for the order of checks).

    ``gated_arms`` are the arms the per-task rule applies to (None: every arm but the control).
    """
    diagnostics: dict[str, tuple[str, ...]] = {}
    for name, side, runtime in (
        ("candidate", candidate, candidate_runtime),
        ("stable", stable, stable_runtime),
    ):
        failed = validate_evaluation(side, pins=pins, now=now, runtime_digest=runtime)
        if failed:
            diagnostics[name] = failed
    if diagnostics:
        return _refused(tuple(f"{name}: {INVALID}" for name in diagnostics), diagnostics)
    mismatched = tuple(
        f"candidate and stable use different {field}"
        for field in SAME_FIELDS
        if candidate[field] != stable[field]
    )
    if mismatched:
        return _refused(mismatched)
    dependencies = dependency_problems(list(pins), (candidate, stable))
    if dependencies:
        return _refused(tuple(dependencies))
    control = candidate.get("control")
    arms = tuple(gated_arms) if gated_arms else tuple(a for a in candidate["arms"] if a != control)
    unknown = [arm for arm in arms if arm not in candidate["arms"]]
    if unknown:
        return _refused((f"gated arm {unknown[0]} is not an arm of the evaluations",))
    runs = candidate["runs"]
    problems: list[str] = []
    tasks: dict[str, dict[str, dict[str, int]]] = {}
    for task in sorted(pins):
        for arm in arms:
            if candidate["arms"][arm] != pins[task].get("kind"):
                continue
            c, s = _solved(candidate, task, arm), _solved(stable, task, arm)
            tasks.setdefault(task, {})[arm] = {"candidate": c, "stable": s, "solve_delta": c - s}
            if c < s:
                problems.append(f"{task} [{arm}]: RC solved {c}/{runs}; stable solved {s}/{runs}")
    measurements = {
        side: {"summary": ev["summary"], "paired": ev["paired"]}
        for side, ev in (("candidate", candidate), ("stable", stable))
    }
    shared = {field: candidate[field] for field in ("harness", "task_set_digest", "model", "effort", "runs")}
    return ReleaseGate(not problems, tuple(problems), tasks, measurements, shared=shared, gated_arms=arms)


def paired_statistics(
    candidate: Mapping[str, Any], stable: Mapping[str, Any], arm: str, *, metric: str = "cost_usd"
) -> PairStatistics | None:
    """Candidate runtime vs stable runtime on one arm, paired per task (descriptive only).

    The task is the unit: each side's runs of ``arm`` on a task are its samples (stable as the
    incumbent). None when no task has runs on both sides.
    """

    def runs_of(side: Mapping[str, Any], task: str) -> ArmRuns:
        rows = sorted(
            (r for r in side["per_run"] if r.get("task") == task and r.get("arm") == arm),
            key=lambda r: r["run"],
        )
        return ArmRuns(tuple(r.get("resolved") is True for r in rows), tuple(r.get(metric) for r in rows))

    pairs = []
    for task in sorted({str(r.get("task")) for r in candidate["per_run"] if r.get("arm") == arm}):
        inc, cand = runs_of(stable, task), runs_of(candidate, task)
        if inc.runs and cand.runs:
            pairs.append(TaskPair(task, inc, cand))
    if not pairs:
        return None
    samples = PairedSamples(candidate="candidate", incumbent="stable", metric=metric, tasks=tuple(pairs))
    return analyze_pair(samples)
