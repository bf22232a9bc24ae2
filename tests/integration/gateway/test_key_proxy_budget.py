"""Spend is reserved before it is spent: the key proxy's budget under concurrent requests (issue 26).

Real leases over their UNIX sockets, the scripted provider upstream (its replies stall a little,
so requests really are upstream at the same time). Prices here make a reply of 100,000 output
tokens cost $3; a request capping its output at 100,000 tokens reserves a little more than $3.
"""

from __future__ import annotations

import threading
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

MODEL = "claude-test"
PRICES = ModelPrices(3.0, 3.75, 0.30, 30.0)
SCRIPT = """
default: {say: "cheap", usage: {input_tokens: 10, output_tokens: 10}, stall_s: 0.3}
conversations:
  - when: ["Task dear"]
    turns: [{say: "dear", usage: {input_tokens: 1, output_tokens: 100000}, stall_s: 0.5}]
"""
CELLS, PER_CELL = 8, 16


def ask(text: str, max_tokens: int | None = 100_000) -> dict[str, Any]:
    body: dict[str, Any] = {"model": MODEL, "messages": [{"role": "user", "content": text}]}
    return body if max_tokens is None else {**body, "max_tokens": max_tokens}


@pytest.fixture
def provider() -> Iterator[ScriptedProvider]:
    with ScriptedProvider(ProviderScript.from_yaml(SCRIPT, source="inline")) as running:
        yield running


def at_once(leases: list[Lease], per_cell: int, body: dict[str, Any]) -> list[int]:
    """``per_cell`` concurrent requests from every lease, released together; every status."""
    statuses: list[int] = []
    gate = threading.Barrier(len(leases) * per_cell)

    def one(lease: Lease) -> None:
        gate.wait()
        statuses.append(send(lease, "POST", "/v1/messages", body)[0])

    threads = [threading.Thread(target=one, args=(lease,)) for lease in leases for _ in range(per_cell)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return statuses


@pytest.mark.parametrize("cells", [1, CELLS], ids=["one-cell", "eight-cells"])
def test_a_one_dollar_budget_forwards_one_of_128_concurrent_three_dollar_requests(
    provider: ScriptedProvider, cells: int
) -> None:
    """16 requests at once from one cell, or from each of 8 cells (``--workers 8``): one is admitted,
    the rest wait for it, then are refused."""
    with KeyProxy(provider.base_url, REAL_KEY, model=MODEL, prices=PRICES, budget_usd=1.0) as proxy:
        leases = [proxy.lease(f"cell{n}") for n in range(cells)]
        statuses = at_once(leases, PER_CELL, ask("Task dear"))
        meters = [lease.meter(settle_s=5) for lease in leases]
        spend = proxy.spend()
    assert len(statuses) == cells * PER_CELL
    assert statuses.count(200) == 1
    assert statuses.count(403) == cells * PER_CELL - 1
    assert len(provider.requests) == 1
    assert sum(meter.requests for meter in meters) == 1
    assert {r.kind for meter in meters for r in meter.refusals} == {"budget"}
    assert spend.spent_usd == pytest.approx(3.000003)
    assert spend.reached


def test_requests_wait_while_only_reservations_fill_the_budget_and_then_go(
    provider: ScriptedProvider,
) -> None:
    """Worst cases of $3 each under $10, replies of cents: nobody is refused (at most 4 upstream at once)."""
    with KeyProxy(provider.base_url, REAL_KEY, model=MODEL, prices=PRICES, budget_usd=10.0) as proxy:
        leases = [proxy.lease(f"cell{n}") for n in range(4)]
        statuses = at_once(leases, 3, ask("Task cheap"))
        spend = proxy.spend()
    assert statuses == [200] * 12
    assert len(provider.requests) == 12
    assert spend.spent_usd == pytest.approx(12 * (10 * 3.0 + 10 * 30.0) / 1e6)
    assert not spend.reached


def test_under_a_budget_a_messages_request_must_cap_its_output(provider: ScriptedProvider) -> None:
    with (
        KeyProxy(provider.base_url, REAL_KEY, model=MODEL, prices=PRICES, budget_usd=10.0) as proxy,
        proxy.lease("c") as cell,
    ):
        status, body = send(cell, "POST", "/v1/messages", ask("Task cheap", max_tokens=None))
        too_large = send(cell, "POST", "/v1/messages", ask("Task cheap", max_tokens=10**9))[0]
        assert send(cell, "POST", "/v1/messages", ask("Task cheap", max_tokens=64))[0] == 200  # control
        meter = cell.meter(settle_s=5)
    assert (status, too_large) == (403, 403)
    assert b"body.max_tokens: is required" in body
    assert [r.kind for r in meter.refusals] == ["field", "field"]
    assert len(provider.requests) == 1


def test_a_responses_request_without_an_output_cap_is_reserved_at_the_ceiling(
    provider: ScriptedProvider,
) -> None:
    """Codex sends no max_output_tokens: it is reserved at 128k output tokens ($3.84 at these prices)."""
    routes = (*ANTHROPIC_ROUTES, OPENAI_RESPONSES_ROUTE)
    body = {"model": MODEL, "input": "Task cheap", "store": False}
    with (
        KeyProxy(
            provider.base_url, REAL_KEY, model=MODEL, prices=PRICES, budget_usd=4.0, routes=routes
        ) as proxy,
        proxy.lease("c") as cell,
    ):
        assert proxy.reserve(OPENAI_RESPONSES_ROUTE, 0, body, None) == pytest.approx(128_000 * 30.0 / 1e6)
        proxy.ledger.settle(None, None, release=128_000 * 30.0 / 1e6, billed=False, complete=True)
        assert send(cell, "POST", "/v1/responses", body)[0] == 200
    assert len(provider.requests) == 1
