"""The promotion evidence in two parts: what ``wfbench gate --json`` prints, and its per-task lines.

``promotion.json`` (schema 6, :class:`~wfbench.domain.promotion.evidence.PromotionEvidence`) holds,
for every decision, both arms' aggregates and the paired samples of every task: 28 MB at 3,000
tasks, most of a wide gate's ``--json`` time (issue 33). So ``gate --json`` prints the *summary*
(:data:`GATE_SCHEMA`: the decisions, their reasons and statistics, counts where the evidence
lists every task) and ``gate --tasks-out FILE`` writes the *task lines* (:data:`GATE_TASKS_SCHEMA`,
JSON Lines): a header, one line per selected task's binding, then one line per decision and task
with the task's gate evidence and its paired samples and effects. Nothing is lost:
:func:`promotion_mapping` puts both back together into the ``promotion.json`` object they came
from, and :func:`evidence_from_parts` reads that as evidence (every check of
:meth:`~wfbench.domain.promotion.evidence.PromotionEvidence.from_mapping` included, the
statistics recomputed from their samples). ``promotion.json`` itself is unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from wfbench.domain.errors import InputError
from wfbench.domain.promotion.decision import Decision
from wfbench.domain.promotion.evidence import EVIDENCE_SCHEMA_VERSION, PromotionEvidence

__all__ = [
    "GATE_SCHEMA",
    "GATE_TASKS_SCHEMA",
    "evidence_from_parts",
    "evidence_summary",
    "promotion_mapping",
    "task_lines",
]

#: ``wfbench gate --json``'s document.
GATE_SCHEMA = "wfbench.gate/v1"
#: The first line of ``wfbench gate --tasks-out FILE``.
GATE_TASKS_SCHEMA = "wfbench.gate-tasks/v1"


def evidence_summary(evidence: PromotionEvidence) -> dict[str, Any]:
    """What ``gate --json`` prints (:meth:`PromotionEvidence.summary_mapping`)."""
    return evidence.summary_mapping(GATE_SCHEMA)


def task_lines(evidence: PromotionEvidence) -> Iterator[dict[str, Any]]:
    """The per-task lines, one at a time: the header, the task bindings, each decision's tasks.

    A decision's line carries the task's row of the decision's ``tasks`` (``evidence``) and its
    entry of ``statistics.tasks`` (``statistics``) when it has one, each without the task id the
    line already names.
    """
    yield {
        "schema": GATE_TASKS_SCHEMA,
        "generated_at": evidence.generated_at.isoformat(),
        "required_candidate_arms": list(evidence.required_candidate_arms),
    }
    for binding in evidence.bindings.selected_tasks:
        yield {"selected_task": dict(binding)}
    for decision in evidence.decisions:
        yield from _decision_lines(decision)


def _decision_lines(decision: Decision) -> Iterator[dict[str, Any]]:
    arm = decision.candidate_arm
    stats = {} if decision.statistics is None else _by_task(decision.statistics.task_mappings())
    for row in decision.tasks:
        line = {"candidate_arm": arm, "task": row.task, "evidence": _without_task(row.to_mapping())}
        entry = stats.pop(row.task, None)
        if entry is not None:
            line["statistics"] = entry
        yield line
    for task, entry in stats.items():  # samples of a task the gate had no row for (none today)
        yield {"candidate_arm": arm, "task": task, "statistics": entry}


def _by_task(entries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {entry["task"]: _without_task(entry) for entry in entries}


def _without_task(mapping: dict[str, Any]) -> dict[str, Any]:
    mapping.pop("task")
    return mapping


def evidence_from_parts(summary: Any, lines: Iterable[Any]) -> PromotionEvidence:
    """The evidence :func:`evidence_summary` and :func:`task_lines` were made from.

    Raises:
        InputError: either part is not of its schema, they are not of the same gate, a line is
            malformed, or the whole is not valid evidence (the field is named).
    """
    return PromotionEvidence.from_mapping(promotion_mapping(summary, lines))


def promotion_mapping(summary: Any, lines: Iterable[Any]) -> dict[str, Any]:
    """The ``promotion.json`` object the parts were made from, fields in its order (not validated
    as evidence: :func:`evidence_from_parts` does that).

    Raises:
        InputError: either part is not of its schema, they are not of the same gate, or a line
            is malformed (the field is named).
    """
    if not isinstance(summary, Mapping) or summary.get("schema") != GATE_SCHEMA:
        raise InputError(f"must be {GATE_SCHEMA} (what wfbench gate --json prints)", field="schema")
    selected, rows, stats = _read_lines(iter(lines), summary)
    decisions = summary.get("decisions")
    if not isinstance(decisions, list) or not all(isinstance(d, Mapping) for d in decisions):
        raise InputError("must be a list of objects", field="decisions")
    unknown = (set(rows) | set(stats)) - {d.get("candidate_arm") for d in decisions}
    if unknown:
        raise InputError(
            f"names arms with no decision: {', '.join(sorted(map(str, unknown)))}", field="tasks"
        )
    raw = _evidence_mapping(summary, selected)
    raw["decisions"] = [
        _decision(d, rows.get(d.get("candidate_arm"), []), stats.get(d.get("candidate_arm")), index)
        for index, d in enumerate(decisions)
    ]
    return raw


def _read_lines(
    lines: Iterator[Any], summary: Mapping[str, Any]
) -> tuple[list[Any], dict[str, list[Any]], dict[str, list[Any]]]:
    header = next(lines, None)
    if not isinstance(header, Mapping) or header.get("schema") != GATE_TASKS_SCHEMA:
        raise InputError(f"the first line must be {GATE_TASKS_SCHEMA}", field="schema")
    if header.get("generated_at") != summary.get("generated_at"):
        raise InputError("is not the summary's: these lines are of another gate", field="generated_at")
    selected: list[Any] = []
    rows: dict[str, list[Any]] = {}
    stats: dict[str, list[Any]] = {}
    for number, line in enumerate(lines, start=2):
        if isinstance(line, Mapping) and set(line) == {"selected_task"}:
            selected.append(line["selected_task"])
            continue
        arm, task = _line_key(line, number)
        if "evidence" in line:
            rows.setdefault(arm, []).append({"task": task, **_object(line["evidence"], number)})
        if line.get("statistics") is not None:
            stats.setdefault(arm, []).append({"task": task, **_object(line["statistics"], number)})
    return selected, rows, stats


def _line_key(line: Any, number: int) -> tuple[str, str]:
    if not isinstance(line, Mapping) or not {"evidence", "statistics"} & set(line):
        raise InputError("must be a selected_task or a decision's task", field=f"line {number}")
    arm, task = line.get("candidate_arm"), line.get("task")
    if not isinstance(arm, str) or not isinstance(task, str) or not task:
        raise InputError("must name its candidate_arm and task", field=f"line {number}")
    return arm, task


def _object(value: Any, number: int) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InputError("must hold objects", field=f"line {number}")
    return value


def _evidence_mapping(summary: Mapping[str, Any], selected: list[Any]) -> dict[str, Any]:
    """The ``promotion.json`` object's fields before its decisions, in its order."""
    if summary.get("selected_task_count") != len(selected):
        raise InputError("disagrees with the task lines' selected tasks", field="selected_task_count")
    out: dict[str, Any] = {}
    for key, value in summary.items():
        if key == "selected_task_count":
            out["selected_tasks"] = selected
        elif key == "run_status":
            out["schema_version"] = EVIDENCE_SCHEMA_VERSION
            out[key] = value
        elif key not in ("schema", "decisions"):
            out[key] = value
    return out


def _decision(
    summary: Mapping[str, Any], rows: list[Any], stats: list[Any] | None, index: int
) -> dict[str, Any]:
    """One decision object of ``promotion.json``, in its order, from its summary and its lines."""
    where = f"decisions[{index}]"
    if summary.get("task_count") != len(rows):
        raise InputError("disagrees with the task lines", field=f"{where}.task_count")
    gated = [row["task"] for row in rows if row.get("gated") is True]
    if summary.get("gated_task_count") != len(gated):
        raise InputError("disagrees with the task lines", field=f"{where}.gated_task_count")
    out: dict[str, Any] = {}
    for key, value in summary.items():
        if key == "task_count":
            out["gated_tasks"] = gated
        elif key == "reasons":
            out |= {"reasons": value, "tasks": rows}
        elif key == "statistics" and isinstance(value, Mapping):
            out[key] = {**value, "tasks": sorted(stats or [], key=lambda entry: str(entry["task"]))}
        elif key != "gated_task_count":
            out[key] = value
    return out
