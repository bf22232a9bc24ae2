"""The viewer's pages over an in-memory sweep: cell pages, transcripts, diffs, routes (no disk)."""

from __future__ import annotations

import json
from typing import Any

import attrs

from wfbench.app.report.diff import render_diff
from wfbench.app.report.site import SweepSite
from wfbench.app.report.transcript import TEXT_LIMIT, read_transcript
from wfbench.domain.results.rows import Row

HOSTILE = '<script>alert("x")</script>'


@attrs.frozen
class FakeArtifact:
    path: str
    state: str
    data: bytes = b""
    size: int | None = None
    detail: str | None = None

    @property
    def readable(self) -> bool:
        return self.state in ("ok", "too-large")

    def text(self) -> str:
        return self.data.decode("utf-8", "replace")


class FakeSweep:
    """The SweepSource port over dicts: rows by line, files by path."""

    def __init__(self, rows: list[dict[str, Any]], files: dict[str, bytes], promotion: Any = None) -> None:
        self.lines = [json.dumps(r) for r in rows]
        self.files = files
        self.promotion = promotion
        self.reads: list[str] = []

    def scan(self, problems=None):
        offset = 0
        for line in self.lines:
            yield offset, Row.from_mapping(json.loads(line))
            offset += len(line) + 1

    def row_at(self, offset):
        position = 0
        for line in self.lines:
            if position == offset:
                return json.loads(line)
            position += len(line) + 1
        return None

    def json_file(self, name):
        return (self.promotion, "ok") if name == "promotion.json" and self.promotion else (None, "missing")

    def artifact(self, rel, *, limit):
        self.reads.append(rel)
        if rel not in self.files:
            return FakeArtifact(rel, "missing")
        data = self.files[rel]
        return FakeArtifact(rel, "too-large" if len(data) > limit else "ok", data[:limit], len(data))


def _events(*events: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(e).encode() + b"\n" for e in events)


TRANSCRIPT = _events(
    {"type": "system", "subtype": "init", "model": "m", "tools": ["Edit"], "cwd": "/workspace"},
    {
        "type": "assistant",
        "message": {
            "content": [
                {"type": "text", "text": f"I will fix it {HOSTILE}"},
                {
                    "type": "tool_use",
                    "id": "t1",
                    "name": "Edit",
                    "input": {"file_path": "a.py", "new_string": HOSTILE},
                },
                {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "false"}},
            ]
        },
    },
    {
        "type": "user",
        "message": {
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "updated"},
                {
                    "type": "tool_result",
                    "tool_use_id": "t2",
                    "content": [{"type": "text", "text": "exit 1"}],
                    "is_error": True,
                },
            ]
        },
    },
    {
        "type": "result",
        "subtype": "success",
        "num_turns": 2,
        "total_cost_usd": 0.01,
        "usage": {"output_tokens": 5},
    },
)

PATCH = b"""diff --git a/calc/x.py b/calc/x.py
--- a/calc/x.py
+++ b/calc/x.py
@@ -1,3 +1,3 @@
 def f():
-    return '<b>old</b>'
+    return "<script>new</script>"
 # end
"""


def _row(**fields: Any) -> dict[str, Any]:
    base = {
        "task": "t",
        "arm": "workflow",
        "run": 0,
        "ok": True,
        "resolved": True,
        "kind": "implementation",
        "cost_usd": 0.5,
        "cell_wall_s": 3.25,
        "duration_s": 0.0,
        "authored_tests_passed": True,
        "oracle_passed": True,
        "verify_output": f"1 passed {HOSTILE}",
        "oracle_output": "hidden oracle passed",
        "patch_artifact": "cells/t/workflow/run-0/patch.diff",
        "diff_files": 1,
        "transcript_artifacts": [
            {
                "path": "cells/t/workflow/run-0/transcripts/work-s1.jsonl",
                "sha256": "a" * 64,
                "bytes": len(TRANSCRIPT),
                "source": "parent-captured-stream-json",
            }
        ],
        "evidence_diagnostics": [f"shadowed file {HOSTILE}"],
    }
    return {**base, **fields}


FILES = {
    "cells/t/workflow/run-0/patch.diff": PATCH,
    "cells/t/workflow/run-0/transcripts/work-s1.jsonl": TRANSCRIPT,
}


def _page(site: SweepSite, path: str) -> str:
    response = site.render(path)
    assert response.status == 200, (path, response.body[:200])
    return response.body.decode()


