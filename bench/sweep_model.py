"""A discrete-event model of ``run_packed``, driven by the real fold, for sweeps too long to time.

The model replays what :func:`wfbench.app.sweep.scheduler.run_packed` does with simulated time instead
of threads: the actions come from the real pure fold (:func:`wfbench.domain.sweep.scheduling.start_fold`
and :func:`~wfbench.domain.sweep.scheduling.fold`, with the same :class:`Pacing`), a submitted cell
starts at once (after its retry back-off) and finishes after its duration, a cell started after
the breaker tripped never runs (no row), and the cancel token stops running cells at once (their
rows are ``cancelled``). So the window, the pacing, the in-order fold, the breaker and the
overrun are the real ones; only the clock is simulated. ``scheduler_bench.py --check-real`` compares it with
the real ``run_packed`` on the same plan.

Used by ``bench/scheduler_bench.py`` (large sweeps) and ``bench/distributed_bench.py``.
"""

from __future__ import annotations

import heapq
import itertools
import json
import random
import sys
from collections import deque
from collections.abc import Sequence
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from wfbench.domain.results.rows import ErrorKind, Row  # noqa: E402 - after the path set-up above
from wfbench.domain.sweep.pacing import LimitChanged, Pacing, RetryPolicy  # noqa: E402
from wfbench.domain.sweep.scheduling import (  # noqa: E402
    Action,
    Breaker,
    CancelRunning,
    CellFinished,
    SubmitCell,
    SweepDone,
    fold,
    start_fold,
)

#: ``shared/data/session_durations.json`` in the first parent of the checkout that has one.
DEFAULT_DURATIONS = next(
    (
        parent / "shared" / "data" / "session_durations.json"
        for parent in ROOT.parents
        if (parent / "shared" / "data" / "session_durations.json").is_file()
    ),
    ROOT.parent / "shared" / "data" / "session_durations.json",
)


def load_durations(path: Path = DEFAULT_DURATIONS) -> list[float]:
    """Every measured cell duration of the file (seconds), all arms together, in file order."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return [value for values in data["cell_duration_s_by_arm"].values() for value in values]


def resample(samples: Sequence[float], cells: int, seed: int) -> list[float]:
    """``cells`` durations drawn with replacement from ``samples`` (seeded)."""
    rng = random.Random(seed)
    return [rng.choice(samples) for _ in range(cells)]


def lower_bound(durations: Sequence[float], workers: int) -> float:
    """No schedule on ``workers`` beats the longest cell or the total spread evenly."""
    return max(*durations, sum(durations) / workers)


@attrs.frozen
class ModelResult:
    """One simulated sweep: when it ended, what was folded, and the breaker's trip."""

    makespan: float
    rows: int
    tripped_at: int | None
    overrun: int
    #: Simulated worker-seconds spent idle while cells were still to be started.
    idle: float
    #: Most cells running at once.
    peak: int = 0
    #: (time, old, new) of every change of the concurrency limit.
    limit_changes: tuple[tuple[float, int, int], ...] = ()


def _row(index: int, kind: ErrorKind | None, **extra: object) -> Row:
    ok = kind is None
    return Row(task="t", arm="a", run=index, error_kind=kind, ok=ok, resolved=ok, extra=extra)


@attrs.frozen
class Scenario:
    """What happens to the cells besides their durations.

    ``failing``: indexes that end with a systemic ``session-error`` after their duration.
    ``outage_at``: from that moment every running cell fails ``fail_s`` later (unless it ends
    first) and every cell that starts fails after ``fail_s``. ``capacity``: the provider admits
    that many concurrent sessions; a cell that starts beyond it is throttled (529) after
    ``fail_s`` (a rate-limit burst).
    """

    failing: frozenset[int] = frozenset()
    outage_at: float | None = None
    capacity: int | None = None
    fail_s: float = 30.0


