"""Clock adapters: the system clock, and a deterministic fake that ships for tests and users."""

from __future__ import annotations

import datetime as dt
import time

import attrs


class SystemClock:
    """UTC wall time and the process's monotonic clock."""

    def now(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC)

    def monotonic(self) -> float:
        return time.monotonic()


@attrs.define
class FakeClock:
    """A clock that moves only when told (``advance``) or by ``tick`` on every read."""

    start: dt.datetime = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    elapsed: float = 0.0
    tick: float = 0.0

    def now(self) -> dt.datetime:
        self.elapsed += self.tick
        return self.start + dt.timedelta(seconds=self.elapsed)

    def monotonic(self) -> float:
        self.elapsed += self.tick
        return self.elapsed

    def advance(self, seconds: float) -> None:
        self.elapsed += seconds
