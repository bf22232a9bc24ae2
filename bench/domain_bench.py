#!/usr/bin/env python3
"""Time the pure domain at sweep scale: building rows, aggregating, gating, scoring a review.

Rows: ``--tasks`` (1,000) tasks × 4 arms × ``--runs`` (25) runs = 100,000 synthetic rows with
a realistic mix (most rows resolved; some oracle-failed, verify-failed, session-error,
infra-error, skill-not-invoked, evidence-unverified, cleanup-failure; usage and cost unknown
(``None``) on failed sessions and on a few others), built with ``Row.from_mapping`` from plain
mappings, as a tool reading ``results.jsonl`` would. Two scenarios, 4 arms each:

* ``implementation``: baseline, workflow, candidate_workflow, candidate_workflow_direct; both
  candidates are gated against ``workflow`` (arms are data: any pairing works);
* ``mixed``: workflow, candidate_workflow, review, candidate_review; one implementation gate
  and one review gate (review rows carry the 17 ``review_*`` score fields).

Printed per scenario (medians over ``--repeats`` (7) runs, in ms): row construction, aggregate(),
each gate, and the whole (aggregate + every gate) — the target is whole ≤ 2 s on a 2-core
machine; health of every arm is printed too.

Review: one ``score_review`` of 100 findings against 100 labels (median over ``--review-repeats``
(50) runs) in two shapes — the worst case, where every finding overlaps every label on one path
with different categories, severities and distances (a dense 100 × 100 assignment), and a
typical spread over 20 files. Target: one score ≤ 50 ms. Parsing both documents is timed apart.

``--clean`` drops every error kind, so the gates run to a decision on spend (``promote``)
instead of stopping at ``insufficient_evidence`` on the excluded runs of the realistic mix.

The machine's load average is printed: on a shared machine it moves every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from wfbench.domain import (  # noqa: E402 - after the path set-up above
    AggregateTable,
    Decision,
    PromotionPolicy,
    Row,
    aggregate,
    classify_sweep_health,
    evaluate_candidate,
    evaluate_review_candidate,
    parse_labels,
    parse_review_artifact,
    score_review,
    strict_json,
)

MODEL = "bench-model"
SCENARIOS: dict[str, dict[str, tuple[str, str] | None]] = {
    # arm -> (gate, incumbent) for candidates, None for the others
    "implementation": {
        "baseline": None,
        "workflow": None,
        "candidate_workflow": ("implementation", "workflow"),
        "candidate_workflow_direct": ("implementation", "workflow"),
    },
    "mixed": {
        "workflow": None,
        "candidate_workflow": ("implementation", "workflow"),
        "review": None,
        "candidate_review": ("review", "review"),
    },
}

# (error kind, weight): most rows resolve; the rest are a realistic spread of failures.
KIND_MIX: tuple[tuple[str | None, float], ...] = (
    (None, 0.84),
    ("oracle-failed", 0.07),
    ("verify-failed", 0.03),
    ("session-error", 0.015),
    ("infra-error", 0.01),
    ("skill-not-invoked", 0.01),
    ("evidence-unverified", 0.01),
    ("cleanup-failure", 0.005),
    ("no-work-produced", 0.005),
)
_KINDS = [kind for kind, _ in KIND_MIX]
_WEIGHTS = [weight for _, weight in KIND_MIX]
_NO_USAGE = frozenset({"session-error", "infra-error"})


def arm_factor(arm: str) -> float:
    """Candidates are a little cheaper than their incumbents, the baseline a little dearer."""
    return {"baseline": 1.2, "candidate_workflow": 0.9, "candidate_workflow_direct": 0.95}.get(arm, 1.0)


@attrs.frozen
class TaskShape:
    """What the synthetic rows of one task share: its spend level and, for reviews, its labels."""

    cost: float
    labels: int  # 0: a clean control


def review_fields(rng: random.Random, arm: str, shape: TaskShape, *, clean: bool) -> dict[str, Any]:
    """The 17 ``review_*`` score fields of one plausible review of a task with ``shape.labels`` defects.

    Candidates find a little more; the realistic mix has false positives, wrong verdicts and
    missed blockers, the ``clean`` one none of those.
    """
    labels = shape.labels
    tp = min(labels, rng.randint(labels // 2 + arm.startswith("candidate"), labels)) if labels else 0
    fp = 0 if clean else rng.choice((0, 0, 0, 1, 2))
    fn = labels - tp
    precision = round(tp / (tp + fp), 6) if tp + fp else None
    recall = round(tp / labels, 6) if labels else None
    f1 = round(2 * tp / (2 * tp + fp + fn), 6) if labels else None
    blocker_recall = (1.0 if clean or tp == labels else 0.5) if labels else None
    return {
        "review_true_positives": tp,
        "review_false_positives": fp,
        "review_false_negatives": fn,
        "review_precision": precision,
        "review_recall": recall,
        "review_f1": f1,
        "review_weighted_precision": precision,
        "review_weighted_recall": recall,
        "review_weighted_f1": f1,
        "review_blocker_recall": blocker_recall,
        "review_severity_accuracy": 1.0 if tp else None,
        "review_category_accuracy": 1.0 if tp else None,
        "review_grounded_evidence": 1.0 if tp + fp else None,
        "review_verdict_correct": clean or rng.random() < 0.95,
        "review_clean_control": labels == 0,
        "review_clean_pass": labels + fp == 0,
        "review_score_finite": True,
    }


def raw_row(
    rng: random.Random, cell: tuple[str, str, int], shape: TaskShape, *, clean: bool
) -> dict[str, Any]:
    """One synthetic row mapping with the reference's field names (``clean``: no error kind)."""
    task, arm, run = cell
    kind = None if clean else rng.choices(_KINDS, weights=_WEIGHTS)[0]
    factor = arm_factor(arm)
    measured = kind not in _NO_USAGE
    out = rng.randint(1000, 9000) if measured else None
    cost = round(shape.cost * factor * rng.uniform(0.95, 1.05), 4)
    row: dict[str, Any] = {
        "task": task,
        "arm": arm,
        "run": run,
        "class": "bugfix",
        "ok": kind not in _NO_USAGE,
        "resolved": kind is None,
        "error_kind": kind,
        "input_tokens": out * 20 if out is not None else None,
        "cache_creation_input_tokens": out * 3 if out is not None else None,
        "cache_read_input_tokens": out * 50 if out is not None else None,
        "output_tokens": int(out * factor) if out is not None else None,
        "cost_usd": cost if measured and (clean or rng.random() > 0.01) else None,
        "duration_s": round(rng.uniform(30, 600) * factor, 1) if measured else None,
        "num_turns": rng.randint(3, 40) if measured else None,
        "authored_tests_passed": kind not in ("verify-failed", *_NO_USAGE),
        "oracle_passed": None if kind in _NO_USAGE else kind != "oracle-failed",
        "skill_invoked": kind != "skill-not-invoked",
        "transcript_missing": False,
        "diff_files": rng.randint(1, 6),
        "diff_insertions": rng.randint(1, 200),
        "diff_deletions": rng.randint(0, 80),
        "reused": False,
        "session_ids": [f"s-{task}-{arm}-{run}"],
    }
    if arm.endswith("review"):
        row["review_evidence_valid"] = kind != "evidence-unverified"
        row |= review_fields(rng, arm, shape, clean=clean)
    return row


