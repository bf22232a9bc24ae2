"""Seeded usage jitter: one factor per cell and rule, reproducible, omitted fields stay omitted."""

from __future__ import annotations

import pytest

from wfbench.adapters.provider.jitter import CELL_HEADER, UsageJitter
from wfbench.adapters.provider.records import select_turn
from wfbench.adapters.provider.script import Conversation, ProviderScript
from wfbench.adapters.provider.wire import Protocol
from wfbench.domain.errors import InputError

SCRIPT = """
jitter: {seed: 7, usage: 0.2}
conversations:
  - when: ["Task a"]
    turns:
      - say: "one"
        tools: [{name: Read, input: {file_path: x}}]
        usage: {input_tokens: 1000, output_tokens: 0}
      - {say: "two", usage: {input_tokens: 2000, cache_read_input_tokens: 10000}}
  - when: ["Task b"]
    turns: [{say: "b", usage: {input_tokens: 1000, output_tokens: 0}}]
"""


def _usage(script: ProviderScript, text: str, cell: str | None, turn: int = 0) -> dict[str, int]:
    messages: list[dict[str, object]] = [{"role": "user", "content": text}]
    for _ in range(turn):
        messages += [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "go on"}]
    headers = {} if cell is None else {CELL_HEADER: cell}
    body = {"model": "m", "max_tokens": 10, "messages": messages}
    return select_turn(script, body, Protocol.ANTHROPIC, headers).turn.usage.present()


@pytest.fixture(scope="module")
def script() -> ProviderScript:
    return ProviderScript.from_yaml(SCRIPT, source="inline")


def test_a_cell_gets_the_same_usage_every_time_and_another_cell_other_usage(script):
    first = _usage(script, "Task a", "fix-median-workflow-run0")
    assert first == _usage(script, "Task a", "fix-median-workflow-run0")
    runs = {_usage(script, "Task a", f"fix-median-workflow-run{run}")["input_tokens"] for run in range(3)}
    assert len(runs) == 3
    assert all(800 <= tokens <= 1200 for tokens in runs)


def test_every_turn_of_a_conversation_is_scaled_by_one_factor_and_omitted_fields_stay_omitted(script):
    first = _usage(script, "Task a", "c", turn=0)
    later = _usage(script, "Task a", "c", turn=1)
    factor = UsageJitter(seed=7, usage=0.2).factor("c", script.conversations[0].jitter_key)
    assert first == {"input_tokens": round(1000 * factor), "output_tokens": 0}  # a scripted 0 stays 0
    assert later == {"input_tokens": round(2000 * factor), "cache_read_input_tokens": round(10000 * factor)}


def test_the_factor_depends_on_the_seed_the_cell_and_the_rule_only():
    jitter = UsageJitter(seed=7, usage=0.2)
    assert jitter.factor("c", "a") == UsageJitter(seed=7, usage=0.2).factor("c", "a")
    assert len({jitter.factor("c", "a"), jitter.factor("c", "b"), jitter.factor("d", "a")}) == 3
    assert UsageJitter(seed=8, usage=0.2).factor("c", "a") != jitter.factor("c", "a")
    assert UsageJitter(seed=7, usage=0.0).factor("c", "a") == 1.0


def test_a_rule_inserted_before_another_leaves_the_others_usage_as_it_was(script):
    """The draw is keyed on what a rule matches, not on its index (an edit re-drew the demo twice)."""
    inserted = ProviderScript.from_yaml(
        SCRIPT.replace("conversations:\n", 'conversations:\n  - when: ["Task c"]\n    turns: [{say: c}]\n'),
        source="inline",
    )
    for cell in ("c0", "c1", "c2"):
        assert _usage(inserted, "Task b", cell) == _usage(script, "Task b", cell)
        assert _usage(inserted, "Task a", cell, turn=1) == _usage(script, "Task a", cell, turn=1)


def test_rules_that_match_differently_draw_differently():
    def key(**fields: object) -> str:
        return Conversation(**{"when": ("x",), "turns": (), **fields}).jitter_key  # type: ignore[arg-type]

    keys = {key(), key(when=("x", "y")), key(when=("xy",)), key(protocol="anthropic"), key(offers=("Write",))}
    assert len(keys) == 5
    assert key(turns=(), jitter=False) == key()


def test_without_a_cell_header_every_conversation_of_a_rule_gets_the_same_usage(script):
    assert _usage(script, "Task a", None) == _usage(script, "Task a", None)
    assert _usage(script, "Task a", None) != _usage(script, "Task b", None)


def test_a_script_without_jitter_reports_exactly_what_it_scripts():
    plain = ProviderScript.from_yaml(SCRIPT.replace("jitter: {seed: 7, usage: 0.2}\n", ""), source="inline")
    assert plain.jitter is None
    assert _usage(plain, "Task a", "c") == {"input_tokens": 1000, "output_tokens": 0}


@pytest.mark.parametrize(
    ("raw", "field", "reason"),
    [
        ("jitter: 3", "jitter", "must be a mapping with `seed` and `usage`"),
        ("jitter: {seed: 1, usage: 0.1, spread: 2}", "jitter.spread", "unknown key (allowed: seed, usage)"),
        ("jitter: {seed: 1.5, usage: 0.1}", "jitter.seed", "must be an integer"),
        ("jitter: {seed: true, usage: 0.1}", "jitter.seed", "must be an integer"),
        ("jitter: {seed: 1, usage: 1}", "jitter.usage", "must be a number from 0 up to (not including) 1"),
        ("jitter: {seed: 1, usage: -0.1}", "jitter.usage", "must be a number from 0 up to (not including) 1"),
        ("jitter: {seed: 1, usage: true}", "jitter.usage", "must be a number from 0 up to (not including) 1"),
        ("jitter: {seed: 1}", "jitter.usage", "must be a number from 0 up to (not including) 1"),
    ],
)
def test_a_bad_jitter_is_refused_naming_the_field(raw, field, reason):
    with pytest.raises(InputError) as caught:
        ProviderScript.from_yaml(raw + "\nconversations: []\n", source="s.yaml")
    assert caught.value.field == field
    assert caught.value.reason.startswith(reason)


def test_a_rule_may_opt_out_and_report_its_usage_exactly() -> None:
    exact = ProviderScript.from_yaml(
        SCRIPT.replace('  - when: ["Task b"]\n', '  - when: ["Task b"]\n    jitter: false\n'), source="inline"
    )
    assert _usage(exact, "Task b", "c") == {"input_tokens": 1000, "output_tokens": 0}
    assert _usage(exact, "Task a", "c") != {"input_tokens": 1000, "output_tokens": 0}
    with pytest.raises(InputError) as caught:
        ProviderScript.from_yaml('conversations: [{when: ["x"], turns: [{say: y}], jitter: 1}]', source="s")
    assert (caught.value.field, caught.value.reason) == ("jitter", "must be true or false")
