"""The key proxy's content allow-lists as pure rules (issue 26): what a model request may say."""

from __future__ import annotations

from typing import Any

import pytest

from wfbench.domain.metering.requests import (
    MESSAGES,
    RESPONSES,
    BodyRefusal,
    check_request,
    decode_body,
)

URL = "https://attacker.invalid/?q=leak"
B64 = {"type": "base64", "media_type": "image/png", "data": "AAAA"}


def ask(content: Any, **extra: Any) -> dict[str, Any]:
    return {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": content}], **extra}


def respond(items: Any, **extra: Any) -> dict[str, Any]:
    return {"model": "m", "input": items, **extra}


def user(*parts: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"type": "message", "role": "user", "content": list(parts)}]


def refusal(rules: Any, body: dict[str, Any]) -> tuple[str, str] | None:
    found = check_request(rules, body)
    return None if found is None else (found.kind, found.path)


# --- decoding -------------------------------------------------------------------------------


def test_a_json_object_decodes_to_itself() -> None:
    assert decode_body(b'{"a": [1, {"b": 2}]}') == ({"a": [1, {"b": 2}]}, None)


@pytest.mark.parametrize(
    "body",
    [b'{"a": 1, "a": 2}', b'{"x": {"a": 1, "a": 1}}', b'[{"a": 1, "b": 2, "a": 3}]'],
    ids=["top", "nested", "in-array"],
)
def test_a_key_named_twice_anywhere_is_a_duplicate_key_refusal(body: bytes) -> None:
    value, found = decode_body(body)
    assert value is None
    assert found is not None
    assert (found.kind, found.path) == ("duplicate-key", "body")
    assert found.detail == "Duplicate object key a"


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        (b"\xff{}", "the request body is not UTF-8"),
        ('{"a": 1}'.encode("utf-16"), "the request body is not UTF-8"),
        (
            b'{"a": NaN}',
            "the request body is not strict JSON (NaN is not JSON)",
        ),
        (b"{", "the request body is not strict JSON (Expecting property name enclosed in double quotes)"),
        (b'{"a": -Infinity}', "the request body is not strict JSON (-Infinity is not JSON)"),
        (b'{"a": 1e400}', "the request body is not strict JSON (1e400 is out of range)"),
        (b"\xef\xbb\xbf{}", "the request body is not strict JSON (Expecting value)"),
        (
            b"[" * 100_000 + b"]" * 100_000,
            "the request body is not strict JSON"
            " (maximum recursion depth exceeded while decoding a JSON array from a unicode stri)",
        ),
        (b"[1]", "the request body is not a JSON object"),
        (b'"s"', "the request body is not a JSON object"),
    ],
)
def test_a_body_that_is_not_a_strict_utf8_json_object_is_a_body_refusal(body: bytes, detail: str) -> None:
    assert decode_body(body) == (None, BodyRefusal("body", "body", detail))


def test_floats_and_long_keys_decode() -> None:
    assert decode_body(b'{"temperature": 0.5, "n": 1e3}') == ({"temperature": 0.5, "n": 1000.0}, None)


def test_a_duplicate_key_is_named_after_its_first_use() -> None:
    _, found = decode_body(b'{"b": 1, "a": 1, "c": 1, "a": 2}')
    assert found is not None
    assert found.detail == "Duplicate object key a"


def test_a_refusal_message_is_its_path_then_its_detail() -> None:
    assert (
        BodyRefusal("field", "body.x", "is not an allowed field").message()
        == "body.x: is not an allowed field"
    )


# --- Messages ---------------------------------------------------------------------------------


def test_what_claude_code_sends_is_allowed() -> None:
    body = ask(
        [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}],
        system=[{"type": "text", "text": "sys"}],
        tools=[{"name": "Bash", "description": "d", "input_schema": {"type": "object"}}],
        metadata={"user_id": "u"},
        stream=True,
        thinking={"type": "enabled", "budget_tokens": 10},
        context_management={"edits": []},
    )
    body["messages"] += [
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "t", "signature": "s"},
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"url": URL}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "out"},
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [{"type": "text", "text": "x"}, {"type": "image", "source": B64}],
                },
            ],
        },
    ]
    assert check_request(MESSAGES, body) is None