def test_a_cell_page_shows_outcome_verify_oracle_patch_transcript_diagnostics_and_row():
    """Everything behind the cell's numbers, in order, with agent text escaped."""
    site = SweepSite(FakeSweep([_row(), _row(run=1, resolved=False, error_kind="oracle-failed")], FILES))
    page = _page(site, "/cells/t/workflow/run-0.html")

    order = [
        "Verify (authored tests",
        "Hidden oracle",
        "<h2>Patch",
        "<h2>Transcripts",
        "Evidence diagnostics",
        "<h2>Row",
    ]
    assert [page.index(h) for h in order] == sorted(page.index(h) for h in order)
    assert "3.25 s" in page  # the real cell wall time
    assert "run 1 →" in page
    oracle = page[page.index("Hidden oracle") : page.index("<h2>Patch")]
    assert "passed: <b>yes</b>" in oracle
    assert "hidden oracle passed" not in oracle  # pass/fail only, never what the oracle printed
    assert "tool call: Edit" in page
    assert "result (error)" in page
    assert "exit 1" in page
    assert "session ended" in page
    assert HOSTILE not in page
    assert "&lt;script&gt;" in page


def test_a_missing_patch_and_a_torn_transcript_are_shown_as_such():
    """No crash: the page says the patch is missing and which transcript line is torn."""
    files = {"cells/t/workflow/run-0/transcripts/work-s1.jsonl": TRANSCRIPT + b'{"type": "assist'}
    site = SweepSite(FakeSweep([_row()], files))
    page = _page(site, "/cells/t/workflow/run-0.html")

    assert "is missing from the sweep directory" in page
    assert "line 5: torn or not JSON" in page


def test_a_cell_of_the_legacy_layout_finds_its_flat_patch():
    """A row without patch_artifact: the cell directory first, then <task>-<arm>-run<i>.patch."""
    row = _row()
    del row["patch_artifact"]
    source = FakeSweep([row], {"t-workflow-run0.patch": PATCH})
    page = _page(SweepSite(source), "/cells/t/workflow/run-0.html")

    patch_reads = [r for r in source.reads if not r.endswith("prompts.json")]
    assert patch_reads[:2] == ["cells/t/workflow/run-0/patch.diff", "t-workflow-run0.patch"]
    assert "calc/x.py" in page


def test_review_findings_are_matched_against_the_labels():
    """Which finding hit which label, the false positive, the missed label."""
    artifact = {
        "schema_version": 1,
        "verdict": "request_changes",
        "findings": [
            {
                "id": "f1",
                "severity": "high",
                "path": "a.py",
                "line": 3,
                "end_line": 4,
                "category": "correctness",
                "scenario": HOSTILE,
                "evidence": "e",
                "recommendation": "r",
                "blocking": True,
            },
            {
                "id": "f2",
                "severity": "low",
                "path": "b.py",
                "line": 1,
                "end_line": 1,
                "category": "style",
                "scenario": "s",
                "evidence": "e",
                "recommendation": "r",
                "blocking": False,
            },
        ],
    }
    matching = {
        "pairs": [{"finding": "f1", "label": "L1"}],
        "labels": [
            {
                "id": "L1",
                "severity": "high",
                "path": "a.py",
                "line_start": 3,
                "line_end": 5,
                "category": "correctness",
            },
            {
                "id": "L2",
                "severity": "medium",
                "path": "c.py",
                "line_start": 9,
                "line_end": 9,
                "category": "security",
            },
        ],
    }
    row = _row(
        kind="review",
        review_artifact="cells/t/workflow/run-0/review.json",
        label_matching=matching,
        review_score={"true_positives": 1, "false_positives": 1, "false_negatives": 1},
    )
    files = {**FILES, "cells/t/workflow/run-0/review.json": json.dumps(artifact).encode()}
    page = _page(SweepSite(FakeSweep([row], files)), "/cells/t/workflow/run-0.html")

    assert "hit L1" in page
    assert "false positive" in page
    assert "Missed labels (false negatives):</b> L2 medium c.py:9–9 security" in page
    assert HOSTILE not in page


def test_routes_serve_known_pages_and_refuse_everything_else():
    """Overview, task, arm and cell pages resolve; unknown cells, paths and raw files outside cells 404."""
    site = SweepSite(FakeSweep([_row()], {**FILES, "demo-corpus/oracle/test_hidden.py": b"secret"}))

    for path in ("/", "/index.html", "/tasks/t.html", "/arms/workflow.html", "/cells/t/workflow/run-0.html"):
        _page(site, path)
    assert site.render("/raw/cells/t/workflow/run-0/patch.diff").body == PATCH
    for path in (
        "/cells/t/workflow/run-9.html",
        "/tasks/nope.html",
        "/raw/demo-corpus/oracle/test_hidden.py",
        "/raw/../results.jsonl",
        "/cells/t/workflow/run-x.html",
        "/elsewhere",
    ):
        assert site.render(path).status == 404, path


def test_static_pages_are_the_served_pages_with_raw_links_into_the_sweep():
    """write_static writes overview, task, arm and cell pages; raw links go to the sweep directory."""
    written: dict[str, bytes] = {}
    site = SweepSite(FakeSweep([_row(), _row(run=1)], FILES))
    count = site.write_static(written.__setitem__, sweep_prefix="../")

    assert count == 5
    assert sorted(written) == [
        "arms/workflow.html",
        "cells/t/workflow/run-0.html",
        "cells/t/workflow/run-1.html",
        "index.html",
        "tasks/t.html",
    ]
    cell = written["cells/t/workflow/run-0.html"].decode()
    assert 'href="../../../../cells/t/workflow/run-0/patch.diff"' in cell
    assert 'href="../../../index.html"' in cell


