"""One budget for a whole cluster, against a fake Ray (no cluster): two nodes' proxies, one set of books.

The fake actor runs each call when its result is asked for, in the caller's thread, like a
keeper that answers at once. The real cluster runs in tests/integration/executors/test_ray_cluster.py.
"""

from __future__ import annotations

import threading
import time
import types
from typing import Any

import pytest

from wfbench.adapters.executors.ray_ledger import (
    ClusterLedger,
    ClusterMeter,
    LedgerKeeper,
    open_ledger,
    start_keeper,
)
from wfbench.adapters.gateway.key_proxy import KeyProxy
from wfbench.adapters.gateway.rules import Refused
from wfbench.domain.metering.evidence import Spend
from wfbench.domain.metering.prices import ModelPrices
from wfbench.domain.session.records import Usage

#: $1 per million tokens of any kind: 500,000 input tokens cost $0.50.
PRICES = ModelPrices(1.0, 1.0, 1.0, 1.0)


class FakeRay:
    """``ray.get`` over the fake actor's deferred calls; ``down`` makes every call fail as a dead actor."""

    def __init__(self) -> None:
        self.down = False
        self.calls: list[str] = []

    def get(self, ref: Any, *, timeout: float) -> Any:
        assert timeout > 0
        if self.down:
            raise RuntimeError("ActorDiedError: the actor died unexpectedly")
        return ref()


class FakeActor:
    """A handle: ``handle.method.remote(*args)`` defers ``keeper.method(*args)``."""

    def __init__(self, keeper: LedgerKeeper, ray: FakeRay) -> None:
        self._keeper = keeper
        self._ray = ray

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._keeper, name)
        ray = self._ray

        class _Method:
            @staticmethod
            def remote(*args: Any) -> Any:
                ray.calls.append(name)
                return lambda: method(*args)

        return _Method()


def _cluster(budget: float | None) -> tuple[FakeRay, FakeActor, ClusterLedger, ClusterLedger]:
    ray = FakeRay()
    keeper = FakeActor(LedgerKeeper(budget, PRICES), ray)
    return ray, keeper, ClusterLedger(ray, keeper, budget), ClusterLedger(ray, keeper, budget)


def _spent(ledger: ClusterLedger, release: float, input_tokens: int) -> None:
    usage = Usage(input_tokens=input_tokens, output_tokens=0)
    ledger.settle(usage, PRICES, release=release, billed=True, complete=True)


def test_a_reservation_on_one_node_holds_back_a_request_on_another() -> None:
    _, _, node_a, node_b = _cluster(1.0)
    assert node_a.reserve(0.6, timeout_s=1.0) == 0.6
    assert node_b.reserve(0.5, timeout_s=1.0) == 0.5  # 0.6 reserved is under the budget: admitted
    with pytest.raises(Refused, match="reserved by requests still upstream") as refused:
        node_b.reserve(0.1, timeout_s=0.3)  # 1.1 reserved fills it: it waited, then gave up
    assert (refused.value.status, refused.value.kind) == (403, "budget")


def test_a_request_waiting_on_one_node_is_admitted_once_another_node_settles() -> None:
    _, _, node_a, node_b = _cluster(1.0)
    node_a.reserve(1.0, timeout_s=1.0)
    got: list[float] = []
    waiting = threading.Thread(target=lambda: got.append(node_b.reserve(0.5, timeout_s=10.0)))
    waiting.start()
    time.sleep(0.3)
    assert got == [], "held while node A's reservation fills the budget"
    _spent(node_a, release=1.0, input_tokens=400_000)  # the wire's figure: $0.40
    waiting.join(5.0)
    assert got == [0.5]


def test_once_the_cluster_spent_the_budget_every_node_refuses() -> None:
    _, _, node_a, node_b = _cluster(1.0)
    node_a.reserve(0.9, timeout_s=1.0)
    _spent(node_a, release=0.9, input_tokens=1_000_000)
    for node in (node_a, node_b):
        with pytest.raises(Refused, match="budget is spent"):
            node.check()
        with pytest.raises(Refused, match="budget is spent"):
            node.reserve(0.01, timeout_s=1.0)


def test_the_spend_is_the_sum_of_every_nodes_wire_figures_budget_or_not() -> None:
    ray, keeper, node_a, node_b = _cluster(None)
    _spent(node_a, release=0.0, input_tokens=250_000)
    _spent(node_b, release=0.0, input_tokens=500_000)
    meter = ClusterMeter(ray, keeper, None)
    assert meter.spend() == Spend(0.75, None)
    assert node_a.spend() == Spend(0.75, None)
    assert node_a.reserve(5.0, timeout_s=1.0) == 0.0, "no budget: nothing reserved"
    assert "try_reserve" not in ray.calls, "no budget: no call to the keeper before a request"


