"""The sweep's spend metered at the wire, and the ``--max-cost`` budget stop.

The key proxy meters every cell's model traffic at the wire and prices it with the pinned
model's prices (:mod:`wfbench.adapters.gateway.key_proxy`), in-flight cells included. This module is the
app-level view of it (:mod:`wfbench.app.sweep.spend` sums the rows' ``cost_usd``, which are the wire's
too once a cell is folded):

* :func:`metered_spend` — the spend so far (``None`` without a metered endpoint), safe to call
  from any thread at any time (a progress display polls it);
* :func:`spend_fields` — the same as JSON-ready fields (``metered_spend_usd``,
  ``max_cost_usd``, ``max_cost_reached``) for log and ``--json`` events;
* :class:`BudgetStop` — once ``--max-cost`` is reached no new cell starts
  (:func:`~wfbench.app.sweep.scheduler.run_packed`'s ``may_start``); the sweep's note and the report
  say so.
"""

from __future__ import annotations

import attrs

from wfbench.domain.metering.evidence import Spend
from wfbench.domain.ports import ModelGateway


def metered_spend(gateway: ModelGateway | None) -> Spend | None:
    """The sweep's metered spend so far, or None when no metered endpoint is in use."""
    return None if gateway is None else gateway.spend()


def spend_fields(spend: Spend | None) -> dict[str, object]:
    """JSON-ready fields for an event: spend in USD (``None``: unknown), the budget, whether reached."""
    if spend is None:
        return {"metered_spend_usd": None}
    return {
        "metered_spend_usd": spend.spent_usd,
        "max_cost_usd": spend.budget_usd,
        "max_cost_reached": spend.reached,
    }


@attrs.define
class BudgetStop:
    """Stops issuing cells once the gateway's budget is spent; remembers how many it held back."""

    gateway: ModelGateway | None
    held_back: int = 0

    def may_start(self) -> bool:
        """False once the budget is reached (each refusal is counted)."""
        spend = metered_spend(self.gateway)
        if spend is not None and spend.reached:
            self.held_back += 1
            return False
        return True

    @property
    def stopped(self) -> bool:
        """True when the budget was reached during the sweep."""
        spend = metered_spend(self.gateway)
        return spend is not None and spend.reached

    def note(self) -> str | None:
        """The sweep's note when the budget stopped it, else None."""
        spend = metered_spend(self.gateway)
        if spend is None or not spend.reached:
            return None
        return (
            f"[max-cost] metered spend {spend.describe()} reached the --max-cost budget: later model"
            f" requests were refused and {self.held_back} cell(s) did not start; the report and promotion"
            " are from partial evidence (--resume with a larger --max-cost runs the rest)."
        )