@pytest.mark.parametrize(
    "name",
    ["stop_sequences", "temperature", "top_k", "top_p", "tool_choice", "output_config", "redacted_thinking"],
)
def test_the_other_documented_messages_fields_are_allowed(name: str) -> None:
    body = ask([{"type": name, "data": "x"}]) if name == "redacted_thinking" else ask("hi", **{name: 1})
    assert check_request(MESSAGES, body) is None


@pytest.mark.parametrize(
    ("source", "where"),
    [
        ({"type": "url", "url": URL}, "source.type"),
        ({"type": "file", "file_id": "f"}, "source.type"),
        ({"type": "content", "content": []}, "source.type"),
        ("https://x", "source.type"),
        ({**B64, "url": URL}, "source.url"),
        ({"type": "text", "media_type": "text/plain", "data": "x", "file_id": "f"}, "source.file_id"),
    ],
)
def test_only_base64_and_text_sources_with_their_own_fields_are_allowed(source: Any, where: str) -> None:
    expected_kind = "field" if where != "source.type" else "content"
    for block in ("image", "document"):
        assert refusal(MESSAGES, ask([{"type": block, "source": source}])) == (
            expected_kind,
            f"body.messages[0].content[0].{where}",
        )


def test_text_and_base64_sources_are_allowed() -> None:
    text = {"type": "text", "media_type": "text/plain", "data": "x"}
    assert (
        check_request(MESSAGES, ask([{"type": "document", "source": text}, {"type": "image", "source": B64}]))
        is None
    )


@pytest.mark.parametrize(
    "kind", ["server_tool_use", "web_search_tool_result", "container_upload", "search_result", None]
)
def test_a_block_type_not_on_the_list_is_refused(kind: str | None) -> None:
    blocks = [{"type": "text", "text": "ok"}, {"type": kind} if kind else {"text": "no type"}]
    assert refusal(MESSAGES, ask(blocks)) == ("content", "body.messages[0].content[1].type")


def test_a_block_that_is_not_an_object_is_refused() -> None:
    assert refusal(MESSAGES, ask(["text"])) == ("content", "body.messages[0].content[0].type")


def test_a_tool_result_holds_only_text_image_and_document_blocks_with_allowed_sources() -> None:
    nested = {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "tool_use", "id": "x"}]}
    assert refusal(MESSAGES, ask([nested])) == ("content", "body.messages[0].content[0].content[0].type")
    url_image = {"type": "image", "source": {"type": "url", "url": URL}}
    deeper = {
        "type": "tool_result",
        "tool_use_id": "t",
        "content": [{"type": "text", "text": "x"}, url_image],
    }
    assert refusal(MESSAGES, ask([deeper])) == (
        "content",
        "body.messages[0].content[0].content[1].source.type",
    )


def test_content_of_other_blocks_is_not_read_as_blocks() -> None:
    thinking = {"type": "text", "text": "x", "content": [{"type": "server_tool_use"}]}
    assert check_request(MESSAGES, ask([thinking])) is None


def test_every_message_is_checked() -> None:
    body = ask("hi")
    body["messages"] += [{"role": "assistant", "content": "ok"}, {"role": "user", "content": [{"type": "x"}]}]
    assert refusal(MESSAGES, body) == ("content", "body.messages[2].content[0].type")


def test_the_system_prompt_is_a_string_or_text_blocks() -> None:
    assert check_request(MESSAGES, ask("hi", system="be brief")) is None
    assert refusal(MESSAGES, ask("hi", system=[{"type": "text", "text": "a"}, {"type": "image"}])) == (
        "content",
        "body.system[1].type",
    )
    assert refusal(MESSAGES, ask("hi", system=["a"])) == ("content", "body.system[0].type")


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({"mcp_servers": []}, ("server-tool", "body.mcp_servers")),
        ({"container": "c"}, ("server-tool", "body.container")),
        ({"service_tier": "auto"}, ("field", "body.service_tier")),
        ({"zzz": 1}, ("field", "body.zzz")),
        ({"tools": [{"type": "web_search_20250305", "name": "w"}]}, ("server-tool", "body.tools[0].type")),
        ({"tools": [{"name": "Bash"}, "web_search"]}, ("server-tool", "body.tools[1].type")),
        ({"tools": {"type": "web_fetch_20250910"}}, ("server-tool", "body.tools[0].type")),
    ],
)
def test_server_side_and_unknown_top_level_fields_are_refused(
    extra: dict[str, Any], expected: tuple[str, str]
) -> None:
    assert refusal(MESSAGES, ask("hi", **extra)) == expected


