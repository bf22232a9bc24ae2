"""A release evaluation: one agent runtime's sweep of the pinned tasks, summarised and checkable.

:func:`build_evaluation` turns a sweep's per-run rows (plain mappings with the row field names)
into the ``wfbench.release-evaluation/v1`` object: the cells it expected and found, every row's
trustworthiness by the release rules, per-arm summaries and the solve delta against a control
arm. :func:`validate_evaluation` checks a stored evaluation fail-closed: schema, completeness,
runtime identity, the trusted task pins, freshness (at most 7 days old, never future-dated), at
least 3 runs — and that rebuilding it from its own ``per_run`` rows gives back exactly the
stored object, so no summary, count or extra field can be edited in.

Problems name the cell and the rule that failed, never an untrusted value.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "EVALUATION_SCHEMA",
    "MAX_AGE",
    "MIN_RUNS",
    "RUN_FIELDS",
    "TRUSTED_ERROR_KINDS",
    "build_evaluation",
    "canonical",
    "task_set_digest",
    "validate_evaluation",
]

EVALUATION_SCHEMA = "wfbench.release-evaluation/v1"
#: Evidence older than this cannot gate a release.
MAX_AGE = dt.timedelta(days=7)
MIN_RUNS = 3
#: The only error kinds a trustworthy row may carry: the agent ran and was graded.
TRUSTED_ERROR_KINDS = frozenset({None, "verify-failed", "oracle-failed"})
#: What a release evaluation keeps of each row.
RUN_FIELDS = (
    "task",
    "run",
    "arm",
    "task_base_sha",
    "oracle_digest",
    "model",
    "effort",
    "sandbox_backend",
    "ok",
    "resolved",
    "authored_tests_passed",
    "oracle_passed",
    "error_kind",
    "transcript_missing",
    "cost_usd",
    "duration_s",
    "sandbox_dependency_content_digest",
    "runtime_digest",
    "recorded_at",
)
_HEX64 = re.compile(r"[0-9a-f]{64}")
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def canonical(value: Any) -> str:
    """Canonical JSON (sorted keys, no spaces): equality of evaluations is equality of this."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


def task_set_digest(pins: Mapping[str, Mapping[str, Any]]) -> str:
    """sha256 of the canonical task pins."""
    return hashlib.sha256(canonical(pins).encode()).hexdigest()


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _time(value: Any) -> dt.datetime | None:
    try:
        moment = dt.datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None
    return moment if moment is not None and moment.utcoffset() is not None else None


def _untrusted(
    row: Mapping[str, Any], pin: Mapping[str, Any], model: Any, effort: Any, runtime: Any
) -> list[str]:
    """The release rules a row breaks (rule names only)."""
    broken = []
    if row.get("task_base_sha") != pin.get("sha") or row.get("oracle_digest") != pin.get("oracle_digest"):
        broken.append("task or oracle differs from the pin")
    if row.get("model") != model or row.get("effort") != effort:
        broken.append("model or effort differs from the evaluation's")
    if row.get("runtime_digest") != runtime:
        broken.append("runtime differs from the evaluation's")
    if row.get("sandbox_backend") != "bwrap":
        broken.append("not measured under bwrap")
    if row.get("ok") is not True:
        broken.append("the session did not end ok")
    flags = [row.get(name) for name in ("resolved", "authored_tests_passed", "oracle_passed")]
    if not all(isinstance(flag, bool) for flag in flags) or flags[0] != (flags[1] and flags[2]):
        broken.append("resolved is not authored tests and oracle passed")
    if row.get("error_kind") not in TRUSTED_ERROR_KINDS:
        broken.append("an error kind other than verify-failed or oracle-failed")
    if row.get("transcript_missing") is not False:
        broken.append("transcript missing")
    if not all(_is_number(row.get(name)) and row[name] >= 0 for name in ("cost_usd", "duration_s")):
        broken.append("cost or duration not measured")
    digest = row.get("sandbox_dependency_content_digest")
    if not (isinstance(digest, str) and _HEX64.fullmatch(digest)):
        broken.append("no dependency digest")
    if _time(row.get("recorded_at")) is None:
        broken.append("no recorded_at time")
    return broken


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 6) if values else None


