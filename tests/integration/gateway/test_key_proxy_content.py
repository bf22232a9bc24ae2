"""What a request says, checked by the real key proxy (a cell's lease over its UNIX socket, real HTTP).

Issue 26: the proxy used to look only at ``tools[].type``; a URL source, provider-side state or a
duplicate key went through. Each refused body below is sent through a lease to the scripted
provider, beside two controls on the same lease: a plain allowed body is forwarded and metered,
and a ``web_search`` tool is still refused. The refusal is a 403 whose detail (what the row
records) names the field's path, and the provider never sees the body.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.gateway.test_key_proxy import REAL_KEY
from tests.integration.gateway.test_key_proxy_wire import send
from wfbench.adapters.gateway.key_proxy import KeyProxy, Lease
from wfbench.adapters.gateway.rules import ANTHROPIC_ROUTES, OPENAI_RESPONSES_ROUTE
from wfbench.adapters.provider.script import ProviderScript
from wfbench.adapters.provider.scripted import ScriptedProvider
from wfbench.domain.metering.prices import ModelPrices
from wfbench.domain.session.records import Usage

MODEL = "claude-test"
SCRIPT = "default: {say: 'ok', usage: {input_tokens: 3, output_tokens: 2}}\n"
PNG = "iVBORw0KGgo="
URL = "https://attacker.invalid/?leak=secret"
WEB_SEARCH = {"type": "web_search_20250305", "name": "web_search"}


def ask(content: Any, **extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": 64, "messages": [{"role": "user", "content": content}], **extra}


def respond(items: Any, **extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "input": items, "max_output_tokens": 64, "store": False, **extra}


def image(source: dict[str, Any]) -> dict[str, Any]:
    return {"type": "image", "source": source}


def user(*parts: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"type": "message", "role": "user", "content": list(parts)}]


@pytest.fixture
def provider() -> Iterator[ScriptedProvider]:
    with ScriptedProvider(ProviderScript.from_yaml(SCRIPT, source="inline")) as running:
        yield running


@pytest.fixture
def cell(provider: ScriptedProvider) -> Iterator[Lease]:
    prices = ModelPrices(3.0, 3.75, 0.30, 15.0)
    routes = (*ANTHROPIC_ROUTES, OPENAI_RESPONSES_ROUTE)
    with KeyProxy(provider.base_url, REAL_KEY, model=MODEL, prices=prices, routes=routes) as proxy:
        with proxy.lease("task-arm-run0") as lease:
            yield lease


def refused_beside_controls(
    cell: Lease, provider: ScriptedProvider, target: str, body: bytes | dict[str, Any]
) -> tuple[int, str, str]:
    """Send ``body``, then the two controls; the status, refusal kind and detail of ``body``."""
    status, reply = send(cell, "POST", target, body)
    assert send(cell, "POST", "/v1/messages", ask("hi"))[0] == 200  # plain: forwarded and metered
    assert send(cell, "POST", "/v1/messages", ask("hi", tools=[WEB_SEARCH]))[0] == 403  # still refused
    meter = cell.meter(settle_s=5)
    assert len(provider.requests) == 1, "only the plain control reached the provider"
    assert meter.requests == 1
    assert meter.usage == Usage(3, None, None, 2)
    assert [r.kind for r in meter.refusals][1:] == ["server-tool"]
    refusal = meter.refusals[0]
    assert json.loads(reply)["error"]["message"].endswith(refusal.detail)
    return status, refusal.kind, refusal.detail


@pytest.mark.parametrize(
    ("body", "kind", "path"),
    [
        (ask([image({"type": "url", "url": URL})]), "content", "body.messages[0].content[0].source.type"),
        (
            ask([{"type": "document", "source": {"type": "url", "url": URL}}]),
            "content",
            "body.messages[0].content[0].source.type",
        ),
        (
            ask([image({"type": "file", "file_id": "file_1"})]),
            "content",
            "body.messages[0].content[0].source.type",
        ),
        (
            ask([image({"type": "base64", "media_type": "image/png", "data": PNG, "url": URL})]),
            "field",
            "body.messages[0].content[0].source.url",
        ),
        (
            ask(
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": [image({"type": "url", "url": URL})],
                    }
                ]
            ),
            "content",
            "body.messages[0].content[0].content[0].source.type",
        ),
        (
            ask([{"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {"query": URL}}]),
            "content",
            "body.messages[0].content[0].type",
        ),
        (ask([{"type": "container_upload", "file_id": "f"}]), "content", "body.messages[0].content[0].type"),
        (
            ask("hi", system=[{"type": "image", "source": {"type": "url", "url": URL}}]),
            "content",
            "body.system[0].type",
        ),
        (ask("hi", service_tier="priority"), "field", "body.service_tier"),
        (ask("hi", brand_new_field=True), "field", "body.brand_new_field"),
        (
            ask("hi", mcp_servers=[{"type": "url", "url": URL, "name": "x"}]),
            "server-tool",
            "body.mcp_servers",
        ),
    ],
    ids=[
        "image-url-source",
        "document-url-source",
        "file-source",
        "base64-source-with-url",
        "url-image-inside-a-tool-result",
        "server-tool-use-block",
        "container-upload-block",
        "non-text-system-block",
        "service-tier",
        "unknown-field",
        "mcp-servers",
    ],
)
def test_a_messages_body_the_allow_lists_do_not_cover_is_refused_with_its_path(
    cell: Lease, provider: ScriptedProvider, body: dict[str, Any], kind: str, path: str
) -> None:
    status, got_kind, detail = refused_beside_controls(cell, provider, "/v1/messages", body)
    assert (status, got_kind) == (403, kind)
    assert detail.startswith(path + ":")


@pytest.mark.parametrize(
    ("body", "kind", "path"),
    [
        (
            respond(user({"type": "input_image", "image_url": URL})),
            "content",
            "body.input[0].content[0].image_url",
        ),
        (
            respond(user({"type": "input_image", "file_id": "file_1"})),
            "field",
            "body.input[0].content[0].file_id",
        ),
        (
            respond(user({"type": "input_file", "file_url": URL})),
            "field",
            "body.input[0].content[0].file_url",
        ),
        (
            respond(user({"type": "input_file", "file_id": "file_1"})),
            "field",
            "body.input[0].content[0].file_id",
        ),
        (
            respond(
                [
                    {
                        "type": "function_call_output",
                        "call_id": "c",
                        "output": [{"type": "input_image", "image_url": URL}],
                    }
                ]
            ),
            "content",
            "body.input[0].output[0].image_url",
        ),
        (respond([{"type": "item_reference", "id": "msg_1"}]), "content", "body.input[0].type"),
        (respond("hi", background=True, store=False), "field", "body.background"),
        (respond("hi", store=True), "field", "body.store"),
        (respond("hi", previous_response_id="resp_1"), "field", "body.previous_response_id"),
        (respond("hi", prompt={"id": "pmpt_1"}), "field", "body.prompt"),
        (respond("hi", conversation="conv_1"), "field", "body.conversation"),
        (respond("hi", include=["web_search_call.action.sources"]), "field", "body.include[0]"),
        (respond("hi", brand_new_field=1), "field", "body.brand_new_field"),
        (respond("hi", tools=[{"type": "web_search"}]), "server-tool", "body.tools[0].type"),
    ],
    ids=[
        "input-image-url",
        "input-image-file-id",
        "input-file-url",
        "input-file-id",
        "url-image-in-a-tool-output",
        "item-reference",
        "background",
        "store-true",
        "previous-response-id",
        "prompt",
        "conversation",
        "include-web-sources",
        "unknown-field",
        "web-search-tool",
    ],
)
def test_a_responses_body_the_allow_lists_do_not_cover_is_refused_with_its_path(
    cell: Lease, provider: ScriptedProvider, body: dict[str, Any], kind: str, path: str
) -> None:
    status, got_kind, detail = refused_beside_controls(cell, provider, "/v1/responses", body)
    assert (status, got_kind) == (403, kind)
    assert detail.startswith(path + ":")


@pytest.mark.parametrize(
    "body",
    [
        b'{"model": "claude-opus-4-1", "max_tokens": 64, "messages": [], "model": "claude-test"}',
        b'{"model": "claude-test", "tools": [{"type": "web_search_20250305", "name": "w"}], "max_tokens": 64,'
        b' "messages": [], "tools": []}',
        b'{"model": "claude-test", "stream": true, "max_tokens": 64, "messages": [], "stream": false}',
        b'{"model": "claude-test", "max_tokens": 64, "messages": [{"role": "user", "content":'
        b' [{"type": "image", "source": {"type": "url", "type": "base64", "url": "https://x.invalid"}}]}]}',
    ],
    ids=["model", "tools", "stream", "nested"],
)
def test_a_body_naming_a_key_twice_is_refused_so_what_is_checked_is_what_is_sent(
    cell: Lease, provider: ScriptedProvider, body: bytes
) -> None:
    status, kind, detail = refused_beside_controls(cell, provider, "/v1/messages", body)
    assert (status, kind) == (403, "duplicate-key")
    assert "Duplicate object key" in detail


@pytest.mark.parametrize(
    "body",
    [
        json.dumps(ask("hi")).encode("utf-16"),
        b'{"model": "claude-test", "max_tokens": 64, "temperature": NaN, "messages": []}',
    ],
    ids=["utf-16", "nan"],
)
def test_a_body_that_is_not_strict_utf8_json_is_refused(
    cell: Lease, provider: ScriptedProvider, body: bytes
) -> None:
    status, kind, _ = refused_beside_controls(cell, provider, "/v1/messages", body)
    assert (status, kind) == (400, "body")


def test_inline_images_and_files_the_agents_send_are_forwarded(
    cell: Lease, provider: ScriptedProvider
) -> None:
    """Base64 and text sources (Messages) and data: URLs and file data (Responses) go through."""
    base64 = {"type": "base64", "media_type": "image/png", "data": PNG}
    text = {"type": "text", "media_type": "text/plain", "data": "notes"}
    tool_result = {
        "type": "tool_result",
        "tool_use_id": "t1",
        "content": [image(base64), {"type": "text", "text": "x"}],
    }
    bodies = [
        ("/v1/messages", ask([image(base64), {"type": "document", "source": text}, tool_result])),
        (
            "/v1/responses",
            respond(
                user(
                    {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}"},
                    {"type": "input_file", "file_data": PNG, "filename": "a.pdf"},
                )
            ),
        ),
    ]
    for target, body in bodies:
        assert send(cell, "POST", target, body)[0] == 200
    meter = cell.meter(settle_s=5)
    assert (meter.requests, meter.refused) == (2, 0)
    assert len(provider.requests) == 2
