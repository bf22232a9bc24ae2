"""`wfbench gate` and `wfbench report` give byte-identical outputs to the pinned goldens.

The goldens under ``tests/cli/golden/`` were written by the row-at-a-time implementation
(every row in memory, ``derive_bindings`` filtering all rows once per task) before the gate and
the report became streaming (rows read line by line, grouped once, aggregated in one pass). Any
difference here is a behaviour change of the streaming path, not a refactoring.

The inputs are built by this module, deterministically: the reference-shaped mix of
``test_gate_cmd``, an edge-case file (unknown usage, integers beyond a double's exact range,
booleans and mixed ints/floats in review metrics, reused rows, missing transcripts,
skill-not-invoked, conflicting task digests, a cancelled row, disagreeing models, tasks first seen
in unsorted order) and a seeded random sweep of 7 tasks × 5 arms × 3 runs.

A deliberate change of the gate text, ``promotion.json`` or the reports regenerates them:
``WFBENCH_REGENERATE_GOLDEN=1 python3 -m pytest tests/cli/test_gate_golden.py``.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_gate_cmd import DIGEST, promoting_rows, reference_row, wfbench, write_results
from wfbench.adapters.store.json_indent import dumps_indented
from wfbench.domain.promotion.evidence import PromotionEvidence
from wfbench.domain.promotion.evidence_parts import promotion_mapping

GOLDEN = Path(__file__).parent / "golden"
REGENERATE = os.environ.get("WFBENCH_REGENERATE_GOLDEN") == "1"


def reference_mix() -> list[dict[str, Any]]:
    """test_gate_cmd's reference-shaped file: a promoting pair, an infra-error row, review rows."""
    rows = promoting_rows()
    rows.append(
        {
            "task": "task-b",
            "arm": "workflow",
            "run": 0,
            "class": "bugfix",
            "ok": False,
            "resolved": False,
            "error_kind": "infra-error",
            "error_detail": "clone failed",
            "input_tokens": 0,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 0,
            "session_ids": [],
            "cost_usd": 0.0,
            "duration_s": 0.0,
            "num_turns": 0,
            "sandbox_backend": "bwrap",
            "oracle_digest": DIGEST,
        }
    )
    review = {
        "review_evidence_valid": True,
        "review_weighted_f1": 0.8,
        "review_blocker_recall": 1.0,
        "review_false_positives": 0,
        "review_verdict_correct": True,
        "review_clean_control": False,
        "review_clean_pass": False,
    }
    rows += [reference_row("case-1", "review", r, **dict(review, review_weighted_f1=0.6)) for r in range(3)]
    rows += [reference_row("case-1", "candidate_review", r, **review) for r in range(3)]
    return rows


def edge_cases() -> list[dict[str, Any]]:
    """Every value shape the aggregation treats specially, tasks first seen in unsorted order."""
    big = 2**60 + 1
    rows = [
        reference_row("zeta", "workflow", 0, input_tokens=big, cost_usd=None),
        reference_row("zeta", "workflow", 1, input_tokens=big + 2, transcript_missing=True),
        reference_row("zeta", "candidate_workflow", 0, error_kind="skill-not-invoked", resolved=False),
        reference_row("zeta", "candidate_workflow", 1, reused=True, task_base_sha="e" * 40),
        reference_row("alpha", "workflow", 0, output_tokens=None, duration_s=12.25, class_=None),
        reference_row("alpha", "workflow", 1, error_kind="session-error", ok=False, resolved=False),
        reference_row("alpha", "candidate_workflow", 0, benchmark_model="m-2", ce_plugin_version="1.2.0"),
        reference_row("alpha", "candidate_workflow", 1, error_kind="cancelled", resolved=False),
        reference_row("alpha", "baseline", 0, cost_usd=0.0, num_turns=0),
        reference_row("alpha", "baseline", 1, cost_usd=0.0, class_="feature"),
    ]
    for run, (tp, f1) in enumerate([(2, 0.5), (3.0, 0.75), (True, 1)]):
        rows.append(
            reference_row(
                "mid",
                "review",
                run,
                review_evidence_valid=run != 2,
                review_true_positives=tp,
                review_weighted_f1=f1,
                review_blocker_recall=0.5 * run,
                review_verdict_correct=run > 0,
                review_clean_control=False,
                review_clean_pass=None if run == 1 else False,
            )
        )
        rows.append(
            reference_row(
                "mid",
                "candidate_review",
                run,
                review_true_positives=tp,
                review_weighted_f1=0.9,
                review_clean_control=False,
                review_grounded_evidence=1 if run else 0.5,
                error_kind="skill-not-invoked" if run == 2 else None,
            )
        )
    for row in rows:
        if "class_" in row:
            row["class"] = row.pop("class_")
    return rows


