"""Event-stream verdict rules pinned exactly.

Kills surviving mutants of wfbench.domain.session.event_stream.
"""

from __future__ import annotations

from typing import Any

import pytest

from wfbench.domain.session.event_stream import (
    ProcessOutcome,
    SkillEvidenceError,
    classify_session,
    evidence_window,
    normalize_skill_id,
    reported_fields,
    skill_invoked,
    tool_use_counts,
)
from wfbench.domain.workspace.sandbox import ProcessState

OK = ProcessOutcome(state=ProcessState.EXITED, returncode=0)
RESULT: dict[str, Any] = {"type": "result", "subtype": "success"}


def _use(block_id: object, tool: str = "Skill", **args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": block_id, "name": tool, "input": args}


def _result(block_id: object, **extra: Any) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": block_id, **extra}


def _assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"type": "assistant", "message": {"content": list(blocks)}}


def _user(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"type": "user", "message": {"content": list(blocks)}}


def test_an_empty_stream_and_a_late_event_are_refused_with_their_reasons():
    """The reasons say what is wrong: nothing at all, or which event type followed the result."""
    with pytest.raises(ValueError, match="^the event stream is empty$"):
        evidence_window([])
    with pytest.raises(ValueError) as late:
        evidence_window([RESULT, {"type": "assistant"}])
    assert str(late.value) == "final result event is not the last event (followed by 'assistant')"


def test_the_window_ends_at_the_result_and_leaves_later_system_events_out():
    """Trailing system events are allowed but are not part of the evidence window."""
    first = {"type": "system", "subtype": "init"}
    window, result = evidence_window([first, RESULT, {"type": "system"}])
    assert window == (first, RESULT)
    assert result is RESULT


def test_only_assistant_turns_report_usage_fields():
    """A usage object on a user event is not a model-reported field."""
    assert reported_fields([{"type": "user", "message": {"usage": {"input_tokens": 5}}}]) == frozenset()
    assert reported_fields([{"type": "assistant", "message": {"usage": {"input_tokens": 5}}}]) == {
        "input_tokens"
    }


@pytest.mark.parametrize(
    ("raw", "name"),
    [("/plan", "plan"), ("plan/", "plan/"), ("a:b:c", "c"), (" /plugin:work now", "work"), ("/", None)],
)
def test_skill_ids_drop_one_leading_slash_and_keep_what_follows_the_last_colon(raw: str, name: str | None):
    """Only a leading slash is dropped (never a trailing one); the name is after the last colon."""
    assert normalize_skill_id(raw) == name


@pytest.mark.parametrize("key", ["skill", "command", "name"])
def test_a_skill_request_may_name_the_skill_under_any_of_its_three_keys(key: str):
    """``skill``, ``command`` and ``name`` inputs all identify the invoked skill."""
    window = [_assistant(_use("a", **{key: "/plan"})), _user(_result("a"))]
    assert skill_invoked(window, "plan") is True


def test_a_tool_that_is_not_skill_never_counts_even_with_a_skill_input():
    """Only the Skill tool can invoke a skill; another tool with ``skill: plan`` input does not."""
    window = [_assistant(_use("a", tool="Read", skill="plan")), _user(_result("a"))]
    assert skill_invoked(window, "plan") is False


def test_a_tool_result_without_is_error_is_a_success():
    """``is_error`` defaults to false: an absent flag is a successful result."""
    assert skill_invoked([_assistant(_use("a", skill="plan")), _user(_result("a"))], "plan") is True


def test_a_tool_result_in_top_level_content_is_read_too():
    """Events that carry ``content`` directly (no ``message``) are searched for blocks."""
    window = [_assistant(_use("a", skill="plan")), {"type": "user", "content": [_result("a")]}]
    assert skill_invoked(window, "plan") is True


def test_a_matching_request_after_an_unmatched_one_is_still_found():
    """Unrelated tool requests are skipped, not the end of the search."""
    window = [
        _assistant(_use("r1", tool="Read", file_path="x")),
        _assistant(_use("s1", skill="plan")),
        _user(_result("r1"), _result("s1")),
    ]
    assert skill_invoked(window, "plan") is True


