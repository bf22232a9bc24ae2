"""Reading Codex's ``exec --json`` stream: verdicts, usage (unknown kept unknown), skill evidence."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

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

OK = ProcessOutcome(state=ProcessState.EXITED, returncode=0, wall_s=0.5514)
FAILED = ProcessOutcome(state=ProcessState.EXITED, returncode=1, stderr_tail="boom", wall_s=0.2)
THREAD = {"type": "thread.started", "thread_id": "01a233d6-336f-7033-bf69-7f81b839cfae"}
USAGE = {
    "input_tokens": 45210,
    "cached_input_tokens": 44000,
    "cache_write_input_tokens": 0,
    "output_tokens": 85,
    "reasoning_output_tokens": 0,
}
SKILL_READ = "/bin/sh -lc 'cat /home/agent/.agents/skills/plan/SKILL.md'"


def command(
    item_id: str, cmd: str, *, code: int | None = 0, output: str = "hi\n", status: str = "completed"
) -> list[Any]:
    started = {
        "id": item_id,
        "type": "command_execution",
        "command": cmd,
        "aggregated_output": "",
        "exit_code": None,
        "status": "in_progress",
    }
    done = {**started, "aggregated_output": output, "exit_code": code, "status": status}
    return [{"type": "item.started", "item": started}, {"type": "item.completed", "item": done}]


def message(item_id: str, text: str) -> dict[str, Any]:
    return {"type": "item.completed", "item": {"id": item_id, "type": "agent_message", "text": text}}


def session(*items: Any, usage: Any = USAGE, end: str = "turn.completed") -> list[dict[str, Any]]:
    flat: list[dict[str, Any]] = []
    for item in items:
        flat.extend(item if isinstance(item, list) else [item])
    last: dict[str, Any] = {"type": end}
    if end == "turn.completed":
        last["usage"] = usage
    else:
        last["error"] = {"message": "unexpected status 529 Service Unavailable"}
    return [THREAD, {"type": "turn.started"}, *flat, last]


def verdict(events: list[dict[str, Any]] | None, process: ProcessOutcome = OK, **kw: Any) -> Any:
    return classify_codex_session(events, process=process, **kw)


def test_a_completed_session_is_ok_with_usage_in_wfbench_fields_and_no_cost() -> None:
    """Codex's input includes the cache: 45210 - 44000 - 0 = 1210 uncached; a 0 cache write is not
    reported (Codex prints 0 for a field nobody sent); cost and turns unknown."""
    result = verdict(
        session(message("item_0", "Writing."), command("item_1", "echo hi"), message("item_2", "Done."))
    )
    assert result.ok
    assert result.error_kind is None
    assert result.usage == Usage(
        input_tokens=1210, cache_creation_input_tokens=None, cache_read_input_tokens=44000, output_tokens=85
    )
    assert result.cost_usd is None
    assert result.num_turns is None
    assert result.duration_s == 0.551
    assert result.session_id == "01a233d6-336f-7033-bf69-7f81b839cfae"
    assert result.tool_use_counts == {"command_execution": 1}
    assert result.diagnostics == ()


def test_a_turn_reporting_zero_input_reported_nothing_and_its_usage_is_unknown() -> None:
    """The provider sent `usage: null`; Codex prints zeros; wfbench keeps every field None."""
    zeros = dict.fromkeys(USAGE, 0)
    result = verdict(session(message("item_0", "Done."), usage=zeros))
    assert result.ok
    assert result.usage == Usage()
    assert verdict(session(message("item_0", "x"), usage=None)).usage == Usage()


def test_a_usage_field_codex_did_not_print_is_unknown_and_turns_are_summed() -> None:
    """A missing cache_write field is None; two turns add up; one unknown turn makes a field unknown."""
    partial = {"input_tokens": 100, "cached_input_tokens": 40, "output_tokens": 5}
    assert read_codex_usage(session(usage=partial)) == Usage(
        input_tokens=60, cache_creation_input_tokens=None, cache_read_input_tokens=40, output_tokens=5
    )
    two = [*session(usage=USAGE), {"type": "turn.started"}, {"type": "turn.completed", "usage": USAGE}]
    assert read_codex_usage(two) == Usage(
        input_tokens=2420, cache_creation_input_tokens=None, cache_read_input_tokens=88000, output_tokens=170
    )
    zeros = dict.fromkeys(USAGE, 0)
    mixed = [*session(usage=USAGE), {"type": "turn.started"}, {"type": "turn.completed", "usage": zeros}]
    assert read_codex_usage(mixed) == Usage()


def test_a_zero_cache_field_is_not_reported_since_codex_prints_zero_for_an_absent_one() -> None:
    """Only a positive cache count is a measurement; the uncached input is still what remains."""
    raw = {"input_tokens": 500, "cached_input_tokens": 0, "cache_write_input_tokens": 0, "output_tokens": 9}
    assert read_codex_usage(session(usage=raw)) == Usage(input_tokens=500, output_tokens=9)
    written = {**raw, "cache_write_input_tokens": 40}
    assert read_codex_usage(session(usage=written)) == Usage(
        input_tokens=460, cache_creation_input_tokens=40, output_tokens=9
    )


@pytest.mark.parametrize(
    ("usage", "why"),
    [
        ({**USAGE, "output_tokens": -1}, "usage.output_tokens is not a non-negative integer"),
        ({**USAGE, "input_tokens": True}, "usage.input_tokens is not a non-negative integer"),
        (
            {**USAGE, "cached_input_tokens": "44000"},
            "usage.cached_input_tokens is not a non-negative integer",
        ),
        ({**USAGE, "cached_input_tokens": 50000}, "exceed input_tokens"),
        ([1, 2], "usage is not an object"),
    ],
)
def test_nonsense_usage_is_a_session_error_and_measures_nothing(usage: Any, why: str) -> None:
    result = verdict(session(message("item_0", "Done."), usage=usage))
    assert result.error_kind is ErrorKind.SESSION_ERROR
    assert why in result.error_detail
    assert result.usage == Usage()


def test_a_failed_turn_is_a_session_error_with_codex_s_message_and_no_usage() -> None:
    """`error` then `turn.failed`, exit 1 (a scripted 529 with retries off)."""
    error = {"type": "error", "message": "unexpected status 529 Service Unavailable"}
    result = verdict(session(error, end="turn.failed"), FAILED)
    assert result.error_kind is ErrorKind.SESSION_ERROR
    assert not result.ok
    assert "agent process exited (returncode 1)" in result.error_detail
    assert "turn.failed: unexpected status 529 Service Unavailable" in result.error_detail
    assert "stderr tail: boom" in result.error_detail
    assert result.usage == Usage()
    assert result.session_id == THREAD["thread_id"]


@pytest.mark.parametrize(
    ("events", "process"),
    [
        pytest.param(session(end="turn.failed"), OK, id="turn.failed alone"),
        pytest.param(session({"type": "error", "message": "x"}), OK, id="error event alone"),
        pytest.param(session(message("item_0", "Done.")), FAILED, id="exit code alone"),
    ],
)
def test_each_failure_signal_alone_makes_a_session_error(events: list[Any], process: ProcessOutcome) -> None:
    assert verdict(events, process).error_kind is ErrorKind.SESSION_ERROR


def test_an_error_item_is_a_warning_and_does_not_fail_the_session() -> None:
    """Codex reports e.g. unknown model metadata as an `error` item; the turn still completed."""
    warning = {
        "type": "item.completed",
        "item": {"id": "item_0", "type": "error", "message": "Model metadata not found"},
    }
    assert verdict(session(warning, message("item_1", "Done."))).ok


@pytest.mark.parametrize(
    ("events", "why"),
    [
        ([], "the event stream is empty"),
        ([{"type": "turn.started"}, {"type": "turn.completed", "usage": USAGE}], "not thread.started"),
        ([THREAD, {"type": "turn.started"}, message("item_0", "x")], "the last turn never ended"),
        ([THREAD], "no turn ran"),
        ([*session(), message("item_9", "late")], "followed by 'item.completed'"),
        ([THREAD, {"type": "turn.completed", "usage": USAGE}], "turn.completed without turn.started"),
        (
            [THREAD, {"type": "turn.started"}, {"type": "turn.started"}],
            "started before the previous one ended",
        ),
        ([THREAD, THREAD], "a second thread.started"),
    ],
)
def test_a_stream_without_its_structure_is_a_session_error_and_unverifiable(
    events: list[Any], why: str
) -> None:
    with pytest.raises(ValueError, match=why):
        evidence_window(events)
    result = verdict(events)
    assert result.error_kind is ErrorKind.SESSION_ERROR
    assert why in result.error_detail
    assert result.diagnostics == (f"unverifiable parent event stream: {result.stream_error}",)


def test_an_undecodable_stream_and_a_cancelled_process() -> None:
    undecodable = verdict(None, stream_error="malformed parent-captured event JSON at line 3")
    assert undecodable.error_kind is ErrorKind.SESSION_ERROR
    assert "line 3" in undecodable.error_detail
    assert verdict(None).stream_error == "no event stream was captured"
    cancelled = ProcessOutcome(state=ProcessState.CANCELLED, returncode=None)
    assert verdict(session(), cancelled).error_kind is ErrorKind.CANCELLED


def test_reading_the_skill_file_with_a_successful_command_is_the_invocation() -> None:
    """The model ran `cat …/skills/plan/SKILL.md`, exit 0, the text came back: invoked."""
    result = verdict(
        session(command("item_0", SKILL_READ, output="# Plan\n"), message("item_1", "ok")),
        expected_skill="plan",
    )
    assert result.ok
    assert result.skill_invoked is True
    for form in (
        "/bin/bash -lc 'sed -n 1,200p ~/.agents/skills/plan/SKILL.md'",
        '/bin/sh -lc "cat .agents/skills/plan/SKILL.md | head"',
        "cat skills/plan/SKILL.md",
    ):
        assert codex_skill_invoked(session(command("item_0", form)), "plan"), form


@pytest.mark.parametrize(
    "items",
    [
        pytest.param([], id="no command at all"),
        pytest.param(command("item_0", SKILL_READ, code=1, output="No such file"), id="the read failed"),
        pytest.param(command("item_0", SKILL_READ, output=""), id="nothing was shown"),
        pytest.param(command("item_0", SKILL_READ, status="failed"), id="status failed"),
        pytest.param(command("item_0", SKILL_READ)[:1], id="started but never completed"),
        pytest.param(command("item_0", "cat .agents/skills/planner/SKILL.md"), id="another skill"),
        pytest.param(command("item_0", "cat .agents/skills/plan/README.md"), id="not the SKILL.md"),
        pytest.param(command("item_0", "cat .agents/myskills/plan/SKILL.md"), id="not a skills directory"),
        pytest.param([message("item_0", "I read skills/plan/SKILL.md")], id="only claimed in a message"),
    ],
)
def test_anything_short_of_a_successful_read_of_that_skill_is_skill_not_invoked(items: list[Any]) -> None:
    result = verdict(session(*items), expected_skill="plan")
    assert result.skill_invoked is False
    assert result.error_kind is ErrorKind.SKILL_NOT_INVOKED
    assert result.error_detail == "parent event stream shows no command reading plan's SKILL.md"
    assert result.usage.output_tokens == 85  # skill-not-invoked is still a measurement


def test_a_malformed_command_item_makes_the_skill_evidence_unverifiable() -> None:
    bad = {
        "type": "item.completed",
        "item": {"id": "item_0", "type": "command_execution", "command": ["cat"]},
    }
    with pytest.raises(SkillEvidenceError, match="no command text"):
        codex_skill_invoked(session(bad), "plan")
    result = verdict(session(bad), expected_skill="plan")
    assert result.error_kind is ErrorKind.EVIDENCE_UNVERIFIED
    assert result.skill_invoked is None
    bad_code = command("item_0", SKILL_READ, code=True)  # type: ignore[arg-type]
    assert verdict(session(bad_code), expected_skill="plan").error_kind is ErrorKind.EVIDENCE_UNVERIFIED
    assert verdict(session(), expected_skill="  ").error_kind is ErrorKind.EVIDENCE_UNVERIFIED


def test_tool_counts_are_completed_tool_items_by_type_each_once() -> None:
    patch = {
        "type": "item.completed",
        "item": {"id": "item_2", "type": "file_change", "changes": [], "status": "completed"},
    }
    events = session(command("item_0", "ls"), message("item_1", "x"), patch, command("item_3", "pwd"))
    assert codex_tool_counts(events) == {"command_execution": 2, "file_change": 1}
    assert codex_tool_counts([*events[:-1], patch, events[-1]]) == {"command_execution": 2, "file_change": 1}


counts = st.integers(min_value=0, max_value=10**9)


@given(cached=counts, written=counts, uncached=st.integers(min_value=1, max_value=10**9), output=counts)
def test_mapped_usage_always_adds_back_up_to_what_codex_reported(
    cached: int, written: int, uncached: int, output: int
) -> None:
    """input + cache_read + cache_creation == Codex's input_tokens; nothing is invented or lost."""
    raw = {
        "input_tokens": uncached + cached + written,
        "cached_input_tokens": cached,
        "cache_write_input_tokens": written,
        "output_tokens": output,
    }
    usage = read_codex_usage(session(usage=raw))
    assert usage.input_tokens == uncached
    assert (usage.input_tokens or 0) + (usage.cache_read_input_tokens or 0) + (
        usage.cache_creation_input_tokens or 0
    ) == raw["input_tokens"]
    assert usage.output_tokens == output
