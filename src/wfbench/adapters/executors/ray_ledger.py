"""One budget for a whole cluster: the sweep's spend ledger, shared by every node's key proxy.

On one machine the key proxy keeps the sweep's books (:class:`~wfbench.adapters.gateway.budget.SpendLedger`):
a request's worst case is reserved before it goes upstream, settled to the wire's figure when its
reply ends, and refused once the committed spend reached ``--max-cost``. On a cluster each cell
has its own key proxy on its node, so the books must be one for all of them, or each node would
spend the whole budget. Here they are:

* :class:`LedgerKeeper` — the same ``SpendLedger``, in one Ray actor the driver starts with the
  sweep (no CPU, no retries: it ends with the driver). It answers without ever waiting.
* :class:`ClusterLedger` — what a node's key proxy keeps its books in (the
  :class:`~wfbench.domain.ports.BudgetLedger` port): each check, reservation and settlement is
  one call to the keeper; a request that must wait for reservations to settle waits on the
  node's side and asks again. A keeper that cannot be reached refuses (403 ``budget``): the
  budget fails closed.
* :class:`ClusterMeter` — the driver's view of the same books: the metered spend of every node,
  for the progress line, the summary's "metered at the wire this run" and ``--max-cost``'s stop
  (no new cell once it is reached). The last figure read is kept once the cluster is gone.

So the rule is the local one (:func:`~wfbench.domain.metering.evidence.admission`), decided in one
place: the spend passes the budget by at most one request's worst case, cluster-wide.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from wfbench.adapters.gateway.budget import WAIT_STEP_S, SpendLedger
from wfbench.adapters.gateway.rules import Refused
from wfbench.domain.metering.evidence import Admission, Spend
from wfbench.domain.metering.prices import ModelPrices
from wfbench.domain.session.records import Usage

#: How long one call to the keeper may take before the request it serves is refused.
CALL_TIMEOUT_S = 30.0
#: The resource Ray gives the head node only.
HEAD_RESOURCE = "node:__internal_head__"


class LedgerKeeper:
    """The actor's body: one :class:`SpendLedger` for the sweep (every method returns at once)."""

    def __init__(self, budget_usd: float | None, prices: ModelPrices | None) -> None:
        self._ledger = SpendLedger(budget_usd, prices)

    def spend(self) -> Spend:
        return self._ledger.spend()

    def check(self) -> str | None:
        """The refusal's text once the committed spend reached the budget, else None."""
        try:
            self._ledger.check()
        except Refused as refused:
            return refused.message
        return None

    def try_reserve(self, worst_usd: float) -> tuple[Admission, str]:
        return self._ledger.try_reserve(worst_usd)

    def settle(
        self, usage: Usage | None, prices: ModelPrices | None, release: float, billed: bool, complete: bool
    ) -> None:
        self._ledger.settle(usage, prices, release=release, billed=billed, complete=complete)


def start_keeper(
    ray: Any, budget_usd: float | None, prices: ModelPrices | None, *, placement: object | None = None
) -> Any:
    """The sweep's keeper actor (no CPU, never restarted: its books would be lost); its handle.

    ``placement`` is a Ray scheduling strategy (the driver prefers the head node).
    """
    options: dict[str, object] = {"num_cpus": 0, "max_restarts": 0, "max_task_retries": 0}
    if placement is not None:
        options["scheduling_strategy"] = placement
    return ray.remote(LedgerKeeper).options(**options).remote(budget_usd, prices)


def open_ledger(ray: Any, budget_usd: float | None, prices: ModelPrices | None) -> tuple[Any, ClusterMeter]:
    """The sweep's keeper, on the head node when there is one, and the driver's meter of it.

    Waits until the keeper answers, so that its start is paid before the first cell, not by the
    first cells' first model requests. (On the head: a worker node's loss must not take the
    sweep's books with it.)

    Raises:
        Exception: whatever Ray raised when the keeper did not start or answer in time.
    """
    keeper = start_keeper(ray, budget_usd, prices, placement=_on_head(ray))
    ray.get(keeper.spend.remote(), timeout=CALL_TIMEOUT_S)
    return keeper, ClusterMeter(ray, keeper, budget_usd)


