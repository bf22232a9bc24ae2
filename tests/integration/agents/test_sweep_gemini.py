"""The demo sweep (`wfbench run --agent gemini`, a subprocess) with the real Gemini CLI under bwrap.

The acceptance of issue 30 for Gemini CLI: on the demo's fix-median and review-pr-41 tasks the
default arms tell Claude Code's story — the workflow resolves, the baseline's integer-division
median fails the hidden oracle, the candidate resolves, the review finds PR #41's defect — with
usage metered at the wire, the agent's own report beside it, and a cost from Google's prices
(once the price table has them).
Required in CI (``WFBENCH_REQUIRE_GEMINI=1``, ``WFBENCH_REQUIRE_BWRAP=1``). About 80 s.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import gemini_binary, require_or_skip
from tests.support.demo_run import wfbench
from tests.support.sweep_kit import bwrap_or_skip, rows, tell

pytestmark = [pytest.mark.gemini, pytest.mark.bwrap, pytest.mark.slow]


def test_the_demo_on_gemini_cli_tells_the_same_story_metered_at_the_wire(tmp_path: Path) -> None:
    bwrap_or_skip()
    if gemini_binary() is None:
        require_or_skip("WFBENCH_REQUIRE_GEMINI", "the real Gemini CLI is not installed")
    out = tmp_path / "out"
    done = wfbench(
        *("run", "--agent", "gemini", "--model", "gemini-2.5-pro", "--runs", "1", "--workers", "2"),
        *("--tasks", "fix-median,review-pr-41", "--out", str(out)),
        timeout=600,
    )
    assert done.returncode == 0, tell(done)
    table = {(r["task"], r["arm"]): r for r in rows(out)}
    story = {key: (r["resolved"], r["error_kind"]) for key, r in table.items()}
    assert story == {
        ("fix-median", "workflow"): (True, None),
        ("fix-median", "baseline"): (False, "oracle-failed"),
        ("fix-median", "candidate_workflow"): (True, None),
        ("review-pr-41", "review"): (True, None),
    }
    assert table[("review-pr-41", "review")]["review_weighted_f1"] == 1.0
    work = table[("fix-median", "workflow")]
    assert (work["agent"], work["agent_version"], work["skill_invoked"]) == (
        "gemini",
        "0.61.0 (Gemini CLI)",
        True,
    )
    # Plan: 3 requests of 1700 uncached + 13000 cached, 500 + 100 thinking out; work: 3 of 1900 +
    # 13000, 700 + 120. Metered at the wire; the CLI's report agrees; priced as gemini-2.5-pro.
    assert work["usage_source"] == "wire"
    assert work["wire_requests"] == 6
    fields = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
    assert tuple(work[f] for f in fields) == (10800, None, 78000, 4260)
    assert work["agent_reported_usage"] == dict(zip(fields, (10800, None, 78000, 4260), strict=True))
    # Priced at the wire when gemini-2.5-pro has a price (the Google table of issue 29's price work:
    # $1.25/M input, $0.125/M cache reads, $10/M output); n/a (None), never 0, without one.
    assert work["cost_usd"] in (None, pytest.approx(0.06585))
    candidate = table[("fix-median", "candidate_workflow")]
    assert candidate["output_tokens"] < work["output_tokens"]  # the concise plan skill was followed
