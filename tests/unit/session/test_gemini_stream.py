"""Reading Gemini CLI's ``stream-json`` stream: verdicts, usage (unknown kept unknown), skill evidence.

The events are shaped like what Gemini CLI 0.61.0 printed against the scripted provider
(``docs/research/gemini-cli.md``).
"""

from __future__ import annotations

from typing import Any

import pytest

from wfbench.domain.results.rows import ErrorKind
from wfbench.domain.session.event_stream import ProcessOutcome, SkillEvidenceError
from wfbench.domain.session.gemini_stream import (
    classify_gemini_session,
    gemini_evidence_window,
    gemini_skill_invoked,
    gemini_tool_counts,
    read_gemini_usage,
)
from wfbench.domain.session.records import Usage
from wfbench.domain.workspace.sandbox import ProcessState

OK = ProcessOutcome(state=ProcessState.EXITED, returncode=0, wall_s=1.2345)
FAILED = ProcessOutcome(state=ProcessState.EXITED, returncode=1, stderr_tail="boom", wall_s=0.2)
INIT = {"type": "init", "session_id": "6399ddec-cd2d-4aab-b65e-0d7ceb2a0da3", "model": "gemini-2.5-pro"}
STATS = {"total_tokens": 45302, "input_tokens": 45210, "output_tokens": 85, "cached": 44000, "input": 1210}


def result(status: str = "success", stats: Any = STATS, **extra: Any) -> dict[str, Any]:
    return {"type": "result", "status": status, "stats": stats, **extra}


def use(tool_id: str, tool: str, **parameters: Any) -> dict[str, Any]:
    return {"type": "tool_use", "tool_name": tool, "tool_id": tool_id, "parameters": parameters}


def done(tool_id: str, status: str = "success") -> dict[str, Any]:
    return {"type": "tool_result", "tool_id": tool_id, "status": status}


