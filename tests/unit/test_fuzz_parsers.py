"""Hypothesis fuzzing of every parser of outside input: only the documented error escapes.

* review artifacts (:func:`parse_review_artifact`): :class:`ReviewArtifactError`;
* hidden labels (:func:`parse_labels`): :class:`InputError`;
* the agent's event stream (:func:`decode_events` + :func:`classify_session`): nothing at all (a
  bad stream is a value: a ``session-error`` verdict whose usage and cost are unknown);
* provider scripts (:meth:`ProviderScript.from_yaml`): :class:`InputError`;
* ``results.jsonl`` (:func:`read_rows`): :class:`InputError` naming the file and, for a bad
  line, ``line N``.

Inputs are arbitrary bytes and text, arbitrary JSON/YAML documents, and near-valid documents with
one field replaced by an arbitrary value. ``@example`` pins the inputs that once escaped (deep
nesting, integers too large for a float, an unhashable ``stop_reason``); deeply nested YAML, which
costs PyYAML ~2 s of CPU to refuse, is pinned by the bad-input matrix instead. The JSONL reader is fed
through one real file in a module temporary directory (it is a file reader).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.strategies import review_artifacts, review_labels
from wfbench.adapters.agents.claude import decode_events, redact_transcript
from wfbench.adapters.provider.script import TURN_KEYS, USAGE_KEYS, ProviderScript
from wfbench.adapters.store.jsonl_store import read_rows
from wfbench.domain.errors import InputError, ReviewArtifactError
from wfbench.domain.results.rows import ErrorKind
from wfbench.domain.review.scoring import parse_labels, parse_review_artifact
from wfbench.domain.session.event_stream import ProcessOutcome, classify_session
from wfbench.domain.workspace.sandbox import ProcessState

DEEP_JSON = b"[" * 100_000
SECRET = "sk-fuzz-secret-0123456789"
#: Timing varies with the machine's load; the budget is max_examples, not a deadline.
relaxed = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
HUGE_INT = "9" * 400
#: Scalars JSON and YAML can carry, including the awkward ones (huge ints, NaN, -0.0, surrogates).
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=10**300, max_value=10**320)
    | st.floats()
    | st.text(max_size=12)
)
documents = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)


def dumps(value: object) -> bytes:
    """JSON bytes; NaN/Infinity become their non-JSON literals, lone surrogates stay escaped."""
    return json.dumps(value).encode("utf-8")


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[dict[str, Any]]) -> dict[str, Any]:
    """A valid document with one key (top level or in its first finding) replaced or removed."""
    document = draw(base)
    target = document
    if document.get("findings") and draw(st.booleans()):
        target = document["findings"][0]
    key = draw(st.sampled_from(sorted(target)) | st.text(max_size=6))
    if draw(st.booleans()):
        target.pop(key, None)
    else:
        target[key] = draw(documents)
    return document


def refusal(
    expected: type[InputError], call: Callable[..., object], *args: object, **kwargs: object
) -> str | None:
    """Call; return None if it succeeded, or the message of the ``expected`` error it raised.

    Any other exception escapes (and fails the test). The message must be one non-empty line.
    """
    error: InputError | None = None
    try:
        call(*args, **kwargs)
    except expected as exc:
        error = exc
    if error is None:
        return None
    assert str(error).strip(), "an InputError with an empty message"
    assert "\n" not in error.reason, f"a multi-line reason: {error.reason!r}"
    return str(error)


# --- review artifacts ---------------------------------------------------------------------------


@given(st.binary(max_size=400))
@example(DEEP_JSON)
@example(b'{"schema_version": 1, "verdict": "approve", "findings": [], "verdict": "x"}')
@example(b'{"schema_version": ' + HUGE_INT.encode() + b', "verdict": "approve", "findings": []}')
@example(b"\xef\xbb\xbf{}")
@relaxed
def test_arbitrary_bytes_as_a_review_artifact_raise_only_review_artifact_error(data: bytes) -> None:
    """Any bytes either parse or raise ReviewArtifactError with a one-line reason."""
    refusal(ReviewArtifactError, parse_review_artifact, data)


@given(documents | mutated(review_artifacts().map(lambda a: a.to_mapping())))
@example({"schema_version": 1, "verdict": "comment", "findings": [{"line": 10**400}]})
@relaxed
def test_arbitrary_json_documents_as_a_review_artifact_raise_only_review_artifact_error(
    document: object,
) -> None:
    """Any JSON document (near-valid ones included) parses or raises ReviewArtifactError."""
    refusal(ReviewArtifactError, parse_review_artifact, dumps(document))


# --- hidden labels ------------------------------------------------------------------------------


@given(
    st.binary(max_size=400)
    | documents.map(dumps)
    | mutated(review_labels().map(lambda x: x.to_mapping())).map(dumps)
)
@example(DEEP_JSON)
@example(b"\xff\xfe\x00\x00{")
@example(b"\x00{")
@relaxed
def test_arbitrary_label_files_raise_only_input_error(data: bytes) -> None:
    """Any labels bytes parse or raise InputError (a labels fault is the harness input's fault)."""
    message = refusal(InputError, parse_labels, data)
    if message is not None:
        assert not message.startswith("review output"), "labels raised the reviewer's error"


# --- the agent's event stream -------------------------------------------------------------------

_types = st.sampled_from(["system", "assistant", "user", "result", "stream_event"]) | st.text(max_size=6)
_blocks = st.fixed_dictionaries(
    {"type": st.sampled_from(["tool_use", "tool_result", "text"]) | documents},
    optional={
        "id": documents | st.text(max_size=8),
        "tool_use_id": documents | st.text(max_size=8),
        "name": st.sampled_from(["Skill", "skill", "Bash"]) | documents,
        "input": st.fixed_dictionaries({}, optional={"skill": documents | st.just("work")}) | documents,
        "is_error": documents,
    },
)
_usage = st.dictionaries(
    st.sampled_from(["input_tokens", "output_tokens", "cache_read_input_tokens"]), scalars
)
events = st.fixed_dictionaries(
    {"type": _types},
    optional={
        "message": st.fixed_dictionaries(
            {},
            optional={
                "content": st.lists(_blocks, max_size=3) | documents,
                "usage": _usage | documents,
                "model": st.sampled_from(["<synthetic>", "m"]) | documents,
            },
        )
        | documents,
        "usage": _usage | documents,
        "total_cost_usd": scalars,
        "duration_ms": scalars,
        "num_turns": scalars,
        "is_error": documents,
        "subtype": documents,
        "session_id": documents,
        "result": documents,
        "api_error_status": documents,
    },
)
_outcomes = st.builds(
    ProcessOutcome,
    state=st.sampled_from(list(ProcessState)),
    returncode=st.none() | st.integers(-9, 255),
    wall_s=st.none() | st.floats(min_value=0, max_value=1e4),
)
_lines = st.lists(
    st.binary(max_size=40) | events.map(dumps) | documents.map(dumps) | st.just(dumps({"key": SECRET})),
    max_size=6,
).map(b"\n".join)


@given(_lines, _outcomes, st.none() | st.sampled_from(["work", "plan", "/x:work args", ""]))
@example(DEEP_JSON, ProcessOutcome(ProcessState.EXITED, 0), None)
@example(
    dumps({"type": "result", "total_cost_usd": 10**400, "duration_ms": 10**400, "usage": {}}),
    ProcessOutcome(ProcessState.EXITED, 0),
    "work",
)
@relaxed
def test_arbitrary_event_streams_become_a_verdict_and_never_raise(
    stdout: bytes, process: ProcessOutcome, skill: str | None
) -> None:
    """decode_events + classify_session never raise; an errored session measures nothing."""
    decoded, stream_error = decode_events(stdout)
    assert (decoded is None) == (stream_error is not None)
    verdict = classify_session(decoded, process=process, stream_error=stream_error, expected_skill=skill)
    assert verdict.ok == (verdict.error_kind is None)
    if verdict.error_kind in (ErrorKind.SESSION_ERROR, ErrorKind.CANCELLED):
        assert (verdict.cost_usd, verdict.usage.input_tokens, verdict.usage.output_tokens) == (
            None,
            None,
            None,
        )
        assert verdict.error_detail
    if verdict.cost_usd is not None:
        assert verdict.cost_usd >= 0


@given(_lines)
@example(DEEP_JSON)
@example(b"[" * 950 + b"]" * 950)
@example(b'{"a":' * 900 + SECRET.encode() + b"}" * 900)
@relaxed
def test_arbitrary_event_streams_are_redacted_without_raising_or_leaking(stdout: bytes) -> None:
    """redact_transcript never raises and the planted secret never survives it."""
    transcript, _truncated = redact_transcript(stdout, [SECRET], limit=4096)
    assert SECRET.encode() not in transcript
    assert len(transcript) <= 4096


# --- provider scripts ---------------------------------------------------------------------------

_turn_docs = st.dictionaries(
    st.sampled_from(sorted(TURN_KEYS)) | st.text(max_size=6),
    documents | st.dictionaries(st.sampled_from(USAGE_KEYS), scalars),
    max_size=4,
)
_script_docs = st.fixed_dictionaries(
    {},
    optional={
        "default": _turn_docs | documents,
        "conversations": st.lists(
            st.fixed_dictionaries(
                {}, optional={"when": documents, "turns": st.lists(_turn_docs, max_size=3)}
            ),
            max_size=3,
        )
        | documents,
    },
)


def yaml_text(value: object) -> str:
    """YAML text for any document (Python-specific tags are not produced: safe_dump)."""
    return yaml.safe_dump(value, allow_unicode=True)


@given(st.text(max_size=200) | _script_docs.map(yaml_text) | documents.map(yaml_text))
@example("default: {stop_reason: [end_turn]}")
@example("default: {stop_reason: {a: 1}}")
@example("? [a, b]\n: 1\n")
@example("a: &x [*x]\n")
@example("default: {stall_s: .nan, usage: {input_tokens: 1.5}}")
@relaxed
def test_arbitrary_provider_scripts_raise_only_input_error(text: str) -> None:
    """Any YAML text loads or raises InputError naming the script."""
    message = refusal(InputError, ProviderScript.from_yaml, text, source="script.yaml")
    assert message is None or message.startswith("script.yaml: ")


# --- results.jsonl ------------------------------------------------------------------------------

ROW = {"task": "t1", "arm": "baseline", "run": 0}
_row_docs = st.dictionaries(
    st.sampled_from(
        [
            "task",
            "arm",
            "run",
            "ok",
            "resolved",
            "error_kind",
            "cost_usd",
            "duration_s",
            "input_tokens",
            "review_f1",
            "review_score",
            "class",
            "num_turns",
        ]
    )
    | st.text(max_size=6),
    documents | st.sampled_from([e.value for e in ErrorKind]),
    max_size=5,
).map(lambda extra: {**ROW, **extra})


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    """One results file reused by every example (the reader reads a file)."""
    with tempfile.TemporaryDirectory(prefix="wfbench-fuzz-") as tmp:
        yield Path(tmp) / "results.jsonl"


@given(st.lists(st.binary(max_size=60) | _row_docs.map(dumps) | documents.map(dumps), max_size=5))
@example([dumps(ROW), DEEP_JSON])
@example([dumps(ROW)[:-1] + b', "cost_usd": ' + HUGE_INT.encode() + b"}"])
@example([dumps(ROW)[:-1] + b', "review_f1": ' + HUGE_INT.encode() + b"}"])
@example([dumps(ROW)[:-1] + b', "cost_usd": NaN}'])
@relaxed
def test_arbitrary_results_lines_raise_only_input_error_naming_file_and_line(
    scratch: Path, lines: list[bytes]
) -> None:
    """Any lines read back as rows or raise InputError naming the file (and the line, if one is bad)."""
    scratch.write_bytes(b"\n".join(lines) + b"\n")
    message = refusal(InputError, read_rows, scratch)
    if message is not None:
        assert message.startswith(f"{scratch}: line ")
    else:
        expected = sum(1 for line in lines for part in line.split(b"\n") if part.strip())
        assert len(read_rows(scratch)) == expected