def random_sweep(seed: int = 18) -> list[dict[str, Any]]:
    """A seeded sweep of 7 tasks × 5 arms × 3 runs with failures, unknowns and review scores."""
    rng = random.Random(seed)
    kinds = [None] * 12 + [
        "oracle-failed",
        "verify-failed",
        "session-error",
        "infra-error",
        "skill-not-invoked",
        "evidence-unverified",
        "cleanup-failure",
    ]
    rows = []
    for t in rng.sample(range(7), 7):
        for run in range(3):
            for arm in ("baseline", "workflow", "candidate_workflow", "review", "candidate_review"):
                kind = rng.choice(kinds)
                fields: dict[str, Any] = {
                    "error_kind": kind,
                    "resolved": kind is None,
                    "cost_usd": rng.choice([None, 0.25, 1.5, 2.0]),
                    "output_tokens": rng.randint(0, 5000),
                    "duration_s": rng.uniform(1, 900),
                    "num_turns": rng.randint(1, 50),
                    "diff_files": rng.choice([None, 1, 4]),
                }
                if arm.endswith("review"):
                    fields |= {
                        "review_evidence_valid": kind != "evidence-unverified",
                        "review_weighted_f1": rng.choice([None, 0.2, 0.5, 0.8, 1.0]),
                        "review_blocker_recall": rng.choice([0.0, 0.5, 1.0]),
                        "review_true_positives": rng.randint(0, 5),
                        "review_verdict_correct": rng.random() < 0.8,
                        "review_clean_control": t == 3,
                        "review_clean_pass": rng.random() < 0.5,
                    }
                rows.append(reference_row(f"task-{t}", arm, run, **fields))
    return rows


FIXTURES = {"reference_mix": reference_mix, "edge_cases": edge_cases, "random_sweep": random_sweep}


def _normalized(text: str, directory: Path) -> str:
    """The output with the temp directory and the gate's clock replaced by placeholders."""
    text = text.replace(str(directory), "<DIR>")
    if text.lstrip().startswith("{"):
        evidence = json.loads(text)
        for key in ("generated_at", "evidence_expires_at"):
            evidence[key] = f"<{key}>"
        text = json.dumps(evidence, indent=2, ensure_ascii=False) + "\n"
    return text


def _check(name: str, actual: str) -> None:
    path = GOLDEN / name
    if REGENERATE:
        path.parent.mkdir(exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    assert path.is_file(), f"missing golden {path}: regenerate with WFBENCH_REGENERATE_GOLDEN=1"
    assert actual == path.read_text(encoding="utf-8"), f"{name} differs from its golden"


@pytest.mark.parametrize("fixture", sorted(FIXTURES))
def test_gate_and_report_outputs_equal_their_goldens(fixture: str, tmp_path: Path) -> None:
    """Gate text, the evidence (--out), and both reports; gate --json and its --tasks-out lines
    read back into exactly that evidence."""
    write_results(tmp_path, FIXTURES[fixture]())
    out, tasks = tmp_path / "regated.json", tmp_path / "tasks.jsonl"

    text = wfbench("gate", tmp_path)
    assert text.returncode == 0, text.stderr
    printed = wfbench("gate", tmp_path, "--json", "--out", out, "--tasks-out", tasks)
    assert printed.returncode == 0, printed.stderr
    report = wfbench("report", tmp_path)
    assert report.returncode == 0, report.stderr

    _check(f"{fixture}.gate.txt", _normalized(text.stdout, tmp_path))
    _check(f"{fixture}.gate.json", _normalized(out.read_text(encoding="utf-8"), tmp_path))
    lines = [json.loads(line) for line in tasks.read_text(encoding="utf-8").splitlines()]
    whole = promotion_mapping(json.loads(printed.stdout), lines)
    assert dumps_indented(whole) + "\n" == out.read_text(encoding="utf-8")
    # What gate writes, promote reads: the evidence passes every check of from_mapping.
    assert PromotionEvidence.from_mapping(whole).to_mapping() == whole
    _check(f"{fixture}.report.md", (tmp_path / "report.md").read_text(encoding="utf-8"))
    _check(f"{fixture}.report.html", (tmp_path / "report.html").read_text(encoding="utf-8"))
