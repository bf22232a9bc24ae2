"""A sweep as an Inspect AI eval log (``.json``), one sample per cell (``docs/export.md``).

The log is written as data in the shape Inspect AI's own ``write_eval_log`` gives (log format
version 2), so ``inspect_ai.log.read_eval_log`` and ``inspect view`` read it; wfbench does not
import ``inspect_ai`` (the tests read the log back with it, in a venv of its own).

* **Samples**: ``id`` = ``<task>/<arm>``, ``epoch`` = the run + 1 (Inspect's epochs are repeated
  runs of one sample); ``metadata`` = task, arm, run, class, kind, agent, error kind, the row's
  verdict fields; ``messages`` = the cell's sessions, phase after phase (each session's steps, as
  the ATIF export reads them: system, the prompt, user, assistant with tool calls, tool results);
  ``input`` = the cell's first prompt (its ``prompts.json``), or for a cell that kept none the
  placeholder ``[no prompt recorded: wfbench task <id>, prompt sha256 <digest>; …]`` (never an
  invented prompt; ``metadata.prompt_recorded`` says which).
* **Scores** (one scorer each): ``resolved`` (``C``/``I``, Inspect's correct/incorrect),
  ``quality`` (a number: the weighted review F1, a clean control's pass as 1/0, an imported
  Harbor task's ``oracle_reward``; absent when the cell has none) and ``cost`` (USD; absent
  when unknown — unknown is never zero).
* **Results**: per scorer, the mean over the samples that have it (``accuracy`` for resolved).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from wfbench.domain.results.rows import Row

__all__ = ["CellSessions", "eval_log", "messages_of", "quality_of"]

LOG_VERSION = 2


@attrs.frozen
class CellSessions:
    """One cell's row and its sessions' ATIF trajectories (phase order)."""

    row: Row
    trajectories: tuple[Mapping[str, Any], ...] = ()
    #: The cell's first prompt (``prompts.json``); None when the cell kept none.
    prompt: str | None = None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def quality_of(row: Row) -> float | None:
    """The cell's quality number: review weighted F1, a clean control's pass, or an oracle reward."""
    reward = _number(row.extra.get("oracle_reward"))
    if reward is not None:
        return reward
    f1 = _number(row.review.get("review_weighted_f1"))
    if f1 is not None:
        return f1
    clean = row.review.get("review_clean_pass")
    if row.review.get("review_clean_control") is True and isinstance(clean, bool):
        return 1.0 if clean else 0.0
    return None


def _tool_message(result: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    call = result.get("source_call_id")
    message: dict[str, Any] = {"role": "tool", "content": str(result.get("content") or "")}
    if isinstance(call, str):
        message["tool_call_id"] = call
        message["function"] = names.get(call)
    if _mapping(result.get("extra")).get("is_error") is True:
        message["error"] = {"type": "unknown", "message": str(result.get("content") or "")[:2000]}
    return message


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def messages_of(trajectory: Mapping[str, Any]) -> list[dict[str, Any]]:
    """An ATIF trajectory's steps as Inspect chat messages (tool results after their call)."""
    out: list[dict[str, Any]] = []
    for step in trajectory.get("steps", []):
        source, text = step.get("source"), str(step.get("message") or "")
        if source != "agent":
            out.append({"role": "system" if source == "system" else "user", "content": text})
        else:
            message: dict[str, Any] = {"role": "assistant", "content": text}
            if step.get("reasoning_content"):
                reasoning = {"type": "reasoning", "reasoning": str(step["reasoning_content"])}
                message["content"] = [reasoning, {"type": "text", "text": text}]
            calls = step.get("tool_calls") or []
            if calls:
                message["tool_calls"] = [
                    {
                        "id": str(c["tool_call_id"]),
                        "function": str(c["function_name"]),
                        "arguments": dict(c.get("arguments") or {}),
                        "type": "function",
                    }
                    for c in calls
                ]
            out.append(message)
        names = {str(c["tool_call_id"]): str(c["function_name"]) for c in step.get("tool_calls") or []}
        for result in _mapping(step.get("observation")).get("results", []):
            out.append(_tool_message(result, names))
    return out


def _scores(row: Row) -> dict[str, dict[str, Any]]:
    scores: dict[str, dict[str, Any]] = {
        "resolved": {
            "value": "C" if row.resolved else "I",
            "explanation": row.error_kind.value if row.error_kind else None,
            "history": [],
        }
    }
    quality = quality_of(row)
    if quality is not None:
        scores["quality"] = {"value": quality, "history": []}
    if row.cost_usd is not None:
        scores["cost"] = {"value": row.cost_usd, "history": []}
    for score in scores.values():
        if score.get("explanation") is None:
            score.pop("explanation", None)
    return scores


_METADATA_FIELDS = (
    "kind",
    "agent",
    "agent_version",
    "model",
    "oracle_outcome",
    "oracle_reward",
    "sandbox_backend",
    "network",
    "task_prompt_digest",
)


