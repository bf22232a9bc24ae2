"""`gate --json`'s summary and `gate --tasks-out`'s lines: the evidence in two parts, nothing lost."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.unit.promotion import test_judging, test_promotion_evidence
from wfbench.domain.errors import InputError
from wfbench.domain.promotion.evidence import PromotionEvidence, RunStatus
from wfbench.domain.promotion.evidence_parts import (
    GATE_SCHEMA,
    evidence_from_parts,
    evidence_summary,
    promotion_mapping,
    task_lines,
)
from wfbench.domain.promotion.policy import REFERENCE_POLICY

EVIDENCE = {
    "statistical, with task bindings": test_judging.evidence,
    "aborted": lambda: test_judging.evidence(status=RunStatus.ABORTED),
    "reference, implementation and review": test_promotion_evidence._evidence,
    "reference policy, no statistics": lambda: test_judging.evidence(REFERENCE_POLICY),
}


def _parts(evidence: PromotionEvidence) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Both parts as a reader gets them: through JSON text, the lines one by one."""
    summary = json.loads(json.dumps(evidence_summary(evidence)))
    return summary, [json.loads(json.dumps(line)) for line in task_lines(evidence)]


@pytest.mark.parametrize("name", sorted(EVIDENCE))
def test_the_summary_and_the_task_lines_read_back_into_the_very_evidence(name: str) -> None:
    evidence = EVIDENCE[name]()

    back = evidence_from_parts(*_parts(evidence))

    assert back == evidence
    assert json.dumps(promotion_mapping(*_parts(evidence))) == json.dumps(evidence.to_mapping())


@pytest.mark.parametrize("name", sorted(EVIDENCE))
def test_the_summary_is_the_evidence_less_every_per_task_list(name: str) -> None:
    full = EVIDENCE[name]().to_mapping()
    summary, _ = _parts(EVIDENCE[name]())

    assert summary.pop("schema") == GATE_SCHEMA
    assert summary.pop("selected_task_count") == len(full.pop("selected_tasks"))
    assert full.pop("schema_version") == 6
    full_decisions, decisions = full.pop("decisions"), summary.pop("decisions")
    assert summary == full
    for whole, short in zip(full_decisions, decisions, strict=True):
        assert short.pop("task_count") == len(whole.pop("tasks"))
        assert short.pop("gated_task_count") == len(whole.pop("gated_tasks"))
        if whole.get("statistics") is not None:
            assert whole["statistics"].pop("tasks")
        assert short == whole  # the verdict, reasons, p-values and effects themselves unchanged


def test_every_task_line_names_its_arm_and_task_and_holds_its_samples() -> None:
    evidence = test_judging.evidence()
    _, lines = _parts(evidence)
    (decision,) = evidence.decisions
    assert decision.statistics is not None

    header, *rest = lines
    bindings = [line["selected_task"] for line in rest if "selected_task" in line]
    tasks = [line for line in rest if "selected_task" not in line]

    assert header["generated_at"] == evidence.generated_at.isoformat()
    assert bindings == [dict(task) for task in evidence.bindings.selected_tasks]
    assert [(line["candidate_arm"], line["task"]) for line in tasks] == [
        (decision.candidate_arm, row.task) for row in decision.tasks
    ]
    first = decision.statistics.samples.tasks[0]
    assert tasks[0]["statistics"]["candidate"] == {
        "resolved": list(first.candidate.resolved),
        "metric": list(first.candidate.metric),
    }


def test_a_promotion_json_is_not_a_gate_summary() -> None:
    evidence = test_judging.evidence()
    _, lines = _parts(evidence)

    with pytest.raises(InputError) as refused:
        evidence_from_parts(json.loads(json.dumps(evidence.to_mapping())), lines)

    assert refused.value.field == "schema"


def test_lines_of_another_gate_are_refused() -> None:
    summary, lines = _parts(test_judging.evidence())
    lines[0]["generated_at"] = "2020-01-01T00:00:00+00:00"

    with pytest.raises(InputError) as refused:
        evidence_from_parts(summary, lines)

    assert refused.value.field == "generated_at"


def test_a_missing_task_line_is_refused_naming_the_decision() -> None:
    summary, lines = _parts(test_judging.evidence())
    del lines[-1]

    with pytest.raises(InputError) as refused:
        evidence_from_parts(summary, lines)

    assert refused.value.field == "decisions[0].task_count"


def test_an_edited_task_line_is_refused_as_evidence() -> None:
    """The whole is read as promotion.json is: the statistics are recomputed from the samples."""
    summary, lines = _parts(test_judging.evidence())
    lines[-1]["statistics"]["candidate"]["resolved"] = [True] * len(
        lines[-1]["statistics"]["candidate"]["resolved"]
    )

    with pytest.raises(InputError) as refused:
        evidence_from_parts(summary, lines)

    assert refused.value.field == "decisions[0].statistics"
