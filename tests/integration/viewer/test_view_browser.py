"""`wfbench view` in a real browser: Debian's headless Chromium driven by Playwright (never a
downloaded browser). The demo sweep, with a hostile finding and a hostile error detail planted,
is served by the real command on loopback; the overview and a cell page are loaded, every link of
the overview is followed, a table is sorted, the console must stay clean, and the hostile strings
must render as text. Screenshots land in ``<sweep>/screenshots/`` (CI keeps them as artifacts).

Skips locally without Chromium or Playwright; fails under ``WFBENCH_REQUIRE_BROWSER=1``.
"""

from __future__ import annotations

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

from tests.conftest import require_or_skip
from tests.support.demo_run import DEMO_CELLS

pytestmark = pytest.mark.browser

HOSTILE_TITLE = '<img src=x onerror="window.__pwned=1">finding'
HOSTILE_DETAIL = "</pre><script>window.__pwned=2</script>detail"


def _chromium() -> str:
    for name in (os.environ.get("WFBENCH_CHROMIUM", ""), "/usr/bin/chromium", shutil.which("chromium") or ""):
        if name and os.access(name, os.X_OK):
            return name
    require_or_skip("WFBENCH_REQUIRE_BROWSER", "Debian's chromium is not installed (scripts/install-tools)")
    raise AssertionError("unreachable")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    executable = _chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        require_or_skip(
            "WFBENCH_REQUIRE_BROWSER", "the playwright package is not installed (pip install '.[dev]')"
        )
    with sync_playwright() as driver:
        instance = driver.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield instance
        instance.close()


@pytest.fixture(scope="module")
def hostile_sweep(demo_out, tmp_path_factory) -> Path:
    """The demo sweep with agent-controlled text that tries to run: a finding title and an error detail."""
    sweep = tmp_path_factory.mktemp("browser") / "sweep"
    shutil.copytree(demo_out[0], sweep, ignore=shutil.ignore_patterns("demo-corpus"))
    review = sweep / "cells/review-pr-41/review/run-0/review.json"
    artifact = json.loads(review.read_text())
    artifact["findings"][0]["scenario"] = HOSTILE_TITLE
    review.write_text(json.dumps(artifact))
    lines = (sweep / "results.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    for row in rows:
        if (row["task"], row["arm"], row["run"]) == ("fix-median", "baseline", 0):
            row["error_detail"] = HOSTILE_DETAIL
    (sweep / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return sweep


@pytest.fixture(scope="module")
def served(hostile_sweep) -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "wfbench", "view", str(hostile_sweep)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        match = re.search(r"at (http://127\.0\.0\.1:\d+/)", line)
        assert match, line
        yield match.group(1)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


class Console:
    """Every console message and page error of a page."""

    def __init__(self, page: Any) -> None:
        self.errors: list[str] = []
        page.on("console", lambda m: self.errors.append(m.text) if m.type in ("error", "warning") else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))


def _shoot(page: Any, sweep: Path, name: str) -> None:
    target = sweep / "screenshots"
    target.mkdir(exist_ok=True)
    page.screenshot(path=str(target / f"{name}.png"), full_page=True)


def test_the_overview_shows_the_verdict_and_every_link_resolves(browser, served, hostile_sweep):
    """The decision is on top; each link of the overview answers 200; the console stays clean."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    console = Console(page)
    page.goto(served)
    verdict = page.locator("section.verdict").first
    assert "PROMOTE" in verdict.inner_text()
    assert "candidate_workflow vs its incumbent workflow" in verdict.inner_text()
    assert page.locator("h2").first.inner_text() == "Verdict"
    hrefs = page.eval_on_selector_all(
        "a[href]", 'els => els.map(e => new URL(e.getAttribute("href"), document.baseURI).href.split("#")[0])'
    )
    assert len(hrefs) > 40  # every run dot, task, arm and count links somewhere
    statuses = {href: page.request.get(href).status for href in sorted(set(hrefs))}
    assert [href for href, status in statuses.items() if status != 200] == []
    _shoot(page, hostile_sweep, "overview")
    assert console.errors == []
    page.close()


def test_a_table_sorts_and_filters(browser, served):
    """Clicking a numeric header orders the rows; the arm filter keeps only that arm."""
    page = browser.new_page()
    console = Console(page)
    page.goto(served)
    table = page.locator('div.dt[data-src="task-arm"]')
    header = table.locator("th", has_text="median cost")
    header.click()
    costs = table.locator("tbody tr td:nth-child(5)").all_inner_texts()
    values = [float(text.strip("$")) for text in costs]
    assert values == sorted(values)
    assert header.get_attribute("aria-sort") == "ascending"
    header.click()
    values = [float(t.strip("$")) for t in table.locator("tbody tr td:nth-child(5)").all_inner_texts()]
    assert values == sorted(values, reverse=True)
    table.locator('select[aria-label="filter by arm"]').select_option("baseline")
    arms = table.locator("tbody tr td:nth-child(3)").all_inner_texts()
    assert arms
    assert set(arms) == {"baseline"}
    assert "filtered from 17" in table.locator(".dt-pager").inner_text()  # 5 tasks x 3 arms + 2 reviews
    assert console.errors == []
    page.close()


def test_a_cell_page_renders_the_transcript_patch_and_review(browser, served, hostile_sweep):
    """The review cell shows the matched finding; its hostile title is text; nothing ran."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    console = Console(page)
    page.goto(served + "cells/review-pr-41/review/run-0.html")
    assert "hit " in page.locator("table").first.inner_text()
    assert HOSTILE_TITLE in page.inner_text("body")
    assert page.locator("img[src=x]").count() == 0
    assert page.evaluate("window.__pwned") is None
    _shoot(page, hostile_sweep, "cell-review")
    page.goto(served + "cells/fix-median/baseline/run-0.html")
    assert HOSTILE_DETAIL in page.inner_text("body")
    assert page.evaluate("window.__pwned") is None
    assert page.locator("table.diff tr.add").count() > 0
    assert page.locator("div.ev.tool").count() > 0
    _shoot(page, hostile_sweep, "cell-implementation")
    assert console.errors == []
    page.close()


def test_the_cell_page_shows_each_phase_prompt_and_overview_numbers_lead_to_their_cells(browser, served):
    """The prompt the harness built for each phase; the median improvement opens the per-task table,
    a median cost opens the cells of its task and arm, the facts open their sections."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    console = Console(page)
    page.goto(served + "cells/fix-median/workflow/run-0.html")
    prompts = page.locator("details.prompt")
    assert prompts.count() == 2
    assert "Use the plan skill for:" in prompts.nth(0).inner_text()
    assert "Use the work skill" in prompts.nth(1).inner_text()
    page.goto(served + "cells/review-pr-41/review/run-0.html")
    assert page.locator("h2", has_text="Hidden oracle").count() == 0
    page.goto(served)
    page.locator("section.verdict dd a").first.click()
    assert page.url.endswith("#paired-candidate_workflow")
    assert page.locator("#paired-candidate_workflow").is_visible()
    page.locator(f'div.facts a:has-text("{DEMO_CELLS}")').click()
    assert page.url.endswith("#cells")
    page.locator('div.dt[data-src="task-arm"] tbody tr td:nth-child(5) a').first.click()
    assert re.search(r"/tasks/[^/]+\.html#arm-", page.url)
    assert page.locator("h1").inner_text()
    assert console.errors == []
    page.close()
