"""Refusals of ``wfbench run`` that concern the network and money, before any session.

* ``network: host`` (a task's or an arm's) lets sessions reach the host's network: it is
  refused under ``CI`` unless ``--allow-host-network``, and warned about loudly otherwise;
* ``--max-cost`` needs prices for every model the sweep runs (the pinned one and each arm's):
  a budget over spend that cannot be priced cannot be enforced; and it needs the cells to run
  here (``--executor local``): on a cluster each node meters its own cells, and no driver-side
  proxy sees the sweep's whole spend before a request is relayed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from wfbench.adapters.gateway.price_table import builtin_prices
from wfbench.app.corpus.arms import Arm
from wfbench.app.corpus.corpus import Corpus
from wfbench.domain.errors import InputError
from wfbench.domain.metering.prices import PriceTable

__all__ = ["check_budget_prices", "check_host_network", "check_local_only"]


def check_host_network(
    corpus: Corpus,
    arms: Sequence[Arm],
    *,
    allowed: bool,
    environ: Mapping[str, str],
    warn: Callable[[str], None],
) -> None:
    """Refuse ``network: host`` under CI unless ``--allow-host-network``; warn loudly otherwise.

    Raises:
        InputError: a task or arm asks for the host network, ``CI`` is set and it was not allowed.
    """
    names = [f"task {t.id}" for t in corpus.tasks if t.network == "host"]
    names += [f"arm {a.name}" for a in arms if a.network == "host"]
    if not names:
        return
    if environ.get("CI") and not allowed:
        raise InputError(
            f"{', '.join(names)} ask for network: host, refused under CI (their sessions would reach the"
            " host's network and the internet: contaminating); pass --allow-host-network to allow it",
            source=corpus.path,
            field="network",
        )
    warn(
        f"WARNING: {', '.join(names)} use network: host — their agent sessions share the host's network"
        " (any local service, the internet): the evidence can be contaminated (docs/security.md)."
    )


def check_budget_prices(
    max_cost: float | None,
    model: str,
    arms: Sequence[Arm],
    *,
    executor: str = "local",
    prices: PriceTable | None = None,
) -> None:
    """With ``--max-cost``, every model of the sweep must have prices.

    On a cluster (``executor``) every node's key proxy keeps its books in the sweep's shared
    ledger, so the budget holds across nodes (``docs/distributed.md``).

    Raises:
        InputError: naming ``--max-cost`` and the unpriced models.
    """
    del executor  # the same rule wherever the cells run
    if max_cost is None:
        return
    models = {model, *(arm.model for arm in arms if arm.model)}
    unpriced = (builtin_prices() if prices is None else prices).unpriced(models)
    if unpriced:
        raise InputError(
            f"no prices are known for model {', '.join(unpriced)}: the budget cannot be enforced"
            " (give its prices with --prices FILE)",
            field="--max-cost",
        )


def check_local_only(request: Any, *, executor: str) -> None:
    """``--prices`` and ``--gateway`` live in this process: a cluster's nodes would not apply them.

    Raises:
        InputError: either is given with a cluster executor.
    """
    for option, value in (("--prices", request.prices), ("--gateway", request.gateway)):
        if value is not None and executor != "local":
            raise InputError(
                f"is applied by this machine's key proxy, which --executor {executor} bypasses (each node"
                " meters its own cells); run with --executor local",
                field=option,
            )
