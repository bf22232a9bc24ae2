#!/usr/bin/env python3
"""Where ``wfbench report``'s memory goes: peak and current RSS after each phase of the command.

Runs the steps of ``wfbench report RESULTS`` (``cli/commands/gate._report_model`` then the streamed
write) in this process, with a checkpoint after each: the one pass over the rows, the gate, the
evidence mapping, the model, and the two files written. Each line prints the process's current
RSS (``/proc/self/statm``), its peak so far (``ru_maxrss``) and its CPU time, so the phase that
raises the peak is the one whose line first shows it. The reports are written beside RESULTS,
as the command writes them.

    python3 bench/report_phases.py /tmp/wfbench-gate-bench/rows-100000-seed7/results.jsonl

(``bench/gate_bench.py`` builds such files.) A measurement, not a test: on a shared machine the
CPU column moves a little with the load, the memory columns do not.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

_STARTED = time.process_time()


def checkpoint(name: str) -> None:
    """One line: the phase just done, current and peak RSS, CPU seconds so far."""
    with open("/proc/self/statm", encoding="ascii") as handle:
        current = int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    cpu = time.process_time() - _STARTED
    print(f"{name:<22} current {current:8,.0f} MiB   peak {peak:8,.0f} MiB   CPU {cpu:7.1f} s", flush=True)


def main() -> int:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("results", type=Path)
    args = parser.parse_args()

    from wfbench.adapters.store.clock import SystemClock
    from wfbench.adapters.store.jsonl_store import JsonlResultStore
    from wfbench.adapters.store.streamed_files import write_texts_atomic
    from wfbench.adapters.store.sweep_files import FileSweepDirectory
    from wfbench.app.gating.sweep_facts import gate_sweep
    from wfbench.app.report.model import ReportInputs, aggregates_only
    from wfbench.app.report.render import read_for_report, report_parts
    from wfbench.app.report.verdicts import detectability_of
    from wfbench.app.sweep import concurrency
    from wfbench.domain.promotion.policy import DEFAULT_POLICY

    checkpoint("imports")
    source = args.results / "results.jsonl" if args.results.is_dir() else args.results
    directory = FileSweepDirectory(str(source.parent))
    read, builder = read_for_report(JsonlResultStore(source).iter_rows())
    gc.collect()
    checkpoint("one pass")
    result = gate_sweep(read, policy=DEFAULT_POLICY, pairs=None, directory=directory, clock=SystemClock())
    summary, evidence, decisions = aggregates_only(read.summary), result.evidence, result.decisions
    del read, result
    gc.collect()
    checkpoint("gate (samples dropped)")
    promotion = None if evidence is None else evidence.to_mapping()
    del evidence
    gc.collect()
    checkpoint("evidence mapping")
    inputs = ReportInputs(
        title="wfbench workflow benchmark",
        promotion=promotion,
        detectability=detectability_of(decisions, promotion),
        concurrency=concurrency.report_lines(concurrency.read_history(str(source.parent))),
    )
    del decisions, promotion
    model = builder.build(summary, inputs)
    del builder, summary, inputs
    gc.collect()
    checkpoint("model")
    markdown, page = report_parts(model)
    write_texts_atomic([(source.parent / "report.md", markdown), (source.parent / "report.html", page)])
    checkpoint("both files written")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
