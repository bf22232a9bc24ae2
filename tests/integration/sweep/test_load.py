"""Load: a whole sweep of many small cells at workers 8 (the CI-sized version of bench/load_sweep.py).

No timing or memory-size assertions here (figures belong to the benchmark); what is asserted is
that nothing is lost, duplicated or left running, and that the sweep's model endpoint keeps no
per-request state (the cause of the memory growth the benchmark found).
"""

from __future__ import annotations

import gc
import json
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import pytest
import yaml
from bench.load_sweep import ARMS, processes_mentioning, provider_script, run_load

from tests.conftest import require_or_skip
from wfbench.adapters.provider.records import RecordedRequest
from wfbench.adapters.provider.script import ProviderScript
from wfbench.adapters.provider.scripted import ScriptedProvider
from wfbench.cli import bootstrap as boot

REQUESTS = 20


def _bwrap_or_skip() -> None:
    probe = shutil.which("bwrap") and subprocess.run(
        ["bwrap", "--ro-bind", "/", "/", "true"], capture_output=True, check=False
    )
    if not probe or probe.returncode != 0:
        require_or_skip("WFBENCH_REQUIRE_BWRAP", "bubblewrap cannot run here")


def test_a_40_cell_sweep_at_workers_8_loses_no_row_duplicates_none_and_leaks_nothing(tmp_path: Path):
    """20 tasks × 2 arms × 1 run at workers 8: 40 whole rows, 40 distinct cells, no process/mount/tmp left."""
    _bwrap_or_skip()
    result = run_load(tmp_path, tasks=20, runs=1, workers=8, timeout=600)
    assert result.exit_code == 0, result.stderr_tail
    assert (result.cells, result.rows, result.duplicate_cells) == (40, 40, 0)
    assert dict(result.kinds) == {"ok": 40}
    assert result.leaked_pids == ()
    assert result.leaked_mounts == 0
    assert result.leftover_tmp == ()
    assert result.rss_samples > 0


def test_every_row_of_a_load_sweep_is_a_distinct_cell_of_the_plan(tmp_path: Path):
    """The rows cover exactly task × arm × run of the plan (no missing cell hidden by an extra one)."""
    _bwrap_or_skip()
    run_load(tmp_path, tasks=6, runs=2, workers=8, timeout=600)
    lines = (tmp_path / "out" / "results.jsonl").read_text().splitlines()
    got = sorted((r["task"], r["arm"], r["run"]) for r in map(json.loads, lines))
    want = sorted((f"load-{t:03d}", arm, run) for t in range(6) for arm in ARMS for run in range(2))
    assert got == want


def _seen_within(predicate: Callable[[], bool], seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_the_leak_scan_finds_a_process_that_mentions_the_run_root(tmp_path: Path):
    """Negative control: a live process whose command line names the root is reported as leaked."""
    marker = tmp_path / "marker"
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", str(marker)])
    try:
        assert _seen_within(lambda: child.pid in processes_mentioning(str(tmp_path)))
    finally:
        child.kill()
        child.wait()
    assert _seen_within(lambda: child.pid not in processes_mentioning(str(tmp_path)))


def _post_messages(base_url: str, key: str = "k") -> None:
    body = {"model": "m", "max_tokens": 16, "messages": [{"role": "user", "content": "hello"}]}
    request = urllib.request.Request(
        base_url + "/v1/messages",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", "x-api-key": key, "anthropic-version": "2023-06-01"},
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        assert reply.status == 200


def _live_recorded_requests() -> int:
    gc.collect()
    return sum(isinstance(obj, RecordedRequest) for obj in gc.get_objects())


def _script_file(tmp_path: Path) -> Path:
    path = tmp_path / "script.yaml"
    path.write_text(yaml.safe_dump(provider_script(), sort_keys=False))
    return path


def _sweep_endpoint(script: Path) -> AbstractContextManager[boot.Endpoint]:
    return boot.endpoint(script_path=str(script), base_url=None, environ={}, warn=print)


def _plain_provider(script: Path) -> AbstractContextManager[ScriptedProvider]:
    return ScriptedProvider(ProviderScript.load(script))


def _url(entered: object) -> str:
    return entered.base_url  # type: ignore[attr-defined,no-any-return]


@pytest.mark.parametrize(
    ("opener", "kept"),
    [(_sweep_endpoint, 0), (_plain_provider, REQUESTS)],
    ids=["sweep-endpoint-keeps-none", "control-plain-provider-keeps-all"],
)
def test_the_sweeps_model_endpoint_keeps_no_request_in_memory(
    tmp_path: Path, opener: Callable[[Path], AbstractContextManager[object]], kept: int
):
    """The sweep's scripted endpoint keeps no request (flat memory); the control proves the probe works."""
    before = _live_recorded_requests()
    with opener(_script_file(tmp_path)) as entered:
        for _ in range(REQUESTS):
            _post_messages(_url(entered), getattr(entered, "api_key", "k"))  # the key proxy wants its token
        assert _live_recorded_requests() - before == kept
