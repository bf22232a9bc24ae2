"""Reading a reply's usage as it streams past the key proxy (pure: bytes in, usage out)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from wfbench.adapters.gateway.wire_usage import UsageReader, WireProtocol
from wfbench.domain.session.records import Usage


def sse(*events: dict[str, object], named: bool = True) -> bytes:
    out = b""
    for event in events:
        head = f"event: {event['type']}\n" if named else ""
        out += (head + "data: " + json.dumps(event) + "\n\n").encode()
    return out


START = {
    "type": "message_start",
    "message": {"usage": {"input_tokens": 100, "output_tokens": 1, "cache_read_input_tokens": 40}},
}
DELTA_TEXT = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x" * 500}}
DELTA = {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 25}}
STOP = {"type": "message_stop"}
ANTHROPIC_STREAM = sse(START, {"type": "ping"}, DELTA_TEXT, DELTA, STOP)


def read(protocol: WireProtocol, pieces: list[bytes], *, streaming: bool = True, cut: bool = False):  # noqa: ANN201
    reader = UsageReader(protocol, streaming=streaming)
    for piece in pieces:
        reader.feed(piece)
    return reader.finish(cut=cut)


def test_an_anthropic_stream_reports_message_start_updated_by_message_delta() -> None:
    assert read(WireProtocol.ANTHROPIC, [ANTHROPIC_STREAM]) == (Usage(100, None, 40, 25), True)


@given(st.lists(st.integers(min_value=0, max_value=len(ANTHROPIC_STREAM)), max_size=12))
def test_the_usage_does_not_depend_on_how_the_stream_was_split(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    pieces = [
        ANTHROPIC_STREAM[a:b] for a, b in zip([0, *points], [*points, len(ANTHROPIC_STREAM)], strict=True)
    ]
    assert read(WireProtocol.ANTHROPIC, pieces) == (Usage(100, None, 40, 25), True)


def test_unnamed_events_and_crlf_framing_are_read_too() -> None:
    stream = sse(START, DELTA, STOP, named=False).replace(b"\n", b"\r\n")
    assert read(WireProtocol.ANTHROPIC, [stream]) == (Usage(100, None, 40, 25), True)


def test_a_stream_cut_before_message_stop_is_incomplete_with_what_arrived() -> None:
    assert read(WireProtocol.ANTHROPIC, [sse(START, DELTA_TEXT)]) == (Usage(100, None, 40, 1), False)
    assert read(WireProtocol.ANTHROPIC, [b"event: ping\ndata: {}\n\n"]) == (None, False)


def test_a_forged_or_garbled_usage_value_is_never_summed() -> None:
    bad = {"type": "message_delta", "usage": {"output_tokens": -5}}
    assert read(WireProtocol.ANTHROPIC, [sse(START, bad, STOP)]) == (None, False)
    not_json = b"event: message_delta\ndata: {not json\n\n"
    assert read(WireProtocol.ANTHROPIC, [sse(START), not_json, sse(STOP)]) == (None, False)
    boolean = {"type": "message_start", "message": {"usage": {"input_tokens": True}}}
    assert read(WireProtocol.ANTHROPIC, [sse(boolean, STOP)]) == (None, False)


def test_a_json_reply_reports_its_usage_and_an_absent_usage_is_empty() -> None:
    body = json.dumps({"type": "message", "usage": {"input_tokens": 7, "output_tokens": 3}}).encode()
    assert read(WireProtocol.ANTHROPIC, [body[:5], body[5:]], streaming=False) == (
        Usage(7, None, None, 3),
        True,
    )
    assert read(WireProtocol.ANTHROPIC, [b'{"type": "message"}'], streaming=False) == (Usage(), True)
    assert read(WireProtocol.ANTHROPIC, [body[:9]], streaming=False, cut=True) == (None, False)
    assert read(WireProtocol.ANTHROPIC, [b"[1, 2]"], streaming=False) == (None, False)


def test_openai_responses_usage_comes_from_response_completed_without_cached_input() -> None:
    usage = {
        "input_tokens": 1000,
        "output_tokens": 50,
        "input_tokens_details": {"cached_tokens": 600, "cache_write_tokens": 100},
    }
    stream = sse(
        {"type": "response.created", "response": {"usage": None}},
        {"type": "response.output_item.done", "item": {}},
        {"type": "response.completed", "response": {"usage": usage}},
    )
    assert read(WireProtocol.OPENAI_RESPONSES, [stream]) == (Usage(300, 100, 600, 50), True)
    body = json.dumps({"object": "response", "usage": {"input_tokens": 9, "output_tokens": 2}}).encode()
    assert read(WireProtocol.OPENAI_RESPONSES, [body], streaming=False) == (Usage(9, None, None, 2), True)


def test_responses_cached_tokens_above_the_input_are_unreadable() -> None:
    usage = {"input_tokens": 10, "output_tokens": 1, "input_tokens_details": {"cached_tokens": 50}}
    stream = sse({"type": "response.completed", "response": {"usage": usage}})
    assert read(WireProtocol.OPENAI_RESPONSES, [stream]) == (None, False)


def test_a_responses_stream_without_response_completed_is_incomplete() -> None:
    assert read(WireProtocol.OPENAI_RESPONSES, [sse({"type": "response.created"})]) == (None, False)


def test_a_huge_event_is_skipped_without_holding_it() -> None:
    reader = UsageReader(WireProtocol.ANTHROPIC, streaming=True)
    reader.feed(sse(START))
    reader.feed(b"event: content_block_delta\ndata: " + b"x" * (9 * 1024 * 1024))
    reader.feed(b"\n\n" + sse(DELTA, STOP))
    assert reader.finish() == (Usage(100, None, 40, 25), True)
