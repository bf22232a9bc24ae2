"""Use case: the release gate (``wfbench release gate``) and its evidence files.

Each side is a sweep directory (``results.jsonl`` + ``manifest.json``) or a stored
``release-evaluation.json`` (``wfbench release evaluate``). The trusted task pins are recomputed
from the corpus (the commit each task's ref resolves to, the hidden oracle's digest, the task
kind), never taken from the evidence. Whatever fails to load becomes an empty side, which the
gate refuses like any invalid evidence: a missing or corrupt input still yields failure
evidence, never a traceback.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from wfbench.app.corpus.binding import bind_tasks
from wfbench.app.corpus.corpus import Corpus
from wfbench.app.sweep.sweep import selected_tasks
from wfbench.domain import strict_json
from wfbench.domain.errors import InputError
from wfbench.domain.ports import Workspaces
from wfbench.domain.release.evaluation import build_evaluation
from wfbench.domain.release.gate import ReleaseGate, compare_evaluations, paired_statistics
from wfbench.domain.results.rows import Row
from wfbench.domain.statistics.view import effect_line
from wfbench.domain.sweep.manifest import MANIFEST_NAME, RunManifest

__all__ = [
    "EVALUATION_NAME",
    "GATE_JSON",
    "GATE_MD",
    "ReleaseSide",
    "evaluation_from_sweep",
    "load_side",
    "release_pins",
    "render_gate_md",
    "run_release_gate",
]

EVALUATION_NAME = "release-evaluation.json"
GATE_JSON = "release-quality-gate.json"
GATE_MD = "release-quality-gate.md"
#: The arm the per-arm solve delta is measured against when the sweep has it (the reference's
#: "no-GitNexus" comparison: the baseline without MCP or skills).
DEFAULT_CONTROL = "baseline_nomcp"


@attrs.frozen
class ReleaseSide:
    """One side as loaded: its evaluation (``{}`` when unusable) and why it could not be loaded."""

    source: str
    evaluation: Mapping[str, Any]
    load_problem: str | None = None

    @property
    def runtime(self) -> str | None:
        runtime = self.evaluation.get("runtime")
        return runtime.get("digest") if isinstance(runtime, Mapping) else None


def release_pins(
    corpus: Corpus, *, workspaces: Workspaces, include_expensive: bool = False, only: Sequence[str] = ()
) -> dict[str, dict[str, Any]]:
    """``{task: {sha, oracle_digest, kind}}`` recomputed from the corpus (refs resolved, oracles read).

    Raises:
        InputError: the corpus cannot be bound (naming the file, task and field).
    """
    bound = bind_tasks(
        corpus, selected_tasks(corpus, include_expensive=include_expensive, only=only), workspaces=workspaces
    )
    return {
        task.spec.id: {
            "sha": task.commit,
            "oracle_digest": task.oracle_digests["oracle_digest"],
            "kind": task.spec.kind.value,
        }
        for task in bound
    }


def _single(values: Sequence[Any]) -> Any:
    distinct = {json.dumps(v, sort_keys=True) for v in values}
    return values[0] if len(distinct) == 1 else None


def evaluation_from_sweep(
    rows: Sequence[Row],
    manifest: RunManifest,
    *,
    pins: Mapping[str, Mapping[str, Any]],
    arm_kinds: Mapping[str, str],
    control: str | None = None,
) -> dict[str, Any]:
    """The release evaluation of one sweep (its manifest says which arms, runs, model and runtime)."""
    per_run = [row.to_mapping() for row in rows]
    chosen = control if control is not None else DEFAULT_CONTROL if DEFAULT_CONTROL in manifest.arms else None
    return build_evaluation(
        per_run,
        tasks=pins,
        arms={arm: arm_kinds[arm] for arm in manifest.arms if arm in arm_kinds},
        runs=manifest.runs,
        model=manifest.model,
        effort=_single([row.get("effort") for row in per_run]) if per_run else None,
        runtime={
            "digest": manifest.runtime_digest,
            "agent": manifest.agent,
            "agent_version": manifest.agent_version,
        },
        harness={"wfbench_version": manifest.wfbench_version},
        control=chosen,
    )


def load_side(
    source: str,
    *,
    read_rows: Any,
    pins: Mapping[str, Mapping[str, Any]],
    arm_kinds: Mapping[str, str],
    control: str | None = None,
) -> ReleaseSide:
    """Load one side: a sweep directory, or a stored evaluation file; ``{}`` when unusable.

    ``read_rows(path)`` returns the rows of a ``results.jsonl`` (raises InputError when torn).
    """
    try:
        if os.path.isdir(source):
            manifest = RunManifest.from_mapping(_json(os.path.join(source, MANIFEST_NAME)))
            rows = read_rows(os.path.join(source, "results.jsonl"))
            evaluation = evaluation_from_sweep(
                rows, manifest, pins=pins, arm_kinds=arm_kinds, control=control
            )
            return ReleaseSide(source, evaluation)
        raw = _json(source)
        if not isinstance(raw, dict):
            raise InputError("a release evaluation must be a JSON object", source=source)
        return ReleaseSide(source, raw)
    except (InputError, OSError) as exc:
        return ReleaseSide(source, {}, load_problem=str(exc))


def _json(path: str) -> Any:
    try:
        with open(path, "rb") as handle:
            return strict_json.loads(handle.read(256 * 1024 * 1024).decode("utf-8"))
    except FileNotFoundError:
        raise InputError("does not exist", source=path) from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"is not valid JSON: {exc}", source=path) from None


def run_release_gate(
    candidate: ReleaseSide,
    stable: ReleaseSide,
    *,
    pins: Mapping[str, Mapping[str, Any]],
    now: dt.datetime,
    gated_arms: Sequence[str] | None = None,
    candidate_runtime: str | None = None,
    stable_runtime: str | None = None,
) -> tuple[ReleaseGate, dict[str, Any], str]:
    """The gate's verdict, ``release-quality-gate.json`` and ``release-quality-gate.md``."""
    gate = compare_evaluations(
        candidate.evaluation,
        stable.evaluation,
        pins=pins,
        now=now,
        gated_arms=gated_arms,
        candidate_runtime=candidate_runtime,
        stable_runtime=stable_runtime,
    )
    diagnostics = dict(gate.diagnostics)
    for name, side in (("candidate", candidate), ("stable", stable)):
        if side.load_problem is not None:
            diagnostics[name] = (f"could not be loaded: {side.load_problem}", *diagnostics.get(name, ()))
    gate = attrs.evolve(gate, diagnostics=diagnostics)
    statistics = _statistics(candidate.evaluation, stable.evaluation, gate) if gate.tasks else {}
    evidence = gate.to_mapping(generated_at=now, candidate=_identity(candidate), stable=_identity(stable))
    evidence["statistics"] = statistics
    return gate, evidence, render_gate_md(evidence)


