"""The proposer's digest, as text: exactly what it is told about the last sweep, redacted and capped.

The proposer writes its next candidate from this text alone, so its exact form is behaviour: each
arm's line (resolved share, error kinds, medians of the scored runs, unknown as ``n/a``), the runs
that did not resolve (capped, with the hidden oracle's detail replaced), the authored tests' last
lines, and the gate's decisions — with every secret masked and every control character escaped.
"""

from __future__ import annotations

from typing import Any

from wfbench.domain.evolution.digest import (
    HIDDEN_DETAIL,
    MAX_DETAIL_CHARS,
    MAX_FAILURES_PER_TASK,
    MAX_PROMPT_CHARS,
    MAX_TEST_LINES,
    evidence_digest,
)
from wfbench.domain.results.rows import ErrorKind, Row

KEY = "sk-ant-api03-abcdefghijklmnop"
DECLARED = "hunter2-declared-secret"


def _row(task: str, arm: str, run: int, **fields: Any) -> Row:
    kind = fields.pop("error_kind", None)
    values: dict[str, Any] = {
        "ok": True,
        "resolved": False,
        "task_class": "bug-fix" if task == "t1" else None,
    }
    values.update(fields)
    return Row(task=task, arm=arm, run=run, error_kind=None if kind is None else ErrorKind(kind), **values)


def _sweep() -> list[Row]:
    tail = "\n".join(f"line {i}" for i in range(20)) + "\n\n"
    return [
        _row("t1", "workflow", 0, resolved=True, cost_usd=0.5, num_turns=6, duration_s=12.0),
        _row("t1", "workflow", 1, resolved=True, cost_usd=0.75, num_turns=9, duration_s=13.0),
        _row(
            "t1",
            "workflow",
            2,
            error_kind="verify-failed",
            cost_usd=1.0,
            num_turns=10,
            duration_s=20.25,
            extra={"error_detail": f"tests failed with {KEY}\nand more", "authored_test_output": tail},
        ),
        # An infra error is kept out of the medians (its cost would dominate them) but counted.
        _row(
            "t1",
            "workflow",
            3,
            error_kind="infra-error",
            cost_usd=99.0,
            num_turns=99,
            duration_s=999.0,
            extra={"error_detail": "x" * 500},
        ),
        _row(
            "t1",
            "candidate_workflow",
            0,
            error_kind="oracle-unavailable",
            extra={"error_detail": "hidden_test_1 missing"},
        ),
        _row("t1", "candidate_workflow", 1, extra={"error_detail": "", "authored_test_output": "   \n  "}),
        _row("t2", "review", 0, resolved=True, review={"review_weighted_f1": 0.5}),
        _row(
            "t2",
            "review",
            1,
            resolved=True,
            review={"review_weighted_f1": 1},
            cost_usd=0.2,
            num_turns=3,
            duration_s=1.04,
        ),
        _row(
            "t2",
            "review",
            2,
            resolved=True,
            review={"review_weighted_f1": True},
            cost_usd=0.4,
            num_turns=4,
            duration_s=2.0,
        ),
        _row("t2", "plain", 0, resolved=True, review={"review_weighted_f1": 0.9}, error_kind="session-error"),
    ]


DECISIONS = [
    {
        "candidate_arm": "candidate_workflow",
        "incumbent_arm": "workflow",
        "decision": "keep_incumbent",
        "reasons": [f"t1: resolution regressed ({KEY})", "cost\x1b grew"],
    },
    {"candidate_arm": "candidate_review", "incumbent_arm": "review", "decision": "insufficient_evidence"},
]