def raw_rows(scenario: str, tasks: int, runs: int, seed: int, *, clean: bool = False) -> list[dict[str, Any]]:
    """Every (task, arm, run) mapping of one scenario, task-major as a sweep writes them."""
    rng = random.Random(seed)
    arms = list(SCENARIOS[scenario])
    out = []
    for t in range(tasks):
        shape = TaskShape(cost=rng.uniform(0.3, 3.0), labels=0 if rng.random() < 0.1 else rng.randint(1, 5))
        out += [
            raw_row(rng, (f"task-{t:04d}", arm, run), shape, clean=clean)
            for run in range(runs)
            for arm in arms
        ]
    return out


def gate(table: AggregateTable, scenario: str, candidate: str, policy: PromotionPolicy) -> Decision:
    """Run the gate the scenario assigns to ``candidate``."""
    spec = SCENARIOS[scenario][candidate]
    assert spec is not None
    kind, incumbent = spec
    evaluate = evaluate_review_candidate if kind == "review" else evaluate_candidate
    return evaluate(table, candidate=candidate, incumbent=incumbent, model=MODEL, policy=policy)


def median_ms(action: Callable[[], object], repeats: int) -> float:
    """The median wall time of ``action`` in milliseconds."""
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def bench_scenario(scenario: str, args: argparse.Namespace) -> float:
    """Print one scenario's figures; return the whole-gate median in ms."""
    raws = raw_rows(scenario, args.tasks, args.runs, args.seed, clean=args.clean)
    policy = PromotionPolicy()
    rows = [Row.from_mapping(raw) for raw in raws]
    table = aggregate(rows)
    candidates = [arm for arm, spec in SCENARIOS[scenario].items() if spec is not None]

    def whole() -> list[Decision]:
        whole_table = aggregate(rows)
        return [gate(whole_table, scenario, arm, policy) for arm in candidates]

    build_ms = median_ms(lambda: [Row.from_mapping(raw) for raw in raws], args.repeats)
    aggregate_ms = median_ms(lambda: aggregate(rows), args.repeats)
    gate_ms = {
        arm: median_ms(lambda arm=arm: gate(table, scenario, arm, policy), args.repeats) for arm in candidates
    }
    whole_ms = median_ms(whole, args.repeats)
    health_ms = median_ms(lambda: classify_sweep_health(rows, list(SCENARIOS[scenario])), args.repeats)
    decisions = whole()
    health = classify_sweep_health(rows, list(SCENARIOS[scenario]))

    print(
        f"scenario {scenario}: {len(rows):,} rows "
        f"({args.tasks} tasks × {len(SCENARIOS[scenario])} arms × {args.runs} runs)"
    )
    print(
        f"  Row.from_mapping, all rows:      {build_ms:9.1f} ms  ({build_ms * 1000 / len(rows):.2f} µs/row)"
    )
    print(
        f"  aggregate():                     {aggregate_ms:9.1f} ms  ({len(table):,} task × arm aggregates)"
    )
    for decision in decisions:
        arm = decision.candidate_arm
        print(
            f"  gate {arm:<27} {gate_ms[arm]:9.1f} ms  ({decision.gate} gate → {decision.kind}, "
            f"{len(decision.reasons):,} reasons)"
        )
    print(f"  whole (aggregate + every gate):  {whole_ms:9.1f} ms  (target ≤ 2000 ms)")
    print(
        f"  classify_sweep_health(4 arms):   {health_ms:9.1f} ms  "
        f"({', '.join(f'{a} {h.status}' for a, h in health.items())})"
    )
    return whole_ms


