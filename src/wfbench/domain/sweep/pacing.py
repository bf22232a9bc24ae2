"""Pacing of a packed sweep (pure): how many cells run at once, and when a throttled cell runs again.

The fold (:mod:`wfbench.domain.sweep.scheduling`) decides *which* cell comes next and folds rows
in order; pacing decides *when* a cell may start. Three rules, all decided from the fold's own
state, so the shell only performs them:

1. **Lazy start.** A cell is handed to a worker only when one is free: at most :attr:`Pacing.cap`
   cells run at once. A thread pool with a queue would commit a cell when it enters the window;
   here it is committed when it starts, with the latest evidence.
2. **Contraction.** While :attr:`Pacing.contract_at` systemic rows are in sight — the breaker's
   current streak plus finished-but-unfolded systemic rows — no new cell starts more than
   ``workers`` places past the fold pointer. A wide window keeps workers busy while one long
   cell holds the fold; contraction stops that window from filling with cells that an outage in
   the making would waste. (The default threshold is half the breaker's limit, rounded up: one
   stray ``session-error`` among healthy rows does not contract, three in sight do.)
3. **An AIMD limit on throttling.** A row whose session ended on HTTP 429 or 529
   (:func:`throttle_status`) is not folded: the cell runs again, after
   :meth:`RetryPolicy.delay`, up to :attr:`RetryPolicy.retries` times, and the concurrency limit
   is halved (multiplicative decrease, at most once per burst: throttles of cells started before
   the last cut are the same burst). Every other finished row raises the limit by ``1/limit``
   (additive increase: about one more concurrent cell per ``limit`` finished cells), up to
   ``workers``. A cell still throttled after its retries is folded with that row — a
   ``session-error``, systemic, so the breaker trips on a real outage exactly as before; only the
   retries and their back-off come first. The row folded for a retried cell carries
   ``throttled_attempts``: what each throttled attempt reported (status, cost, duration, session ids).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs

from wfbench.domain.results.rows import ErrorKind, Row

__all__ = [
    "THROTTLE_STATUSES",
    "LimitChanged",
    "Pacing",
    "RetryPolicy",
    "contraction_threshold",
    "throttle_status",
]

#: Provider statuses that mean "slow down": rate limited (429) and overloaded (529).
THROTTLE_STATUSES = frozenset({429, 529})
#: How a provider status is worded in ``error_detail``: Claude Code's result
#: (``event_stream._error_reasons``: ``api_error_status 529``), Codex's error event
#: (``unexpected status 529 Service Unavailable``) and, for any agent, the wire's own count of a
#: failed session's provider faults (``app.cell.wire.failure_detail``: ``the model provider
#: answered 429 to 5 request(s)``), which names the last fault status: an agent that retries the
#: provider on its own (OpenCode) and then fails says nothing of the cause in its stream.
_STATUS_IN_DETAIL = re.compile(
    r"(?:api_error_status|unexpected status|the model provider answered) (\d{3})\b"
)


def throttle_status(row: Row) -> int | None:
    """429 or 529 when the row's session ended because the provider throttled it, else ``None``.

    Read from ``api_error_status`` when the row carries it, else from the ``error_detail`` the
    session parsers write (``result is_error (api_error_status 529)``, Codex's ``unexpected
    status 429 Too Many Requests``) or the wire appends (``the model provider answered 429 to 5
    request(s) of the session``). Only ``session-error`` rows qualify: a throttled session
    that still produced its evidence is a measurement.
    """
    if row.error_kind is not ErrorKind.SESSION_ERROR:
        return None
    status = row.extra.get("api_error_status")
    if isinstance(status, int) and not isinstance(status, bool):
        return status if status in THROTTLE_STATUSES else None
    detail = row.extra.get("error_detail")
    if isinstance(detail, str):
        for found in _STATUS_IN_DETAIL.finditer(detail):
            if int(found.group(1)) in THROTTLE_STATUSES:
                return int(found.group(1))
    return None


def contraction_threshold(outage_limit: int) -> int:
    """Systemic rows in sight that contract the window: half the breaker's limit, rounded up (0: never)."""
    return (outage_limit + 1) // 2


def _positive(_instance: object, attribute: attrs.Attribute[Any], value: float) -> None:
    if not value > 0:
        raise ValueError(f"{attribute.name} must be positive, got {value}")


def _not_negative(_instance: object, attribute: attrs.Attribute[Any], value: float) -> None:
    if value < 0:
        raise ValueError(f"{attribute.name} must be at least 0, got {value}")


@attrs.frozen
class RetryPolicy:
    """How often a throttled cell runs again, and after how long (exponential back-off).

    Raises:
        ValueError: a negative count or delay, or a maximum below the base.
    """

    retries: int = attrs.field(default=3, validator=_not_negative)
    base_delay_s: float = attrs.field(default=30.0, validator=_not_negative)
    max_delay_s: float = attrs.field(default=600.0, validator=_not_negative)

    def __attrs_post_init__(self) -> None:
        if self.max_delay_s < self.base_delay_s:
            raise ValueError(f"max_delay_s {self.max_delay_s} is below base_delay_s {self.base_delay_s}")

    def delay(self, attempt: int) -> float:
        """Seconds to wait before ``attempt`` (0 for the first run, then base × 2^(attempt − 1), capped)."""
        if attempt <= 0:
            return 0.0
        return float(min(self.max_delay_s, self.base_delay_s * 2 ** (attempt - 1)))


@attrs.frozen
class LimitChanged:
    """Action: the concurrency limit moved from ``old`` to ``new`` cells.

    ``reason`` is ``throttled`` or ``recovered``; ``index`` the cell whose row moved it; ``status``
    the provider status of a throttle.
    """

    old: int
    new: int
    reason: str
    index: int
    status: int | None = None