def session(*events: dict[str, Any], last: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    return [INIT, {"type": "message", "role": "user", "content": "Task"}, *events, last or result()]


def test_a_clean_session_is_ok_with_its_id_duration_and_tool_counts() -> None:
    verdict = classify_gemini_session(
        session(
            use("w1", "write_file", file_path="a"), done("w1"), use("r1", "run_shell_command"), done("r1")
        ),
        process=OK,
    )
    assert (verdict.ok, verdict.error_kind, verdict.session_id) == (True, None, INIT["session_id"])
    assert verdict.duration_s == 1.234
    assert verdict.cost_usd is None
    assert verdict.num_turns is None
    assert verdict.tool_use_counts == {"write_file": 1, "run_shell_command": 1}


def test_usage_maps_the_stats_to_wfbench_fields_with_thinking_in_the_output() -> None:
    """1210 uncached + 44000 read; output 85 candidates + 7 thinking (total - prompt)."""
    assert read_gemini_usage(result(stats={**STATS, "total_tokens": 45302})) == Usage(
        input_tokens=1210, cache_creation_input_tokens=None, cache_read_input_tokens=44000, output_tokens=92
    )


def test_a_zero_prompt_reported_nothing_and_a_zero_cache_is_not_reported() -> None:
    zero = {"total_tokens": 0, "input_tokens": 0, "output_tokens": 0, "cached": 0, "input": 0}
    assert read_gemini_usage(result(stats=zero)) == Usage()
    assert read_gemini_usage(result(stats=None)) == Usage()
    uncached = {"total_tokens": 130, "input_tokens": 100, "output_tokens": 30, "cached": 0, "input": 100}
    assert read_gemini_usage(result(stats=uncached)) == Usage(100, None, None, 30)


def test_the_uncached_input_is_derived_when_the_cli_omits_it_and_output_may_be_unknown() -> None:
    assert read_gemini_usage(result(stats={"input_tokens": 50, "cached": 20})) == Usage(30, None, 20, None)


@pytest.mark.parametrize(
    "stats",
    [
        {**STATS, "cached": 50000},  # cached above the prompt
        {**STATS, "input": 1},  # uncached + cached is not the prompt
        {**STATS, "total_tokens": 10},  # total below prompt + output
        {**STATS, "output_tokens": -1},
        {**STATS, "input_tokens": True},
        {**STATS, "cached": 1.5},
        "lots",
    ],
)
def test_nonsense_usage_is_a_session_error_and_measures_nothing(stats: Any) -> None:
    verdict = classify_gemini_session(session(last=result(stats=stats)), process=OK)
    assert verdict.error_kind is ErrorKind.SESSION_ERROR
    assert verdict.usage == Usage()


@pytest.mark.parametrize(
    ("events", "reason"),
    [
        ([], "empty"),
        ([{"type": "message"}, result()], "not init"),
        ([INIT, INIT, result()], "second init"),
        ([INIT, {"type": "message"}], "never printed its result"),
        ([INIT, result(), {"type": "message"}], "followed by"),
    ],
)
def test_a_stream_without_init_first_and_one_result_last_is_unusable(
    events: list[dict[str, Any]], reason: str
) -> None:
    with pytest.raises(ValueError, match=reason):
        gemini_evidence_window(events)
    verdict = classify_gemini_session(events, process=OK)
    assert verdict.error_kind is ErrorKind.SESSION_ERROR
    assert reason.split()[0] in (verdict.stream_error or "")


def test_an_error_result_is_a_session_error_with_the_cli_message() -> None:
    failed = result(
        "error", error={"type": "Error", "message": "[API Error: scripted RESOURCE_EXHAUSTED (429)]"}
    )
    verdict = classify_gemini_session(session(last=failed), process=FAILED)
    assert verdict.error_kind is ErrorKind.SESSION_ERROR
    assert "RESOURCE_EXHAUSTED" in (verdict.error_detail or "")
    assert verdict.usage == Usage()


def test_an_error_event_fails_the_session_but_a_warning_does_not() -> None:
    error = {"type": "error", "severity": "error", "message": "Maximum session turns exceeded"}
    warning = {"type": "error", "severity": "warning", "message": "loop detected"}
    assert classify_gemini_session(session(error), process=OK).error_kind is ErrorKind.SESSION_ERROR
    assert classify_gemini_session(session(warning), process=OK).ok


def test_a_nonzero_exit_fails_even_a_successful_result() -> None:
    verdict = classify_gemini_session(session(), process=FAILED)
    assert verdict.error_kind is ErrorKind.SESSION_ERROR
    assert "boom" in (verdict.error_detail or "")


def test_no_captured_stream_is_a_session_error_with_unverifiable_evidence() -> None:
    verdict = classify_gemini_session(None, process=OK, expected_skill="plan")
    assert verdict.error_kind is ErrorKind.SESSION_ERROR
    assert verdict.skill_invoked is None
    assert verdict.tool_use_counts == {}


def test_a_successful_activate_skill_of_the_expected_skill_is_the_evidence() -> None:
    events = session(use("s1", "activate_skill", name="plan"), done("s1"))
    verdict = classify_gemini_session(events, process=OK, expected_skill="plan")
    assert (verdict.ok, verdict.skill_invoked) == (True, True)


@pytest.mark.parametrize(
    "events",
    [
        [use("s1", "activate_skill", name="plan"), done("s1", "error")],  # the CLI refused it
        [use("s1", "activate_skill", name="planner"), done("s1")],  # another skill
        [use("s1", "activate_skill", name="plan")],  # never answered
        [done("s1"), use("s1", "activate_skill", name="plan")],  # the result came first
        [use("s1", "read_file", file_path="/home/agent/.gemini/skills/plan/SKILL.md"), done("s1")],
        [use("s1", "activate_skill", name="plan"), done("s2")],  # another call's result
        [{"type": "message", "role": "assistant", "content": "I used the plan skill."}],
    ],
)
def test_anything_short_of_a_successful_activation_is_skill_not_invoked(events: list[dict[str, Any]]) -> None:
    verdict = classify_gemini_session(session(*events), process=OK, expected_skill="plan")
    assert verdict.error_kind is ErrorKind.SKILL_NOT_INVOKED
    assert verdict.skill_invoked is False
    assert verdict.usage.input_tokens == 1210  # still a measurement


@pytest.mark.parametrize(
    "events",
    [
        [{"type": "tool_use", "tool_name": "activate_skill", "parameters": {"name": "plan"}}],
        [{"type": "tool_use", "tool_name": "activate_skill", "tool_id": "s 1", "parameters": {}}],
        [{"type": "tool_use", "tool_name": "activate_skill", "tool_id": "s1", "parameters": "plan"}],
        [use("s1", "activate_skill", name="plan"), {"type": "tool_result", "tool_id": "s1", "status": 1}],
        [{"type": "tool_result", "status": "success"}],
    ],
)
def test_a_malformed_tool_event_makes_the_evidence_unverified(events: list[dict[str, Any]]) -> None:
    with pytest.raises(SkillEvidenceError):
        gemini_skill_invoked(session(*events), "plan")
    verdict = classify_gemini_session(session(*events), process=OK, expected_skill="plan")
    assert verdict.error_kind is ErrorKind.EVIDENCE_UNVERIFIED


def test_an_expected_skill_that_is_no_identifier_cannot_be_verified() -> None:
    verdict = classify_gemini_session(session(), process=OK, expected_skill="   ")
    assert verdict.error_kind is ErrorKind.EVIDENCE_UNVERIFIED


def test_a_cancelled_session_is_cancelled_not_an_error() -> None:
    cancelled = ProcessOutcome(state=ProcessState.CANCELLED, returncode=None, wall_s=0.1)
    assert classify_gemini_session(session(), process=cancelled).error_kind is ErrorKind.CANCELLED


def test_tool_counts_count_each_call_once_by_name() -> None:
    events = session(use("a", "replace"), use("a", "replace"), use("b", "replace"), {"type": "tool_use"})
    assert gemini_tool_counts(events) == {"replace": 2}