def _identity(side: ReleaseSide) -> dict[str, Any]:
    runtime = side.evaluation.get("runtime")
    return {"source": side.source, **(dict(runtime) if isinstance(runtime, Mapping) else {"digest": None})}


def _statistics(candidate: Mapping[str, Any], stable: Mapping[str, Any], gate: ReleaseGate) -> dict[str, Any]:
    """Per gated arm: the paired per-task resolution and cost effect, RC against stable."""
    out: dict[str, Any] = {}
    for arm in gate.gated_arms:
        stats = paired_statistics(candidate, stable, arm)
        if stats is None:
            continue
        confidence = stats.config.confidence
        out[arm] = {
            "resolution": effect_line(stats.resolution, confidence).text(),
            "cost": effect_line(stats.metric, confidence).text(),
            "statistics": stats.to_mapping(),
        }
    return out


def _fmt(value: Any, spec: str = ".4f") -> str:
    return "n/a" if value is None else format(value, spec)


def render_gate_md(evidence: Mapping[str, Any]) -> str:
    """``release-quality-gate.md``: the verdict, the per-task table, problems, measurements, caveats."""
    cand, stab = evidence["candidate_runtime"], evidence["stable_runtime"]
    lines = [
        "# Release quality gate",
        "",
        f"**{'PASS' if evidence['passed'] else 'FAIL'}** — release candidate runtime `{cand.get('digest')}`"
        f" against stable runtime `{stab.get('digest')}`.",
        "",
        _side_line("candidate", cand),
        _side_line("stable", stab),
        f"- generated at {evidence['generated_at']}",
        "",
        "Rule: for every pinned task and gated arm, the candidate must solve at least as many runs as"
        " stable; a gain on one task never offsets a loss on another.",
        "",
        "## Per task",
        "",
    ]
    if evidence["tasks"]:
        lines += [
            "| task | arm | candidate solved | stable solved | delta |",
            "| --- | --- | ---: | ---: | ---: |",
        ]
        for task, arms in evidence["tasks"].items():
            for arm, v in arms.items():
                lines.append(f"| {task} | {arm} | {v['candidate']} | {v['stable']} | {v['solve_delta']:+d} |")
    else:
        lines.append("No per-task comparison: a precondition failed (see the problems).")
    lines += ["", "## Problems", ""]
    lines += [f"- {problem}" for problem in evidence["problems"]] or ["- none"]
    for side, items in evidence.get("diagnostics", {}).items():
        lines += [f"- {side}, what failed: " + "; ".join(items)]
    lines += _measurement_lines(evidence.get("measurements", {}))
    lines += ["", "## Paired statistics (descriptive)", ""]
    stats = evidence.get("statistics") or {}
    if stats:
        for arm, entry in stats.items():
            lines += [f"- {arm}, RC against stable, task as the unit: {entry['resolution']}; {entry['cost']}"]
    else:
        lines.append("- n/a (no per-task comparison)")
    lines += [
        "",
        "## Caveats",
        "",
        "- The per-task rule is a counting rule, not a test of statistical significance: with 3 runs per"
        " task a difference of one run can be noise. The paired statistics above are descriptive and never"
        " change the verdict.",
        "- This gate validates measurements only (completeness, freshness, pins, trustworthy rows,"
        " identical dependencies). The provenance of each runtime (who built it, from what) must be"
        " verified separately.",
    ]
    return "\n".join(lines) + "\n"


def _side_line(name: str, runtime: Mapping[str, Any]) -> str:
    agent = str(runtime.get("agent_version") or runtime.get("agent") or "")
    return f"- {name}: `{runtime.get('source')}`" + (f" (agent {agent})" if agent else "")


def _measurement_lines(measurements: Mapping[str, Any]) -> list[str]:
    if not measurements:
        return []
    lines = [
        "",
        "## Measurements (descriptive)",
        "",
        "Solve delta of each arm against the control arm (the reference's no-GitNexus comparison: the"
        " baseline without MCP or skills), and each arm's mean cost and wall time.",
        "",
        "| side | arm | solved | Δ vs control | mean cost $ | mean wall s |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for side, entry in measurements.items():
        paired = entry.get("paired", {}).get("arms", {})
        for arm, summary in entry.get("summary", {}).items():
            delta = paired.get(arm, {}).get("solve_delta")
            lines.append(
                f"| {side} | {arm} | {summary['solved']}/{summary['cells']} | {_fmt(delta, '+d')} |"
                f" {_fmt(summary['mean_cost_usd'])} | {_fmt(summary['mean_duration_s'], '.1f')} |"
            )
    return lines
