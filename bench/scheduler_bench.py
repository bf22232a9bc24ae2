#!/usr/bin/env python3
"""Replay measured session durations through the real packed scheduler and a wave baseline.

The input is ``../shared/data/session_durations.json`` beside the project root (or
``--durations PATH``): 41 real review-session durations, listed per arm in submission order.
The arms' samples are interleaved run-major, arm-minor (the arm order as stored in the file,
or every order with ``--all-orders``) into one 41-cell plan; every duration is divided by
``--scale`` (5000 by default, so the 5400 s ceiling becomes 1.08 s) and each cell sleeps that
long on a real worker thread of :func:`wfbench.app.sweep.scheduler.run_packed`.

Printed figures (makespans are medians over ``--repeat`` runs):

* makespan ÷ lower bound, where the lower bound is max(longest cell, total ÷ workers), for a
  wave scheduler (waves of ``workers`` cells, each waiting for its slowest: implemented here),
  for packed at windows 3, 6 and 12, and for packed at the default window with the cells
  submitted longest-first;
* the worst overrun (rows folded after the tripping row) per window, with five consecutive
  systemic failures injected from positions 0, 4 and 12.

Targets (issue 5): packed at the default window ≤ 1.15 × the lower bound; worst overrun ≤ 2 × workers.

``--large`` (issue 18) runs the large-sweep model instead (``bench/sweep_model.py``: the real fold and
pacing, simulated time): ``--cells`` (600) durations resampled from the 41 measured ones, at 3, 4
and 8 workers, over ``--seeds`` (8) seeds, for the scheduler before pacing (2 × workers, the whole
window handed to the pool) and the paced scheduler at several windows (the default 6 × workers
among them). Printed: makespan ÷ lower bound (mean and worst over seeds; also with 3% background
systemic failures), and the worst overrun after a breaker trip for five consecutive systemic
cells injected at 15 positions (failing fast, 30 s, or at their own duration) and for an outage
in time (every session fails from 10..90% of the sweep on). Then ordering: longest-first with
perfect knowledge (the bound any prior could reach), with a prior sweep's per-cell durations as
the prior (noisy), and the default order. ``--check-real`` replays one plan through the model
and through the real ``run_packed`` (threads and sleeps, durations ÷ ``--scale``) side by side.
``--throttle`` runs the AIMD scenario: 64 workers against a provider that admits
``--capacity`` concurrent sessions (a cell starting beyond it is throttled with 529 after 30 s),
with retries (the default) and without (``--throttle-retries 0``).

Target (issue 18): ≤ 1.05 × the lower bound at 3, 4 and 8 workers on ≥ 600 cells.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from itertools import permutations
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

import sweep_model  # noqa: E402 - bench/ is the script's directory, hence on the path

from wfbench.app.sweep.scheduler import run_packed  # noqa: E402 - after the path set-up above
from wfbench.domain.ports import CancelToken  # noqa: E402
from wfbench.domain.results.rows import ErrorKind, Row  # noqa: E402
from wfbench.domain.sweep.scheduling import Cell, longest_first, packed_window  # noqa: E402

DEFAULT_DURATIONS = sweep_model.DEFAULT_DURATIONS
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


# --- the large-sweep model (issue 18) -------------------------------------------------------------


def _ratio(durations: Sequence[float], workers: int, **options: object) -> float:
    result = sweep_model.simulate(durations, workers=workers, **options)  # type: ignore[arg-type]
    return result.makespan / sweep_model.lower_bound(durations, workers)


def _noise(cells: int, seed: int, rate: float = 0.03) -> frozenset[int]:
    rng = random.Random(seed + 1000)
    return frozenset(index for index in range(cells) if rng.random() < rate)


def large_sweep(args: argparse.Namespace) -> None:
    """Makespan ratios and worst overruns of the old and the paced scheduler on resampled sweeps."""
    samples = sweep_model.load_durations(args.durations)
    plans = [sweep_model.resample(samples, args.cells, seed) for seed in range(args.seeds)]
    print(f"{args.cells} cells resampled from the {len(samples)} measured durations, {args.seeds} seeds")
    print()
    header = f"{'workers':>7} {'scheduler':<28} {'ratio mean':>10} {'worst':>7} {'3% noise':>9}"
    print(header + f" {'overrun fast':>12} {'at duration':>11} {'outage':>7} {'bound':>6}")
    for workers in args.worker_counts:
        for label, window, paced in _schedulers(workers, args.windows_x):
            ratios = [_ratio(d, workers, window=window, paced=paced) for d in plans]
            noisy = [
                _ratio(
                    d,
                    workers,
                    window=window,
                    paced=paced,
                    scenario=sweep_model.Scenario(failing=_noise(len(d), i)),
                )
                for i, d in enumerate(plans)
            ]
            fast, slow, outage = _overruns(plans[: max(1, args.seeds // 2)], workers, window, paced)
            print(
                f"{workers:>7} {label:<28} {statistics.mean(ratios):>10.3f} {max(ratios):>7.3f}"
                f" {statistics.mean(noisy):>9.3f} {fast:>12} {slow:>11} {outage:>7} {window - 1:>6}"
            )
        print()


def _schedulers(workers: int, multiples: Sequence[int]) -> list[tuple[str, int, bool]]:
    chosen = [("before pacing, 2 × workers", 2 * workers, False)]
    for multiple in multiples:
        default = " (default)" if multiple * workers == packed_window(workers) else ""
        chosen.append((f"paced, {multiple} × workers{default}", multiple * workers, True))
    return chosen


def _overruns(
    plans: Sequence[Sequence[float]], workers: int, window: int, paced: bool
) -> tuple[int, int, int]:
    """Worst overrun: 5 systemic cells failing in 30 s / at their duration, and an outage in time."""
    fast = slow = outage = 0
    for durations in plans:
        cells = len(durations)
        bound = sweep_model.lower_bound(durations, workers)
        for start in range(10, cells - 10, max(1, (cells - 20) // 15)):
            failing = frozenset(range(start, start + FAILURE_RUN))
            quick = [30.0 if i in failing else d for i, d in enumerate(durations)]
            scene = sweep_model.Scenario(failing=failing)
            run = sweep_model.simulate
            fast = max(fast, run(quick, workers=workers, window=window, paced=paced, scenario=scene).overrun)
            slow = max(
                slow, run(durations, workers=workers, window=window, paced=paced, scenario=scene).overrun
            )
        for fraction in (0.1, 0.3, 0.5, 0.7, 0.9):
            scene = sweep_model.Scenario(outage_at=fraction * bound)
            outage = max(
                outage,
                sweep_model.simulate(
                    durations, workers=workers, window=window, paced=paced, scenario=scene
                ).overrun,
            )
    return fast, slow, outage


def _blocks(path: Path) -> list[list[float]]:
    """The measured durations in blocks of a task's runs: each arm's list, 3 consecutive cells a block.

    The file lists each arm's cells in submission order (task-major, run-major), so consecutive
    cells of an arm are, at best guess, one task's runs: a block bootstrap over them keeps
    whatever a task contributes to its cells' durations (the first blocks are all long).
    """
    blocks = []
    for values in load_samples(path).values():
        blocks += [values[i : i + 3] for i in range(0, len(values), 3)]
    return blocks


def _task_sweep(
    blocks: Sequence[Sequence[float]], tasks: int, arms: int, seed: int
) -> list[tuple[int, int, float]]:
    """(task, arm, duration) in canonical order: each (task, arm) takes its runs from one drawn block."""
    rng = random.Random(seed)
    drawn = {(t, a): rng.choice(blocks) for t in range(tasks) for a in range(arms)}
    return [
        (t, a, drawn[(t, a)][r % len(drawn[(t, a)])])
        for t in range(tasks)
        for r in range(3)
        for a in range(arms)
    ]


def ordering(args: argparse.Namespace) -> None:
    """What ordering could still gain at the default window: exact longest-first bounds any prior."""
    blocks = _blocks(args.durations)
    tasks = args.cells // 12
    print(f"ordering at the default window, {tasks} tasks × 4 arms × 3 runs (block bootstrap of the measured")
    print("durations, a task's runs drawn together): makespan ÷ lower bound, mean / worst over seeds")
    print(
        f"{'workers':>7} {'canonical':>15} {'longest-first, exact':>21} {'prior sweep':>15}"
        f" {'resume at 50%':>15}"
    )
    for workers in args.worker_counts:
        window = packed_window(workers)
        figures: list[list[float]] = [[], [], [], []]
        for seed in range(args.seeds):
            cells = _task_sweep(blocks, tasks, 4, seed)
            prior_sweep = _task_sweep(blocks, tasks, 4, seed + 500)
            durations = [d for _, _, d in cells]
            bound = sweep_model.lower_bound(durations, workers)
            indexes = list(range(len(cells)))
            # A prior sweep's per-(task, arm) median: what --reuse-results gives longest_first today.
            prior: dict[tuple[int, int], list[float]] = {}
            for t, a, d in prior_sweep:
                prior.setdefault((t, a), []).append(d)
            # --resume after half the cells ran: the medians of the (task, arm)s that have rows.
            half = len(cells) // 2
            seen: dict[tuple[int, int], list[float]] = {}
            for t, a, d in cells[:half]:
                seen.setdefault((t, a), []).append(d)
            rest = indexes[half:]
            unknown = [i for i in rest if cells[i][:2] not in seen]
            known = sorted(
                (i for i in rest if cells[i][:2] in seen),
                key=lambda i: -statistics.median(seen[cells[i][:2]]),
            )
            orders = (
                indexes,
                sorted(indexes, key=lambda i: -durations[i]),
                sorted(indexes, key=lambda i: -statistics.median(prior[cells[i][:2]])),
                indexes[:half] + unknown + known,
            )
            for figure, order in zip(figures, orders, strict=True):
                ordered = [durations[i] for i in order]
                figure.append(sweep_model.simulate(ordered, workers=workers, window=window).makespan / bound)
        print(
            f"{workers:>7}"
            + "".join(
                f"{f'{statistics.mean(f):.3f} / {max(f):.3f}':>{width}}"
                for f, width in zip(figures, (16, 22, 16, 16), strict=True)
            )
        )


def check_real(args: argparse.Namespace) -> None:
    """The model and the real run_packed on one plan, side by side (durations ÷ --scale)."""
    samples = sweep_model.load_durations(args.durations)
    durations = [d / args.scale for d in sweep_model.resample(samples, args.check_cells, 3)]
    cells = tuple(Cell(task="t", arm="a", run=i, expected_s=d) for i, d in enumerate(durations))
    print(f"model vs real run_packed: {len(cells)} cells, durations ÷ {args.scale:g}")
    print(f"{'workers':>7} {'window':>6} {'model':>7} {'real':>7} {'real - model':>12}")
    for workers in args.worker_counts:
        for window in (2 * workers, packed_window(workers)):
            model = _ratio(durations, workers, window=window)
            bound = sweep_model.lower_bound(durations, workers)
            real = _median(lambda w=window, k=workers: packed_makespan(cells, k, w), args.repeat) / bound
            print(f"{workers:>7} {window:>6} {model:>7.3f} {real:>7.3f} {real - model:>+12.3f}")


def throttle(args: argparse.Namespace) -> None:
    """64 workers against a provider that admits --capacity concurrent sessions."""
    from wfbench.domain.sweep.pacing import RetryPolicy

    samples = sweep_model.load_durations(args.durations)
    workers = 64
    print(f"{workers} workers, {args.cells} cells, provider admits {args.capacity} concurrent sessions")
    for retries in (3, 0):
        durations = sweep_model.resample(samples, args.cells, 1)
        scene = sweep_model.Scenario(capacity=args.capacity)
        result = sweep_model.simulate(
            durations,
            workers=workers,
            window=packed_window(workers),
            scenario=scene,
            retry=RetryPolicy(retries=retries),
        )
        bound = sweep_model.lower_bound(durations, args.capacity)
        cuts = [c for c in result.limit_changes if c[2] < c[1]]
        print(
            f"  throttle retries {retries}: rows {result.rows}/{len(durations)},"
            f" tripped at {result.tripped_at},"
            f" makespan ÷ bound(at {args.capacity} sessions) {result.makespan / bound:.3f},"
            f" peak {result.peak} running, {len(cuts)} cut(s), final limit"
            f" {result.limit_changes[-1][2] if result.limit_changes else workers}"
        )


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
    parser.add_argument("--large", action="store_true", help="the large-sweep model (issue 18)")
    parser.add_argument("--cells", type=int, default=600, help="cells of a resampled sweep (--large)")
    parser.add_argument("--seeds", type=int, default=8, help="resampled sweeps per figure (--large)")
    parser.add_argument("--worker-counts", type=int, nargs="+", default=[3, 4, 8])
    parser.add_argument(
        "--windows-x", type=int, nargs="+", default=[2, 4, 6], help="paced windows, × workers"
    )
    parser.add_argument("--check-real", action="store_true", help="model vs the real run_packed")
    parser.add_argument("--check-cells", type=int, default=120, help="cells of the --check-real plan")
    parser.add_argument("--throttle", action="store_true", help="the AIMD scenario at 64 workers")
    parser.add_argument(
        "--capacity", type=int, default=16, help="provider's concurrent sessions (--throttle)"
    )
    args = parser.parse_args(argv)
    if not args.scale > 0 or args.repeat < 1:
        parser.error("--scale must be > 0 and --repeat >= 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.large or args.check_real or args.throttle:
        if args.large:
            large_sweep(args)
            ordering(args)
        if args.check_real:
            print()
            check_real(args)
        if args.throttle:
            print()
            throttle(args)
        return 0
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