def _usage(row: Row) -> dict[str, Any]:
    fresh, out = row.input_tokens, row.output_tokens
    if fresh is None or out is None:
        return {}
    read, made = row.cache_read_input_tokens, row.cache_creation_input_tokens
    prompt = fresh + (read or 0) + (made or 0)
    usage: dict[str, Any] = {
        "input_tokens": prompt,
        "output_tokens": out,
        "total_tokens": prompt + out,
        "input_tokens_cache_write": made,
        "input_tokens_cache_read": read,
    }
    if row.cost_usd is not None:
        usage["total_cost"] = row.cost_usd
    return {k: v for k, v in usage.items() if v is not None}


def _sample(cell: CellSessions, model: str) -> dict[str, Any]:
    row = cell.row
    metadata: dict[str, Any] = {
        "task": row.task,
        "arm": row.arm,
        "run": row.run,
        "class": row.task_class,
        "ok": row.ok,
        "resolved": row.resolved,
        "error_kind": row.error_kind.value if row.error_kind else None,
        "oracle_passed": row.oracle_passed,
        "authored_tests_passed": row.authored_tests_passed,
    }
    metadata.update({k: row.extra[k] for k in _METADATA_FIELDS if k in row.extra})
    messages = [m for t in cell.trajectories for m in messages_of(t)]
    metadata["prompt_recorded"] = cell.prompt is not None
    sample: dict[str, Any] = {
        "id": f"{row.task}/{row.arm}",
        "epoch": row.run + 1,
        "input": cell.prompt if cell.prompt is not None else _no_prompt(row),
        "target": "",
        "messages": messages,
        "output": {"model": model, "choices": [], "completion": _last_text(messages)},
        "scores": _scores(row),
        "metadata": metadata,
        "store": {},
        "events": [],
        "model_usage": {model: _usage(row)} if _usage(row) else {},
        "attachments": {},
    }
    if row.duration_s is not None:
        sample["total_time"] = row.duration_s
    if row.error_kind is not None and not row.ok:
        detail = str(row.extra.get("error_detail") or row.error_kind.value)
        sample["error"] = {"message": detail, "traceback": "", "traceback_ansi": ""}
    return sample


def _no_prompt(row: Row) -> str:
    """The documented placeholder ``input`` of a cell that kept no ``prompts.json`` (never a prompt)."""
    digest = row.extra.get("task_prompt_digest")
    return (
        f"[no prompt recorded: wfbench task {row.task}"
        + (f", prompt sha256 {digest}" if digest else "")
        + "; the cell has no prompts.json]"
    )


def _last_text(messages: Sequence[Mapping[str, Any]]) -> str:
    for message in reversed(messages):
        content = message.get("content")
        if message.get("role") == "assistant" and isinstance(content, str) and content:
            return content
    return ""


def _results(samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    scores = []
    for name, metric in (("resolved", "accuracy"), ("quality", "mean"), ("cost", "mean")):
        values = [s["scores"][name]["value"] for s in samples if name in s["scores"]]
        if not values:
            continue
        numbers = [1.0 if v == "C" else 0.0 if v == "I" else float(v) for v in values]
        mean = sum(numbers) / len(numbers)
        scores.append(
            {
                "name": name,
                "scorer": name,
                "params": {},
                "scored_samples": len(numbers),
                "metrics": {metric: {"name": metric, "value": mean, "params": {}}},
            }
        )
    return {"total_samples": len(samples), "completed_samples": len(samples), "scores": scores}


@attrs.frozen
class LogFacts:
    """The sweep-level facts of the log: its name, model, when it started and finished."""

    name: str
    model: str
    started_at: str
    completed_at: str
    eval_id: str
    metadata: Mapping[str, Any] = attrs.field(factory=dict)


def eval_log(cells: Sequence[CellSessions], facts: LogFacts) -> dict[str, Any]:
    """The whole eval log (a JSON-ready mapping), samples in the rows' order."""
    samples = [_sample(cell, facts.model) for cell in cells]
    tasks = {cell.row.task for cell in cells}
    runs = max((cell.row.run + 1 for cell in cells), default=1)
    return {
        "version": LOG_VERSION,
        "status": "success",
        "eval": {
            "eval_id": facts.eval_id,
            "run_id": facts.eval_id,
            "created": facts.started_at,
            "task": f"wfbench/{facts.name}",
            "task_id": facts.eval_id,
            "task_version": 0,
            "task_attribs": {},
            "task_args": {},
            "task_args_passed": {},
            "solver": "wfbench",
            "dataset": {"name": facts.name, "samples": len(tasks)},
            "model": facts.model,
            "model_generate_config": {},
            "model_args": {},
            "config": {"epochs": runs},
            "packages": {},
            "metadata": dict(facts.metadata),
        },
        "plan": {"name": "plan", "steps": [], "config": {}},
        "results": _results(samples),
        "stats": {
            "started_at": facts.started_at,
            "completed_at": facts.completed_at,
            "model_usage": {},
            "role_usage": {},
        },
        "invalidated": False,
        "tags": ["wfbench"],
        "metadata": dict(facts.metadata),
        "samples": samples,
    }