# --- review scoring -------------------------------------------------------------------------

SEVERITIES = ("critical", "high", "medium", "low")
CATEGORIES = ("correctness", "security", "performance", "tests", "compatibility")


def finding(index: int, path: str, line: int, end_line: int, severity: str, category: str) -> dict[str, Any]:
    """One artifact finding."""
    return {
        "id": f"F{index:03d}",
        "severity": severity,
        "path": path,
        "line": line,
        "end_line": end_line,
        "category": category,
        "scenario": f"scenario {index}",
        "evidence": f"evidence {index}",
        "recommendation": "fix it",
        "blocking": severity in ("critical", "high"),
    }


def label(index: int, path: str, start: int, end: int, severity: str, category: str) -> dict[str, Any]:
    """One hidden label."""
    return {
        "id": f"L{index:03d}",
        "severity": severity,
        "path": path,
        "line_start": start,
        "line_end": end,
        "category": category,
    }


def worst_case(count: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every finding overlaps every label on one path, with different ranks everywhere.

    Labels start at lines 1..count and all end at line 10·count; findings start at lines
    1..count (in a scrambled order) and end at 10·count too, so every pair overlaps, and the
    start distances, label widths, categories and severities all differ between pairs.
    """
    rng = random.Random(1)
    starts = list(range(1, count + 1))
    rng.shuffle(starts)
    end = 10 * count
    findings = [
        finding(i, "src/core.py", starts[i], end, SEVERITIES[i % 4], CATEGORIES[i % 5]) for i in range(count)
    ]
    labels = [
        label(j, "src/core.py", j + 1, end, SEVERITIES[(j * 3) % 4], CATEGORIES[(j * 2) % 5])
        for j in range(count)
    ]
    return findings, labels


def typical_case(count: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Findings and labels spread over 20 files: most labels are hit once, some findings are noise."""
    rng = random.Random(2)
    labels = []
    for j in range(count):
        start = rng.randint(1, 400)
        labels.append(
            label(
                j,
                f"src/mod{j % 20}.py",
                start,
                start + rng.randint(0, 8),
                rng.choice(SEVERITIES),
                rng.choice(CATEGORIES),
            )
        )
    findings = []
    for i in range(count):
        if i < 0.7 * count:  # near a label
            target = labels[rng.randrange(count)]
            line = max(1, target["line_start"] + rng.randint(-2, 3))
            path = target["path"]
        else:  # noise
            line, path = rng.randint(1, 400), f"src/mod{rng.randrange(20)}.py"
        findings.append(
            finding(i, path, line, line + rng.randint(0, 4), rng.choice(SEVERITIES), rng.choice(CATEGORIES))
        )
    return findings, labels


def bench_review(name: str, shape: tuple[list[dict[str, Any]], list[dict[str, Any]]], repeats: int) -> float:
    """Print one review shape's figures; return the score median in ms."""
    findings, labels = shape
    artifact_bytes = json.dumps(
        {"schema_version": 1, "verdict": "request_changes", "findings": findings}
    ).encode()
    label_bytes = json.dumps({"schema_version": 1, "findings": labels}).encode()
    artifact, parsed_labels = parse_review_artifact(artifact_bytes), parse_labels(label_bytes)
    parse_ms = median_ms(lambda: (parse_review_artifact(artifact_bytes), parse_labels(label_bytes)), repeats)
    score_ms = median_ms(lambda: score_review(artifact, parsed_labels), repeats)
    score = score_review(artifact, parsed_labels)
    print(
        f"  {name:<8} score_review: {score_ms:7.2f} ms  "
        f"(TP {score.true_positives}, FP {score.false_positives}, "
        f"FN {score.false_negatives}, weighted F1 {score.weighted_f1}); parsing both: {parse_ms:6.2f} ms"
    )
    return score_ms


def bench_strict_json(repeats: int) -> None:
    """Print strict_json.loads against json.loads on a 256 KiB array of numbers and a large artifact."""
    numbers = json.dumps(list(range(0, 10**9, 21000)))[: 256 * 1024]
    numbers = numbers[: numbers.rfind(",")] + "]"
    big = worst_case(800)[0]
    artifact = json.dumps({"schema_version": 1, "verdict": "comment", "findings": big})
    for name, text in (("numbers", numbers), ("artifact", artifact)):
        ours = median_ms(lambda text=text: strict_json.loads(text), repeats)  # type: ignore[misc]
        theirs = median_ms(lambda text=text: json.loads(text), repeats)  # type: ignore[misc]
        print(
            f"  {name:<8} {len(text) / 1024:6.0f} KiB  strict_json.loads {ours:7.2f} ms  "
            f"json.loads {theirs:7.2f} ms  (ratio {ours / theirs:4.1f})"
        )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=25)
    parser.add_argument("--repeats", type=int, default=7, help="repeats of each row/aggregate/gate timing")
    parser.add_argument("--review-repeats", type=int, default=50)
    parser.add_argument("--findings", type=int, default=100, help="findings and labels in the review case")
    parser.add_argument("--seed", type=int, default=2)
    parser.add_argument(
        "--clean",
        action="store_true",
        help="no error kinds at all: every row resolves and the gates can promote",
    )
    parser.add_argument("--scenario", choices=[*SCENARIOS, "all"], default="all")
    args = parser.parse_args(argv)

    load = os.getloadavg()
    print(f"machine: {platform.platform()}, {os.cpu_count()} cpus, python {platform.python_version()}")
    print(f"load average at start: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print(f"medians of {args.repeats} runs (rows, aggregate, gates), {args.review_repeats} runs (review)")
    for scenario in SCENARIOS if args.scenario == "all" else [args.scenario]:
        bench_scenario(scenario, args)
    print(f"review of {args.findings} findings against {args.findings} labels (target ≤ 50 ms per score):")
    bench_review("worst", worst_case(args.findings), args.review_repeats)
    bench_review("typical", typical_case(args.findings), args.review_repeats)
    print("strict JSON decoding (the standard decoder with strict hooks) against plain json.loads:")
    bench_strict_json(args.review_repeats)
    load = os.getloadavg()
    print(f"load average at end: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