def test_a_result_in_the_same_event_as_its_request_is_not_later():
    """The result must come in a later event than the request."""
    with pytest.raises(SkillEvidenceError, match="^the tool result of Skill request a is not later than it$"):
        skill_invoked([_assistant(_use("a", skill="plan"), _result("a"))], "plan")


@pytest.mark.parametrize(
    ("window", "message"),
    [
        ([_assistant(_use(None, skill="plan"))], "tool_use id is missing or malformed: 'None'"),
        ([_assistant(_use("bad id", skill="plan"))], "tool_use id is missing or malformed: 'bad id'"),
        (
            [_assistant(_use("!" * 100, skill="plan"))],
            "tool_use id is missing or malformed: '" + "!" * 80 + "'",
        ),
        ([_user(_result(None))], "tool_result id is missing or malformed: 'None'"),
        ([_assistant(_use("a"), _use("a"))], "duplicate tool_use id a"),
        ([_user(_result("a"), _result("a"))], "duplicate tool_result id a"),
    ],
)
def test_bad_and_duplicate_ids_name_the_block_kind_and_the_id(window: list[dict[str, Any]], message: str):
    """Unverifiable evidence says which kind of block and which id (cut to 80 characters)."""
    with pytest.raises(SkillEvidenceError) as caught:
        skill_invoked(window, "plan")
    assert str(caught.value) == message


def test_an_expected_skill_that_is_not_an_identifier_is_refused_with_its_value():
    """A blank expected skill cannot be checked; the message quotes it."""
    with pytest.raises(SkillEvidenceError) as caught:
        skill_invoked([], "  ")
    assert str(caught.value) == "expected skill '  ' is not a skill identifier"


def test_tool_uses_are_counted_per_name_and_odd_names_are_counted_as_tool():
    """A missing or malformed tool name is counted under ``tool``; repeats add up."""
    window = [
        _assistant(_use("a", tool="Read"), _use("b", tool="Read")),
        _assistant({"type": "tool_use", "id": "c"}, _use("d", tool="bad name")),
    ]
    assert tool_use_counts(window) == {"Read": 2, "tool": 2}


@pytest.mark.parametrize(("raw", "turns"), [(0, 0), (3, 3), (-1, None), ("3", None), (True, None)])
def test_num_turns_is_kept_only_when_it_is_a_non_negative_integer(raw: object, turns: int | None):
    """Zero turns is a measurement; negatives, strings and booleans are unknown."""
    verdict = classify_session([{**RESULT, "num_turns": raw}], process=OK)
    assert verdict.num_turns == turns


def test_an_errored_result_puts_its_text_cut_to_500_characters_in_the_detail():
    """The result text of an is_error result is quoted in the detail, at most 500 characters."""
    verdict = classify_session([{**RESULT, "is_error": True, "result": "x" * 600}], process=OK)
    assert verdict.error_detail == "result is_error; result: " + "x" * 500


def test_a_result_text_without_is_error_is_not_quoted():
    """Negative control: a successful result's text is not error detail."""
    verdict = classify_session([{**RESULT, "result": "fine"}], process=OK)
    assert verdict.error_detail is None


# --- classify_session: details, durations, identities --------------------------------------------

FAILED = ProcessOutcome(state=ProcessState.EXITED, returncode=1)


def test_a_failed_process_without_events_names_the_process_the_missing_stream_and_both_tails():
    """Detail: the process and its detail, the missing stream, then the last 2000 chars of each tail."""
    process = ProcessOutcome(
        state=ProcessState.EXITED,
        returncode=1,
        detail="boom",
        stderr_tail="a" * 10 + "b" * 2000,
        stdout_tail="out",
    )
    verdict = classify_session(None, process=process)
    assert verdict.stream_error == "no event stream was captured"
    assert verdict.error_detail == (
        "agent process exited (returncode 1): boom; event stream: no event stream was captured; "
        f"stderr tail: {'b' * 2000}; stdout tail: out"
    )


