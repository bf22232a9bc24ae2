"""Unknown spend is never shown as zero: report.md, report.html, the viewer, the summary and ``--json``.

The sweep: a Claude arm whose cost is known and a Codex review arm on a model nobody priced, so
every surface must say ``n/a`` for the Codex arm and a partial sum (with the count of unpriced
cells) for the sweep, never ``$0.0000``.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from wfbench.adapters.store.jsonl_store import JsonlResultStore
from wfbench.adapters.store.sweep_dir import SweepDirectory
from wfbench.app.report.site import SweepSite
from wfbench.cli.main import main
from wfbench.cli.run.summary import summary_event, summary_lines
from wfbench.domain.results.rows import Row

ZERO = re.compile(r"\$0\.0+(?!\d*[1-9])")


def _rows() -> list[Row]:
    rows = []
    for run in range(2):
        rows.append(
            Row(
                task="t",
                arm="workflow",
                run=run,
                ok=True,
                resolved=True,
                cost_usd=0.25,
                extra={"kind": "implementation", "agent": "claude", "model": "claude-sonnet-4-5"},
            )
        )
        rows.append(
            Row(
                task="r",
                arm="codex_review",
                run=run,
                ok=True,
                resolved=True,
                cost_usd=None,
                extra={
                    "kind": "review",
                    "agent": "codex",
                    "model": "gpt-unpriced-1",
                    "review_weighted_f1": 1.0,
                    "usage_source": "wire",
                },
            )
        )
    return rows


def _sweep(tmp_path: Path) -> Path:
    store = JsonlResultStore(str(tmp_path / "results.jsonl"))
    for row in _rows():
        store.append(row)
    return tmp_path


def test_no_surface_shows_unknown_spend_as_zero(tmp_path: Path) -> None:
    out = _sweep(tmp_path)
    with pytest.raises(SystemExit) as exited:
        main(["report", str(out / "results.jsonl")])
    assert exited.value.code == 0
    markdown = (out / "report.md").read_text()
    html = (out / "report.html").read_text()
    site = SweepSite(SweepDirectory.open(str(out)))
    pages = [
        site.render(path).body.decode() for path in ("/", "/arms/codex_review.html", "/arms/workflow.html")
    ]
    finished = SimpleNamespace(
        cancelled=False,
        tripped=False,
        budget_stopped=False,
        decisions=(),
        metered=None,
        exit_code=0,
        planned=4,
        completed=4,
    )
    summary = "\n".join(summary_lines(str(out), finished))
    event = summary_event(str(out), finished)

    for name, text in [("report.md", markdown), ("report.html", html), ("summary", summary)] + [
        (f"viewer page {i}", page) for i, page in enumerate(pages)
    ]:
        assert not ZERO.search(text), (name, ZERO.search(text))
    assert "Total spend: $0.5000 + n/a (2 of 4 cells without a cost)" in markdown
    assert "| codex_review |" in markdown
    assert "n/a (2 cell(s) without a cost)" in markdown
    assert "n/a (2 cell(s) without a cost)" in pages[1]
    assert "$0.50 + n/a (2 of 4 cells without a cost)" in pages[0]
    assert "spent: $0.5000 (2 cell(s) without a cost)" in summary
    assert (event["spent_usd"], event["cells_without_cost"]) == (0.5, 2)
