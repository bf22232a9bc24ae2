"""The key proxy's money: spend metered at the wire, and the worst case reserved before a request goes up.

One :class:`SpendLedger` per proxy (so per sweep), shared by every cell's lease and every
connection thread. At admission a request of a metered route reserves its worst-case cost
(:meth:`~wfbench.domain.metering.prices.ModelPrices.worst_case_usd`: the body's size in bytes
as input tokens, every one at the dearest input price, plus the request's output cap at the
output price); when its reply ends the reservation is released and the wire's figure is added to
the spend. The rule that admits, holds or refuses is the domain's
:func:`~wfbench.domain.metering.evidence.admission`: with a budget ``B`` the spend never passes
``B`` by more than one request's worst case.

A reply whose cost the wire cannot fix (cut short, or usage without input or output tokens) is
charged its whole reservation against the budget (``held``): the provider may have billed all of
it. :meth:`SpendLedger.spend` reports the metered spend only (the held amount is not a
measurement).

On a cluster (``--executor ray``) every node's proxy keeps its books in one ledger the driver
owns (:mod:`wfbench.adapters.executors.ray_ledger`): the same :class:`SpendLedger`, reached through
:meth:`SpendLedger.try_reserve` (which never waits) so that each node waits on its own side.
"""

from __future__ import annotations

import threading
import time

from wfbench.adapters.gateway.rules import Refused
from wfbench.domain.metering.evidence import Admission, Spend, admission
from wfbench.domain.metering.prices import ModelPrices
from wfbench.domain.session.records import Usage

#: How often a request waiting for reservations to settle re-checks (and notices a stop).
WAIT_STEP_S = 0.25


class SpendLedger:
    """Metered spend, held worst cases and open reservations of one proxy, against its budget."""

    def __init__(self, budget_usd: float | None, prices: ModelPrices | None) -> None:
        self.budget_usd = budget_usd
        self._prices = prices
        self._changed = threading.Condition(threading.Lock())
        self._stopping = False
        self._spent_usd = 0.0
        self._held_usd = 0.0
        self._reserved_usd = 0.0
        self._unpriced = 0
        self._unpriced_model = 0
        self._priced = 0

    def spend(self) -> Spend:
        """The metered spend so far, against the budget (``None``: some reply could not be priced
        by model; replies without input or output tokens count in ``unpriced_requests``)."""
        with self._changed:
            unknown = self._unpriced_model > 0 or (self._prices is None and not self._priced)
            spent = None if unknown else round(self._spent_usd, 6)
            return Spend(spent, self.budget_usd, self._unpriced)

    def check(self) -> None:
        """Refuse at once when the committed spend reached the budget (before a body is read).

        Raises:
            Refused: 403 ``budget``.
        """
        with self._changed:
            verdict = admission(self.budget_usd, self._committed(), 0.0)
        if verdict is Admission.REFUSE:
            raise self._spent_refusal()

    def reserve(self, worst_usd: float, timeout_s: float) -> float:
        """Reserve ``worst_usd`` for one request; the amount reserved (0 without a budget).

        Waits (at most ``timeout_s``) while open reservations alone fill the budget.

        Raises:
            Refused: 403 ``budget`` once the committed spend reached the budget, or when the wait
                ran out or the proxy stopped.
        """
        if self.budget_usd is None:
            return 0.0
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while True:
                verdict = self._admit(worst_usd)
                if verdict is Admission.ADMIT:
                    return worst_usd
                if verdict is Admission.REFUSE:
                    raise self._spent_refusal()
                left = deadline - time.monotonic()
                if self._stopping or left <= 0:
                    raise Refused(
                        403, "budget", "the --max-cost budget is reserved by requests still upstream"
                    )
                self._changed.wait(min(WAIT_STEP_S, left))

    def try_reserve(self, worst_usd: float) -> tuple[Admission, str]:
        """One admission decision, never waiting: reserved on ``ADMIT``; the refusal's text otherwise."""
        with self._changed:
            verdict = self._admit(worst_usd)
            return verdict, self._spent_refusal().message if verdict is Admission.REFUSE else ""

    def _admit(self, worst_usd: float) -> Admission:
        verdict = admission(self.budget_usd, self._committed(), self._reserved_usd)
        if verdict is Admission.ADMIT and self.budget_usd is not None:
            self._reserved_usd += worst_usd
        return verdict

    def settle(
        self, usage: Usage | None, prices: ModelPrices | None, *, release: float, billed: bool, complete: bool
    ) -> None:
        """One request is done: release its reservation and add what the wire measured.

        ``billed`` False: no metered reply (an error status, an unmetered route, no upstream).
        A billed reply that is not ``complete`` or cannot be priced keeps its reservation as held.
        """
        cost = None if prices is None or usage is None else prices.exact_cost_usd(usage)
        with self._changed:
            self._reserved_usd -= release
            if billed and usage is not None:
                self._count(cost, priced_model=prices is not None)
            if billed and (cost is None or not complete):
                self._held_usd += max(0.0, release - (cost or 0.0))
            self._changed.notify_all()

    def stop(self) -> None:
        """Wake every waiting request (each is refused)."""
        with self._changed:
            self._stopping = True
            self._changed.notify_all()

    def _count(self, cost: float | None, *, priced_model: bool) -> None:
        if not priced_model:
            self._unpriced_model += 1
        elif cost is None:
            self._unpriced += 1
        else:
            self._priced += 1
            self._spent_usd += cost

    def _committed(self) -> float:
        return self._spent_usd + self._held_usd

    def _spent_refusal(self) -> Refused:
        committed = f"${self._committed():.4f} of ${self.budget_usd or 0:.4f}"
        return Refused(403, "budget", f"the sweep's --max-cost budget is spent ({committed})")
