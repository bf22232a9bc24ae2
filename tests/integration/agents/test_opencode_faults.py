"""OpenCode's real CLI under injected provider faults: 529, 503, 500, a truncated stream, a stall.

OpenCode 1.18.33 retries a 429/5xx/timed-out request itself, five times with backoff of 2, 4, 8,
16 and 32 s (plus up to 25 % jitter; ``packages/opencode/src/session/retry.ts``,
``RETRY_MAX_RETRIES = 5``) and no setting or variable turns that off (opencode issue #43596,
still open): an injected failure keeps a session alive for over a minute. wfbench's session
timeout bounds it: the cell ends by ``--timeout`` as a ``session-error`` whose detail names the
provider's failing status or cut reply as the key proxy saw them (a provider fault, excluded
from quality like every agent's), never as the agent's success. In the ``nightly`` tier: one
sweep of five cells at once, about 85 s wall at load 20 (the timeout dominates).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import require_or_skip
from tests.support.sweep_kit import (
    USAGE,
    base_files,
    bwrap_or_skip,
    by_task,
    impl_task,
    make_repo,
    run_sweep,
    tell,
    write_corpus,
)

pytestmark = [pytest.mark.opencode, pytest.mark.bwrap, pytest.mark.slow, pytest.mark.nightly]

USAGE_FIELDS = tuple(USAGE)
#: The session timeout of the fault sweep: above OpenCode's start-up and first request on a loaded
#: machine (observed: over 45 s at load 20), below its own retries' 62–78 s.
TIMEOUT_S = 60


def _turn(*tools: dict[str, Any], say: str | None = None, **fields: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"usage": dict(USAGE), **fields}
    if tools:
        out["tools"] = list(tools)
    if say is not None:
        out["say"] = say
    return out


def _write(text: str) -> dict[str, Any]:
    return {"name": "write", "input": {"filePath": "{workspace}/out.txt", "content": text}}


def _rule(task_id: str, *turns: dict[str, Any]) -> dict[str, Any]:
    return {"when": [f"CASE {task_id}:"], "protocol": "anthropic-messages", "turns": list(turns)}


#: fault → (its rule's turns, phrases one of which the row's error_detail holds)
FAULTS: dict[str, tuple[tuple[dict[str, Any], ...], tuple[str, ...]]] = {
    "f529": ((_turn(_write("partial\n")), {"status": 529}), ("529",)),
    "f503": (({"status": 503},), ("503",)),
    "f500": (({"status": 500},), ("500",)),
    "truncated": (({**_turn(say="cut short here"), "truncate_after_events": 3},), ("cut",)),
    "stall": (({"stall_s": 120, "say": "too late"},), ("timeout",)),
}


def _opencode_or_skip() -> None:
    from wfbench.cli.bootstrap import find_opencode

    bwrap_or_skip()
    if find_opencode() is None:
        require_or_skip("WFBENCH_REQUIRE_OPENCODE", "the real OpenCode CLI is not installed")


@pytest.fixture(scope="module")
def fault_sweep(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """One sweep, every fault a cell of its own, all at once (``--workers`` = the fault count)."""
    _opencode_or_skip()
    root = tmp_path_factory.mktemp("opencode-faults")
    make_repo(root, base_files())
    rules = [_rule(task, *turns) for task, (turns, _) in FAULTS.items()]
    corpus = write_corpus(root, [impl_task(task) for task in FAULTS], {"conversations": rules})
    out = root / "out"
    done = run_sweep(
        corpus,
        out,
        *("--agent", "opencode", "--arms", "baseline", "--outage-streak", "0"),
        *("--workers", str(len(FAULTS)), "--timeout", str(TIMEOUT_S)),
        *("--throttle-backoff", "0", "--throttle-retries", "0"),
        timeout=600,
    )
    return out, done


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_each_fault_ends_by_the_session_timeout_as_the_providers_session_error(fault_sweep, fault) -> None:  # type: ignore[no-untyped-def]
    """529/503/500/a cut stream/a stall: session-error naming the fault, never a success, bounded in time."""
    out, done = fault_sweep
    assert done.returncode == 0, tell(done)
    row = by_task(out)[fault]
    assert (row["ok"], row["resolved"], row["error_kind"]) == (False, False, "session-error"), row
    assert any(phrase in row["error_detail"] for phrase in FAULTS[fault][1]), row["error_detail"]
    assert row["duration_s"] < TIMEOUT_S + 30  # OpenCode's own retries never outlast the timeout
    assert row["agent_reported_usage"] == dict.fromkeys(USAGE_FIELDS)  # an errored session reports nothing
    assert row["oracle_passed"] is None


def test_a_fault_after_a_measured_turn_keeps_that_turns_usage_from_the_wire(fault_sweep) -> None:  # type: ignore[no-untyped-def]
    out, _ = fault_sweep
    row = by_task(out)["f529"]
    assert row["usage_source"] == "wire"
    assert {name: row[name] for name in USAGE_FIELDS} == USAGE