def test_transcript_text_is_bounded_and_unmatched_calls_are_said():
    """An 8 MiB assistant text is cut; a tool call without a result says so."""
    big = _events(
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "x" * (TEXT_LIMIT * 3)}]}},
        {
            "type": "assistant",
            "message": {"content": [{"type": "tool_use", "id": "z", "name": "Bash", "input": {}}]},
        },
    )
    steps = read_transcript(big)

    assert len(steps[0].text) < TEXT_LIMIT + 200
    assert "more characters" in steps[0].text
    assert steps[1].result == "(no result was recorded for this call)"


def test_a_diff_is_highlighted_and_escaped_with_line_numbers():
    """Added and removed rows carry their classes and numbers; markup in code stays text."""
    table = render_diff(PATCH.decode())

    assert '<tr class="del"><td class="ln">2</td>' in table
    assert '<tr class="add"><td class="ln"></td><td class="ln">2</td>' in table
    assert "<script>new" not in table
    assert "&lt;script&gt;" in table or "&lt;</span><span" in table or "script" in table
    assert '<span class="k">' in table  # Pygments coloured the Python keyword
    assert "The patch is empty" in render_diff("")


PROMPTS = json.dumps(
    {
        "phases": [
            {"phase": "plan", "role": "plan", "prompt": f"Use the plan skill for: {HOSTILE}", "model": "m"},
            {
                "phase": "work",
                "role": "work",
                "prompt": "Use the work skill to execute the plan",
                "model": "m",
            },
        ]
    }
).encode()


def test_a_cell_page_shows_the_prompt_each_phase_sent_escaped():
    """prompts.json of the cell: one block per phase, in order, the agent-visible text escaped."""
    files = {**FILES, "cells/t/workflow/run-0/prompts.json": PROMPTS}
    page = _page(SweepSite(FakeSweep([_row()], files)), "/cells/t/workflow/run-0.html")

    section = page[page.index("<h2>Prompts") : page.index("<h2>Patch")]
    assert section.index("plan phase") < section.index("work phase")
    assert "Use the plan skill for: &lt;script&gt;" in section
    assert HOSTILE not in page


def test_a_cell_without_prompts_says_it_was_recorded_before_prompts_were_kept():
    page = _page(SweepSite(FakeSweep([_row()], FILES)), "/cells/t/workflow/run-0.html")
    assert "kept no prompts.json" in page


def test_a_failed_oracle_shows_the_reason_from_the_harness_only_oracle_json():
    """oracle_outcome on the row; why and the failing expected ids from oracle.json, for the author."""
    oracle = {"outcome": "expected-failed", "detail": "2 expected test(s) failed", "failing_ids": ["t::a"]}
    row = _row(
        resolved=False,
        oracle_passed=False,
        oracle_outcome="expected-failed",
        oracle_outcome_artifact="cells/t/workflow/run-0/oracle.json",
    )
    files = {**FILES, "cells/t/workflow/run-0/oracle.json": json.dumps(oracle).encode()}
    page = _page(SweepSite(FakeSweep([row], files)), "/cells/t/workflow/run-0.html")

    assert "oracle outcome: <b>expected-failed</b>" in page
    assert "why: 2 expected test(s) failed" in page
    assert "<code>t::a</code>" in page


def test_a_review_cell_has_no_hidden_oracle_section():
    """Review tasks run neither verify nor an oracle: the page does not pretend they passed."""
    row = _row(kind="review", oracle_passed=True, authored_tests_passed=None)
    page = _page(SweepSite(FakeSweep([row], FILES)), "/cells/t/workflow/run-0.html")
    assert "Hidden oracle" not in page
    assert "Verify (authored tests" not in page


def test_the_transcript_result_line_shows_money_and_no_none_usage():
    """``cost $0.0388`` (never 17 digits), usage without ``None`` entries."""
    transcript = _events(
        {
            "type": "result",
            "subtype": "success",
            "num_turns": 1,
            "total_cost_usd": 0.038849999999999996,
            "usage": {"output_tokens": 1200, "fallback_credit": None},
        }
    )
    steps = read_transcript(transcript)
    assert "cost $0.0388" in steps[-1].text
    assert "0.038849999999999996" not in steps[-1].text
    assert "None" not in steps[-1].text
    assert "output_tokens 1,200" in steps[-1].text


def test_text_the_agent_cli_injected_is_labelled_as_the_cli_s():
    transcript = _events(
        {
            "type": "user",
            "isSynthetic": True,
            "message": {"content": [{"type": "text", "text": "skill body"}]},
        }
    )
    assert read_transcript(transcript)[0].title == "injected by the agent CLI"