EXPECTED = f"""\
# Generation 2

## The gate's decisions

- candidate_workflow vs workflow: keep_incumbent — t1: resolution regressed ([REDACTED]); cost\\x1b grew
- candidate_review vs review: insufficient_evidence

## Task t1 (bug-fix)

Prompt:

> Fix it.
> Use [REDACTED].

- workflow: resolved 2/4 (infra-error×1, verify-failed×1), median cost $0.7500, turns 9, wall 13.0 s
- candidate_workflow: resolved 0/2 (oracle-unavailable×1), median cost n/a, turns n/a, wall n/a

Runs that did not resolve:
- workflow run 2: verify-failed — tests failed with [REDACTED]\\x0aand more
    authored tests (last lines):
{chr(10).join(f"      line {i}" for i in range(8, 20))}
- workflow run 3: infra-error — {"x" * 400}
- candidate_workflow run 0: oracle-unavailable — {HIDDEN_DETAIL}
- candidate_workflow run 1: unresolved

## Task t2 (n/a)

- review: resolved 3/3 (no errors), median cost $0.3000, turns 4, wall 1.5 s, review weighted F1 0.75
- plain: resolved 1/1 (session-error×1), median cost n/a, turns n/a, wall n/a
"""


def test_the_digest_of_a_sweep_is_exactly_this_text() -> None:
    """Decisions, then per task (in sweep order) its prompt, each arm's line and its failing runs.

    Medians are over the scored runs only (the infra error's $99 is not in them), unknown values
    are ``n/a`` without a unit, a boolean is not a review score, a decision without reasons has
    no dash, a detail is cut at 400 characters and the authored tests show their last 12 lines.
    """
    digest = evidence_digest(
        _sweep(),
        prompts={"t1": f"Fix it.\nUse {KEY}.\n"},
        decisions=DECISIONS,
        secrets=[KEY],
        title="Generation 2",
    )

    assert digest == EXPECTED


def test_the_caps_are_the_documented_ones() -> None:
    """What the module says it caps: 400-character details, 12 test lines, 12 failures, 4,000 prompt chars."""
    assert (MAX_DETAIL_CHARS, MAX_TEST_LINES, MAX_FAILURES_PER_TASK, MAX_PROMPT_CHARS) == (400, 12, 12, 4000)


def test_without_decisions_or_prompts_the_digest_is_the_title_and_the_tasks() -> None:
    """No gate section, no prompt block; the default title; one trailing newline."""
    rows = [_row("t9", "workflow", 0, resolved=True, cost_usd=0.123456, num_turns=2, duration_s=0.05)]

    assert evidence_digest(rows, prompts={"other": "not this task's"}) == (
        "# Evidence from the last sweep\n"
        "\n"
        "## Task t9 (n/a)\n"
        "\n"
        "- workflow: resolved 1/1 (no errors), median cost $0.1235, turns 2, wall 0.1 s\n"
    )


def test_an_empty_sweep_is_only_its_title() -> None:
    """Nothing ran: the title alone, ending in one newline."""
    assert evidence_digest([], prompts={}) == "# Evidence from the last sweep\n"


def test_at_most_twelve_failing_runs_are_listed_per_task() -> None:
    """The first twelve, in sweep order; the resolve count still counts every run."""
    rows = [_row("t1", "workflow", run, error_kind="verify-failed") for run in range(15)]

    digest = evidence_digest(rows, prompts={})

    listed = [line for line in digest.splitlines() if line.startswith("- workflow run ")]
    assert listed == [f"- workflow run {run}: verify-failed" for run in range(12)]
    assert "- workflow: resolved 0/15 (verify-failed×15)" in digest


def test_a_long_test_output_line_is_cut_and_its_controls_escaped() -> None:
    """Each authored-test line is cut at 200 characters after escaping, indented under its run."""
    output = "ok\n" + "y" * 250 + "\n\x1b[2Jcleared\n"
    rows = [_row("t1", "workflow", 0, extra={"authored_test_output": output})]

    digest = evidence_digest(rows, prompts={})

    assert digest.endswith(
        "- workflow run 0: unresolved\n"
        "    authored tests (last lines):\n"
        "      ok\n"
        f"      {'y' * 200}\n"
        "      \\x1b[2Jcleared\n"
    )


