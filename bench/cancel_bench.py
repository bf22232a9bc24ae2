#!/usr/bin/env python3
"""How long Ctrl-C takes: one SIGINT (graceful: running cells stop and keep their measurements)
against two (force-quit), measured on real sweeps through ``python3 -m wfbench run``.

Each trial is a one-task sweep whose verify ignores SIGTERM and sleeps, so the graceful path has
to wait out the 5 s SIGTERM grace before SIGKILL while the force-quit does not. The clock starts at
the (last) SIGINT and stops when the wfbench process has exited *and* no process of the sweep is
left (a unique ``sleep`` token). ``--sandbox`` picks the backend (``host-unsafe`` shows the grace
period; under ``bwrap`` SIGTERM to bwrap ends the whole sandbox at once).

    python3 bench/cancel_bench.py [--trials 3] [--sandbox host-unsafe|bwrap]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.sweep_kit import (  # noqa: E402 - after the path setup
    WFBENCH,
    base_files,
    impl_task,
    make_repo,
    processes_with,
    rule,
    turn,
    write,
    write_corpus,
)


def _trial(root: Path, sandbox: str, signals: int) -> float:
    token = f"{uuid.uuid4().int % 10**6}.{uuid.uuid4().int % 10**4}"
    make_repo(root, base_files())
    task = impl_task("t1", verify=f"trap '' TERM INT; sleep {token}; sleep {token}")
    script = {"conversations": [rule("t1", turn(write("notes.txt", "x\n")), turn(say="done"))]}
    corpus = write_corpus(root, [task], script)
    scratch = root / "tmp"
    scratch.mkdir()
    env = {
        **{k: v for k, v in os.environ.items() if k != "CI"},
        "TMPDIR": str(scratch),
        "PYTHONPATH": str(ROOT / "src"),
    }
    argv = [
        *WFBENCH,
        "run",
        str(corpus),
        "--out",
        str(root / "out"),
        "--arms",
        "baseline",
        "--sandbox",
        sandbox,
    ]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + 120
    while not processes_with(f"sleep {token}") and time.monotonic() < deadline:
        time.sleep(0.05)
    for index in range(signals):
        if index:
            time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
    started = time.monotonic()
    proc.wait(timeout=60)
    while processes_with(token) and time.monotonic() - started < 60:
        time.sleep(0.02)
    return time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--sandbox", default="host-unsafe", choices=("host-unsafe", "bwrap"))
    opts = parser.parse_args()
    results: dict[str, list[float]] = {"one SIGINT (graceful)": [], "two SIGINTs (force-quit)": []}
    with tempfile.TemporaryDirectory() as tmp:
        for trial in range(opts.trials):
            for signals, name in ((1, "one SIGINT (graceful)"), (2, "two SIGINTs (force-quit)")):
                root = Path(tmp) / f"{trial}-{signals}"
                root.mkdir()
                results[name].append(_trial(root, opts.sandbox, signals))
    print(f"sandbox={opts.sandbox} trials={opts.trials} (s from the last SIGINT until no process is left)")
    for name, values in results.items():
        print(f"{name:<28} median {statistics.median(values):6.2f}  max {max(values):6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