@attrs.frozen
class Pacing:
    """The pacing part of the fold's state. Build it with :meth:`start`.

    ``limit`` is the AIMD limit (a float; :attr:`cap` is the whole number of cells it allows).
    ``attempts`` counts each unfolded cell's throttled attempts; ``started`` the start sequence of
    each running cell's current attempt (a waiting cell is not running); ``waiting`` the throttled
    cells to run again, with their last row, in index order; ``throttles`` what each retried cell's
    throttled attempts reported; ``starts`` how many attempts have started (the next start's
    sequence number: the sequence numbers are 0, 1, 2…).
    """

    workers: int = attrs.field(validator=_positive)
    limit: float
    contract_at: int = attrs.field(validator=_not_negative)
    retry: RetryPolicy = attrs.field(factory=RetryPolicy)
    attempts: Mapping[int, int] = attrs.field(factory=dict)
    started: Mapping[int, int] = attrs.field(factory=dict)
    waiting: tuple[int, ...] = ()
    #: The last throttled row of each cell being retried (folded if its retry never runs).
    last: Mapping[int, Row] = attrs.field(factory=dict)
    throttles: Mapping[int, tuple[Mapping[str, Any], ...]] = attrs.field(factory=dict)
    starts: int = 0
    #: The start sequence at the last decrease: throttles of cells started up to it are that burst.
    cut_at: int = -1

    @classmethod
    def start(cls, workers: int, *, outage_limit: int, retry: RetryPolicy | None = None) -> Pacing:
        """Pacing for ``workers`` workers and a breaker of ``outage_limit`` (0: never contract)."""
        return cls(
            workers=workers,
            limit=float(workers),
            contract_at=contraction_threshold(outage_limit),
            retry=retry or RetryPolicy(),
        )

    @property
    def cap(self) -> int:
        """How many cells may run at once now (1 .. workers)."""
        return max(1, min(self.workers, int(self.limit)))

    def started_cell(self, index: int) -> Pacing:
        """Record that the cell at ``index`` starts (a new attempt)."""
        return attrs.evolve(self, starts=self.starts + 1, started={**self.started, index: self.starts})

    def start_of(self, index: int) -> int:
        """The start sequence of ``index``'s current attempt; a cell never recorded counts as starting now."""
        return self.started.get(index, self.starts)

    def retries_left(self, index: int) -> bool:
        """True when a throttled row of ``index`` may still be retried."""
        return self.attempts.get(index, 0) < self.retry.retries

    def throttled(self, index: int, row: Row, status: int) -> tuple[Pacing, LimitChanged | None]:
        """A throttle of ``index``: wait to run it again; halve the limit once per burst."""
        started_at = self.start_of(index)
        record = {
            "api_error_status": status,
            "cost_usd": row.cost_usd,
            "duration_s": row.duration_s,
            "session_ids": row.extra.get("session_ids"),
        }
        pacing = attrs.evolve(
            self,
            attempts={**self.attempts, index: self.attempts.get(index, 0) + 1},
            started=_without(self.started, index),
            waiting=tuple(sorted((*self.waiting, index))),
            last={**self.last, index: row},
            throttles={**self.throttles, index: (*self.throttles.get(index, ()), record)},
        )
        return pacing.cut(index, status, started_at=started_at)

    def cut(self, index: int, status: int, *, started_at: int) -> tuple[Pacing, LimitChanged | None]:
        """Multiplicative decrease, unless the throttled attempt started before the last cut (same burst)."""
        if started_at <= self.cut_at:
            return self, None
        pacing = attrs.evolve(self, limit=max(1.0, self.limit / 2), cut_at=self.starts - 1)
        return pacing, _changed(self, pacing, "throttled", index, status)

    def finished(self, index: int) -> tuple[Pacing, LimitChanged | None]:
        """A row that is not a throttle: additive increase, up to ``workers``."""
        limit = min(float(self.workers), self.limit + 1 / self.limit)
        pacing = attrs.evolve(self, limit=limit, started=_without(self.started, index))
        return pacing, _changed(self, pacing, "recovered", index, None)

    def take_waiting(self) -> tuple[Pacing, int]:
        """The first waiting cell (lowest index), removed from the waiting list."""
        return attrs.evolve(self, waiting=self.waiting[1:]), self.waiting[0]

    def settle(self, index: int, row: Row | None) -> tuple[Pacing, Row | None]:
        """Forget ``index`` (it is being folded) and give the row to fold.

        A cell whose retry never ran (``row`` is ``None``) is folded with its last throttled row;
        a retried cell's row carries ``throttled_attempts``.
        """
        row = self.last.get(index) if row is None else row
        throttles = self.throttles.get(index)
        pacing = attrs.evolve(
            self,
            attempts=_without(self.attempts, index),
            started=_without(self.started, index),
            waiting=tuple(each for each in self.waiting if each != index),
            last=_without(self.last, index),
            throttles=_without(self.throttles, index),
        )
        if row is None or not throttles:
            return pacing, row
        extra = {**row.extra, "throttled_attempts": [dict(each) for each in throttles]}
        return pacing, attrs.evolve(row, extra=extra)

    def contracted(self, systemic_in_sight: int) -> bool:
        """True when ``systemic_in_sight`` (streak + finished-unfolded systemic rows) contracts the window."""
        return self.contract_at != 0 and systemic_in_sight >= self.contract_at


def _changed(old: Pacing, new: Pacing, reason: str, index: int, status: int | None) -> LimitChanged | None:
    return None if old.cap == new.cap else LimitChanged(old.cap, new.cap, reason, index, status)


def _without(mapping: Mapping[int, Any], key: int) -> dict[int, Any]:
    return {k: v for k, v in mapping.items() if k != key}
