"""The driver's gateway on a cluster: its spend is the shared books' (every node's), once attached."""

from __future__ import annotations

from typing import Any

from wfbench.cli.run.ray_driver import ClusterGateway
from wfbench.domain.metering.evidence import Spend


class _Gateway:
    def __init__(self) -> None:
        self.leases: list[tuple[str, str | None, str | None]] = []

    def lease(self, label: str, *, model: str | None = None, scratch: str | None = None) -> Any:
        self.leases.append((label, model, scratch))
        return label

    def spend(self) -> Spend:
        return Spend(0.0, 5.0)


class _Meter:
    def spend(self) -> Spend:
        return Spend(2.5965, 5.0)


def test_the_summarys_wire_spend_on_a_cluster_is_every_nodes_not_the_drivers_idle_proxy() -> None:
    inner = _Gateway()
    gateway = ClusterGateway(inner)
    assert gateway.spend() == Spend(0.0, 5.0), "before the cluster is attached nothing ran"
    gateway.attach(_Meter())
    assert gateway.spend() == Spend(2.5965, 5.0)
    assert gateway.lease("t/a/0", model="m", scratch="/s") == "t/a/0"
    assert inner.leases == [("t/a/0", "m", "/s")]