def _change_pct(base: float | None, value: float | None) -> float | None:
    if base is None or value is None or base == 0:
        return None
    return round(100.0 * (value - base) / base, 2)


def _summaries(rows: Sequence[Mapping[str, Any]], arms: Sequence[str]) -> dict[str, dict[str, Any]]:
    summary: dict[str, dict[str, Any]] = {}
    for arm in arms:
        mine = [row for row in rows if row.get("arm") == arm]
        summary[arm] = {
            "cells": len(mine),
            "solved": sum(1 for row in mine if row.get("resolved") is True),
            "mean_cost_usd": _mean([row["cost_usd"] for row in mine if _is_number(row.get("cost_usd"))]),
            "mean_duration_s": _mean(
                [row["duration_s"] for row in mine if _is_number(row.get("duration_s"))]
            ),
        }
    return summary


def _paired(summary: Mapping[str, Mapping[str, Any]], control: str | None) -> dict[str, Any]:
    """Each arm against the control arm: solve delta, mean cost and wall change (descriptive)."""
    if control is None or control not in summary:
        return {"control": None, "arms": {}}
    base = summary[control]
    return {
        "control": control,
        "arms": {
            arm: {
                "solve_delta": values["solved"] - base["solved"],
                "cost_change_pct": _change_pct(base["mean_cost_usd"], values["mean_cost_usd"]),
                "duration_change_pct": _change_pct(base["mean_duration_s"], values["mean_duration_s"]),
            }
            for arm, values in summary.items()
            if arm != control
        },
    }


def _run_key(run: Any) -> int:
    return run if _is_count(run) else -1


def _identity(row: Mapping[str, Any]) -> tuple[str, int, str] | None:
    task, run, arm = row.get("task"), row.get("run"), row.get("arm")
    if isinstance(task, str) and isinstance(arm, str) and isinstance(run, int) and _is_count(run):
        return task, run, arm
    return None


def build_evaluation(
    per_run: Sequence[Mapping[str, Any]],
    *,
    tasks: Mapping[str, Mapping[str, Any]],
    arms: Mapping[str, str],
    runs: int,
    model: str | None,
    effort: str | None,
    runtime: Mapping[str, Any],
    harness: Mapping[str, Any],
    control: str | None = None,
) -> dict[str, Any]:
    """The evaluation object of one runtime's sweep.

    ``tasks`` are the pins ``{id: {sha, oracle_digest, kind}}``; ``arms`` maps each arm to the task
    kind it runs on; the expected cells are every task × run × arm of the task's kind, each
    exactly once. ``runtime`` (``digest`` required) and ``harness`` identify what measured it.
    ``complete`` is true when there is no problem. ``generated_at`` is the oldest measurement.
    """
    problems: list[str] = []
    if not _is_count(runs) or runs < MIN_RUNS:
        problems.append(f"runs must be an integer of at least {MIN_RUNS}")
    if not tasks:
        problems.append("no pinned task")
    if not isinstance(model, str) or not model:
        problems.append("no pinned model")
    digest = runtime.get("digest")
    if not isinstance(digest, str) or not digest:
        problems.append("no runtime identity")
    kept = [{name: row.get(name) for name in RUN_FIELDS} for row in per_run]
    expected = {
        (task, run, arm)
        for task, pin in tasks.items()
        for run in range(runs if _is_count(runs) else 0)
        for arm, kind in arms.items()
        if pin.get("kind") == kind
    }
    seen: Counter[tuple[str, int, str]] = Counter()
    for row in kept:
        key = _identity(row)
        if key is None:
            problems.append("a row has no valid (task, run, arm) identity")
            continue
        seen[key] += 1
        where = f"{key[0]}/{key[2]}/run {key[1]}"
        if key not in expected:
            problems.append(f"{where}: not an expected cell")
        elif seen[key] == 2:
            problems.append(f"{where}: appears more than once")
        else:
            problems += [f"{where}: {rule}" for rule in _untrusted(row, tasks[key[0]], model, effort, digest)]
    missing = sorted(expected - set(seen))
    problems += [f"{task}/{arm}/run {run}: missing" for task, run, arm in missing[:20]]
    if len(missing) > 20:
        problems.append(f"… and {len(missing) - 20} more missing cells")
    kept.sort(key=lambda row: (str(row.get("task")), str(row.get("arm")), _run_key(row.get("run"))))
    times = [t for t in (_time(row.get("recorded_at")) for row in kept) if t is not None]
    summary = _summaries(kept, list(arms))
    return {
        "schema": EVALUATION_SCHEMA,
        "complete": not problems,
        "generated_at": min(times).isoformat() if times else None,
        "measured_until": max(times).isoformat() if times else None,
        "runtime": dict(runtime),
        "harness": dict(harness),
        "task_set_digest": task_set_digest(tasks),
        "tasks": {task: dict(pin) for task, pin in sorted(tasks.items())},
        "arms": dict(arms),
        "model": model,
        "effort": effort,
        "runs": runs,
        "control": control,
        "summary": summary,
        "paired": _paired(summary, control),
        "problems": problems,
        "per_run": kept,
    }


