#!/usr/bin/env python3
"""Replay measured session durations through the real packed scheduler and a wave baseline.

The input is ``../shared/data/session_durations.json`` beside the project root (or
``--durations PATH``): 41 real review-session durations, listed per arm in submission order.
The arms' samples are interleaved run-major, arm-minor (the arm order as stored in the file,
or every order with ``--all-orders``) into one 41-cell plan; every duration is divided by
``--scale`` (5000 by default, so the 5400 s ceiling becomes 1.08 s) and each cell sleeps that
long on a real worker thread of :func:`wfbench.app.scheduler.run_packed`.

Printed figures (makespans are medians over ``--repeat`` runs):

* makespan ÷ lower bound, where the lower bound is max(longest cell, total ÷ workers), for a
  wave scheduler (waves of ``workers`` cells, each waiting for its slowest: implemented here),
  for packed at windows 3, 6 and 12, and for packed at the default window with the cells
  submitted longest-first;
* the worst overrun (rows folded after the tripping row) per window, with five consecutive
  systemic failures injected from positions 0, 4 and 12.

Targets (issue 5): packed at the default window (2 × workers) ≤ 1.15 × the lower bound; worst
overrun ≤ 2 × workers.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from itertools import permutations
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from wfbench.app.scheduler import run_packed  # noqa: E402 - after the path set-up above
from wfbench.domain.ports import CancelToken  # noqa: E402
from wfbench.domain.results.rows import ErrorKind, Row  # noqa: E402
from wfbench.domain.sweep.scheduling import Cell, longest_first, packed_window  # noqa: E402

DEFAULT_DURATIONS = ROOT.parent / "shared" / "data" / "session_durations.json"
FAIL_POSITIONS = (0, 4, 12)
FAILURE_RUN = 5


def load_samples(path: Path) -> dict[str, list[float]]:
    """The per-arm duration samples, in the file's order."""
    data = json.loads(path.read_text(encoding="utf-8"))
    samples: dict[str, list[float]] = data["cell_duration_s_by_arm"]
    return samples


def build_plan(samples: dict[str, list[float]], arms: Sequence[str], scale: float) -> tuple[Cell, ...]:
    """Interleave the samples run-major, arm-minor; the k-th sample of an arm is its run k."""
    longest = max(len(values) for values in samples.values())
    return tuple(
        Cell(task="review-corpus", arm=arm, run=run, expected_s=samples[arm][run] / scale)
        for run in range(longest)
        for arm in arms
        if run < len(samples[arm])
    )


def lower_bound(cells: Sequence[Cell], workers: int) -> float:
    """No schedule of ``workers`` can beat the longest cell or the total work spread evenly."""
    durations = [_seconds(cell) for cell in cells]
    return max(*durations, sum(durations) / workers)


def _seconds(cell: Cell) -> float:
    assert cell.expected_s is not None
    return cell.expected_s


def _discard(_row: Row) -> None:
    """The benchmark persists nothing."""


def _row(cell: Cell, systemic: bool) -> Row:
    kind = ErrorKind.SESSION_ERROR if systemic else None
    return Row(
        task=cell.task, arm=cell.arm, run=cell.run, ok=not systemic, resolved=not systemic, error_kind=kind
    )


def fake_cell(failing: frozenset[Cell] = frozenset()) -> Callable[[Cell, CancelToken], Row]:
    """A cell that 'runs' for its scaled duration, stops early when cancelled, fails if listed."""

    def run_cell(cell: Cell, token: CancelToken) -> Row:
        if token.wait(_seconds(cell)):
            return Row(task=cell.task, arm=cell.arm, run=cell.run, error_kind=ErrorKind.CANCELLED)
        return _row(cell, cell in failing)

    return run_cell


def waves_makespan(cells: Sequence[Cell], workers: int) -> float:
    """The wave baseline: consecutive waves of ``workers`` cells, each waiting for its slowest."""
    began = time.monotonic()
    for start in range(0, len(cells), workers):
        with ThreadPoolExecutor(max_workers=workers) as pool:
            wait([pool.submit(time.sleep, _seconds(cell)) for cell in cells[start : start + workers]])
    return time.monotonic() - began


