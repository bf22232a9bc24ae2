"""The provider script loader: the issue's format loads, and every bad field is named."""

from __future__ import annotations

import pytest

from wfbench.adapters.provider.script import (
    DEFAULT_TURN,
    ProviderScript,
    ScriptedUsage,
    ToolCall,
    Turn,
)
from wfbench.domain.errors import InputError

ISSUE_EXAMPLE = """
default: {say: "Nothing is scripted for this prompt."}
conversations:
  - when: ["Task fix-median", "Use the plan skill"]
    turns:
      - say: "Planning."
        tools: [{name: Skill, input: {skill: plan}}]
        usage: {input_tokens: 1200, output_tokens: 80, cache_read_input_tokens: 44000}
      - tools: [{name: Write, input: {file_path: "{workspace}/calc/stats.py", content: "..."}}]
      - say: "Done."
  - when: ["Task flaky"]
    turns: [{status: 529}]
"""


def load(text: str) -> ProviderScript:
    return ProviderScript.from_yaml(text, source="script.yaml")


def refusal(text: str) -> InputError:
    with pytest.raises(InputError) as caught:
        load(text)
    return caught.value


def test_the_issue_example_loads_into_rules_and_turns() -> None:
    """The example script of the issue loads with its two rules, turns, tools and usage."""
    script = load(ISSUE_EXAMPLE)
    first, flaky = script.conversations
    assert first.when == ("Task fix-median", "Use the plan skill")
    assert first.turns[0] == Turn(
        say="Planning.",
        tools=(ToolCall("Skill", {"skill": "plan"}),),
        usage=ScriptedUsage(input_tokens=1200, output_tokens=80, cache_read_input_tokens=44000),
    )
    assert first.turns[1].tools[0].input["file_path"] == "{workspace}/calc/stats.py"
    assert first.turns[2].say == "Done."
    assert flaky.turns == (Turn(status=529),)
    assert script.default.say == "Nothing is scripted for this prompt."
    assert script.source == "script.yaml"


def test_unscripted_usage_fields_stay_none_and_are_left_out_of_present() -> None:
    """A usage field nobody scripted is None and absent from the wire mapping; a 0 stays a 0."""
    usage = (
        load(
            "conversations: [{when: [a], turns: [{usage:"
            " {input_tokens: 5, cache_creation_input_tokens: 0}}]}]"
        )
        .conversations[0]
        .turns[0]
        .usage
    )
    assert usage.output_tokens is None
    assert usage.cache_read_input_tokens is None
    assert usage.present() == {"input_tokens": 5, "cache_creation_input_tokens": 0}


def test_the_stop_reason_is_tool_use_with_tools_end_turn_without_and_a_scripted_one_wins() -> None:
    """The effective stop reason follows the tools unless the script names one."""
    assert Turn(tools=(ToolCall("Read"),)).effective_stop_reason == "tool_use"
    assert Turn(say="hi").effective_stop_reason == "end_turn"
    assert Turn(say="hi", stop_reason="max_tokens").effective_stop_reason == "max_tokens"


def test_a_rule_matches_only_when_every_when_string_occurs() -> None:
    """All `when` strings must occur; one missing string is no match."""
    rule = load(ISSUE_EXAMPLE).conversations[0]
    assert rule.matches("Task fix-median\nUse the plan skill please")
    assert not rule.matches("Task fix-median only")


def test_an_empty_script_gets_the_default_reply_and_no_rules() -> None:
    """An empty file is a script with no rules and the built-in default."""
    script = load("")
    assert script.conversations == ()
    assert script.default == DEFAULT_TURN


def test_fault_injection_fields_load() -> None:
    """truncate_after_events, stall_s, malformed, reset and raw_usage are accepted as documented."""
    turn = (
        load(
            "conversations: [{when: [a], turns: [{say: x, truncate_after_events: 3, stall_s: 1.5,"
            " malformed: true, reset: false, raw_usage: {input_tokens: -5}}]}]"
        )
        .conversations[0]
        .turns[0]
    )
    assert (turn.truncate_after_events, turn.stall_s, turn.malformed, turn.reset) == (3, 1.5, True, False)
    assert turn.raw_usage == {"input_tokens": -5}


