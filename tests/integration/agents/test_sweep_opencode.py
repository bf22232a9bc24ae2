"""The demo sweep (`wfbench run --agent opencode`, a subprocess) with the real OpenCode under bwrap.

The acceptance of issue 30 for OpenCode: on the demo's fix-median and review-pr-41 tasks the
default arms tell Claude Code's story — the workflow resolves, the baseline's integer-division
median fails the hidden oracle, the candidate resolves (cheaper: its concise plan skill was
followed), the review finds PR #41's defect — with usage metered at the wire, OpenCode's own
report (usage and its own cost) beside it and equal. Required in CI
(``WFBENCH_REQUIRE_OPENCODE=1``, ``WFBENCH_REQUIRE_BWRAP=1``). About 75 s.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import opencode_binary, require_or_skip
from tests.support.demo_run import wfbench
from tests.support.sweep_kit import bwrap_or_skip, rows, tell

pytestmark = [pytest.mark.opencode, pytest.mark.bwrap, pytest.mark.slow]


def test_the_demo_on_opencode_tells_the_same_story_metered_at_the_wire(tmp_path: Path) -> None:
    bwrap_or_skip()
    if opencode_binary() is None:
        require_or_skip("WFBENCH_REQUIRE_OPENCODE", "the real OpenCode CLI is not installed")
    out = tmp_path / "out"
    done = wfbench(
        *("run", "--agent", "opencode", "--runs", "1", "--workers", "2"),
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
        "opencode",
        "1.18.33 (OpenCode)",
        True,
    )
    # Plan: 3 requests (skill, write, done); work: 4 (skill, read, edit + write, done). No title
    # request: every request is a step OpenCode reports, so the wire and its report agree.
    assert (work["usage_source"], work["wire_requests"]) == ("wire", 7)
    fields = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
    assert tuple(work[f] for f in fields) == (13650, 9000, 95500, 5140)
    assert work["agent_reported_usage"] == dict(zip(fields, (13650, 9000, 95500, 5140), strict=True))
    assert work["cost_usd"] == pytest.approx(0.18045)  # claude-sonnet-4-5's price at the wire
    assert work["agent_reported_cost_usd"] == pytest.approx(work["cost_usd"], abs=1e-3)  # OpenCode's own
    candidate = table[("fix-median", "candidate_workflow")]
    assert candidate["output_tokens"] < work["output_tokens"]  # the concise plan skill was followed
