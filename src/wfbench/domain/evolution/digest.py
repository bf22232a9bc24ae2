"""What the proposer is told about the last sweep: a redacted digest of its evidence.

The proposer writes the next candidate skill from what the last generation taught: per task, the
prompt (the agent saw it), each arm's resolved share, error kinds, median cost, turns and wall
time; each failing run's error kind and detail, and the tail of the *authored* tests' output
(model-visible); the review score where there is one; the gate's decisions and reasons.

**Never** anything from the hidden side: the digest is built from an allow-list of row fields,
so oracle output and evidence, review artifacts, label matching and file names of hidden files
never enter it; the detail of an ``oracle-failed`` or ``oracle-unavailable`` run (which may
name hidden tests) is replaced by a fixed sentence. Every text is redacted of the given secrets.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from wfbench.domain.redaction import escape_controls, redact_text
from wfbench.domain.results.rows import ErrorKind, Row

__all__ = ["HIDDEN_DETAIL", "MAX_DETAIL_CHARS", "evidence_digest"]

HIDDEN_DETAIL = "the hidden oracle failed (its output is never shown)"
MAX_DETAIL_CHARS = 400
MAX_PROMPT_CHARS = 4000
MAX_TEST_LINES = 12
MAX_FAILURES_PER_TASK = 12
_HIDDEN_KINDS = frozenset({ErrorKind.ORACLE_FAILED, ErrorKind.ORACLE_UNAVAILABLE})


def _median(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def _fmt(value: float | None, digits: int, *, prefix: str = "", suffix: str = "") -> str:
    """``value`` with ``digits`` decimals and its unit, or ``n/a`` (no unit) when unknown."""
    return "n/a" if value is None else f"{prefix}{value:.{digits}f}{suffix}"


def _clean(text: str, secrets: Sequence[str], limit: int = MAX_DETAIL_CHARS) -> str:
    return escape_controls(redact_text(text, secrets))[:limit]


def _prompt_lines(prompt: str, secrets: Sequence[str]) -> list[str]:
    """The task's prompt, redacted, its first MAX_PROMPT_CHARS characters, line by line."""
    return redact_text(prompt, secrets)[:MAX_PROMPT_CHARS].splitlines()


def _detail(row: Row, secrets: Sequence[str]) -> str:
    if row.error_kind in _HIDDEN_KINDS:
        return HIDDEN_DETAIL
    detail = row.extra.get("error_detail")
    return _clean(detail, secrets) if isinstance(detail, str) and detail else ""


def _tests_tail(row: Row, secrets: Sequence[str]) -> list[str]:
    output = row.extra.get("authored_test_output")
    if not isinstance(output, str) or not output.strip():
        return []
    lines = redact_text(output, secrets).strip().splitlines()[-MAX_TEST_LINES:]
    return [f"      {escape_controls(line)[:200]}" for line in lines]


def _score(row: Row) -> float | None:
    value = row.review.get("review_weighted_f1")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _arm_line(arm: str, rows: Sequence[Row]) -> str:
    scored = [row for row in rows if not row.excluded]
    kinds: dict[str, int] = {}
    for row in rows:
        if row.error_kind is not None:
            kinds[row.error_kind.value] = kinds.get(row.error_kind.value, 0) + 1
    f1 = _median([_score(row) for row in scored])
    review = f", review weighted F1 {_fmt(f1, 2)}" if f1 is not None else ""
    return (
        f"- {arm}: resolved {sum(r.resolved for r in rows)}/{len(rows)}"
        f" ({', '.join(f'{k}×{n}' for k, n in sorted(kinds.items())) or 'no errors'}),"
        f" median cost {_fmt(_median([r.cost_usd for r in scored]), 4, prefix='$')},"
        f" turns {_fmt(_median([r.num_turns for r in scored]), 0)},"
        f" wall {_fmt(_median([r.duration_s for r in scored]), 1, suffix=' s')}{review}"
    )


def evidence_digest(
    rows: Sequence[Row],
    *,
    prompts: Mapping[str, str],
    decisions: Sequence[Mapping[str, Any]] = (),
    secrets: Sequence[str] = (),
    title: str = "Evidence from the last sweep",
) -> str:
    """The Markdown digest the proposer reads (see the module docstring for what it holds)."""
    lines = [f"# {title}", ""]
    if decisions:
        lines += ["## The gate's decisions", ""]
        for decision in decisions:
            reasons = "; ".join(_clean(str(r), secrets) for r in decision.get("reasons", []))
            lines.append(
                f"- {decision.get('candidate_arm')} vs {decision.get('incumbent_arm')}:"
                f" {decision.get('decision')}" + (f" — {reasons}" if reasons else "")
            )
        lines.append("")
    tasks = list(dict.fromkeys(row.task for row in rows))
    for task in tasks:
        of_task = [row for row in rows if row.task == task]
        task_class = of_task[0].task_class or "n/a"
        lines += [f"## Task {task} ({task_class})", ""]
        if task in prompts:
            lines += [
                "Prompt:",
                "",
                *(f"> {escape_controls(line)}" for line in _prompt_lines(prompts[task], secrets)),
                "",
            ]
        for arm in dict.fromkeys(row.arm for row in of_task):
            lines.append(_arm_line(arm, [row for row in of_task if row.arm == arm]))
        failures = [row for row in of_task if not row.resolved][:MAX_FAILURES_PER_TASK]
        if failures:
            lines += ["", "Runs that did not resolve:"]
        for row in failures:
            kind = row.error_kind.value if row.error_kind is not None else "unresolved"
            detail = _detail(row, secrets)
            lines.append(f"- {row.arm} run {row.run}: {kind}" + (f" — {detail}" if detail else ""))
            tail = _tests_tail(row, secrets)
            if tail:
                lines += ["    authored tests (last lines):", *tail]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
