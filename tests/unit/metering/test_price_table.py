"""The price tables: every built-in entry traceable, ``--prices`` overriding, a bad file named exactly."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from wfbench.adapters.gateway.price_table import PROVIDERS, builtin_prices, load_prices, parse_prices
from wfbench.domain.errors import InputError
from wfbench.domain.metering.prices import ModelPrices, PriceTable

HEADER = "provider,model,input,cache_write,cache_read,output,source,as_of\n"
#: The models wfbench's docs, demo and presets pin (docs/agents.md, docs/real-api.md).
PINNED = (
    "claude-sonnet-4-5",
    "claude-opus-4-1",
    "claude-haiku-4-5",
    "gpt-5.5",
    "gpt-5.1-codex",
    "gemini-2.5-pro",
)


def test_every_pinned_model_has_a_price_from_its_providers_table() -> None:
    table = builtin_prices()
    providers = {entry.provider for entry in table.entries}
    assert providers == set(PROVIDERS)
    for model in PINNED:
        entry = table.entry_for(model)
        assert entry is not None, model
        assert entry.origin == f"{entry.provider}.csv"


def test_every_built_in_price_names_its_source_and_the_day_it_was_read() -> None:
    for entry in builtin_prices().entries:
        assert entry.source.startswith("https://"), entry
        assert datetime.date.fromisoformat(entry.as_of) <= datetime.date(2026, 12, 31)
        prices = entry.prices
        assert prices.cache_read <= prices.input <= prices.output, entry  # a typo shows here


def test_a_user_file_overrides_the_models_it_names_and_adds_the_rest(
    tmp_path: Path,
) -> None:
    path = tmp_path / "prices.csv"
    path.write_text(
        HEADER
        + "# our negotiated price\n"
        + "openai,gpt-5.5,4,4,0.4,24,contract 2026-11,2026-11-01\n"
        + "\n"
        + "acme,acme-coder-1,1,1,0.1,2,https://acme.example/pricing,2026-10-01\n"
    )
    table = load_prices(str(path))
    assert table.prices_for("gpt-5.5") == ModelPrices(4.0, 4.0, 0.4, 24.0)
    assert table.prices_for("acme-coder-1") == ModelPrices(1.0, 1.0, 0.1, 2.0)
    assert table.prices_for("claude-sonnet-4-5") == builtin_prices().prices_for("claude-sonnet-4-5")
    assert table.entry_for("gpt-5.5").origin == str(path)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("text", "line", "field", "reason"),
    [
        (HEADER + "openai,gpt-x,1,1,0.1,abc,src,2026-01-01\n", "line 2", "output", "'abc' is not a price"),
        (HEADER + "openai,gpt-x,1,1,-0.1,2,src,2026-01-01\n", "line 2", "cache_read", "is not a price"),
        (HEADER + "openai,gpt-x,1,1,0.1,nan,src,2026-01-01\n", "line 2", "output", "is not a price"),
        (HEADER + "openai,gpt-x,1,1,0.1,2,src,01/02/2026\n", "line 2", "as_of", "not a date"),
        (HEADER + "openai,gpt-x,1,1,0.1,2,,2026-01-01\n", "line 2", "source", "is empty"),
        (
            HEADER + "#\nopenai,gpt-x,1,1,0.1,2,s,2026-01-01\nopenai,GPT-X,1,1,0.1,2,s,2026-01-01\n",
            "line 4",
            "model",
            "priced twice (first on line 3)",
        ),
        ("provider,model,input,output,source,as_of\n", "line 1", "header", "missing column 'cache_write'"),
        (HEADER.replace("as_of", "date"), "line 1", "header", "unknown column 'date'"),
        ("# only a comment\n", "", "", "no header line"),
    ],
)
def test_a_bad_price_file_is_one_message_naming_the_file_line_and_field(
    text: str, line: str, field: str, reason: str
) -> None:
    with pytest.raises(InputError) as raised:
        parse_prices(text, source="mine.csv")
    error = raised.value
    assert (error.source, error.locator, error.field) == ("mine.csv", line, field)
    assert reason in error.reason
    assert error.exit_code == 2


def test_a_missing_price_file_is_named() -> None:
    with pytest.raises(InputError, match="cannot be read") as raised:
        load_prices("/nonexistent/prices.csv")
    assert raised.value.source == "/nonexistent/prices.csv"


def test_unpriced_lists_each_unknown_model_once_in_order() -> None:
    table = PriceTable()
    assert table.unpriced(["b", None, "a", "b", ""]) == ("a", "b")
    assert builtin_prices().unpriced(["gpt-5.5", "claude-sonnet-4-5-20250929", "gpt-9"]) == ("gpt-9",)