def test_custom_tools_are_allowed() -> None:
    assert check_request(MESSAGES, ask("hi", tools=[{"type": "custom", "name": "x"}, {"name": "y"}])) is None


def test_the_first_refused_field_is_named_in_name_order() -> None:
    assert refusal(MESSAGES, ask("hi", zb=1, za=1)) == ("field", "body.za")


def test_a_server_tool_detail_names_its_type_printably() -> None:
    found = check_request(MESSAGES, ask("hi", tools=[{"type": "web\u00e9search"}]))
    assert found is not None
    assert found.detail == "server tool web?search would reach the network"


# --- Responses --------------------------------------------------------------------------------


def test_what_codex_sends_is_allowed() -> None:
    items = user({"type": "input_text", "text": "hi"}) + [
        {
            "type": "function_call",
            "id": "f",
            "call_id": "c",
            "name": "exec",
            "arguments": "{}",
            "status": "completed",
        },
        {"type": "function_call_output", "call_id": "c", "output": "done"},
        {"type": "custom_tool_call", "call_id": "d", "name": "apply_patch", "input": "*** Begin Patch"},
        {"type": "custom_tool_call_output", "call_id": "d", "output": [{"type": "input_text", "text": "ok"}]},
        {
            "type": "reasoning",
            "summary": [],
            "encrypted_content": "e",
            "content": [{"type": "reasoning_text"}],
        },
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "x", "annotations": []}],
        },
        {"role": "user", "content": "easy message"},
    ]
    body = respond(
        items,
        instructions="i",
        tools=[{"type": "function", "name": "f"}, {"type": "custom", "name": "c"}, {"type": "tool_search"}],
        tool_choice="auto",
        parallel_tool_calls=True,
        reasoning={"effort": "medium"},
        store=False,
        stream=True,
        include=["reasoning.encrypted_content"],
        prompt_cache_key="k",
        text={"verbosity": "low"},
        client_metadata={"x": "y"},
        max_output_tokens=9,
    )
    assert check_request(RESPONSES, body) is None


def test_a_plain_string_input_is_allowed() -> None:
    assert check_request(RESPONSES, respond("hi")) is None


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({"background": True}, ("field", "body.background")),
        ({"store": True}, ("field", "body.store")),
        ({"store": None}, ("field", "body.store")),
        ({"previous_response_id": "r"}, ("field", "body.previous_response_id")),
        ({"prompt": {"id": "p"}}, ("field", "body.prompt")),
        ({"conversation": "c"}, ("field", "body.conversation")),
        ({"service_tier": "priority"}, ("field", "body.service_tier")),
        (
            {"include": ["reasoning.encrypted_content", "file_search_call.results"]},
            ("field", "body.include[1]"),
        ),
        ({"include": "message.input_image.image_url"}, ("field", "body.include[0]")),
        ({"tools": [{"type": "function"}, {"type": "web_search"}]}, ("server-tool", "body.tools[1].type")),
        ({"tools": [{"type": "mcp", "server_url": URL}]}, ("server-tool", "body.tools[0].type")),
    ],
)
def test_provider_state_and_unknown_responses_fields_are_refused(
    extra: dict[str, Any], expected: tuple[str, str]
) -> None:
    assert refusal(RESPONSES, respond("hi", **extra)) == expected


def test_store_false_names_the_only_value_it_may_take() -> None:
    found = check_request(RESPONSES, respond("hi", store=True))
    assert found is not None
    assert found.detail == "may only be false"


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        ({"type": "item_reference", "id": "x"}, ("content", "body.input[0].type")),
        ({"type": "web_search_call"}, ("content", "body.input[0].type")),
        ("text", ("content", "body.input[0].type")),
        (
            {"type": "function_call", "call_id": "c", "name": "n", "arguments": "{}", "x": 1},
            ("field", "body.input[0].x"),
        ),
        (
            {"role": "user", "content": "x", "previous_response_id": "r"},
            ("field", "body.input[0].previous_response_id"),
        ),
    ],
)
def test_an_input_item_type_or_field_not_on_the_list_is_refused(item: Any, expected: tuple[str, str]) -> None:
    assert refusal(RESPONSES, respond([item])) == expected