def test_an_oracle_failure_never_shows_its_detail_and_a_non_text_detail_is_dropped() -> None:
    """Both oracle kinds get the fixed sentence; a detail that is not text is left out."""
    rows = [
        _row("t1", "a", 0, error_kind="oracle-failed", extra={"error_detail": "test_secret_case failed"}),
        _row("t1", "a", 1, error_kind="oracle-unavailable"),
        _row("t1", "a", 2, error_kind="verify-failed", extra={"error_detail": ["not", "text"]}),
        _row("t1", "a", 3, error_kind="no-work-produced", extra={"authored_test_output": 42}),
    ]

    digest = evidence_digest(rows, prompts={})

    assert "test_secret_case" not in digest
    assert digest.endswith(
        "Runs that did not resolve:\n"
        f"- a run 0: oracle-failed — {HIDDEN_DETAIL}\n"
        f"- a run 1: oracle-unavailable — {HIDDEN_DETAIL}\n"
        "- a run 2: verify-failed\n"
        "- a run 3: no-work-produced\n"
    )


def test_declared_secrets_are_masked_everywhere_they_can_appear() -> None:
    """A declared secret (not credential-shaped) in a prompt, a detail, a test line or a reason."""
    rows = [
        _row(
            "t1",
            "a",
            0,
            error_kind="verify-failed",
            extra={"error_detail": f"d {DECLARED}", "authored_test_output": f"t {DECLARED}"},
        )
    ]

    digest = evidence_digest(
        rows,
        prompts={"t1": f"p {DECLARED}"},
        decisions=[
            {"candidate_arm": "c", "incumbent_arm": "a", "decision": "keep_incumbent", "reasons": [DECLARED]}
        ],
        secrets=[DECLARED],
    )

    assert DECLARED not in digest
    assert "> p [REDACTED]" in digest
    assert "keep_incumbent — [REDACTED]" in digest
    assert "- a run 0: verify-failed — d [REDACTED]" in digest
    assert "      t [REDACTED]" in digest


def test_a_long_prompt_is_cut_at_its_limit_before_it_is_split_into_lines() -> None:
    """The first 4,000 characters of the redacted prompt; each line quoted, controls escaped."""
    prompt = ("a" * 99 + "\n") * 50  # 5,000 characters in 50 lines
    rows = [_row("t1", "a", 0, resolved=True)]

    digest = evidence_digest(rows, prompts={"t1": prompt})

    quoted = [line for line in digest.splitlines() if line.startswith("> ")]
    assert quoted == ["> " + "a" * 99] * 40
    assert "> \\x1b]0;title" in evidence_digest(rows, prompts={"t1": "\x1b]0;title"})


def test_a_decision_is_shown_with_what_it_names_even_when_parts_are_missing() -> None:
    """A decision without arms is shown with ``None`` for them (never dropped, never a traceback)."""
    digest = evidence_digest([], prompts={}, decisions=[{"decision": "promote", "reasons": ["ok", 3]}])

    assert digest == (
        "# Evidence from the last sweep\n\n## The gate's decisions\n\n- None vs None: promote — ok; 3\n"
    )


def test_the_oracles_outcome_class_and_its_failing_ids_never_reach_the_proposer() -> None:
    """Issue 25 §5: the outcome class and the author-only ``oracle.json`` stay out of EVIDENCE.md."""
    rows = [
        _row(
            "t1",
            "candidate",
            0,
            error_kind="oracle-failed",
            extra={
                "oracle_outcome": "expected-ids-missing",
                "oracle_outcome_artifact": "cells/t1/candidate/run-0/oracle.json",
                "error_detail": (
                    "hidden oracle failed: the must-fail canary test_5f3a did not fail (1 passed)"
                ),
            },
        ),
        _row("t1", "candidate", 1, error_kind="oracle-failed", extra={"oracle_outcome": "canary-tripped"}),
    ]
    text = evidence_digest(rows, prompts={"t1": "fix it"})
    assert HIDDEN_DETAIL in text  # control: the failing runs are listed
    for leaked in ("expected-ids-missing", "canary", "oracle.json", "test_5f3a", "oracle_outcome"):
        assert leaked not in text, leaked
