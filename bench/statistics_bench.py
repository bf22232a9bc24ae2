#!/usr/bin/env python3
"""Time the paired analysis at scale: 1,000 tasks × 2 arms × 5 runs, B = 2,000 (target ≤ 2 s).

Rows: ``--tasks`` (1,000) tasks × 2 arms × ``--runs`` (5) = 10,000 synthetic rows (per-task
resolve rates and cost levels, run noise, a small candidate saving). Timed, median over
``--repeats`` (3) runs, wall and CPU seconds:

* ``samples`` — :func:`paired_samples` from the rows;
* ``analysis`` — :func:`analyze_pair` (resolution and cost: effects, two seeded cluster
  bootstraps of B resamples, t intervals, sign tests, variance components, MDE) plus its
  ``to_mapping()`` (the per-task intervals included): the figure the target applies to;
* ``bootstrap`` — one :func:`bootstrap_means` over 1,000 task effects alone, the hot loop;
* ``judgement`` — the whole :func:`judge_rows` under the statistical policy (aggregation, the
  reference gate, the analysis, the statistical gate), for scale.

Also checked: the same rows give bit-identical statistics twice (``json.dumps`` equal).
The machine's load average is printed: on a shared machine it moves every wall figure.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from wfbench.domain.promotion.judging import PairSpec, judge_rows  # noqa: E402
from wfbench.domain.promotion.policy import DecisionPolicy, PromotionPolicy  # noqa: E402
from wfbench.domain.results.rows import ErrorKind, Row  # noqa: E402
from wfbench.domain.statistics.analysis import AnalysisConfig, analyze_pair  # noqa: E402
from wfbench.domain.statistics.resampling import bootstrap_means  # noqa: E402
from wfbench.domain.statistics.samples import paired_samples  # noqa: E402


def build_rows(tasks: int, runs: int, seed: int) -> list[Row]:
    rnd = random.Random(seed)
    rows = []
    for index in range(tasks):
        rate, level = rnd.uniform(0.2, 0.9), rnd.lognormvariate(0.0, 0.5)
        for arm, shift, factor in (("workflow", 0.0, 1.0), ("candidate_workflow", 0.03, 0.95)):
            for run in range(runs):
                resolved = rnd.random() < min(1.0, rate + shift)
                rows.append(
                    Row(
                        task=f"task-{index:04d}",
                        arm=arm,
                        run=run,
                        ok=True,
                        resolved=resolved,
                        error_kind=None if resolved else ErrorKind.ORACLE_FAILED,
                        cost_usd=level * factor * rnd.lognormvariate(0.0, 0.3),
                        extra={"model": "pinned-model"},
                    )
                )
    return rows


def timed(action: Callable[[], object], repeats: int) -> tuple[float, float, object]:
    walls, cpus, result = [], [], None
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        result = action()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rows = build_rows(args.tasks, args.runs, args.seed)
    config = AnalysisConfig(resamples=args.resamples)
    print(
        f"statistics bench: {args.tasks} tasks x 2 arms x {args.runs} runs = {len(rows)} rows, "
        f"B = {args.resamples}, median of {args.repeats}"
    )
    print(f"python {sys.version.split()[0]}; load average: {' '.join(f'{v:.1f}' for v in os.getloadavg())}")

    def samples() -> object:
        return paired_samples(rows, candidate="candidate_workflow", incumbent="workflow", metric="cost_usd")

    wall, cpu, pair = timed(samples, args.repeats)
    print(f"  samples    wall {wall:6.3f} s   cpu {cpu:6.3f} s")

    def analysis() -> dict[str, object]:
        return analyze_pair(pair, config).to_mapping()  # type: ignore[arg-type]

    wall, cpu, mapping = timed(analysis, args.repeats)
    verdict = "ok" if wall <= 2.0 else "ABOVE TARGET"
    print(f"  analysis   wall {wall:6.3f} s   cpu {cpu:6.3f} s   (target <= 2 s wall: {verdict})")
    effects = [1.0 * k / args.runs - 0.5 for k in range(args.tasks)]
    wall, cpu, _ = timed(lambda: bootstrap_means(effects, seed=7, resamples=args.resamples), args.repeats)
    print(f"  bootstrap  wall {wall:6.3f} s   cpu {cpu:6.3f} s   (one, {args.tasks} effects)")
    policy = PromotionPolicy(decision_policy=DecisionPolicy.STATISTICAL, resamples=args.resamples)
    spec = [PairSpec("candidate_workflow", "workflow")]
    wall, cpu, judged = timed(
        lambda: judge_rows(rows, spec, model="pinned-model", policy=policy), args.repeats
    )
    decision = judged[1][0]  # type: ignore[index]
    print(f"  judgement  wall {wall:6.3f} s   cpu {cpu:6.3f} s   ({decision.kind.value})")
    again = analyze_pair(pair, config).to_mapping()  # type: ignore[arg-type]
    identical = json.dumps(again) == json.dumps(mapping)
    res = mapping["resolution"]  # type: ignore[index]
    print(
        f"  resolution {res['effect']:+.2f} pts [{res['ci_low']:+.2f}, {res['ci_high']:+.2f}], "
        f"cost saving {mapping['effect']:.2f}% [{mapping['ci_low']:.2f}, {mapping['ci_high']:.2f}]; "  # type: ignore[index]
        f"bit-identical on a second run: {identical}"
    )
    if not identical or not math.isfinite(mapping["effect"]):  # type: ignore[index]
        raise SystemExit(1)


if __name__ == "__main__":
    main()
