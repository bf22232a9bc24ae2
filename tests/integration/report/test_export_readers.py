"""The demo sweep's exports read back by their own readers: Harbor's ATIF validator, Inspect AI's log reader.

Each reader lives in a cached venv of its own (``scripts/install-tools``): Harbor needs Python >= 3.12
and Inspect AI brings many dependencies, neither of which wfbench's own environment should carry.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import require_or_skip
from tests.support.demo_run import rows, wfbench

CACHE = Path(os.environ.get("WFBENCH_CACHE", os.path.expanduser("~/.cache/wfbench")))
INSPECT_PYTHON = CACHE / "inspect-ai-0.3.285" / "bin" / "python"
HARBOR_PYTHON = CACHE / "harbor-0.25.0" / "bin" / "python"

VALIDATE_ATIF = """
import json, sys
from harbor.models.trajectories.trajectory import Trajectory
from harbor.utils.trajectory_validator import TrajectoryValidator
failures, prompts = {}, {}
for path in sys.argv[1:]:
    validator = TrajectoryValidator()
    if not validator.validate(path):
        failures[path] = validator.errors
    with open(path) as handle:
        steps = Trajectory.model_validate_json(handle.read()).steps
    prompts[path] = next((s.message for s in steps if s.source == "user"), None)
print(json.dumps({"failures": failures, "prompts": prompts}))
"""

READ_INSPECT = """
import json, sys
from inspect_ai.log import read_eval_log
log = read_eval_log(sys.argv[1])
print(json.dumps({
    "status": log.status,
    "samples": [
        {"id": s.id, "epoch": s.epoch, "metadata": s.metadata, "input": s.input,
         "scores": {k: v.value for k, v in (s.scores or {}).items()}, "messages": len(s.messages)}
        for s in log.samples
    ],
}))
"""


def _reader(python: Path, env_var: str, what: str) -> Path:
    if not python.exists():
        require_or_skip(env_var, f"{what} is not installed ({python}; run scripts/install-tools)")
    return python


def test_every_atif_file_of_the_demo_sweep_passes_harbors_own_validator(demo_out, tmp_path):
    python = _reader(HARBOR_PYTHON, "WFBENCH_REQUIRE_HARBOR", "Harbor's ATIF validator (harbor 0.25.0)")
    sweep, _ = demo_out
    done = wfbench("export", str(sweep), "--format", "atif", "--out", str(tmp_path / "atif"))
    assert done.returncode == 0, done.stderr
    files = sorted(str(p) for p in (tmp_path / "atif" / "cells").rglob("*.json"))
    sessions = sum(len(r["transcript_artifacts"]) for r in rows(sweep))
    assert len(files) == sessions > 0
    checked = subprocess.run(
        [str(python), "-c", VALIDATE_ATIF, *files], capture_output=True, text=True, timeout=120, check=True
    )
    read = json.loads(checked.stdout)
    assert read["failures"] == {}
    for path, prompt in read["prompts"].items():  # each session starts with the prompt it was sent
        cell = Path(path).parent
        phase = Path(path).name.split("-", 1)[0]
        sent = json.loads((sweep / cell.relative_to(tmp_path / "atif") / "prompts.json").read_text())
        assert prompt == next(p["prompt"] for p in sent["phases"] if p["phase"] == phase), path


def test_inspects_own_reader_loads_the_demo_sweep_with_every_cell_a_sample_and_the_rows_scores(
    demo_out, tmp_path
):
    python = _reader(INSPECT_PYTHON, "WFBENCH_REQUIRE_INSPECT", "Inspect AI (inspect-ai 0.3.285)")
    sweep, _ = demo_out
    done = wfbench("export", str(sweep), "--format", "inspect", "--out", str(tmp_path / "inspect"))
    assert done.returncode == 0, done.stderr
    (log,) = (tmp_path / "inspect").glob("*.json")
    read = subprocess.run(
        [str(python), "-c", READ_INSPECT, str(log)], capture_output=True, text=True, timeout=120, check=False
    )
    assert read.returncode == 0, read.stderr[-2000:]
    loaded = json.loads(read.stdout)
    assert loaded["status"] == "success"
    samples = {
        (s["metadata"]["task"], s["metadata"]["arm"], s["metadata"]["run"]): s for s in loaded["samples"]
    }
    expected = rows(sweep)
    assert len(samples) == len(loaded["samples"]) == len(expected)
    for row in expected:
        sample = samples[(row["task"], row["arm"], row["run"])]
        assert (sample["id"], sample["epoch"]) == (f"{row['task']}/{row['arm']}", row["run"] + 1)
        assert sample["scores"]["resolved"] == ("C" if row["resolved"] else "I")
        assert sample["scores"]["cost"] == pytest.approx(row["cost_usd"])
        assert sample["messages"] > 0
        prompts = json.loads(
            (sweep / f"cells/{row['task']}/{row['arm']}/run-{row['run']}/prompts.json").read_text()
        )
        assert sample["input"] == prompts["phases"][0]["prompt"]
    reviews = [s for (task, _, _), s in samples.items() if task.startswith("review")]
    assert reviews
    assert all("quality" in s["scores"] for s in reviews)
