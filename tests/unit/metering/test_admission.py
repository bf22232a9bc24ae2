"""Spend reserved before it is spent (issue 26): the admission rule, worst cases and output caps."""

from __future__ import annotations

from typing import Any

import pytest

from wfbench.domain.metering.evidence import Admission, admission
from wfbench.domain.metering.prices import ModelPrices
from wfbench.domain.metering.requests import MESSAGES, OUTPUT_CEILING, RESPONSES, BodyRefusal, output_cap


def test_without_a_budget_every_request_is_admitted() -> None:
    assert admission(None, 1e9, 1e9) is Admission.ADMIT


@pytest.mark.parametrize(
    ("committed", "reserved", "expected"),
    [
        (0.0, 0.0, Admission.ADMIT),
        (0.5, 0.49, Admission.ADMIT),
        (0.5, 0.5, Admission.WAIT),
        (0.0, 3.0, Admission.WAIT),
        (0.99, 0.0, Admission.ADMIT),
        (1.0, 0.0, Admission.REFUSE),
        (3.0, 0.0, Admission.REFUSE),
        (1.0, 5.0, Admission.REFUSE),
    ],
)
def test_a_request_is_admitted_under_the_budget_waits_on_reservations_and_is_refused_once_spent(
    committed: float, reserved: float, expected: Admission
) -> None:
    assert admission(1.0, committed, reserved) is expected


def test_the_worst_case_prices_every_input_byte_at_the_dearest_input_price() -> None:
    assert ModelPrices(3.0, 3.75, 0.30, 15.0).worst_case_usd(1_000_000, 0) == 3.75
    assert ModelPrices(3.0, 1.0, 0.30, 15.0).worst_case_usd(1_000_000, 0) == 3.0
    assert ModelPrices(1.0, 1.0, 2.0, 15.0).worst_case_usd(1_000_000, 0) == 2.0
    assert ModelPrices(3.0, 3.75, 0.30, 15.0).worst_case_usd(0, 200_000) == 3.0
    assert ModelPrices(3.0, 3.75, 0.30, 15.0).worst_case_usd(1000, 1000) == pytest.approx(0.01875)


def ask(**extra: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [], **extra}


def test_the_output_cap_is_the_requests_own() -> None:
    assert output_cap(MESSAGES, ask(max_tokens=1)) == 1
    assert output_cap(MESSAGES, ask(max_tokens=OUTPUT_CEILING)) == OUTPUT_CEILING
    assert output_cap(RESPONSES, {"max_output_tokens": 64}) == 64
    assert output_cap(RESPONSES, {"max_tokens": 64}) == OUTPUT_CEILING


def test_a_responses_request_without_a_cap_is_reserved_at_the_ceiling() -> None:
    assert OUTPUT_CEILING == 128_000
    assert output_cap(RESPONSES, {}) == OUTPUT_CEILING


def test_a_messages_request_without_max_tokens_is_refused() -> None:
    assert output_cap(MESSAGES, ask()) == BodyRefusal(
        "field", "body.max_tokens", "is required: the budget reserves the reply's worst case"
    )


@pytest.mark.parametrize("value", [0, -1, OUTPUT_CEILING + 1, 1.5, "64", True, None])
def test_a_cap_that_is_not_a_whole_number_within_the_ceiling_is_refused(value: object) -> None:
    expected = BodyRefusal("field", "body.max_output_tokens", "must be a whole number from 1 to 128000")
    if value is None:
        assert output_cap(RESPONSES, {"max_output_tokens": value}) == OUTPUT_CEILING
    else:
        assert output_cap(RESPONSES, {"max_output_tokens": value}) == expected