BAD_SCRIPTS = [
    ("[1, 2]", "", ""),
    ("surprise: 1", "", "surprise"),
    ("conversations: {when: [a]}", "", "conversations"),
    ("conversations: [[a]]", "conversations[0]", ""),
    ("conversations: [{when: [a], turns: [{say: x}], extra: 1}]", "conversations[0]", "extra"),
    ("conversations: [{turns: [{say: x}]}]", "conversations[0]", "when"),
    ("conversations: [{when: [], turns: [{say: x}]}]", "conversations[0]", "when"),
    ("conversations: [{when: [''], turns: [{say: x}]}]", "conversations[0]", "when"),
    ("conversations: [{when: [a]}]", "conversations[0]", "turns"),
    ("conversations: [{when: [a], turns: []}]", "conversations[0]", "turns"),
    ("conversations: [{when: [a], turns: [hello]}]", "conversations[0].turns[0]", ""),
    ("conversations: [{when: [a], turns: [{say: x}, {sya: y}]}]", "conversations[0].turns[1]", "sya"),
    ("conversations: [{when: [a], turns: [{say: 3}]}]", "conversations[0].turns[0]", "say"),
    ("conversations: [{when: [a], turns: [{status: 200}]}]", "conversations[0].turns[0]", "status"),
    ("conversations: [{when: [a], turns: [{status: '529'}]}]", "conversations[0].turns[0]", "status"),
    ("conversations: [{when: [a], turns: [{status: true}]}]", "conversations[0].turns[0]", "status"),
    (
        "conversations: [{when: [a], turns: [{stop_reason: done}]}]",
        "conversations[0].turns[0]",
        "stop_reason",
    ),
    (
        "conversations: [{when: [a], turns: [{truncate_after_events: -1}]}]",
        "conversations[0].turns[0]",
        "truncate_after_events",
    ),
    ("conversations: [{when: [a], turns: [{stall_s: 601}]}]", "conversations[0].turns[0]", "stall_s"),
    ("conversations: [{when: [a], turns: [{stall_s: soon}]}]", "conversations[0].turns[0]", "stall_s"),
    ("conversations: [{when: [a], turns: [{malformed: 1}]}]", "conversations[0].turns[0]", "malformed"),
    ("conversations: [{when: [a], turns: [{reset: yes please}]}]", "conversations[0].turns[0]", "reset"),
    ("conversations: [{when: [a], turns: [{tools: {name: Write}}]}]", "conversations[0].turns[0]", "tools"),
    ("conversations: [{when: [a], turns: [{tools: [Write]}]}]", "conversations[0].turns[0]", "tools[0]"),
    (
        "conversations: [{when: [a], turns: [{tools: [{input: {}}]}]}]",
        "conversations[0].turns[0]",
        "tools[0].name",
    ),
    (
        "conversations: [{when: [a], turns: [{tools: [{name: W, input: [1]}]}]}]",
        "conversations[0].turns[0]",
        "tools[0].input",
    ),
    (
        "conversations: [{when: [a], turns: [{tools: [{name: W, args: {}}]}]}]",
        "conversations[0].turns[0]",
        "tools[0].args",
    ),
    ("conversations: [{when: [a], turns: [{usage: 5}]}]", "conversations[0].turns[0]", "usage"),
    (
        "conversations: [{when: [a], turns: [{usage: {input_tokens: -1}}]}]",
        "conversations[0].turns[0]",
        "usage.input_tokens",
    ),
    (
        "conversations: [{when: [a], turns: [{usage: {output_tokens: '80'}}]}]",
        "conversations[0].turns[0]",
        "usage.output_tokens",
    ),
    (
        "conversations: [{when: [a], turns: [{usage: {cache_read_input_tokens: true}}]}]",
        "conversations[0].turns[0]",
        "usage.cache_read_input_tokens",
    ),
    (
        "conversations: [{when: [a], turns: [{usage: {cache_creation_input_tokens: null}}]}]",
        "conversations[0].turns[0]",
        "usage.cache_creation_input_tokens",
    ),
    (
        "conversations: [{when: [a], turns: [{usage: {cache_read_input_tokens: 1.5}}]}]",
        "conversations[0].turns[0]",
        "usage.cache_read_input_tokens",
    ),
    (
        "conversations: [{when: [a], turns: [{usage: {cached_tokens: 1}}]}]",
        "conversations[0].turns[0]",
        "usage.cached_tokens",
    ),
    (
        "conversations: [{when: [a], turns: [{usage: {}, raw_usage: {}}]}]",
        "conversations[0].turns[0]",
        "raw_usage",
    ),
    ("default: {say: x, bogus: 1}", "default", "bogus"),
    ("default: [say]", "default", ""),
]


@pytest.mark.parametrize(("text", "locator", "field"), BAD_SCRIPTS)
def test_a_bad_script_is_refused_naming_the_file_the_rule_and_turn_and_the_field(
    text: str, locator: str, field: str
) -> None:
    """Each malformed script raises one InputError that names file, rule/turn and field."""
    error = refusal(text)
    assert error.source == "script.yaml"
    assert error.locator == locator
    assert error.field == field
    assert error.exit_code == 2
    assert str(error).startswith("script.yaml: ")


def test_text_that_is_not_yaml_is_refused_naming_the_file() -> None:
    """A YAML syntax error is an InputError naming the file."""
    error = refusal("conversations: [{when: [a]")
    assert error.source == "script.yaml"
    assert "YAML" in error.reason


def test_a_single_when_string_is_accepted_as_a_list_of_one() -> None:
    """`when: text` is shorthand for `when: [text]`."""
    assert load("conversations: [{when: Task a, turns: [{say: x}]}]").conversations[0].when == ("Task a",)


def test_a_burst_is_an_error_turn_for_the_first_requests_of_its_rule() -> None:
    """`burst: {status, requests}` loads as the error turn and its count; absent, the rule has none."""
    script = load(
        "conversations:\n"
        "  - {when: [a], burst: {status: 529, requests: 2}, turns: [{say: ok}]}\n"
        "  - {when: [b], turns: [{say: ok}]}\n"
    )

    first, second = script.conversations
    assert (first.burst, first.burst_requests) == (Turn(status=529), 2)
    assert (second.burst, second.burst_requests) == (None, 0)


@pytest.mark.parametrize(
    ("burst", "field", "reason"),
    [
        ("{status: 200, requests: 1}", "status", "must be an HTTP error code between 400 and 599"),
        ("{status: 529, requests: 0}", "requests", "must be a positive integer"),
        ("{status: 529, requests: true}", "requests", "must be a positive integer"),
        ("{status: 529, requests: 1, stall_s: 3}", "stall_s", "unknown key"),
    ],
)
def test_a_bad_burst_is_refused_naming_its_field(burst: str, field: str, reason: str) -> None:
    error = refusal(f"conversations:\n  - {{when: [a], burst: {burst}, turns: [{{say: ok}}]}}\n")

    assert error.field == field
    assert reason in error.reason
    assert error.locator == "conversations[0].burst"
