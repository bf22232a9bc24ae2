"""Exact words and boundaries of the Gemini CLI stream classifier (what mutation testing asks of it).

Each test pins a message, a boundary or a branch the behavioural tests in
``test_gemini_stream.py`` leave loose, so a changed word or comparison fails here.
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
    read_gemini_usage,
)
from wfbench.domain.session.records import Usage
from wfbench.domain.workspace.sandbox import ProcessState

OK = ProcessOutcome(state=ProcessState.EXITED, returncode=0, wall_s=2.0004)
INIT = {"type": "init", "session_id": "s-1"}
STATS = {"total_tokens": 130, "input_tokens": 100, "output_tokens": 30, "cached": 40, "input": 60}


def result(**extra: Any) -> dict[str, Any]:
    return {"type": "result", "status": "success", "stats": STATS, **extra}


def use(tool_id: Any, tool: str = "activate_skill", parameters: Any = None) -> dict[str, Any]:
    return {
        "type": "tool_use",
        "tool_name": tool,
        "tool_id": tool_id,
        "parameters": parameters or {"name": "plan"},
    }


@pytest.mark.parametrize(
    ("events", "message"),
    [
        ([], "the event stream is empty"),
        ([{"type": "message"}, INIT], "the first event is 'message', not init"),
        ([{}, INIT], "the first event is None, not init"),
        ([INIT, {"type": "init"}], "a second init event"),
        ([INIT, result(), {"type": "tool_use"}], "the result is followed by 'tool_use'"),
        ([INIT, {"type": "message"}], "the session never printed its result"),
    ],
)
def test_window_messages_are_exact(events: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(ValueError) as raised:
        gemini_evidence_window(events)
    assert str(raised.value) == message
    assert classify_gemini_session(events, process=OK).stream_error == message


def test_a_lone_init_and_result_is_a_whole_window() -> None:
    assert gemini_evidence_window([INIT, result()]) == (INIT, result())


@pytest.mark.parametrize(
    ("stats", "message"),
    [
        ("x", "result stats is not an object"),
        ({**STATS, "cached": 1.5}, "result stats.cached is not a non-negative integer: 1.5"),
        ({**STATS, "input": -1}, "result stats.input is not a non-negative integer: -1"),
        (
            {**STATS, "output_tokens": False},
            "result stats.output_tokens is not a non-negative integer: False",
        ),
        ({**STATS, "input": 59}, "result stats: input 59 + cached 40 is not input_tokens 100"),
        ({**STATS, "cached": 101, "input": 0}, "result stats: input 0 + cached 101 is not input_tokens 100"),
        ({**STATS, "total_tokens": 129}, "result stats: total_tokens 129 is below input plus output (130)"),
    ],
)
def test_usage_messages_are_exact(stats: Any, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        read_gemini_usage({"stats": stats})
    assert str(raised.value) == message
    verdict = classify_gemini_session([INIT, result(stats=stats)], process=OK)
    assert verdict.error_detail == message


@pytest.mark.parametrize(
    ("stats", "usage"),
    [
        (STATS, Usage(60, None, 40, 30)),
        ({**STATS, "output_tokens": 0, "total_tokens": 100}, Usage(60, None, 40, 0)),  # zeros are counts
        (
            {"input_tokens": 10, "input": 0, "cached": 10, "output_tokens": 1, "total_tokens": 11},
            Usage(0, None, 10, 1),
        ),
        ({"input_tokens": 10, "cached": 4, "output_tokens": 1}, Usage(6, None, 4, None)),
        ({"input_tokens": 10, "total_tokens": 12}, Usage(10, None, None, None)),
        ({"input_tokens": 1, "input": 1}, Usage(1, None, None, None)),
        ({"input_tokens": 0, "output_tokens": 9, "total_tokens": 9}, Usage()),
        ({}, Usage()),
    ],
)
def test_usage_boundaries(stats: dict[str, Any], usage: Usage) -> None:
    assert read_gemini_usage({"stats": stats}) == usage


@pytest.mark.parametrize(
    ("events", "message"),
    [
        ([use(None)], "tool_use tool_id is missing or malformed: 'None'"),
        ([use("a" * 300)], "tool_use tool_id is missing or malformed: '" + "a" * 80 + "'"),
        ([use("")], "tool_use tool_id is missing or malformed: ''"),
        (
            [{"type": "tool_result", "tool_id": 7, "status": "success"}],
            "tool_result tool_id is missing or malformed: '7'",
        ),
        ([use("s1", parameters=["plan"])], "tool_use s1 parameters are not an object"),
        (
            [use("s1"), {"type": "tool_result", "tool_id": "s1", "status": None}],
            "tool_result s1 status is not text",
        ),
    ],
)
def test_evidence_messages_are_exact(events: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(SkillEvidenceError) as raised:
        gemini_skill_invoked(events, "plan")
    assert str(raised.value) == message
    verdict = classify_gemini_session([INIT, *events, result()], process=OK, expected_skill="plan")
    assert verdict.error_detail == f"unverifiable skill evidence: {message}"
    assert verdict.diagnostics == (f"unverifiable skill evidence: {message}",)
    assert verdict.usage == Usage(60, None, 40, 30)  # evidence-unverified keeps its measurement


def test_tool_ids_of_every_allowed_character_and_the_full_length_are_accepted() -> None:
    tool_id = "Ab0._:-" + "x" * 249
    events = [use(tool_id), {"type": "tool_result", "tool_id": tool_id, "status": "success"}]
    assert gemini_skill_invoked(events, "plan") is True
    with pytest.raises(SkillEvidenceError):
        gemini_skill_invoked([use(tool_id + "x")], "plan")


def test_other_tools_results_need_no_evidence_checks_but_their_ids_do() -> None:
    events = [
        use("r1", tool="read_file", parameters="not checked"),
        {"type": "tool_result", "tool_id": "r1", "status": "error"},
    ]
    assert gemini_skill_invoked(events, "plan") is False


def test_an_expected_skill_is_normalized_like_the_named_one() -> None:
    events = [
        use("s1", parameters={"name": "/ns:plan"}),
        {"type": "tool_result", "tool_id": "s1", "status": "success"},
    ]
    assert gemini_skill_invoked(events, "plan") is True
    with pytest.raises(SkillEvidenceError) as raised:
        gemini_skill_invoked(events, "")
    assert str(raised.value) == "expected skill '' is not a skill identifier"


@pytest.mark.parametrize(
    ("event", "reason"),
    [
        ({"type": "error", "severity": "error", "message": "boom"}, "error: boom"),
        ({"type": "error", "message": "no severity"}, "error: no severity"),
        ({"type": "error", "severity": "error"}, "error"),
        ({"type": "error", "severity": "error", "message": "m" * 600}, "error: " + "m" * 500),
        ({"type": "error", "severity": "error", "message": 5}, "error"),
    ],
)
def test_error_event_reasons_are_exact(event: dict[str, Any], reason: str) -> None:
    verdict = classify_gemini_session([INIT, event, result()], process=OK)
    assert verdict.error_kind is ErrorKind.SESSION_ERROR
    assert verdict.error_detail == reason
    assert verdict.usage == Usage()


@pytest.mark.parametrize(
    ("last", "reason"),
    [
        (result(status="error", error={"type": "E", "message": "quota"}), "result status error: quota"),
        (result(status="error", error="plain"), "result status error: plain"),
        (result(status="error"), "result status error"),
        (result(status="x" * 60), "result status " + "x" * 40),
        ({"type": "result", "stats": STATS}, "result status None"),
    ],
)
def test_result_reasons_are_exact(last: dict[str, Any], reason: str) -> None:
    verdict = classify_gemini_session([INIT, last], process=OK)
    assert verdict.error_detail == reason


def test_reasons_are_listed_once_each_in_order() -> None:
    error = {"type": "error", "severity": "error", "message": "boom"}
    verdict = classify_gemini_session([INIT, error, error, result(status="error")], process=OK)
    assert verdict.error_detail == "error: boom; result status error"


def test_an_uncaptured_stream_says_so_and_shows_the_stdout_tail() -> None:
    process = ProcessOutcome(state=ProcessState.EXITED, returncode=0, stdout_tail="garbage", wall_s=None)
    verdict = classify_gemini_session(None, process=process, expected_skill="plan")
    assert verdict.stream_error == "no event stream was captured"
    assert verdict.error_detail == "event stream: no event stream was captured; stdout tail: garbage"
    assert verdict.diagnostics == ("unverifiable parent event stream: no event stream was captured",)
    assert verdict.duration_s is None
    assert verdict.session_id is None


def test_a_given_stream_error_wins_over_the_events() -> None:
    verdict = classify_gemini_session([INIT, result()], process=OK, stream_error="cut")
    assert verdict.stream_error == "cut"
    assert verdict.tool_use_counts == {}
    assert verdict.skill_invoked is None


def test_a_missing_skill_is_worded_for_gemini_and_keeps_the_measurement() -> None:
    verdict = classify_gemini_session([INIT, result()], process=OK, expected_skill="plan")
    assert verdict.error_detail == "parent event stream shows no successful activate_skill of plan"
    assert (verdict.ok, verdict.skill_invoked, verdict.usage) == (False, False, Usage(60, None, 40, 30))


def test_the_session_id_and_duration_of_a_clean_session() -> None:
    verdict = classify_gemini_session([INIT, result()], process=OK)
    assert (verdict.ok, verdict.error_kind, verdict.error_detail) == (True, None, None)
    assert (verdict.session_id, verdict.duration_s, verdict.diagnostics) == ("s-1", 2.0, ())
    empty = classify_gemini_session([{**INIT, "session_id": ""}, result()], process=OK)
    assert empty.session_id is None
    assert classify_gemini_session([{**INIT, "session_id": 5}, result()], process=OK).session_id is None