def test_a_keeper_that_cannot_be_reached_refuses_every_request() -> None:
    ray, _, node_a, _ = _cluster(1.0)
    ray.down = True
    with pytest.raises(Refused, match="cannot be reached") as refused:
        node_a.reserve(0.1, timeout_s=1.0)
    assert refused.value.kind == "budget"
    with pytest.raises(Refused, match="cannot be reached"):
        node_a.check()
    node_a.settle(None, None, release=0.1, billed=False, complete=True)  # nothing left to count
    assert node_a.spend() == Spend(None, 1.0)


def test_the_meter_keeps_the_last_figure_once_the_cluster_is_gone() -> None:
    ray, keeper, node_a, _ = _cluster(2.0)
    meter = ClusterMeter(ray, keeper, 2.0)
    _spent(node_a, release=0.0, input_tokens=1_500_000)
    assert meter.close() == Spend(1.5, 2.0)
    ray.down = True
    assert meter.spend() == Spend(1.5, 2.0)


def test_a_stopped_node_proxy_stops_waiting_without_touching_the_shared_books() -> None:
    _, _, node_a, node_b = _cluster(1.0)
    node_a.reserve(1.0, timeout_s=1.0)
    node_b.stop()
    with pytest.raises(Refused, match="still upstream"):
        node_b.reserve(0.1, timeout_s=30.0)  # returns at once: its proxy is stopping
    _spent(node_a, release=1.0, input_tokens=100_000)
    assert node_a.reserve(0.5, timeout_s=1.0) == 0.5


def test_a_key_proxy_keeps_its_books_in_the_ledger_it_is_given() -> None:
    ray, keeper, node_a, _ = _cluster(3.0)
    _spent(node_a, release=0.0, input_tokens=1_000_000)
    proxy = KeyProxy(
        "http://127.0.0.1:9", "sk-test", model="claude-sonnet-4-5", budget_usd=3.0, ledger=node_a
    )
    assert proxy.spend() == Spend(1.0, 3.0)
    proxy.stop()  # never started: stops the node's waits only
    assert ClusterMeter(ray, keeper, 3.0).spend() == Spend(1.0, 3.0)


def test_the_keeper_takes_no_cpu_is_never_restarted_and_goes_where_it_is_placed() -> None:
    """A restarted keeper would have empty books: the budget would start again from zero."""
    recorded: dict[str, Any] = {}

    class _Ray:
        def remote(self, cls: type) -> Any:
            assert cls is LedgerKeeper

            class _Actor:
                @staticmethod
                def options(**options: Any) -> Any:
                    recorded.update(options)
                    return types.SimpleNamespace(remote=lambda *args: ("handle", args))

            return _Actor()

    handle = start_keeper(_Ray(), 2.0, PRICES, placement="head")
    assert handle == ("handle", (2.0, PRICES))
    assert recorded == {
        "num_cpus": 0,
        "max_restarts": 0,
        "max_task_retries": 0,
        "scheduling_strategy": "head",
    }


def test_the_ledger_opens_on_the_head_and_answers_before_the_first_cell() -> None:
    """A worker node's loss must not take the books along; the keeper's start is paid at preflight."""
    pytest.importorskip("ray")
    head_id = "ab" * 28  # Ray checks a node id's length
    placed: dict[str, Any] = {}

    class _Ray(FakeRay):
        def nodes(self) -> list[dict[str, Any]]:
            worker = {"Alive": True, "NodeID": "cd" * 28, "Resources": {"wfbench_slot": 2.0}}
            head = {"Alive": True, "NodeID": head_id, "Resources": {"node:__internal_head__": 1.0}}
            return [worker, head]

        def remote(self, cls: type) -> Any:
            fake = self

            class _Actor:
                @staticmethod
                def options(**options: Any) -> Any:
                    placed.update(options)
                    return types.SimpleNamespace(remote=lambda *args: FakeActor(cls(*args), fake))

            return _Actor()

    ray = _Ray()
    keeper, meter = open_ledger(ray, 1.0, PRICES)
    assert ray.calls == ["spend"], "asked once before any cell"
    assert placed["scheduling_strategy"].node_id == head_id
    assert placed["scheduling_strategy"].soft
    assert meter.spend() == Spend(0.0, 1.0)