def _rebuilt(raw: Mapping[str, Any]) -> dict[str, Any] | None:
    try:
        return build_evaluation(
            raw["per_run"],
            tasks=raw["tasks"],
            arms=raw["arms"],
            runs=raw["runs"],
            model=raw["model"],
            effort=raw["effort"],
            runtime=raw["runtime"],
            harness=raw["harness"],
            control=raw["control"],
        )
    except (KeyError, TypeError, AttributeError, ValueError):
        return None


def validate_evaluation(
    raw: Any,
    *,
    pins: Mapping[str, Mapping[str, Any]],
    now: dt.datetime,
    runtime_digest: str | None = None,
) -> tuple[str, ...]:
    """Why ``raw`` cannot gate a release (rule names, no untrusted values); empty when it can.

    ``pins`` are the trusted task pins (recomputed from the corpus), ``runtime_digest`` the
    runtime identity the side must have been measured under (None: whatever it states).
    """
    if not isinstance(raw, Mapping) or raw.get("schema") != EVALUATION_SCHEMA:
        return ("not a release evaluation (schema)",)
    failed: list[str] = []
    if raw.get("complete") is not True:
        failed.append("incomplete")
    runtime = raw.get("runtime")
    if not isinstance(runtime, Mapping) or (
        runtime_digest is not None and runtime.get("digest") != runtime_digest
    ):
        failed.append("runtime identity differs from the one expected")
    if raw.get("task_set_digest") != task_set_digest(pins) or raw.get("tasks") != {
        task: dict(pin) for task, pin in sorted(pins.items())
    }:
        failed.append("tasks differ from the pins")
    generated, until = _time(raw.get("generated_at")), _time(raw.get("measured_until"))
    if generated is None or until is None:
        failed.append("no timezone-aware measurement times")
    elif now - generated > MAX_AGE or generated > now or until > now:
        failed.append("stale or future-dated")
    if not _is_count(raw.get("runs")) or raw["runs"] < MIN_RUNS:
        failed.append(f"fewer than {MIN_RUNS} runs")
    rebuilt = _rebuilt(raw)
    if rebuilt is None or rebuilt["complete"] is not True:
        failed.append("rebuilding it from its rows does not give a complete evaluation")
    else:
        try:
            differs = canonical(rebuilt) != canonical(raw)
        except (TypeError, ValueError):
            differs = True
        if differs:
            failed.append("rebuilding it from its rows gives a different evaluation")
    return tuple(failed)
