"""The pure event-stream verdict: strict result rules, unknown usage, skill evidence, redaction."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wfbench.domain.redaction import REDACTED, contains_secret, redact_text
from wfbench.domain.results.rows import ErrorKind
from wfbench.domain.session.event_stream import (
    ProcessOutcome,
    SkillEvidenceError,
    classify_session,
    evidence_window,
    measured_cost,
    normalize_skill_id,
    read_usage,
    skill_invoked,
)
from wfbench.domain.workspace.sandbox import ProcessState

OK = ProcessOutcome(ProcessState.EXITED, 0)
FULL = {
    "input_tokens": 10,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 44000,
    "output_tokens": 5,
}


def assistant(
    *blocks: dict[str, Any], usage: dict[str, Any] | None = None, model: str = "m"
) -> dict[str, Any]:
    return {"type": "assistant", "message": {"model": model, "content": list(blocks), "usage": usage or {}}}


def user(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"type": "user", "message": {"content": list(blocks)}}


def skill_use(block_id: str = "t1", skill: str = "plan", **extra: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": block_id, "name": "Skill", "input": {"skill": skill, **extra}}


def result_for(block_id: str = "t1", is_error: Any = False) -> dict[str, Any]:
    return {
        "type": "tool_result",
        "tool_use_id": block_id,
        "content": "Launching skill",
        "is_error": is_error,
    }


def final(**fields: Any) -> dict[str, Any]:
    base = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "num_turns": 2,
        "duration_ms": 1500,
        "total_cost_usd": 0.42,
        "session_id": "s-1",
        "usage": dict(FULL),
    }
    return {**base, **fields}


def stream(*middle: dict[str, Any], result: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    reported = assistant(usage=dict(FULL))
    return [{"type": "system", "subtype": "init"}, reported, *middle, result or final()]


def test_a_clean_session_is_ok_with_its_reported_numbers():
    """Usage, cost, turns, duration and session id come from the single result event."""
    verdict = classify_session(stream(), process=OK)
    assert verdict.ok
    assert verdict.error_kind is None
    assert verdict.usage.cache_read_input_tokens == 44000
    assert verdict.cost_usd == 0.42
    assert (verdict.num_turns, verdict.duration_s, verdict.session_id) == (2, 1.5, "s-1")


def test_a_field_no_turn_reported_is_none_even_if_the_cli_zero_filled_it():
    """The real CLI writes cache_creation 0 into its totals; no assistant turn reported it: None."""
    events = [
        assistant(usage={"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 44000}),
        final(),
    ]
    usage = read_usage(events[-1], events)
    assert usage.cache_creation_input_tokens is None
    assert usage.cache_read_input_tokens == 44000


def test_a_reported_zero_stays_zero():
    """Negative control: a provider that said 0 is a measured zero."""
    events = [assistant(usage=dict(FULL)), final()]
    assert read_usage(events[-1], events).cache_creation_input_tokens == 0


def test_synthetic_api_error_messages_do_not_count_as_reports():
    """The CLI's synthetic error notice carries zeros nobody measured."""
    events = [assistant(usage=dict(FULL), model="<synthetic>"), final()]
    assert read_usage(events[-1], events).input_tokens is None


@pytest.mark.parametrize("bad", [-5, True, "1200", 1.5])
def test_an_invalid_usage_value_is_a_session_error(bad):
    """Nonsense usage is refused, never stored."""
    events = stream(result=final(usage={**FULL, "cache_read_input_tokens": bad}))
    verdict = classify_session(events, process=OK)
    assert verdict.error_kind is ErrorKind.SESSION_ERROR
    assert verdict.usage.cache_read_input_tokens is None


@pytest.mark.parametrize(
    ("result", "process"),
    [
        (final(is_error=True, api_error_status=529), OK),
        (final(subtype="error_max_turns"), OK),
        (final(), ProcessOutcome(ProcessState.EXITED, 1)),
        (final(), ProcessOutcome(ProcessState.TIMEOUT, -15, detail="timed out")),
    ],
)
def test_failed_sessions_are_session_errors_whose_usage_and_cost_are_unknown(result, process):
    """is_error, an error subtype, a non-zero exit or a timeout: no measurement is claimed."""
    verdict = classify_session(stream(result=result), process=process)
    assert verdict.error_kind is ErrorKind.SESSION_ERROR
    assert not verdict.ok
    assert verdict.usage.input_tokens is None
    assert verdict.cost_usd is None


def test_a_cancelled_process_is_cancelled_not_a_session_error():
    """Cancellation has its own kind."""
    verdict = classify_session(None, process=ProcessOutcome(ProcessState.CANCELLED, None))
    assert verdict.error_kind is ErrorKind.CANCELLED


