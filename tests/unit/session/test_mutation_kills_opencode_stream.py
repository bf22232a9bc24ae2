"""OpenCode's stream rules word for word: exact reasons, messages and boundaries (mutation kills)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.session.test_opencode_stream import FAILED, OK, START, finish, session, text, use
from wfbench.domain.session.event_stream import SkillEvidenceError
from wfbench.domain.session.opencode_stream import (
    classify_opencode_session,
    opencode_evidence_window,
    opencode_skill_invoked,
    read_opencode_cost,
    read_opencode_usage,
)
from wfbench.domain.session.records import Usage


@pytest.mark.parametrize(
    ("events", "message"),
    [
        ([], "the event stream is empty"),
        ([text("hi")], "the first event is 'text', not step_start"),
        ([START, START], "a step started before the previous one finished"),
        ([START, finish(), finish()], "a step finished that never started"),
        ([START, text("cut")], "the last step never finished"),
        ([START, {**finish(), "sessionID": "ses_x"}], "events of a second session"),
    ],
)
def test_every_unusable_stream_says_exactly_why(events: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(ValueError) as raised:
        opencode_evidence_window(events)
    assert str(raised.value) == message
    verdict = classify_opencode_session(events, process=OK)
    assert verdict.stream_error == message
    assert verdict.diagnostics == (f"unverifiable parent event stream: {message}",)


def test_a_well_formed_window_is_every_event_in_order() -> None:
    events = session(use("a", "read"))
    assert opencode_evidence_window(events) == tuple(events)


def test_the_detail_of_a_bad_step_reason_and_an_error_event_is_exact() -> None:
    error = {"type": "error", "sessionID": "x", "error": {"name": "APIError", "data": {"message": "m" * 600}}}
    events = [START, {**error, "sessionID": START["sessionID"]}, finish("length")]
    verdict = classify_opencode_session(events, process=OK)
    assert verdict.error_detail is not None
    assert verdict.error_detail.startswith(
        f"error: APIError: {'m' * 490}; the last step finished with reason length, not stop"
    )
    long_reason = classify_opencode_session([START, finish("r" * 60)], process=OK)
    assert f"reason {'r' * 40}, not stop" in (long_reason.error_detail or "")
    assert f"reason {'r' * 41}" not in (long_reason.error_detail or "")


def test_an_error_event_without_a_name_or_message_is_the_bare_word_error() -> None:
    bare = {"type": "error", "sessionID": START["sessionID"], "error": {"data": {}}}
    verdict = classify_opencode_session([START, bare, finish()], process=OK)
    assert verdict.error_detail is not None
    assert verdict.error_detail.split(";")[0] == "error"
    named = {"type": "error", "sessionID": START["sessionID"], "error": {"name": "Boom"}}
    detail = classify_opencode_session([START, named, finish()], process=OK).error_detail or ""
    assert detail.split(";")[0] == "error: Boom"


def test_a_failed_process_keeps_the_stream_out_of_the_detail_when_the_stream_was_readable() -> None:
    verdict = classify_opencode_session(session(), process=FAILED)
    assert verdict.error_detail is not None
    assert "boom" in verdict.error_detail
    assert "step_start" not in verdict.error_detail  # the stdout tail only without a readable stream


@pytest.mark.parametrize(
    ("part", "message"),
    [
        ({"tool": "skill", "callID": None, "state": {}}, "tool_use callID is missing or malformed: 'None'"),
        ({"tool": "skill", "callID": "s1", "state": "x"}, "tool_use s1 state is not an object"),
        ({"tool": "skill", "callID": "s1", "state": {"input": 1}}, "tool_use s1 input is not an object"),
        (
            {"tool": "skill", "callID": "a" * 257, "state": {}},
            f"tool_use callID is missing or malformed: '{'a' * 80}'",
        ),
    ],
)
def test_malformed_skill_parts_say_exactly_what_is_wrong(part: dict[str, Any], message: str) -> None:
    event = {"type": "tool_use", "sessionID": START["sessionID"], "part": part}
    with pytest.raises(SkillEvidenceError) as raised:
        opencode_skill_invoked([START, event, finish()], "plan")
    assert str(raised.value) == message
    verdict = classify_opencode_session([START, event, finish()], process=OK, expected_skill="plan")
    assert verdict.diagnostics == (f"unverifiable skill evidence: {message}",)
    assert verdict.error_detail == f"unverifiable skill evidence: {message}"


def test_a_call_id_of_every_allowed_character_at_full_length_is_accepted() -> None:
    call_id = ("Az09._:-" * 32)[:256]
    assert opencode_skill_invoked([START, use(call_id, "skill", name="plan"), finish()], "plan")


def test_the_skill_name_is_normalized_and_only_completed_counts() -> None:
    assert opencode_skill_invoked([START, use("s", "skill", name=" /plan "), finish()], "plan")
    assert not opencode_skill_invoked(
        [START, use("s", "skill", status="running", name="plan"), finish()], "plan"
    )


def test_usage_of_a_step_without_reasoning_or_cache_is_exact() -> None:
    assert read_opencode_usage([START, finish(tokens={"input": 3, "output": 4, "reasoning": 0})]) == Usage(
        3, 0, 0, 4
    )
    assert read_opencode_usage([START, finish(tokens={"input": 0, "output": 0, "reasoning": 9})]) == Usage(
        0, 0, 0, 9
    )
    assert read_opencode_usage([START, text("no steps finished here")]) == Usage(0, 0, 0, 0)


def test_a_bad_count_names_the_field() -> None:
    with pytest.raises(ValueError) as raised:
        read_opencode_usage([START, finish(tokens={"input": 1, "output": -2})])
    assert str(raised.value) == "step_finish tokens.output is not a non-negative integer: -2"
    with pytest.raises(ValueError) as raised:
        read_opencode_usage([START, finish(tokens=[])])
    assert str(raised.value) == "step_finish tokens are not an object"


def test_the_cost_is_summed_to_ten_places_and_zero_is_a_cost() -> None:
    assert read_opencode_cost([START, finish(cost=0.1), START, finish(cost=0.2)]) == 0.3
    assert read_opencode_cost([START, finish(cost=0)]) == 0.0
    assert read_opencode_cost([START, finish(cost=1.23456789012345)]) == 1.2345678901
    assert read_opencode_cost([START, text("x")]) == 0.0


def test_a_skill_that_was_not_invoked_keeps_the_usage_and_cost() -> None:
    verdict = classify_opencode_session(session(), process=OK, expected_skill="plan")
    assert verdict.usage == read_opencode_usage(session())
    assert verdict.cost_usd == pytest.approx(0.01212)
    assert verdict.num_turns == 2
    assert verdict.session_id == START["sessionID"]
