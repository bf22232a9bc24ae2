"""Wire meters, prices, the agreement rule and spend (pure)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wfbench.adapters.gateway.price_table import builtin_prices
from wfbench.domain.metering.evidence import Spend, usage_disagreement
from wfbench.domain.metering.prices import ModelPrices
from wfbench.domain.metering.wire import (
    MAX_REFUSALS_KEPT,
    WireMeter,
    WireRefusal,
    add_usage,
    subtract_usage,
)
from wfbench.domain.session.records import Usage

fields = st.one_of(st.none(), st.integers(min_value=0, max_value=10**9))
usages = st.builds(Usage, fields, fields, fields, fields)


@given(usages, usages)
def test_adding_usage_is_commutative(one: Usage, other: Usage) -> None:
    assert add_usage(one, other) == add_usage(other, one)


@given(usages, usages, usages)
def test_adding_usage_is_associative(a: Usage, b: Usage, c: Usage) -> None:
    assert add_usage(add_usage(a, b), c) == add_usage(a, add_usage(b, c))


@given(usages, usages)
def test_a_field_is_unknown_only_when_neither_side_knows_it(one: Usage, other: Usage) -> None:
    total = add_usage(one, other)
    for name in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens"):
        known = getattr(one, name) is not None or getattr(other, name) is not None
        assert (getattr(total, name) is not None) == known


@given(usages, usages)
def test_subtracting_undoes_adding_where_the_later_snapshot_knows_the_field(base: Usage, more: Usage) -> None:
    later = add_usage(base, more)
    delta = subtract_usage(later, base)
    for name in ("input_tokens", "output_tokens"):
        if getattr(more, name) is not None:
            assert getattr(delta, name) == getattr(more, name)


def test_a_meter_counts_replies_incomplete_ones_and_unmetered_requests() -> None:
    meter = WireMeter().plus_reply(Usage(10, None, 0, 5)).plus_reply(None, complete=False).plus_unmetered()
    meter = meter.plus_reply(Usage(7, None, None, 1), complete=False)  # cut short: a lower bound
    assert meter.requests == 4
    assert meter.incomplete == 2
    assert meter.usage == Usage(17, None, 0, 6)


def test_only_an_incomplete_reply_the_upstream_cut_counts_as_the_upstreams_cut() -> None:
    meter = WireMeter().plus_reply(Usage(1, None, None, 1), by_upstream=True)  # whole: no cut at all
    meter = meter.plus_reply(None, complete=False)  # the agent hung up early
    meter = meter.plus_reply(Usage(2, None, None, 0), complete=False, by_upstream=True)
    assert (meter.requests, meter.incomplete, meter.cut_upstream) == (3, 2, 1)
    later = meter.plus_reply(None, complete=False, by_upstream=True).plus_reply(None, complete=False)
    assert later.since(meter) == WireMeter(
        requests=2, usage=Usage(0, None, None, 0), incomplete=2, cut_upstream=1
    )


def test_a_session_is_metered_by_the_difference_of_two_snapshots() -> None:
    before = WireMeter().plus_reply(Usage(100, None, None, 20))
    refusal = WireRefusal(403, "model", "claude-opus-4 is not the pinned model")
    after = before.plus_reply(Usage(30, 4, None, 7)).plus_refusal(refusal)
    session = after.since(before)
    assert session == WireMeter(requests=1, usage=Usage(30, 4, None, 7), refused=1, refusals=(refusal,))


def test_only_the_first_refusals_keep_their_detail() -> None:
    meter = WireMeter()
    for index in range(MAX_REFUSALS_KEPT + 5):
        meter = meter.plus_refusal(WireRefusal(404, "route", f"GET /v1/x{index}"))
    assert meter.refused == MAX_REFUSALS_KEPT + 5
    assert len(meter.refusals) == MAX_REFUSALS_KEPT
    assert meter.refusals[-1].detail == f"GET /v1/x{MAX_REFUSALS_KEPT - 1}"
    assert meter.refusals[0].to_mapping() == {"status": 404, "kind": "route", "detail": "GET /v1/x0"}


def test_equal_usage_agrees() -> None:
    assert usage_disagreement(Usage(1, 2, 3, 4), Usage(1, 2, 3, 4)) is None


def test_a_field_the_agent_did_not_report_is_not_compared() -> None:
    assert usage_disagreement(Usage(100, None, None, 20), Usage(100, 5, 7, 20)) is None


def test_a_forged_usage_is_a_disagreement_naming_each_field() -> None:
    detail = usage_disagreement(Usage(1, 0, None, 1), Usage(100, None, None, 20))
    assert detail is not None
    assert "input_tokens 1 reported, 100 at the wire" in detail
    assert "cache_creation_input_tokens 0 reported, not reported at the wire" in detail
    assert "output_tokens 1 reported, 20 at the wire" in detail
    assert "cache_read" not in detail


@given(usages)
def test_agreement_with_itself_always_holds(usage: Usage) -> None:
    assert usage_disagreement(usage, usage) is None


def test_spend_behind_the_agents_back_is_a_disagreement() -> None:
    assert usage_disagreement(Usage(100, 0, 0, 20), Usage(130, 0, 0, 25)) is not None


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("claude-sonnet-4-5", ModelPrices(3.0, 3.75, 0.30, 15.0)),
        ("claude-sonnet-4-5-20250929", ModelPrices(3.0, 3.75, 0.30, 15.0)),
        ("claude-opus-4-5-20251101", ModelPrices(5.0, 6.25, 0.50, 25.0)),
        ("claude-opus-4-1", ModelPrices(15.0, 18.75, 1.50, 75.0)),
        ("Claude-Haiku-4-5", ModelPrices(1.0, 1.25, 0.10, 5.0)),
        ("claude-3-5-haiku-2024-10-22", ModelPrices(0.80, 1.0, 0.08, 4.0)),
        ("gpt-5.5", ModelPrices(5.0, 5.0, 0.50, 30.0)),
        ("gemini-2.5-pro", ModelPrices(1.25, 1.25, 0.125, 10.0)),
    ],
)
def test_models_and_their_dated_snapshots_are_priced(model: str, expected: ModelPrices) -> None:
    assert builtin_prices().prices_for(model) == expected


@pytest.mark.parametrize(
    "model", ["", "sonnet", "my-model", "gpt-5.6", "claude-opus-4-9", "claude-3-5-haiku-latest", "gpt-5.5x"]
)
def test_an_unknown_model_has_no_price_not_even_its_neighbours(model: str) -> None:
    assert builtin_prices().prices_for(model) is None


def test_cost_is_from_all_four_fields_per_million_tokens() -> None:
    prices = ModelPrices(3.0, 3.75, 0.30, 15.0)
    assert prices.cost_usd(Usage(1_000_000, 1_000_000, 1_000_000, 1_000_000)) == 3.0 + 3.75 + 0.30 + 15.0
    assert prices.cost_usd(Usage(100, None, None, 20)) == round((100 * 3.0 + 20 * 15.0) / 1e6, 6)


def test_cost_is_unknown_without_input_or_output_tokens() -> None:
    prices = ModelPrices(3.0, 3.75, 0.30, 15.0)
    assert prices.cost_usd(Usage(None, 5, 5, 20)) is None
    assert prices.cost_usd(Usage(100, 5, 5, None)) is None
    assert prices.cost_usd(Usage(0, None, None, 0)) == 0.0


def test_a_budget_is_reached_at_or_above_it_and_never_without_a_price() -> None:
    assert Spend(5.0, 5.0).reached
    assert Spend(5.01, 5.0).reached
    assert not Spend(4.99, 5.0).reached
    assert not Spend(100.0).reached
    assert not Spend(None, 5.0).reached
    assert Spend(0.5, 2.0).describe() == "$0.5000 of $2.0000"
    assert Spend(None).describe() == "n/a"


def test_a_disagreement_is_one_sentence_listing_each_field_in_order() -> None:
    detail = usage_disagreement(Usage(1, None, 3, 1), Usage(100, 5, 4, 20))
    assert detail == (
        "the agent's reported usage disagrees with the usage measured at the wire: "
        "input_tokens 1 reported, 100 at the wire; cache_read_input_tokens 3 reported, 4 at the wire;"
        " output_tokens 1 reported, 20 at the wire"
    )


def test_a_model_id_is_priced_whatever_its_case_and_surrounding_space() -> None:
    assert builtin_prices().prices_for("  CLAUDE-Sonnet-4-5-20250929\n") == ModelPrices(3.0, 3.75, 0.30, 15.0)
    assert builtin_prices().prices_for(" claude-opus-4-5 ") == ModelPrices(
        5.0, 6.25, 0.50, 25.0
    )  # the longer prefix wins


def test_the_exact_cost_counts_an_unknown_cache_field_as_no_tokens() -> None:
    prices = ModelPrices(3.0, 3.75, 0.30, 15.0)
    assert prices.exact_cost_usd(Usage(100, None, None, 20)) == (100 * 3.0 + 20 * 15.0) / 1_000_000
    assert prices.exact_cost_usd(Usage(0, 1, None, 0)) == 3.75 / 1_000_000
    assert prices.exact_cost_usd(Usage(0, None, 1, 0)) == 0.30 / 1_000_000


def test_a_cost_is_rounded_to_a_millionth_of_a_dollar() -> None:
    prices = ModelPrices(3.0, 3.75, 0.30, 15.0)
    assert prices.cost_usd(Usage(1, None, 1, 0)) == 0.000003  # 3.3e-6 exactly
    assert prices.cost_usd(Usage(1, None, 2, 0)) == 0.000004  # 3.6e-6 rounds up


def test_a_later_snapshot_keeps_only_the_refusals_after_the_earlier_one() -> None:
    first, second = WireRefusal(404, "route", "GET /v1/models"), WireRefusal(403, "model", "other")
    earlier = WireMeter().plus_refusal(first)
    later = earlier.plus_reply(Usage(1, None, None, 1)).plus_refusal(second)
    session = later.since(earlier)
    assert session.refusals == (second,)
    assert session.refused == 1
    assert later.since(later) == WireMeter(usage=Usage(0, None, None, 0))


def test_a_session_counts_only_its_own_incomplete_replies() -> None:
    earlier = WireMeter().plus_reply(Usage(5, None, None, 1), complete=False)
    later = earlier.plus_reply(Usage(7, None, None, 2), complete=False).plus_reply(Usage(1, None, None, 1))
    assert later.since(earlier).incomplete == 1
    assert later.since(earlier).requests == 2


def test_provider_faults_are_429_and_5xx_counted_per_session_with_the_last_status() -> None:
    from wfbench.domain.metering.wire import is_provider_fault

    assert [is_provider_fault(s) for s in (200, 400, 404, 429, 500, 503, 529, 599, 600)] == [
        False, False, False, True, True, True, True, True, False,
    ]  # fmt: skip
    earlier = WireMeter().plus_failure(500)
    later = earlier.plus_reply(Usage(1, None, None, 1)).plus_failure(503).plus_failure(529)
    assert later.since(earlier) == WireMeter(
        requests=3, usage=Usage(1, None, None, 1), upstream_failures=2, last_failure_status=529
    )
    assert later.plus_reply(None).since(later).last_failure_status is None