@pytest.mark.parametrize(
    ("events", "message"),
    [
        ([], "empty"),
        ([{"type": "assistant"}], "observed 0"),
        ([final(), final()], "observed 2"),
        ([final(), {"type": "assistant"}], "not the last event"),
    ],
)
def test_the_stream_needs_exactly_one_result_followed_only_by_system_events(events, message):
    """Zero or two results, or a non-system event after it, make the stream unusable."""
    with pytest.raises(ValueError, match=message):
        evidence_window(events)
    verdict = classify_session(events, process=OK)
    assert verdict.error_kind is ErrorKind.SESSION_ERROR
    assert any("unverifiable parent event stream" in d for d in verdict.diagnostics)


def test_system_events_after_the_result_are_tolerated():
    """Background-task teardown events may follow the result."""
    events = [*stream(), {"type": "system", "subtype": "task_updated"}]
    assert classify_session(events, process=OK).ok


def test_a_decode_error_from_the_adapter_is_a_session_error():
    """The adapter's strict decoding failure reaches the verdict."""
    verdict = classify_session(None, process=OK, stream_error="malformed JSON at line 3")
    assert verdict.error_kind is ErrorKind.SESSION_ERROR
    assert "line 3" in (verdict.error_detail or "")


def test_a_skill_call_with_a_later_non_error_result_is_an_invocation():
    """The proof: a matching Skill tool_use and a later tool_result that is not an error."""
    events = stream(assistant(skill_use()), user(result_for()))
    verdict = classify_session(events, process=OK, expected_skill="plan")
    assert verdict.skill_invoked is True
    assert verdict.ok
    assert verdict.tool_use_counts == {"Skill": 1}


def test_a_session_without_the_skill_call_is_skill_not_invoked_but_still_measured():
    """Negative control: the same session without the call fails the evidence check, keeps its cost."""
    verdict = classify_session(stream(), process=OK, expected_skill="plan")
    assert verdict.skill_invoked is False
    assert verdict.error_kind is ErrorKind.SKILL_NOT_INVOKED
    assert verdict.cost_usd == 0.42


@pytest.mark.parametrize(
    "blocks",
    [
        (assistant(skill_use(skill="plan-extra")), user(result_for())),
        (assistant(skill_use(skill="other", args="plan")), user(result_for())),
        (assistant(skill_use()), user(result_for(is_error=True))),
    ],
)
def test_near_misses_and_failed_calls_do_not_count(blocks):
    """Prefix variants, mentions in args and error results are not invocations."""
    assert skill_invoked(stream(*blocks), "plan") is False


def test_a_plugin_qualified_skill_matches_its_bare_name():
    """``plugin:name`` counts for ``name``."""
    assert skill_invoked(stream(assistant(skill_use(skill="ce:plan")), user(result_for())), "plan")


@pytest.mark.parametrize(
    ("events", "message"),
    [
        ([assistant(skill_use())], "no tool result"),
        ([user(result_for()), assistant(skill_use())], "not later"),
        ([assistant(skill_use(), skill_use()), user(result_for())], "duplicate"),
        ([assistant(skill_use()), user(result_for(is_error="no"))], "boolean"),
    ],
)
def test_unprovable_skill_evidence_is_evidence_unverified(events, message):
    """A missing, earlier or duplicate result cannot prove or disprove anything."""
    with pytest.raises(SkillEvidenceError, match=message):
        skill_invoked(events, "plan")
    verdict = classify_session([*events, final()], process=OK, expected_skill="plan")
    assert verdict.error_kind is ErrorKind.EVIDENCE_UNVERIFIED
    assert verdict.skill_invoked is None


@pytest.mark.parametrize(
    ("raw", "expected"), [(" /ce:plan now", "plan"), ("plan", "plan"), ("", None), (3, None)]
)
def test_skill_identifiers_are_normalised(raw, expected):
    """First token, one leading slash dropped, the part after the last colon."""
    assert normalize_skill_id(raw) == expected


@pytest.mark.parametrize("raw", [None, "free", True, -0.01, math.nan, math.inf])
def test_garbage_cost_is_unknown(raw):
    """A cost that is not a finite non-negative number is None, never 0."""
    assert measured_cost(raw) is None


def test_a_genuine_zero_cost_stays_zero():
    """Negative control for the garbage rule."""
    assert measured_cost(0) == 0.0


def test_redaction_removes_declared_secrets_and_credential_shapes():
    """Declared values, their JSON-escaped form, sk-ant keys, bearer headers and URL user-info go."""
    text = 'k=s3cr"et Authorization: Bearer abc.def sk-ant-api03-XXXXXXXXXX https://u:p@host/ "s3cr\\"et"'
    clean = redact_text(text, ['s3cr"et'])
    assert not contains_secret(clean, ['s3cr"et'])
    for leaked in ("abc.def", "sk-ant-api03", "u:p@"):
        assert leaked not in clean
    assert clean.count(REDACTED) >= 5


@given(st.text(min_size=4, max_size=40).filter(lambda s: s.strip() == s and s), st.text(max_size=60))
def test_a_declared_secret_never_survives_redaction(secret, around):
    """Whatever surrounds it, the secret value is gone."""
    assert secret not in redact_text(around + secret + around, [secret]) or secret in REDACTED