def _on_head(ray: Any) -> object | None:
    """Soft affinity to the head node (None: no head among the alive nodes)."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    for raw in ray.nodes():
        if raw.get("Alive") and HEAD_RESOURCE in raw.get("Resources", {}):
            strategy: object = NodeAffinitySchedulingStrategy(str(raw["NodeID"]), soft=True)
            return strategy
    return None


def _unreachable(exc: BaseException) -> Refused:
    first = (str(exc).strip().splitlines() or [""])[0][:300]
    detail = f"the cluster's budget ledger cannot be reached ({type(exc).__name__}: {first})"
    return Refused(403, "budget", detail)


class ClusterLedger:
    """A node's books: every decision is the keeper's (see the module docstring).

    ``ray`` is the ``ray`` module (a fake in tests); ``keeper`` the actor's handle.
    """

    def __init__(self, ray: Any, keeper: Any, budget_usd: float | None) -> None:
        self._ray = ray
        self._keeper = keeper
        self.budget_usd = budget_usd
        self._stopping = threading.Event()

    def _call(self, method: str, *args: object) -> Any:
        ref = getattr(self._keeper, method).remote(*args)
        return self._ray.get(ref, timeout=CALL_TIMEOUT_S)

    def spend(self) -> Spend:
        """The cluster's spend so far (unknown, ``None``, when the keeper cannot answer)."""
        try:
            value = self._call("spend")
        except Exception:
            return Spend(None, self.budget_usd)
        return value if isinstance(value, Spend) else Spend(None, self.budget_usd)

    def check(self) -> None:
        if self.budget_usd is None:
            return
        try:
            refusal = self._call("check")
        except Exception as exc:
            raise _unreachable(exc) from None
        if refusal is not None:
            raise Refused(403, "budget", refusal)

    def reserve(self, worst_usd: float, timeout_s: float) -> float:
        if self.budget_usd is None:
            return 0.0
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                verdict, text = self._call("try_reserve", worst_usd)
            except Exception as exc:
                raise _unreachable(exc) from None
            if verdict is Admission.ADMIT:
                return worst_usd
            if verdict is Admission.REFUSE:
                raise Refused(403, "budget", text)
            left = deadline - time.monotonic()
            if left <= 0 or self._stopping.wait(min(WAIT_STEP_S, left)):
                raise Refused(403, "budget", "the --max-cost budget is reserved by requests still upstream")

    def settle(
        self, usage: Usage | None, prices: ModelPrices | None, *, release: float, billed: bool, complete: bool
    ) -> None:
        # A keeper gone means the driver is gone: Ray ends this cell too, and nothing is left to count.
        try:
            self._call("settle", usage, prices, release, billed, complete)
        except Exception:
            return

    def stop(self) -> None:
        """This node's proxy stops: its waiting requests are refused (the shared books stay)."""
        self._stopping.set()


class ClusterMeter:
    """The driver's read of the keeper's books; the last figure is kept once the cluster is gone."""

    def __init__(self, ray: Any, keeper: Any, budget_usd: float | None) -> None:
        self._ray = ray
        self._keeper = keeper
        self._last = Spend(0.0, budget_usd)
        self._lock = threading.Lock()
        self._closed = False

    def spend(self) -> Spend:
        """The cluster's metered spend (the last one read when the keeper cannot answer now)."""
        with self._lock:
            if self._closed:
                return self._last
        try:
            value = self._ray.get(self._keeper.spend.remote(), timeout=CALL_TIMEOUT_S)
        except Exception:
            return self._last
        with self._lock:
            if isinstance(value, Spend) and not self._closed:
                self._last = value
            return self._last

    def close(self) -> Spend:
        """Read the books one last time; from now on :meth:`spend` answers with that figure."""
        final = self.spend()
        with self._lock:
            self._closed = True
        return final
