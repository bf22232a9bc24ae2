"""``wfbench run``'s network and budget refusals (cli/run/guards.py), before any session."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from wfbench.adapters.gateway.price_table import builtin_prices
from wfbench.cli.run.guards import check_budget_prices, check_host_network, check_local_only
from wfbench.cli.run.setup import price_warnings
from wfbench.domain.errors import InputError
from wfbench.domain.metering.prices import ModelPrices, PriceEntry, PriceTable

PRICED = "claude-sonnet-4-5"


def _corpus(*networks: str | None) -> SimpleNamespace:
    tasks = [SimpleNamespace(id=f"t{i}", network=n) for i, n in enumerate(networks)]
    return SimpleNamespace(tasks=tasks, path="corpus.yaml")


def _arm(name: str = "baseline", network: str | None = None, model: str | None = None) -> SimpleNamespace:
    return SimpleNamespace(name=name, network=network, model=model)


def test_model_only_everywhere_is_silent_under_ci() -> None:
    warned: list[str] = []
    check_host_network(_corpus(None), [_arm()], allowed=False, environ={"CI": "1"}, warn=warned.append)  # type: ignore[arg-type]
    assert warned == []


@pytest.mark.parametrize("where", ["task", "arm"])
def test_network_host_is_refused_under_ci_naming_who_asked(where: str) -> None:
    corpus = _corpus("host" if where == "task" else None)
    arms = [_arm("cand", network="host" if where == "arm" else None)]
    with pytest.raises(InputError, match="--allow-host-network") as raised:
        check_host_network(corpus, arms, allowed=False, environ={"CI": "true"}, warn=print)  # type: ignore[arg-type]
    assert ("task t0" if where == "task" else "arm cand") in str(raised.value)


def test_network_host_allowed_under_ci_or_outside_it_is_warned_about() -> None:
    for environ, allowed in (({"CI": "1"}, True), ({}, False)):
        warned: list[str] = []
        check_host_network(_corpus("host"), [_arm()], allowed=allowed, environ=environ, warn=warned.append)  # type: ignore[arg-type]
        assert len(warned) == 1
        assert "network: host" in warned[0]
        assert "contaminated" in warned[0]


def test_a_budget_needs_prices_for_every_model_of_the_sweep() -> None:
    check_budget_prices(None, "unpriced-model", [])  # no budget: nothing to price
    check_budget_prices(1.0, PRICED, [_arm(model=PRICED)])  # type: ignore[list-item]
    with pytest.raises(InputError, match="unpriced-arm-model"):
        check_budget_prices(1.0, PRICED, [_arm(model="unpriced-arm-model")])  # type: ignore[list-item]
    with pytest.raises(InputError, match="no prices"):
        check_budget_prices(1.0, "unpriced-model", [])


def test_a_budget_works_with_a_codex_arm_on_a_priced_openai_model() -> None:
    check_budget_prices(1.0, PRICED, [_arm(model="gpt-5.5")])  # type: ignore[list-item]
    with pytest.raises(InputError, match="--prices FILE"):
        check_budget_prices(1.0, PRICED, [_arm(model="gpt-9")])  # type: ignore[list-item]
    table = PriceTable((PriceEntry("acme", "gpt-9", ModelPrices(1, 1, 0.1, 2), "contract", "2026-11-01"),))
    check_budget_prices(1.0, "gpt-9", [], prices=table)  # a --prices table prices it


def test_a_mixed_sweep_warns_once_per_unpriced_model_naming_each_arm_and_agent() -> None:
    arms = [
        SimpleNamespace(name="workflow", model=None, agent=None),
        SimpleNamespace(name="codex_direct", model="gpt-5.5", agent=SimpleNamespace(name="codex")),
        SimpleNamespace(name="new_a", model="gpt-9", agent=SimpleNamespace(name="codex")),
        SimpleNamespace(name="new_b", model="gpt-9", agent=None),
    ]
    assert price_warnings(arms, "claude", PRICED, builtin_prices()) == [  # type: ignore[arg-type]
        "model gpt-9 has no price (built-in tables or --prices FILE): cost_usd will be n/a for arm(s)"
        " new_a (codex), new_b (claude), and the cost gate can only answer insufficient_evidence for them"
        " (add the model to a --prices file, or re-gate on tokens: `wfbench gate DIR --metric output_tokens`)"
    ]
    assert price_warnings(arms[:2], "claude", PRICED, builtin_prices()) == []  # type: ignore[arg-type]


def test_a_budget_holds_on_a_cluster_executor_as_on_one_machine() -> None:
    """Every node's key proxy keeps its books in the sweep's shared ledger: the same rule applies."""
    check_budget_prices(None, PRICED, [], executor="ray")  # no budget: any executor
    check_budget_prices(1.0, PRICED, [], executor="ray")
    with pytest.raises(InputError, match="no prices") as raised:
        check_budget_prices(1.0, "no-such-model", [], executor="ray")
    assert raised.value.field == "--max-cost"


def test_prices_and_the_gateway_are_refused_on_a_cluster_executor() -> None:
    plain = SimpleNamespace(prices=None, gateway=None)
    check_local_only(plain, executor="ray")
    check_local_only(SimpleNamespace(prices="p.csv", gateway="openai"), executor="local")
    for option, request in (
        ("--prices", SimpleNamespace(prices="p.csv", gateway=None)),
        ("--gateway", SimpleNamespace(prices=None, gateway="openai")),
    ):
        with pytest.raises(InputError, match="--executor ray") as raised:
            check_local_only(request, executor="ray")
        assert raised.value.field == option
