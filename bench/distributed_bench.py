#!/usr/bin/env python3
"""Cells of a fixed length on a Ray cluster of 1 and 2 worker nodes × 2 slots, against the local executor.

Every Ray process runs in a loopback-only network + PID namespace (``tests/support/ray_kit.py``,
``../shared/research/ray.md``): a head with no slots, then worker node 1; the sweep runs; worker
node 2 joins and the same sweep runs again. The local executor runs the same sweep in the same
namespace with ``--workers`` equal to the cluster's slots.

The sweep: the demo's two review tasks × ``--runs`` (default 4: 8 cells) with the stand-in agent
under bwrap, the final reply of every session held ``--stall`` seconds (default 10) by the
scripted provider, so every cell lasts about stall + its sandboxing.

Printed per configuration (from the rows: each cell's ``recorded_at`` and ``cell_wall_s``):

* makespan = last row recorded − first cell started; lower bound = max(longest cell, Σ cells ÷ slots);
  their ratio (target ≤ 1.15 at 2 nodes, issue 16);
* the command's whole wall time (for Ray: attach, ship the runtime, probe every node);
* per-cell overhead over local = (Ray makespan − local makespan at the same slots) × slots ÷ cells,
  and the mean cell time each executor measured.

Figures are noisy on a shared machine: compare the ratios of one run (docs/performance.md).

``--pairs N`` measures the 1 → 2 node speed-up the way every ratio of ``docs/performance.md`` is
measured: two clusters side by side, each in its own loopback-only namespace (head + 1 worker
node, head + 2 worker nodes, 2 slots per worker), and the same sweep run on them alternately,
N pairs; it prints each pair's ratio of makespans and their median (the local executor is left out).

    python3 bench/distributed_bench.py [--runs 4] [--stall 10]   # root, with the ray extra installed
    python3 bench/distributed_bench.py --pairs 5
    python3 bench/distributed_bench.py --pairs 5 --against /path/to/other/checkout

``--against DIR`` compares two wfbench trees instead: two 2-node clusters, one whose every process
imports wfbench from ``DIR/src`` (``PYTHONPATH``), one from this checkout; it prints each pair's
makespan ratio (this ÷ DIR) and their median.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "src"))

from tests.support.ray_kit import LoopbackCluster, ray_missing  # noqa: E402

from wfbench import demo  # noqa: E402

SLOTS = 2
TASKS = "review-pr-41,review-pr-42"


def stalling_script(tmp: Path, stall: float) -> Path:
    """The demo's provider script, the last reply of each Anthropic review session held ``stall`` s."""
    text = (Path(demo.__file__).parent / "provider.yaml").read_text()
    stalled, count = re.subn(r'(- \{say: "[^"]*", usage: \*review)\}', rf"\1, stall_s: {stall}}}", text)
    if count != 2:
        raise SystemExit("the demo's review rules changed shape")
    path = tmp / "stall.yaml"
    path.write_text(stalled)
    return path


def sweep(kit: LoopbackCluster, out: Path, script: Path, runs: int, executor: list[str]) -> dict[str, Any]:
    """Run the sweep inside the namespace; its figures from the rows."""
    argv = [
        sys.executable,
        "-m",
        "wfbench",
        "run",
        "--out",
        str(out),
        "--tasks",
        TASKS,
        "--runs",
        str(runs),
        "--provider-script",
        str(script),
        *executor,
    ]
    began = time.monotonic()
    done = kit.run(argv, capture=True, check=False, timeout=1800)
    wall = time.monotonic() - began
    if done.returncode != 0:
        raise SystemExit(f"the sweep failed ({done.returncode}): {done.stdout[-2000:]} {done.stderr[-2000:]}")
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    bad = [r for r in rows if r["error_kind"] is not None]
    if bad:
        raise SystemExit(f"{len(bad)} cell(s) failed: {bad[0]['error_detail']}")
    ends = [datetime.fromisoformat(r["recorded_at"]).timestamp() for r in rows]
    cells = [float(r["cell_wall_s"]) for r in rows]
    starts = [end - cell for end, cell in zip(ends, cells, strict=True)]
    return {
        "wall": wall,
        "makespan": max(ends) - min(starts),
        "cells": cells,
        "nodes": sorted({r.get("node") or "local" for r in rows}),
    }


def ratio(figures: dict[str, Any], slots: int) -> float:
    cells = figures["cells"]
    return float(figures["makespan"] / max(*cells, sum(cells) / slots))


