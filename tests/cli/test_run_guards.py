"""``wfbench run``'s network and budget refusals (cli/run/guards.py), before any session."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from wfbench.cli.run.guards import check_budget_prices, check_host_network
from wfbench.domain.errors import InputError

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


def test_a_budget_is_refused_on_a_cluster_executor() -> None:
    check_budget_prices(None, PRICED, [], executor="ray")  # no budget: any executor
    with pytest.raises(InputError, match="--executor ray") as raised:
        check_budget_prices(1.0, PRICED, [], executor="ray")
    assert raised.value.field == "--max-cost"