def packed_makespan(cells: Sequence[Cell], workers: int, window: int) -> float:
    """Wall time of the real run_packed over ``cells``."""
    began = time.monotonic()
    outcome = run_packed(cells, run_cell=fake_cell(), on_row=_discard, workers=workers, window=window)
    assert len(outcome.rows) == len(cells)
    assert not outcome.tripped
    return time.monotonic() - began


def overrun(cells: Sequence[Cell], workers: int, window: int, fail_from: int) -> tuple[int | None, int]:
    """(trip index, overrun rows) with FAILURE_RUN systemic cells from ``fail_from``."""
    failing = frozenset(cells[fail_from : fail_from + FAILURE_RUN])
    outcome = run_packed(cells, run_cell=fake_cell(failing), on_row=_discard, workers=workers, window=window)
    return outcome.tripped_at, outcome.overrun


def _median(measure: Callable[[], float], repeat: int) -> float:
    return statistics.median(measure() for _ in range(repeat))


def makespan_table(cells: tuple[Cell, ...], args: argparse.Namespace) -> list[tuple[str, float]]:
    """Each scheduler's median makespan divided by the lower bound."""
    bound = lower_bound(cells, args.workers)
    default = packed_window(args.workers)
    rows = [("waves", _median(lambda: waves_makespan(cells, args.workers), args.repeat) / bound)]
    for window in args.windows:
        measured = _median(lambda w=window: packed_makespan(cells, args.workers, w), args.repeat)
        rows.append((f"packed, window {window}", measured / bound))
    lpt = longest_first(cells)
    measured = _median(lambda: packed_makespan(lpt, args.workers, default), args.repeat)
    rows.append((f"packed, window {default}, longest first", measured / bound))
    return rows


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--durations", type=Path, default=DEFAULT_DURATIONS, help="session_durations.json")
    parser.add_argument("--scale", type=float, default=5000.0, help="divide every duration by this")
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--windows", type=int, nargs="+", default=[3, 6, 12])
    parser.add_argument("--repeat", type=int, default=3, help="median over this many runs")
    parser.add_argument("--all-orders", action="store_true", help="also replay every arm interleaving")
    args = parser.parse_args(argv)
    if not args.scale > 0 or args.repeat < 1:
        parser.error("--scale must be > 0 and --repeat >= 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    samples = load_samples(args.durations)
    cells = build_plan(samples, list(samples), args.scale)
    default = packed_window(args.workers)
    bound = lower_bound(cells, args.workers)
    print(f"{len(cells)} cells from {args.durations.name}, scale ÷{args.scale:g}, workers {args.workers}")
    print(f"lower bound max(longest, total ÷ workers) = {bound:.3f} s (arm order {', '.join(samples)})")
    print()
    print(f"{'scheduler':<34} {'makespan ÷ bound':>17}")
    table = makespan_table(cells, args)
    for name, ratio in table:
        print(f"{name:<34} {ratio:>17.3f}")
    print()
    print(
        f"{'window':>6} "
        + " ".join(f"{'fail@' + str(p):>14}" for p in FAIL_POSITIONS)
        + f" {'worst overrun':>14}"
    )
    worst_at_default = 0
    for window in args.windows:
        results = [overrun(cells, args.workers, window, position) for position in FAIL_POSITIONS]
        worst = max(over for _, over in results)
        if window == default:
            worst_at_default = worst
        cells_text = " ".join(f"{f'trip {trip} +{over}':>14}" for trip, over in results)
        print(f"{window:>6} {cells_text} {worst:>14}")
    if args.all_orders:
        print()
        print(f"arm interleaving (window {default}, one run each)   makespan ÷ bound")
        for arms in permutations(samples):
            plan = build_plan(samples, arms, args.scale)
            print(f"  {', '.join(arms):<46} {packed_makespan(plan, args.workers, default) / bound:>8.3f}")
    ratio = dict(table)[f"packed, window {default}"]
    print()
    print(f"target packed@{default} ≤ 1.15 × bound: {ratio:.3f} {'met' if ratio <= 1.15 else 'MISSED'}")
    print(
        f"target worst overrun ≤ {2 * args.workers}: {worst_at_default} "
        f"{'met' if worst_at_default <= 2 * args.workers else 'MISSED'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
