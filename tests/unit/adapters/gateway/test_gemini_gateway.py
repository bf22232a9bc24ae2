"""The key proxy for Gemini CLI: its routes, its content allow-list and its wire meter (pure)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from wfbench.adapters.gateway.rules import GEMINI_ROUTES, MESSAGES_ROUTE, Refused, check_body, route_for
from wfbench.adapters.gateway.wire_usage import UsageReader, WireProtocol, gemini_usage
from wfbench.domain.metering.gemini_requests import check_gemini_content
from wfbench.domain.session.records import Usage

STREAM = "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
ROUTES = (MESSAGES_ROUTE, *GEMINI_ROUTES)
BODY: dict[str, Any] = {
    "contents": [
        {"role": "user", "parts": [{"text": "Task"}]},
        {
            "role": "model",
            "parts": [{"text": "t", "thought": True}, {"functionCall": {"name": "x", "args": {}}}],
        },
        {"role": "user", "parts": [{"functionResponse": {"name": "x", "response": {"output": "ok"}}}]},
    ],
    "systemInstruction": {"parts": [{"text": "You are an agent."}]},
    "tools": [{"functionDeclarations": [{"name": "x"}]}],
    "generationConfig": {"temperature": 1, "thinkingConfig": {"includeThoughts": True}},
}


def test_a_gemini_route_matches_with_the_model_it_names() -> None:
    route = route_for("POST", STREAM, ROUTES)
    assert (route.path_model, route.meter) == ("gemini-2.5-pro", WireProtocol.GEMINI)
    assert route_for("POST", "/v1beta/models/m:countTokens", ROUTES).meter is None
    assert route_for("POST", "/v1/messages", ROUTES).path_model is None


@pytest.mark.parametrize(
    ("method", "target", "status"),
    [
        ("POST", "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=json", 400),
        ("POST", "/v1beta/models/gemini-2.5-pro:streamGenerateContent?key=k", 400),
        ("POST", "/v1beta/models/a/b:generateContent", 404),
        ("POST", "/v1beta/models/gemini-2.5-pro:embedContent", 404),
        ("POST", "/v1beta/files", 404),
        ("GET", STREAM, 405),
    ],
)
def test_anything_but_the_gemini_routes_is_refused(method: str, target: str, status: int) -> None:
    with pytest.raises(Refused) as refused:
        route_for(method, target, ROUTES)
    assert refused.value.status == status


def test_the_model_in_the_path_must_be_the_pinned_model() -> None:
    body = json.dumps(BODY).encode()
    assert check_body(route_for("POST", STREAM, ROUTES), body, "gemini-2.5-pro")["contents"]
    with pytest.raises(Refused, match="not the pinned model") as refused:
        check_body(route_for("POST", STREAM, ROUTES), body, "gemini-2.5-flash")
    assert refused.value.status == 403


@pytest.mark.parametrize(
    ("change", "kind", "path"),
    [
        ({"tools": [{"googleSearch": {}}]}, "server-tool", "body.tools[0].googleSearch"),
        (
            {"tools": [{"functionDeclarations": [], "urlContext": {}}]},
            "server-tool",
            "body.tools[0].urlContext",
        ),
        ({"tools": [{"codeExecution": {}}]}, "server-tool", "body.tools[0].codeExecution"),
        ({"cachedContent": "cachedContents/1"}, "server-tool", "body.cachedContent"),
        ({"model": "x"}, "field", "body.model"),
        (
            {"contents": [{"role": "user", "parts": [{"fileData": {"fileUri": "https://x"}}]}]},
            "content",
            "fileData",
        ),
        ({"contents": [{"role": "user", "parts": [{"executableCode": {}}]}]}, "content", "executableCode"),
        ({"contents": [{"role": "system", "parts": []}]}, "content", "body.contents[0].role"),
        ({"contents": [{"role": "user", "parts": [], "x": 1}]}, "field", "body.contents[0].x"),
        ({"contents": ["text"]}, "content", "body.contents[0]"),
        ({"systemInstruction": {"parts": [{"fileData": {}}]}}, "content", "systemInstruction.parts[0]"),
    ],
)
def test_content_off_the_allow_list_is_refused_with_its_path(
    change: dict[str, Any], kind: str, path: str
) -> None:
    with pytest.raises(Refused) as refused:
        check_body(route_for("POST", STREAM, ROUTES), json.dumps({**BODY, **change}).encode(), None)
    assert refused.value.kind == kind
    assert path in refused.value.message


def test_what_gemini_cli_sends_passes() -> None:
    assert check_gemini_content(BODY) is None
    assert (
        check_gemini_content({"contents": [{"role": "user", "parts": [{"inlineData": {"data": "AA"}}]}]})
        is None
    )


def sse(*chunks: dict[str, Any]) -> bytes:
    return b"".join(b"data: " + json.dumps(chunk).encode() + b"\r\n\r\n" for chunk in chunks)


PROMPT = {"usageMetadata": {"promptTokenCount": 150, "cachedContentTokenCount": 50}}
FINAL = {
    "candidates": [{"content": {"parts": []}, "finishReason": "STOP"}],
    "usageMetadata": {
        "promptTokenCount": 150,
        "cachedContentTokenCount": 50,
        "candidatesTokenCount": 9,
        "thoughtsTokenCount": 4,
    },
}


def read(pieces: list[bytes], *, streaming: bool = True, cut: bool = False) -> tuple[Usage | None, bool]:
    reader = UsageReader(WireProtocol.GEMINI, streaming=streaming)
    for piece in pieces:
        reader.feed(piece)
    return reader.finish(cut=cut)


def test_a_gemini_stream_is_metered_at_its_finish_with_thinking_as_output() -> None:
    body = sse({"candidates": [{"content": {"parts": [{"text": "hi"}]}}], **PROMPT}, FINAL)
    assert read([body[:7], body[7:]]) == (Usage(100, None, 50, 13), True)


def test_a_cut_stream_keeps_the_prompt_it_was_charged_for_and_is_incomplete() -> None:
    body = sse({"candidates": [], **PROMPT})
    assert read([body], cut=True) == (Usage(100, None, 50, None), False)
    assert read([body]) == (Usage(100, None, 50, None), False)  # no finish: not complete


def test_a_plain_reply_is_metered_from_its_usage_metadata() -> None:
    assert read([json.dumps(FINAL).encode()], streaming=False) == (Usage(100, None, 50, 13), True)
    assert read([b"{}"], streaming=False) == (Usage(), True)


@pytest.mark.parametrize(
    "raw",
    [
        {"promptTokenCount": 1, "cachedContentTokenCount": 2},
        {"candidatesTokenCount": -1},
        {"promptTokenCount": "1"},
        [],
    ],
)
def test_nonsense_gemini_usage_is_unreadable(raw: Any) -> None:
    with pytest.raises(ValueError):
        gemini_usage(raw)
    assert read([sse({**FINAL, "usageMetadata": raw})]) == (None, False)


def test_tool_prompt_tokens_are_input_and_absent_output_stays_unknown() -> None:
    assert gemini_usage({"promptTokenCount": 10, "toolUsePromptTokenCount": 3}) == Usage(13, None, None, None)
    assert gemini_usage({"thoughtsTokenCount": 2}) == Usage(None, None, None, 2)