@pytest.mark.parametrize(
    ("part", "expected"),
    [
        ({"type": "input_image", "image_url": URL}, ("content", "body.input[0].content[0].image_url")),
        ({"type": "input_image", "image_url": 7}, ("content", "body.input[0].content[0].image_url")),
        ({"type": "input_image", "file_id": "f"}, ("field", "body.input[0].content[0].file_id")),
        ({"type": "input_file", "file_url": URL}, ("field", "body.input[0].content[0].file_url")),
        ({"type": "input_file", "file_id": "f"}, ("field", "body.input[0].content[0].file_id")),
        ({"type": "input_audio"}, ("content", "body.input[0].content[0].type")),
        ("text", ("content", "body.input[0].content[0].type")),
    ],
)
def test_a_content_part_that_would_fetch_or_is_not_listed_is_refused(
    part: Any, expected: tuple[str, str]
) -> None:
    assert refusal(RESPONSES, respond(user({"type": "input_text", "text": "a"}, part))) == (
        expected[0],
        expected[1].replace("content[0]", "content[1]"),
    )


def test_inline_images_and_files_are_allowed() -> None:
    parts = (
        {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "low"},
        {"type": "input_file", "file_data": "AAAA", "filename": "a.pdf"},
        {"type": "refusal", "refusal": "no"},
        {"type": "input_image"},
    )
    assert check_request(RESPONSES, respond(user(*parts))) is None


def test_a_tool_output_given_as_parts_is_checked_like_message_content() -> None:
    item = {
        "type": "function_call_output",
        "call_id": "c",
        "output": [{"type": "input_image", "image_url": URL}],
    }
    assert refusal(RESPONSES, respond([item])) == ("content", "body.input[0].output[0].image_url")
    shell = {
        "type": "local_shell_call_output",
        "call_id": "c",
        "output": [{"type": "input_file", "file_id": "f"}],
    }
    assert refusal(RESPONSES, respond([shell])) == ("field", "body.input[0].output[0].file_id")


def test_a_message_output_field_and_reasoning_content_are_not_read_as_parts() -> None:
    reasoning = {"type": "reasoning", "summary": [], "content": [{"type": "anything"}]}
    assert check_request(RESPONSES, respond([reasoning])) is None
    bad = {
        "type": "reasoning",
        "summary": [],
        "content": "x",
        "output": [{"type": "input_image", "image_url": URL}],
    }
    assert refusal(RESPONSES, respond([bad])) == ("field", "body.input[0].output")


def test_every_input_item_is_checked() -> None:
    items = [
        *user({"type": "input_text", "text": "a"}),
        {"type": "message", "role": "user", "content": [{"type": "x"}]},
    ]
    assert refusal(RESPONSES, respond(items)) == ("content", "body.input[1].content[0].type")


def test_the_rules_differ_per_protocol() -> None:
    assert refusal(MESSAGES, respond("hi")) == ("field", "body.input")
    assert refusal(RESPONSES, ask("hi")) == ("field", "body.max_tokens")


# --- what a refusal says (the row keeps it) ---------------------------------------------------


@pytest.mark.parametrize(
    ("rules", "body", "detail"),
    [
        (MESSAGES, ask("hi", mcp_servers=[]), "would make the provider reach the network"),
        (MESSAGES, ask("hi", zzz=1), "is not an allowed field"),
        (RESPONSES, respond("hi", store=True), "may only be false"),
        (
            RESPONSES,
            respond("hi", include=["file_search_call.results"]),
            "file_search_call.results is not allowed",
        ),
        (
            MESSAGES,
            ask("hi", tools=[{"type": "web_search"}]),
            "server tool web_search would reach the network",
        ),
        (MESSAGES, ask("hi", system=[{"type": "image"}]), "only text blocks are allowed"),
        (MESSAGES, ask([{"type": "server_tool_use"}]), "block type server_tool_use is not allowed"),
        (MESSAGES, ask([{"type": "image", "source": {"type": "url"}}]), "source type url is not allowed"),
        (MESSAGES, ask([{"type": "image", "source": {**B64, "url": URL}}]), "is not an allowed field"),
        (RESPONSES, respond([{"type": "item_reference"}]), "input item type item_reference is not allowed"),
        (RESPONSES, respond(user({"type": "input_audio"})), "content part type input_audio is not allowed"),
        (RESPONSES, respond(user({"type": "input_image", "image_url": URL})), "only data: URLs are allowed"),
        (RESPONSES, respond(user({"type": "input_file", "file_url": URL})), "is not an allowed field"),
    ],
)
def test_each_refusal_says_why_in_words(rules: Any, body: dict[str, Any], detail: str) -> None:
    found = check_request(rules, body)
    assert found is not None
    assert found.detail == detail


