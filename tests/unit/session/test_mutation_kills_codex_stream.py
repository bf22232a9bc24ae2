"""Exact verdicts, messages and edge cases of the Codex stream reader (each kills mutants that the
behavioural tests in ``test_codex_stream.py`` let live: message texts, boundaries, short-circuits)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.unit.session.test_codex_stream import (
    FAILED,
    OK,
    SKILL_READ,
    THREAD,
    USAGE,
    command,
    message,
    session,
)
from wfbench.domain.results.rows import ErrorKind
from wfbench.domain.session.codex_stream import (
    classify_codex_session,
    codex_skill_invoked,
    codex_tool_counts,
    evidence_window,
    read_codex_usage,
)
from wfbench.domain.session.event_stream import ProcessOutcome, SkillEvidenceError
from wfbench.domain.session.records import Usage
from wfbench.domain.workspace.sandbox import ProcessState


@pytest.mark.parametrize(
    ("events", "message_text"),
    [
        ([], "the event stream is empty"),
        ([{"type": "turn.started"}], "the first event is 'turn.started', not thread.started"),
        ([THREAD, THREAD], "a second thread.started event"),
        (
            [THREAD, {"type": "turn.started"}, {"type": "turn.started"}],
            "a turn started before the previous one ended",
        ),
        ([THREAD, {"type": "turn.started"}], "the last turn never ended (no turn.completed or turn.failed)"),
        ([THREAD], "no turn ran (no turn.completed or turn.failed)"),
        ([THREAD, {"type": "turn.failed"}], "turn.failed without turn.started"),
        ([*session(), {"type": "error"}], "the last turn's end is followed by 'error'"),
    ],
)
def test_each_structural_problem_has_its_exact_message(events: list[Any], message_text: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message_text)}$"):
        evidence_window(events)


@pytest.mark.parametrize(
    ("usage", "message_text"),
    [
        ([1], "turn.completed usage is not an object"),
        (
            {**USAGE, "output_tokens": -2},
            "turn.completed usage.output_tokens is not a non-negative integer: -2",
        ),
        (
            {**USAGE, "cached_input_tokens": 45210, "cache_write_input_tokens": 1},
            "turn.completed usage: cached tokens (45210 + 1) exceed input_tokens (45210)",
        ),
    ],
)
def test_a_usage_error_is_the_whole_detail(usage: Any, message_text: str) -> None:
    assert classify_codex_session(session(usage=usage), process=OK).error_detail == message_text


def test_an_input_made_only_of_cached_tokens_is_zero_uncached_not_an_error() -> None:
    raw = {
        "input_tokens": 300,
        "cached_input_tokens": 200,
        "cache_write_input_tokens": 100,
        "output_tokens": 4,
    }
    assert read_codex_usage(session(usage=raw)) == Usage(
        input_tokens=0, cache_creation_input_tokens=100, cache_read_input_tokens=200, output_tokens=4
    )
    only_read = {"input_tokens": 300, "cached_input_tokens": 300, "output_tokens": 4}
    assert read_codex_usage(session(usage=only_read)).input_tokens == 0


def test_the_failure_details_are_exact_and_joined_by_semicolons() -> None:
    timed_out = ProcessOutcome(state=ProcessState.TIMEOUT, returncode=None, detail="timed out after 60 s")
    failed = classify_codex_session(session(message("item_0", "x")), process=timed_out)
    assert failed.error_detail == "agent process timeout (returncode None): timed out after 60 s"
    bare = classify_codex_session(session(end="turn.failed")[:-1] + [{"type": "turn.failed"}], process=OK)
    assert bare.error_detail == "turn.failed"
    error = {"type": "error", "message": "stream closed before response.completed"}
    both = classify_codex_session(session(error, end="turn.failed"), process=FAILED)
    assert both.error_detail == (
        "agent process exited (returncode 1); error: stream closed before response.completed;"
        " turn.failed: unexpected status 529 Service Unavailable; stderr tail: boom"
    )
    assert classify_codex_session(session({"type": "error"}), process=OK).error_detail == "error"
    long = classify_codex_session(session({"type": "error", "message": "x" * 600}), process=OK)
    assert long.error_detail == "error: " + "x" * 500


def test_the_stdout_tail_is_shown_only_when_no_stream_could_be_read() -> None:
    noisy = ProcessOutcome(state=ProcessState.EXITED, returncode=1, stdout_tail="garbage")
    unread = classify_codex_session(
        None, process=noisy, stream_error="malformed parent-captured event JSON at line 1"
    )
    assert unread.error_detail == (
        "agent process exited (returncode 1); event stream: malformed parent-captured event JSON at line 1;"
        " stdout tail: garbage"
    )
    read = classify_codex_session(session(message("item_0", "x")), process=noisy)
    assert read.error_detail == "agent process exited (returncode 1)"
    cancelled = ProcessOutcome(state=ProcessState.CANCELLED, returncode=None, stdout_tail="garbage")
    assert classify_codex_session(session(), process=cancelled).error_detail == (
        "the session was cancelled; agent process cancelled (returncode None)"
    )


def test_an_errored_session_measures_nothing_even_when_a_turn_completed() -> None:
    result = classify_codex_session(session(message("item_0", "x")), process=FAILED)
    assert result.usage == Usage()
    assert result.error_kind is ErrorKind.SESSION_ERROR


def test_without_a_readable_stream_the_skill_is_unknown_not_missing() -> None:
    result = classify_codex_session(None, process=OK, stream_error="bad", expected_skill="plan")
    assert result.skill_invoked is None
    assert result.tool_use_counts == {}


def test_the_session_id_is_a_non_empty_thread_id_only() -> None:
    for bad in ("", 5, None):
        events = [{"type": "thread.started", "thread_id": bad}, *session()[1:]]
        assert classify_codex_session(events, process=OK).session_id is None


def test_the_skill_read_counts_after_other_items_and_malformed_ids_are_unverifiable() -> None:
    later = session(message("item_0", "Reading the skill."), command("item_1", SKILL_READ))
    assert codex_skill_invoked(later, "plan") is True
    item = {"id": 7, "type": "command_execution", "command": SKILL_READ, "exit_code": 0, "status": "done"}
    bad_id = {"type": "item.completed", "item": {**item, "status": "completed", "aggregated_output": "x"}}
    with pytest.raises(SkillEvidenceError, match=r"^command_execution id is missing or malformed: '7'$"):
        codex_skill_invoked(session(bad_id), "plan")
    with pytest.raises(SkillEvidenceError, match=r"^expected skill ' ' is not a skill identifier$"):
        codex_skill_invoked(session(), " ")
    bad_code = command("item_0", SKILL_READ, code="0")  # type: ignore[arg-type]
    with pytest.raises(
        SkillEvidenceError, match=r"^command_execution item_0 exit_code is not an integer: '0'$"
    ):
        codex_skill_invoked(session(bad_code), "plan")


def test_a_tool_item_that_only_started_is_not_counted() -> None:
    started = command("item_0", "sleep 100")[:1]
    assert codex_tool_counts(session(started)) == {}
    not_an_item = {"type": "turn.note", "item": {"id": "item_9", "type": "command_execution"}}
    assert codex_tool_counts(session(not_an_item)) == {}


def test_a_message_ending_in_any_character_is_kept_whole() -> None:
    """Only the separator of an empty message is trimmed (``rstrip(": ")``), never the message's end."""
    error = {"type": "error", "message": "limit X"}
    failed = {"type": "turn.failed", "error": {"message": "quota XX"}}
    events = [*session(error)[:-1], failed]
    assert classify_codex_session(events, process=OK).error_detail == "error: limit X; turn.failed: quota XX"


def test_a_malformed_item_id_is_shown_cut_at_80_characters() -> None:
    item = {"id": "x" * 90 + "!", "type": "command_execution", "command": "ls", "status": "completed"}
    with pytest.raises(SkillEvidenceError) as caught:
        codex_skill_invoked(session({"type": "item.completed", "item": item}), "plan")
    assert str(caught.value) == f"command_execution id is missing or malformed: {'x' * 80!r}"