def simulate(
    durations: Sequence[float],
    *,
    workers: int,
    window: int,
    outage_streak: int = 5,
    scenario: Scenario | None = None,
    paced: bool = True,
    retry: RetryPolicy | None = None,
) -> ModelResult:
    """Run the real fold over cells of ``durations`` (in submission order) on ``workers`` workers.

    ``paced`` (what ``run_packed`` does): the fold's :class:`Pacing` starts a cell only on a free
    worker, contracts the window and retries throttled cells under its AIMD limit. ``paced=False``
    replays the scheduler before pacing: the whole window is handed to a FIFO pool at once, and a
    throttled cell is folded as the session error it is.
    """
    scene = scenario or Scenario()
    pacing = Pacing.start(workers, outage_limit=outage_streak, retry=retry) if paced else None
    state, actions = start_fold(
        len(durations), window=window, breaker=Breaker(limit=outage_streak), pacing=pacing
    )
    queue: deque[tuple[int, float]] = deque()
    heap: list[tuple[float, int, int, Row | None]] = []
    order = itertools.count()
    running: dict[int, float] = {}  # index -> when its current finish event is due
    sessions: set[int] = set()  # running cells that hold a provider session (not waiting to retry)
    now, idle, token = 0.0, 0.0, False
    peak = 0
    changes: list[tuple[float, int, int]] = []

    def perform(todo: Sequence[Action]) -> bool:
        nonlocal token
        for action in todo:
            if isinstance(action, SubmitCell):
                queue.append((action.index, action.delay_s))
            elif isinstance(action, CancelRunning):
                token = True
            elif isinstance(action, LimitChanged):
                changes.append((now, action.old, action.new))
        return any(isinstance(action, SweepDone) for action in todo)

    def outcome(index: int, start: float) -> tuple[float, Row]:
        if scene.outage_at is not None and start >= scene.outage_at:
            return start + scene.fail_s, _row(index, ErrorKind.SESSION_ERROR)
        if scene.capacity is not None and len(sessions) > scene.capacity:
            detail = "result is_error (api_error_status 529)"
            return start + scene.fail_s, _row(index, ErrorKind.SESSION_ERROR, error_detail=detail)
        kind = ErrorKind.SESSION_ERROR if index in scene.failing else None
        return start + durations[index], _row(index, kind)

    def dispatch() -> None:
        nonlocal peak
        if token:  # the token stops every running cell now; queued cells start and return at once
            for index in sorted(running):
                heapq.heappush(heap, (now, next(order), index, _row(index, ErrorKind.CANCELLED)))
                running[index] = now
        while queue and (pacing is not None or len(running) < workers):
            index, delay = queue.popleft()
            if token:  # it starts, sees the token and returns without a row
                running[index] = now
                heapq.heappush(heap, (now, next(order), index, None))
                continue
            sessions.add(index)
            due, row = outcome(index, now + delay)
            running[index] = due
            heapq.heappush(heap, (due, next(order), index, row))
        peak = max(peak, len(running))

    done = perform(actions)
    dispatch()
    if scene.outage_at is not None:
        heapq.heappush(heap, (scene.outage_at, next(order), -1, None))
    while not done:
        at, _, index, row = heapq.heappop(heap)
        if index == -1:  # the outage begins: every running cell fails soon
            for each in sorted(running):
                if running[each] > at + scene.fail_s:
                    running[each] = at + scene.fail_s
                    failed = _row(each, ErrorKind.SESSION_ERROR)
                    heapq.heappush(heap, (running[each], next(order), each, failed))
            continue
        if index not in running or running[index] != at:
            continue  # superseded: the token or the outage ended this cell at another time
        if state.submitted < state.total and state.stopped is None:
            idle += (workers - len(running)) * (at - now)
        now = at
        del running[index]
        sessions.discard(index)
        state, actions = fold(state, CellFinished(index, row))
        done = perform(actions)
        dispatch()
    return ModelResult(
        makespan=now,
        rows=state.persisted,
        tripped_at=state.tripped_at,
        overrun=state.overrun,
        idle=idle,
        peak=peak,
        limit_changes=tuple(changes),
    )
