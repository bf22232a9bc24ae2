"""The rules that turn wire evidence into a verdict on a session's self-reported usage, and spend.

* :func:`usage_disagreement`: an agent's self-reported usage must equal the wire's field by
  field wherever the agent reported a value. A difference is evidence that the event stream was
  tampered with (or that something spent tokens behind the agent's back) — never a silent pick
  of either number: the session becomes ``evidence-unverified`` with this detail, and the row's
  usage and cost are the wire's.
* :class:`Spend` is the sweep's metered spend against an optional budget (``--max-cost``).
* :func:`admission`: spend is reserved before it is spent. A request is admitted while what is
  committed (metered spend, plus the worst case of replies whose cost the wire could not fix)
  and what is reserved (the worst case of every request still upstream) stay under the budget;
  it waits while only reservations fill the budget (they settle to the wire's figure), and is
  refused once the committed spend reached it. So a budget ``B`` is never exceeded by more than
  one request's worst case: the last request admitted saw ``committed + reserved < B``.
"""

from __future__ import annotations

import enum

import attrs

from wfbench.domain.metering.wire import USAGE_NAMES
from wfbench.domain.session.records import Usage


def usage_disagreement(reported: Usage, wire: Usage) -> str | None:
    """Why ``reported`` does not match ``wire``, or None when every reported field equals the wire's.

    A field the agent did not report (``None``) is not compared: the wire's value is the
    measurement either way.
    """
    differences = []
    for name in USAGE_NAMES:
        claimed, measured = getattr(reported, name), getattr(wire, name)
        if claimed is not None and claimed != measured:
            shown = "not reported" if measured is None else str(measured)
            differences.append(f"{name} {claimed} reported, {shown} at the wire")
    if not differences:
        return None
    return "the agent's reported usage disagrees with the usage measured at the wire: " + "; ".join(
        differences
    )


@attrs.frozen
class Spend:
    """A sweep's metered spend so far (USD, from wire usage) and its budget.

    ``spent_usd`` is ``None`` when some metered usage could not be priced (an unpriced model);
    ``unpriced_requests`` counts those replies.
    """

    spent_usd: float | None
    budget_usd: float | None = None
    unpriced_requests: int = 0

    @property
    def reached(self) -> bool:
        """True once a budget is set and the metered spend has reached it."""
        return (
            self.budget_usd is not None and self.spent_usd is not None and self.spent_usd >= self.budget_usd
        )

    def describe(self) -> str:
        """``$0.0123 of $5.0000`` (or ``n/a`` when unpriced)."""
        spent = "n/a" if self.spent_usd is None else f"${self.spent_usd:.4f}"
        return spent if self.budget_usd is None else f"{spent} of ${self.budget_usd:.4f}"


class Admission(enum.Enum):
    """What the proxy does with a request whose worst case is about to be reserved."""

    ADMIT = "admit"
    WAIT = "wait"
    REFUSE = "refuse"


def admission(budget_usd: float | None, committed_usd: float, reserved_usd: float) -> Admission:
    """Admit while ``committed + reserved`` is under the budget; wait while only reservations fill
    it; refuse once ``committed`` reached it (see the module docstring). No budget: admit."""
    if budget_usd is None:
        return Admission.ADMIT
    if committed_usd >= budget_usd:
        return Admission.REFUSE
    if committed_usd + reserved_usd >= budget_usd:
        return Admission.WAIT
    return Admission.ADMIT
