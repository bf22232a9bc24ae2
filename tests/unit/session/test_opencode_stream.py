"""Reading OpenCode's ``--format json`` stream: verdicts, usage and cost summed over steps, skill evidence.

The events are shaped like what ``opencode-ai`` 1.18.33 printed against the scripted provider
(``docs/research/opencode.md``).
"""

from __future__ import annotations

from typing import Any

import pytest

from wfbench.domain.results.rows import ErrorKind
from wfbench.domain.session.event_stream import ProcessOutcome, SkillEvidenceError
from wfbench.domain.session.opencode_stream import (
    classify_opencode_session,
    opencode_evidence_window,
    opencode_skill_invoked,
    opencode_tool_counts,
    read_opencode_cost,
    read_opencode_usage,
)
from wfbench.domain.session.records import Usage
from wfbench.domain.workspace.sandbox import ProcessState

OK = ProcessOutcome(state=ProcessState.EXITED, returncode=0, wall_s=1.2345)
FAILED = ProcessOutcome(state=ProcessState.EXITED, returncode=1, stderr_tail="boom", wall_s=0.2)
SESSION = "ses_db3dbcb3fffe2dIOa2Fib2nWOl"
TOKENS = {"total": 5296, "input": 1200, "output": 80, "reasoning": 7, "cache": {"write": 16, "read": 4000}}
START = {"type": "step_start", "sessionID": SESSION, "part": {"type": "step-start"}}


def finish(reason: str = "stop", tokens: Any = TOKENS, cost: Any = 0.00606) -> dict[str, Any]:
    part = {"type": "step-finish", "reason": reason, "tokens": tokens, "cost": cost}
    return {"type": "step_finish", "sessionID": SESSION, "part": part}


def use(call_id: Any, tool: str, status: str = "completed", **given: Any) -> dict[str, Any]:
    state = {"status": status, "input": given, "output": "ok"}
    return {
        "type": "tool_use",
        "sessionID": SESSION,
        "part": {"type": "tool", "tool": tool, "callID": call_id, "state": state},
    }


def text(words: str) -> dict[str, Any]:
    return {"type": "text", "sessionID": SESSION, "part": {"type": "text", "text": words}}


