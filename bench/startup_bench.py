#!/usr/bin/env python3
"""Start-up of the file-level ``wfbench`` commands, as a ratio to a bare ``python3 -c pass``.

Each command is run as a fresh ``python3 -m wfbench …`` process (the interpreter of this script,
never a shim), interleaved with the bare interpreter round by round so that the machine's load
hits both alike; the figures are medians. Absolute times on a shared machine are noisy; the
ratio measured side by side is the stable figure (``docs/performance.md``, "Start-up").

    python3 bench/startup_bench.py [--rounds 15] [--max-ratio 6.0] [--src OTHER/src]

The budget is the issue's "0.3 s on this machine, where a bare interpreter takes 0.05 s", kept
as the ratio it implies (6.0x), because the ratio survives the machine's load and the seconds do
not. Exits 1 when a command's median ratio exceeds ``--max-ratio``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: A command's first word that sets ``WFBENCH_TYPER_ONLY=1`` for it (``wfbench gate`` through Typer).
TYPER_ONLY = "WFBENCH_TYPER_ONLY=1"
ARTIFACT = {"schema_version": 1, "verdict": "approve", "findings": []}
LABELS = {"schema_version": 1, "findings": []}


def _fixtures(root: Path) -> dict[str, list[str]]:
    """The commands to time, over small valid inputs written under ``root``."""
    artifact, labels = root / "review-output.json", root / "labels.json"
    artifact.write_text(json.dumps(ARTIFACT))
    labels.write_text(json.dumps(LABELS))
    results = root / "results.jsonl"
    row = {
        "task": "t",
        "arm": "workflow",
        "run": 0,
        "ok": True,
        "resolved": True,
        "error_kind": None,
        "cost_usd": 0.1,
        "model": "claude-sonnet-4-5",
    }
    results.write_text(json.dumps(row) + "\n")
    sweep = root / "sweep"
    sweep.mkdir()
    (sweep / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _small_sweep(row)))
    return {
        "python3 -c pass": ["-c", "pass"],
        "python3 -c 'import typer'": ["-c", "import typer"],
        # what every command with a typed parameter also pays: Typer's pydantic TypeAdapters
        "python3 -c 'import typer._adapters'": ["-c", "import typer._adapters"],
        "wfbench --help": ["-m", "wfbench", "--help"],
        "wfbench --version": ["-m", "wfbench", "--version"],
        "wfbench run --help": ["-m", "wfbench", "run", "--help"],
        "wfbench review score A L": ["-m", "wfbench", "review", "score", str(artifact), str(labels)],
        "wfbench gate RESULTS": ["-m", "wfbench", "gate", str(results)],
        # a judged pair (5 tasks x 2 arms x 3 runs): the statistics load and a bootstrap runs
        "wfbench gate SWEEP": ["-m", "wfbench", "gate", str(sweep)],
        "wfbench gate SWEEP --json": ["-m", "wfbench", "gate", str(sweep), "--json"],
        # the same through Typer (what the front saves; WFBENCH_TYPER_ONLY=1)
        "wfbench gate SWEEP (Typer)": [TYPER_ONLY, "-m", "wfbench", "gate", str(sweep)],
    }


def _small_sweep(row: dict[str, object]) -> list[dict[str, object]]:
    """A small sweep with one pair to judge: the candidate is cheaper on every task, runs vary."""
    return [
        {**row, "task": f"t{task}", "arm": arm, "run": run, "cost_usd": base + 0.01 * run + 0.03 * task}
        for task in range(5)
        for arm, base in (("workflow", 1.0), ("candidate_workflow", 0.6))
        for run in range(3)
    ]


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _time(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one child running ``args``."""
    if args[:1] == [TYPER_ONLY]:
        args, env = args[1:], {**env, "WFBENCH_TYPER_ONLY": "1"}
    cpu, started = _cpu(), time.perf_counter()
    done = subprocess.run([sys.executable, *args], capture_output=True, env=env, check=False)
    took = time.perf_counter() - started
    if done.returncode not in (0, 3):
        raise SystemExit(f"{args}: exit {done.returncode}: {done.stderr.decode()[-400:]}")
    return took, _cpu() - cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--max-ratio", type=float, default=6.0)
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="another checkout's src to time")
    opts = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(opts.src)}
    with tempfile.TemporaryDirectory() as tmp:
        commands = _fixtures(Path(tmp))
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for args in commands.values():  # warm the page cache and the bytecode
            _time(args, env)
        for _ in range(opts.rounds):
            for name, args in commands.items():
                samples[name].append(_time(args, env))
    bare = statistics.median(wall for wall, _ in samples["python3 -c pass"])
    bare_cpu = statistics.median(cpu for _, cpu in samples["python3 -c pass"])
    print(f"{'command':<30} {'wall s':>7} {'p90 s':>6} {'ratio':>6} {'CPU s':>6} {'ratio':>6}")
    over = []
    for name, values in samples.items():
        median = statistics.median(wall for wall, _ in values)
        cpu = statistics.median(cpu for _, cpu in values)
        p90 = sorted(wall for wall, _ in values)[int(0.9 * (len(values) - 1))]
        print(
            f"{name:<30} {median:>7.3f} {p90:>6.3f} {median / bare:>6.1f} {cpu:>6.3f}"
            f" {cpu / max(bare_cpu, 1e-3):>6.1f}"
        )
        if name.startswith("wfbench") and "(Typer)" not in name and median / bare > opts.max_ratio:
            over.append(name)
    print(
        f"rounds={opts.rounds} max ratio={opts.max_ratio} python={sys.executable}"
        f" load={os.getloadavg()[0]:.1f}"
    )
    if over:
        print("over budget: " + ", ".join(over))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
