"""Event-stream verdict rules pinned exactly (kills surviving mutants of wfbench.domain.event_stream)."""

from __future__ import annotations

from typing import Any

import pytest

from wfbench.domain.event_stream import (
    ProcessOutcome,
    SkillEvidenceError,
    classify_session,
    evidence_window,
    normalize_skill_id,
    reported_fields,
    skill_invoked,
    tool_use_counts,
)
from wfbench.domain.sandboxing import ProcessState

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