def test_a_shown_value_is_bounded_to_80_printable_characters() -> None:
    found = check_request(MESSAGES, ask("hi", tools=[{"type": "x" * 100}]))
    assert found is not None
    assert found.detail == f"server tool {'x' * 80} would reach the network"


def test_the_first_of_several_extra_fields_is_named_in_name_order() -> None:
    part = {"type": "input_file", "zz": 1, "file_id": "f", "aa": 2}
    assert refusal(RESPONSES, respond(user(part))) == ("field", "body.input[0].content[0].aa")


def test_an_easy_message_and_every_tool_output_kind_have_their_parts_checked() -> None:
    bad = [{"type": "input_image", "image_url": URL}]
    easy = {"role": "user", "content": bad}
    assert refusal(RESPONSES, respond([easy])) == ("content", "body.input[0].content[0].image_url")
    for kind in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
        item = {"type": kind, "call_id": "c", "output": bad}
        assert refusal(RESPONSES, respond([item])) == ("content", "body.input[0].output[0].image_url")


def test_an_item_type_that_is_not_a_string_is_refused() -> None:
    assert refusal(RESPONSES, respond([{"type": ["message"]}])) == ("content", "body.input[0].type")
    assert refusal(RESPONSES, respond([{"type": None}])) == ("content", "body.input[0].type")


def test_a_source_or_part_that_is_not_an_object_or_has_no_string_type_is_refused() -> None:
    assert refusal(MESSAGES, ask([{"type": "image", "source": {"type": ["base64"]}}])) == (
        "content",
        "body.messages[0].content[0].source.type",
    )
    assert refusal(RESPONSES, respond(user({"type": ["input_text"]}))) == (
        "content",
        "body.input[0].content[0].type",
    )


def test_a_data_url_must_start_the_image_url() -> None:
    found = refusal(RESPONSES, respond(user({"type": "input_image", "image_url": "https://x/?data:"})))
    assert found == ("content", "body.input[0].content[0].image_url")


def test_absent_lists_hold_nothing_and_a_single_value_is_one_item() -> None:
    assert check_request(MESSAGES, {"model": "m", "max_tokens": 1}) is None
    assert check_request(RESPONSES, {"model": "m"}) is None
    assert refusal(MESSAGES, ask({"type": "server_tool_use"})) == (
        "content",
        "body.messages[0].content[0].type",
    )
    assert refusal(RESPONSES, respond({"type": "item_reference"})) == ("content", "body.input[0].type")
    assert refusal(MESSAGES, ask("hi", system={"type": "image"})) == ("content", "body.system[0].type")
    assert refusal(RESPONSES, respond("hi", include="x")) == ("field", "body.include[0]")


def test_a_message_that_is_not_an_object_carries_no_blocks() -> None:
    body = {"model": "m", "max_tokens": 1, "messages": ["hi", {"role": "user"}]}
    assert check_request(MESSAGES, body) is None


def test_a_single_block_given_as_an_object_is_checked_as_one_block() -> None:
    assert check_request(MESSAGES, ask("hi", system={"type": "text", "text": "x"})) is None
    assert check_request(MESSAGES, ask({"type": "text", "text": "x"})) is None


def test_a_tool_that_is_not_an_object_is_shown_as_a_question_mark() -> None:
    found = check_request(MESSAGES, ask("hi", tools=["web_search"]))
    assert found == BodyRefusal("server-tool", "body.tools[0].type", "server tool ? would reach the network")


def test_an_input_item_that_is_not_an_object_says_so() -> None:
    found = check_request(RESPONSES, respond(["text"]))
    assert found == BodyRefusal("content", "body.input[0].type", "an input item must be an object")