def line(name: str, figures: dict[str, Any], slots: int) -> str:
    return (
        f"{name:<22} slots={slots}  makespan {figures['makespan']:6.1f} s"
        f"  ÷ bound {ratio(figures, slots):.3f}"
        f"  mean cell {statistics.mean(figures['cells']):5.2f} s  command {figures['wall']:6.1f} s"
        f"  nodes {len(figures['nodes'])}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=4, help="runs per review task (cells = 2 × runs)")
    parser.add_argument(
        "--stall", type=float, default=10.0, help="seconds every session's last reply is held"
    )
    parser.add_argument(
        "--pairs", type=int, default=0, help="alternate N sweeps on a 1-node and a 2-node cluster"
    )
    parser.add_argument("--against", help="with --pairs: compare with the wfbench tree in this checkout")
    args = parser.parse_args()
    missing = ray_missing()
    if missing is not None:
        print(f"distributed_bench: {missing}", file=sys.stderr)
        return 2
    if args.pairs > 0 and args.against:
        return against(Path(args.against), args.pairs, args.runs, args.stall)
    if args.pairs > 0:
        return pairs(args.pairs, args.runs, args.stall)
    cells = 2 * args.runs
    with tempfile.TemporaryDirectory(prefix="wfbench-distbench-") as tmp:
        root = Path(tmp)
        script = stalling_script(root, args.stall)
        kit = LoopbackCluster(root / "cluster", workers=1, slots=SLOTS)
        try:
            began = time.monotonic()
            kit.start()
            kit.wait_slots(SLOTS)
            print(f"cluster: head + 1 worker node up in {time.monotonic() - began:.1f} s {kit.started_s}")
            ray = ["--executor", "ray", "--ray-address", kit.address]
            one = sweep(kit, root / "ray1", script, args.runs, ray)
            local2 = sweep(kit, root / "local2", script, args.runs, ["--workers", str(SLOTS)])
            began = time.monotonic()
            kit.add_worker(2)
            kit.wait_slots(2 * SLOTS)
            print(f"worker node 2 up in {time.monotonic() - began:.1f} s")
            two = sweep(kit, root / "ray2", script, args.runs, ray)
            local4 = sweep(kit, root / "local4", script, args.runs, ["--workers", str(2 * SLOTS)])
        finally:
            kit.stop()
    print(f"{cells} cells, every session's last reply held {args.stall:g} s")
    print(line("local --workers 2", local2, SLOTS))
    print(line("ray, 1 node × 2 slots", one, SLOTS))
    print(line("local --workers 4", local4, 2 * SLOTS))
    print(line("ray, 2 nodes × 2 slots", two, 2 * SLOTS))
    for name, ray_fig, local_fig, slots in (
        ("1 node", one, local2, SLOTS),
        ("2 nodes", two, local4, 2 * SLOTS),
    ):
        overhead = (ray_fig["makespan"] - local_fig["makespan"]) * slots / cells
        cell_delta = statistics.mean(ray_fig["cells"]) - statistics.mean(local_fig["cells"])
        print(
            f"ray over local, {name}: {overhead:+.2f} s per cell of makespan;"
            f" node-side cell {cell_delta:+.2f} s"
        )
    print(f"speed-up 1 → 2 nodes: {one['makespan'] / two['makespan']:.2f}×")
    target = ratio(two, 2 * SLOTS)
    print(
        f"target makespan ÷ bound ≤ 1.15 at 2 nodes: {'met' if target <= 1.15 else 'NOT met'} ({target:.3f})"
    )
    return 0


def pairs(count: int, runs: int, stall: float) -> int:
    """The 1 → 2 node speed-up, ``count`` pairs of sweeps run alternately on two clusters."""
    with tempfile.TemporaryDirectory(prefix="wfbench-distbench-") as tmp:
        root = Path(tmp)
        script = stalling_script(root, stall)
        one_node = LoopbackCluster(root / "one", workers=1, slots=SLOTS)
        two_nodes = LoopbackCluster(root / "two", workers=2, slots=SLOTS)
        speedups: list[float] = []
        try:
            for kit, slots in ((one_node, SLOTS), (two_nodes, 2 * SLOTS)):
                began = time.monotonic()
                kit.start()
                kit.wait_slots(slots)
                print(f"cluster of {slots // SLOTS} worker node(s) up in {time.monotonic() - began:.1f} s")
            for index in range(count):
                figures = []
                for name, kit, slots in (("1 node", one_node, SLOTS), ("2 nodes", two_nodes, 2 * SLOTS)):
                    out = root / f"pair{index}-{slots}"
                    figures.append(
                        sweep(kit, out, script, runs, ["--executor", "ray", "--ray-address", kit.address])
                    )
                    print(f"pair {index + 1}: " + line(f"ray, {name}", figures[-1], slots), flush=True)
                speedups.append(figures[0]["makespan"] / figures[1]["makespan"])
                print(f"pair {index + 1}: speed-up 1 → 2 nodes {speedups[-1]:.2f}×", flush=True)
        finally:
            one_node.stop()
            two_nodes.stop()
    low, high = min(speedups), max(speedups)
    print(
        f"{2 * runs} cells, last reply held {stall:g} s: speed-up 1 → 2 nodes, median of {count} pairs"
        f" {statistics.median(speedups):.2f}× (range {low:.2f}–{high:.2f}×)"
    )
    return 0


def against(other: Path, count: int, runs: int, stall: float) -> int:
    """This checkout's makespan ÷ ``other``'s, on two 2-node clusters, ``count`` pairs alternately."""
    trees = {"other": other.resolve() / "src", "this": REPO / "src"}
    with tempfile.TemporaryDirectory(prefix="wfr-ab-", dir="/tmp") as tmp:  # short: Ray's socket paths
        root = Path(tmp)
        script = stalling_script(root, stall)
        kits = {
            name: LoopbackCluster(root / name, workers=2, slots=SLOTS, env={"PYTHONPATH": str(src)})
            for name, src in trees.items()
        }
        ratios: list[float] = []
        try:
            for kit in kits.values():
                kit.start()
                kit.wait_slots(2 * SLOTS)
            for index in range(count):
                figures = {}
                for name, kit in kits.items():
                    argv = ["--executor", "ray", "--ray-address", kit.address]
                    figures[name] = sweep(kit, root / f"{name}{index}", script, runs, argv)
                    print(f"pair {index + 1}: " + line(name, figures[name], 2 * SLOTS), flush=True)
                ratios.append(figures["this"]["makespan"] / figures["other"]["makespan"])
                print(f"pair {index + 1}: this ÷ other makespan {ratios[-1]:.3f}", flush=True)
        finally:
            for kit in kits.values():
                kit.stop()
    print(
        f"this ÷ {other} makespan, 2 nodes × {SLOTS} slots: median {statistics.median(ratios):.3f}"
        f" (range {min(ratios):.3f}–{max(ratios):.3f}), {count} pairs"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