def test_a_failed_process_without_a_detail_gets_no_trailing_colon():
    """The process reason ends at the return code when the process has no detail."""
    verdict = classify_session([RESULT], process=FAILED)
    assert verdict.error_detail == "agent process exited (returncode 1)"


def test_the_stdout_tail_is_quoted_only_when_no_result_event_was_read():
    """With a result event, stdout is the stream itself and is not repeated in the detail."""
    process = ProcessOutcome(state=ProcessState.EXITED, returncode=1, stdout_tail="out")
    assert "stdout tail" not in (classify_session([RESULT], process=process).error_detail or "")
    assert "stdout tail: out" in (classify_session([], process=process).error_detail or "")


def test_an_is_error_result_names_its_api_error_status():
    """The API status of an errored result is part of the reason."""
    verdict = classify_session([{**RESULT, "is_error": True, "api_error_status": 529}], process=OK)
    assert verdict.error_detail == "result is_error (api_error_status 529)"


def test_a_cancelled_session_says_so_first_and_keeps_the_result_text():
    """Cancellation leads the detail; the errored result's text still follows."""
    cancelled = ProcessOutcome(state=ProcessState.CANCELLED, returncode=None)
    verdict = classify_session([{**RESULT, "is_error": True, "result": "stopped"}], process=cancelled)
    assert verdict.error_detail == (
        "the session was cancelled; agent process cancelled (returncode None); "
        "result is_error; result: stopped"
    )


@pytest.mark.parametrize(
    ("result", "wall_s", "duration"),
    [({"duration_ms": 1234.56}, None, 1.235), ({}, 2.34567, 2.346), ({}, None, None)],
)
def test_durations_are_seconds_rounded_to_milliseconds(
    result: dict[str, Any], wall_s: float | None, duration: object
):
    """The result's duration_ms wins; else the process wall time; both rounded to 3 decimals."""
    process = ProcessOutcome(state=ProcessState.EXITED, returncode=0, wall_s=wall_s)
    assert classify_session([{**RESULT, **result}], process=process).duration_s == duration


@pytest.mark.parametrize(("raw", "session_id"), [("abc", "abc"), ("", None), (5, None)])
def test_a_session_id_is_a_non_empty_string_or_unknown(raw: object, session_id: str | None):
    """Empty strings and non-strings are not session ids."""
    assert classify_session([{**RESULT, "session_id": raw}], process=OK).session_id == session_id


def test_without_events_the_skill_evidence_is_unknown_not_false():
    """No stream means the skill invocation cannot be judged at all (None)."""
    assert classify_session(None, process=OK, expected_skill="plan").skill_invoked is None


def test_a_given_stream_error_means_the_events_are_not_read():
    """When decoding already failed, nothing is taken from the events (turns, session id)."""
    verdict = classify_session(
        [{**RESULT, "num_turns": 3, "session_id": "s"}], process=OK, stream_error="bad"
    )
    assert (verdict.num_turns, verdict.session_id, verdict.stream_error) == (None, None, "bad")


def test_a_window_error_becomes_the_stream_error_text():
    """The evidence-window reason is kept verbatim as the stream error."""
    assert classify_session([], process=OK).stream_error == "the event stream is empty"


@pytest.mark.parametrize(
    ("usage", "detail"),
    [
        ("x", "result usage is not an object"),
        ({"input_tokens": -1}, "result usage.input_tokens is not a non-negative integer: -1"),
    ],
)
def test_a_malformed_result_usage_is_a_session_error_with_its_reason(usage: object, detail: str):
    """Usage that is not an object or holds a negative count is named in the error detail."""
    verdict = classify_session([{**RESULT, "usage": usage}], process=OK)
    assert verdict.error_detail == detail


def test_a_session_that_never_invoked_its_skill_names_the_skill():
    """The skill-not-invoked detail names the expected skill."""
    verdict = classify_session([RESULT], process=OK, expected_skill="plan")
    assert verdict.error_detail == "parent event stream shows no successful plan invocation"
