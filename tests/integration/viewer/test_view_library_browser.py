"""`wfbench view DIR` of a directory of sweeps, in the real browser (Debian's Chromium, Playwright).

Two sweeps sit in one directory: the finished demo sweep, and a copy of it that is still
"running" — the test holds its ``.wfbench.lock`` as a running sweep does and appends its rows
while the page is open. The index lists both (sortable, filterable, the running one pending),
the running sweep's overview follows its rows without a manual reload and shows the verdict
once the sweep ends, and two ticked sweeps open their comparison, whose figures link to cells.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.viewer.test_view_browser import Console, _shoot, browser
from tests.support.demo_run import DEMO_CELLS

pytestmark = pytest.mark.browser

__all__ = ["browser"]


@pytest.fixture(scope="module")
def sweeps(demo_out, tmp_path_factory) -> Path:
    """``root/done`` (the demo sweep) and ``root/live`` (its first 2 rows, no verdict, a plan of all)."""
    root = tmp_path_factory.mktemp("library")
    done, live = root / "done", root / "live"
    shutil.copytree(demo_out[0], done, ignore=shutil.ignore_patterns("demo-corpus", "screenshots"))
    shutil.copytree(done, live)
    (live / "promotion.json").unlink()
    lines = (done / "results.jsonl").read_text().splitlines(keepends=True)
    (live / "results.jsonl").write_text("".join(lines[:2]))
    plan = {"event": "sweep_plan", "planned": len(lines), "to_run": len(lines), "level": "info"}
    (live / "wfbench.log").write_text(json.dumps(plan) + "\n")
    return root


@pytest.fixture(scope="module")
def lock(sweeps) -> Iterator[int]:
    """The live sweep's claim, held as ``wfbench run`` holds it (released when the test ends it)."""
    fd = os.open(sweeps / "live" / ".wfbench.lock", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    yield fd
    os.close(fd)


@pytest.fixture(scope="module")
def served(sweeps, lock) -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "wfbench", "view", str(sweeps)], stdout=subprocess.PIPE, text=True
    )
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        match = re.search(r"at (http://127\.0\.0\.1:\d+/)", line)
        assert match, line
        yield match.group(1)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _rows(page: Any) -> list[str]:
    return page.locator('div.dt[data-src="sweeps"] tbody tr').all_inner_texts()


def test_the_index_lists_every_sweep_and_the_running_one_is_pending(browser, served, sweeps):
    """One row per sweep: the finished one with its decision, the running one with its progress."""
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    console = Console(page)
    page.goto(served)
    rows = _rows(page)
    assert len(rows) == 2
    done = next(r for r in rows if "\tdone\t" in f"\t{r}")
    live = next(r for r in rows if "\tlive\t" in f"\t{r}")
    assert "candidate_workflow: promote" in done
    assert "complete" in done
    assert "pending" in live
    assert f"running, 2 of {DEMO_CELLS} cells" in live
    page.locator('select[aria-label="filter by status"]').select_option("complete")
    assert len(_rows(page)) == 1
    page.locator('select[aria-label="filter by status"]').select_option("")
    page.locator("th", has_text="cells").click()
    assert "\tlive" in "\t" + _rows(page)[0]  # 2 cells before all of them
    _shoot(page, sweeps, "index")
    assert console.errors == []
    page.close()


def test_two_ticked_sweeps_open_their_comparison_with_links_to_cells(browser, served):
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    console = Console(page)
    page.goto(served)
    link = page.locator("#compare-link")
    assert link.is_hidden()
    page.get_by_label("compare done").check()
    page.get_by_label("compare live").check()
    link.click()
    page.wait_for_url(re.compile(r"compare\.html\?a=done&b=live"))
    assert "wfbench comparison" in page.inner_text("h1")
    hrefs = page.eval_on_selector_all('div.dt[data-src="compare"] a[href]', "els => els.map(e => e.href)")
    assert hrefs
    assert all(page.request.get(h).status == 200 for h in sorted(set(hrefs))[:10])
    assert console.errors == []
    page.close()


def test_a_running_sweep_refreshes_as_its_rows_arrive_and_shows_the_verdict_at_the_end(
    browser, served, sweeps, lock
):
    """The page stays open: new rows raise the count, the end of the sweep brings the verdict."""
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    console = Console(page)
    page.goto(served + "s/live/index.html")
    assert f"running, 2 of {DEMO_CELLS} cells" in page.locator("div.facts").inner_text()
    assert "PENDING" in page.locator("section.verdict").first.inner_text()
    assert page.locator("a", has_text="all sweeps").count() == 1
    lines = (sweeps / "done" / "results.jsonl").read_text().splitlines(keepends=True)
    with open(sweeps / "live" / "results.jsonl", "a") as handle:
        handle.write("".join(lines[2:5]))
    expect(page.locator("div.facts")).to_contain_text(f"running, 5 of {DEMO_CELLS} cells", timeout=15000)
    with open(sweeps / "live" / "results.jsonl", "a") as handle:
        handle.write("".join(lines[5:]))
    shutil.copy(sweeps / "done" / "promotion.json", sweeps / "live" / "promotion.json")
    fcntl.flock(lock, fcntl.LOCK_UN)
    expect(page.locator("section.verdict").first).to_contain_text("PROMOTE", timeout=15000)
    assert "complete" in page.locator("div.facts").inner_text()
    _shoot(page, sweeps, "live-finished")
    assert console.errors == []
    page.close()