def session(*events: dict[str, Any], last: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """A tool step with ``events``, then a closing text step (``last`` its step_finish)."""
    return [START, *events, finish("tool-calls"), START, text("Done."), last or finish()]


def test_a_clean_session_is_ok_with_its_id_steps_duration_tools_and_cost() -> None:
    verdict = classify_opencode_session(
        session(use("w1", "write", filePath="a"), use("b1", "bash", command="ls")), process=OK
    )
    assert (verdict.ok, verdict.error_kind, verdict.session_id) == (True, None, SESSION)
    assert verdict.duration_s == 1.234
    assert verdict.num_turns == 2
    assert verdict.cost_usd == pytest.approx(0.01212)
    assert verdict.tool_use_counts == {"write": 1, "bash": 1}


def test_usage_is_summed_over_the_steps_with_reasoning_billed_as_output() -> None:
    assert read_opencode_usage(session()) == Usage(
        input_tokens=2400, cache_creation_input_tokens=32, cache_read_input_tokens=8000, output_tokens=174
    )
    assert classify_opencode_session(session(), process=OK).usage.output_tokens == 174


def test_a_step_without_cache_counts_counts_them_as_zero() -> None:
    usage = read_opencode_usage([START, finish(tokens={"input": 5, "output": 2})])
    assert usage == Usage(5, 0, 0, 2)


@pytest.mark.parametrize(
    "tokens", [None, {"input": -1}, {"input": True}, {"input": 1.5}, {"cache": []}, {"cache": {"read": "9"}}]
)
def test_nonsense_usage_is_a_session_error_and_no_measurement(tokens: Any) -> None:
    with pytest.raises(ValueError, match="tokens"):
        read_opencode_usage([START, finish(tokens=tokens)])
    verdict = classify_opencode_session(session(last=finish(tokens=tokens)), process=OK)
    assert (verdict.ok, verdict.error_kind, verdict.usage, verdict.cost_usd) == (
        False,
        ErrorKind.SESSION_ERROR,
        Usage(),
        None,
    )


def test_the_cost_is_unknown_when_one_step_reports_none() -> None:
    assert read_opencode_cost([START, finish(cost=0.5), START, finish(cost=0.25)]) == 0.75
    assert read_opencode_cost([START, finish(cost=0.5), START, finish(cost=None)]) is None
    assert read_opencode_cost([START, finish(cost=-1)]) is None


@pytest.mark.parametrize(
    ("events", "words"),
    [
        ([], "empty"),
        ([text("hi"), START, finish()], "first event is 'text'"),
        ([START, START, finish()], "started before the previous one finished"),
        ([START, finish(), finish()], "never started"),
        ([START, finish(), START, text("cut")], "never finished"),
        ([START, {**finish(), "sessionID": "ses_other"}], "second session"),
    ],
)
def test_an_unusable_stream_is_refused_with_its_reason(events: list[dict[str, Any]], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        opencode_evidence_window(events)
    verdict = classify_opencode_session(events, process=OK)
    assert (verdict.ok, verdict.error_kind, verdict.num_turns, verdict.tool_use_counts) == (
        False,
        ErrorKind.SESSION_ERROR,
        None,
        {},
    )
    assert words in (verdict.stream_error or "")


def test_no_captured_stream_is_a_session_error() -> None:
    verdict = classify_opencode_session(None, process=OK)
    assert verdict.error_kind is ErrorKind.SESSION_ERROR
    assert verdict.stream_error == "no event stream was captured"
    assert verdict.session_id is None


def test_a_decoding_error_is_kept_as_the_stream_error() -> None:
    verdict = classify_opencode_session(session(), process=OK, stream_error="line 3 is not JSON")
    assert (verdict.ok, verdict.stream_error) == (False, "line 3 is not JSON")


@pytest.mark.parametrize("reason", ["tool-calls", "length", "error", None])
def test_a_session_whose_last_step_did_not_stop_failed(reason: str | None) -> None:
    verdict = classify_opencode_session([START, finish(reason)], process=OK)  # type: ignore[arg-type]
    assert (verdict.ok, verdict.error_kind) == (False, ErrorKind.SESSION_ERROR)
    assert f"the last step finished with reason {reason}, not stop" in (verdict.error_detail or "")


def test_an_error_event_fails_the_session_with_its_message() -> None:
    error = {
        "type": "error",
        "sessionID": SESSION,
        "error": {"name": "APIError", "data": {"message": "overloaded"}},
    }
    verdict = classify_opencode_session(session(error), process=OK)
    assert (verdict.ok, verdict.error_kind) == (False, ErrorKind.SESSION_ERROR)
    assert "error: APIError: overloaded" in (verdict.error_detail or "")
    assert verdict.usage == Usage()


def test_an_error_event_without_a_message_still_fails() -> None:
    verdict = classify_opencode_session(session({"type": "error", "sessionID": SESSION}), process=OK)
    assert verdict.ok is False
    assert "error" in (verdict.error_detail or "")


def test_a_failed_process_is_a_session_error_whatever_the_stream_says() -> None:
    verdict = classify_opencode_session(session(), process=FAILED)
    assert (verdict.ok, verdict.error_kind, verdict.usage) == (False, ErrorKind.SESSION_ERROR, Usage())


def test_a_completed_skill_call_of_the_expected_skill_is_the_evidence() -> None:
    events = session(use("s1", "skill", name="plan"))
    assert opencode_skill_invoked(events, "plan") is True
    verdict = classify_opencode_session(events, process=OK, expected_skill="plan")
    assert (verdict.ok, verdict.skill_invoked) == (True, True)


@pytest.mark.parametrize(
    "events",
    [
        [use("s1", "skill", status="error", name="plan")],  # the CLI did not find it
        [use("s1", "skill", name="review")],
        [use("s1", "read", name="plan")],
        [],
    ],
)
def test_anything_else_is_no_evidence_and_the_skill_not_invoked(events: list[dict[str, Any]]) -> None:
    verdict = classify_opencode_session(session(*events), process=OK, expected_skill="plan")
    assert (verdict.ok, verdict.skill_invoked, verdict.error_kind) == (
        False,
        False,
        ErrorKind.SKILL_NOT_INVOKED,
    )
    assert verdict.error_detail == "parent event stream shows no completed skill tool call of plan"
    assert verdict.usage != Usage()  # the session still measured its usage


@pytest.mark.parametrize(
    ("event", "words"),
    [
        (use(None, "skill", name="plan"), "callID is missing"),
        (use("bad id", "skill", name="plan"), "callID is missing"),
        ({**use("s1", "skill"), "part": {"tool": "skill", "callID": "s1", "state": "done"}}, "state is not"),
        (
            {**use("s1", "skill"), "part": {"tool": "skill", "callID": "s1", "state": {"input": []}}},
            "input is not",
        ),
    ],
)
def test_malformed_skill_evidence_is_unverifiable(event: dict[str, Any], words: str) -> None:
    with pytest.raises(SkillEvidenceError, match=words):
        opencode_skill_invoked(session(event), "plan")
    verdict = classify_opencode_session(session(event), process=OK, expected_skill="plan")
    assert (verdict.error_kind, verdict.skill_invoked) == (ErrorKind.EVIDENCE_UNVERIFIED, None)
    assert words in (verdict.error_detail or "")


def test_an_expected_skill_that_is_no_identifier_is_refused() -> None:
    with pytest.raises(SkillEvidenceError, match="not a skill identifier"):
        opencode_skill_invoked(session(), "  ")


def test_tool_counts_count_each_call_once_and_skip_other_events() -> None:
    events = [START, use("a", "read"), use("a", "read"), use("b", "read"), text("x"), {"type": "tool_use"}]
    assert opencode_tool_counts(events) == {"read": 2}


def test_a_session_id_that_is_not_text_is_unknown() -> None:
    events = [{**START, "sessionID": 7}, {**finish(), "sessionID": 7}]
    assert classify_opencode_session(events, process=OK).session_id is None
