"""`wfbench view` over the demo sweep, through the console script: static pages and the loopback server."""

from __future__ import annotations

import http.client
import json
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from tests.support.demo_run import DEMO_CELLS, legacy_copy, rows, wfbench

HREF = re.compile(r'href="([^"#]*)(?:#[^"]*)?"')


def _links(page: Path) -> list[str]:
    return [h for h in HREF.findall(page.read_text()) if h and not h.startswith(("data:", "http"))]


def _static(sweep: Path, out: Path) -> subprocess.CompletedProcess[str]:
    done = wfbench("view", str(sweep), "--static", str(out), timeout=120)
    assert done.returncode == 0, done.stderr
    return done


def test_static_pages_cover_every_task_arm_and_cell_and_every_link_resolves(demo_out, tmp_path):
    """63 pages for the demo (overview, 7 tasks, 4 arms, 51 cells); no link of any page is dangling."""
    sweep, _ = demo_out
    out = tmp_path / "site"
    done = _static(sweep, out)

    assert "wrote 63 page(s)" in done.stdout
    pages = sorted(out.rglob("*.html"))
    assert len(pages) == 63 == 1 + 7 + 4 + DEMO_CELLS
    dangling = []
    for page in pages:
        for href in _links(page):
            target = (page.parent / unquote(href)).resolve()
            if not target.exists():
                dangling.append(f"{page.relative_to(out)} -> {href}")
    assert dangling == []
    overview = (out / "index.html").read_text()
    assert "PROMOTE" in overview
    assert overview.index("Verdict") < overview.index("Every task and arm")
    for cell in rows(sweep):
        assert (out / "cells" / cell["task"] / cell["arm"] / f"run-{cell['run']}.html").is_file()


def test_the_static_site_refuses_the_sweep_directory_itself(demo_out):
    """--static DIR would mix pages into the evidence: a usage error naming the option."""
    sweep, _ = demo_out
    done = wfbench("view", str(sweep), "--static", str(sweep), timeout=60)
    assert done.returncode == 2
    assert "--static: must not be the sweep directory itself" in done.stderr


def test_a_legacy_sweep_and_a_torn_line_are_viewed_not_crashed_on(demo_out, tmp_path):
    """A flat-layout sweep shows its patches; a torn last line is reported on the overview."""
    sweep = legacy_copy(demo_out[0], tmp_path / "legacy")
    with (sweep / "results.jsonl").open("a") as handle:
        handle.write('{"task": "fix-median", "arm": "work')
    out = tmp_path / "site"
    _static(sweep, out)

    cell = (out / "cells/fix-median/workflow/run-0.html").read_text()
    assert "calc/stats.py" in cell
    assert "is missing" not in cell
    overview = (out / "index.html").read_text()
    assert "results.jsonl has 1 line(s) that are not rows" in overview
    assert f"line {DEMO_CELLS + 1}: torn (no line end)" in overview


def test_a_missing_artifact_is_shown_as_missing(demo_out, tmp_path):
    """Delete a patch and a transcript: the cell page says so and still renders."""
    sweep = tmp_path / "sweep"
    shutil.copytree(demo_out[0], sweep, ignore=shutil.ignore_patterns("demo-corpus"))
    (sweep / "cells/add-mode/baseline/run-1/patch.diff").unlink()
    for transcript in (sweep / "cells/add-mode/baseline/run-1/transcripts").glob("*.jsonl"):
        transcript.unlink()
    out = tmp_path / "site"
    _static(sweep, out)

    page = (out / "cells/add-mode/baseline/run-1.html").read_text()
    assert "(cells/add-mode/baseline/run-1/patch.diff) is missing from the sweep directory" in page
    assert "this transcript (cells/add-mode/baseline/run-1/transcripts/" in page


@pytest.fixture
def served(demo_out):
    """`wfbench view DIR --port 0` as a subprocess: its base URL (the process is ended after)."""
    sweep, _ = demo_out
    proc = subprocess.Popen(
        [sys.executable, "-m", "wfbench", "view", str(sweep)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        match = re.search(r"at (http://127\.0\.0\.1:\d+/)", line)
        assert match, line + (proc.stderr.read() if proc.poll() is not None and proc.stderr else "")
        yield match.group(1)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _get(url: str, path: str, host: str | None = None) -> tuple[int, dict[str, str], bytes]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    conn.request("GET", path, headers={"Host": host} if host else {})
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response.status, dict(response.getheaders()), body


def test_the_server_serves_the_pages_on_loopback_with_a_strict_policy(served):
    """Overview, a cell page and a raw transcript; a foreign Host is refused (no DNS rebinding)."""
    status, headers, body = _get(served, "/")
    assert status == 200
    assert "default-src 'none'" in headers["Content-Security-Policy"]
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert b"PROMOTE" in body
    status, _, body = _get(served, "/cells/review-pr-41/review/run-0.html")
    assert status == 200
    assert b"hit " in body  # the finding that hit its label
    status, headers, _ = _get(served, "/raw/cells/fix-median/workflow/run-0/patch.diff")
    assert (status, headers["Content-Type"]) == (200, "text/plain; charset=utf-8")
    assert headers["Content-Security-Policy"].startswith("sandbox")
    assert _get(served, "/raw/demo-corpus/corpus.yaml")[0] == 404
    assert _get(served, "/", host="attacker.example:80")[0] == 421
    assert _get(served, "/", host="127.evil.example")[0] == 421


def test_the_viewer_never_listens_beyond_loopback(demo_out):
    """--host 0.0.0.0 is a usage error before any socket opens."""
    done = wfbench("view", str(demo_out[0]), "--host", "0.0.0.0", timeout=60)
    assert done.returncode == 2
    assert "--host: 0.0.0.0 is not a loopback address" in done.stderr


def test_view_of_a_directory_without_any_sweep_is_a_usage_error(tmp_path):
    """One line naming the directory, exit 2 (no results.jsonl in it or below it)."""
    (tmp_path / "notes").mkdir()
    done = wfbench("view", str(tmp_path), timeout=60)
    assert done.returncode == 2
    assert f"{tmp_path}: holds no sweep" in done.stderr


def test_the_review_rows_record_which_finding_hit_which_label(demo_out):
    """label_matching pairs the defect case's finding with its label; the clean control has none."""
    sweep, _ = demo_out
    defect = next(r for r in rows(sweep) if r["task"] == "review-pr-41")
    clean = next(r for r in rows(sweep) if r["task"] == "review-pr-42")
    assert defect["label_matching"]["pairs"] == [
        {"finding": "f1", "label": defect["label_matching"]["labels"][0]["id"]}
    ]
    assert clean["label_matching"] == {"pairs": [], "labels": []}
    assert json.loads((sweep / defect["review_artifact"]).read_text())["findings"][0]["id"] == "f1"


def test_compare_puts_two_sweeps_side_by_side_with_paired_statistics(demo_out, tmp_path):
    """B = the demo with workflow's cost halved and a baseline task now resolved: the changes, B's saving."""
    sweep, _ = demo_out
    after = tmp_path / "after"
    after.mkdir()
    changed = []
    for row in rows(sweep):
        if row["arm"] == "workflow":
            row["cost_usd"] = row["cost_usd"] / 2
        if (row["task"], row["arm"]) == ("fix-median", "baseline"):
            row.update(resolved=True, error_kind=None, oracle_passed=True)
        changed.append(json.dumps(row) + "\n")
    (after / "results.jsonl").write_text("".join(changed))
    out = tmp_path / "compare.md"
    done = wfbench(
        "compare", str(sweep), str(after), "--out", str(out), "--html", str(tmp_path / "c.html"), timeout=120
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout == out.read_text()
    assert "- `workflow` over 5 common task(s), B against A:" in done.stdout
    assert "  - cost (cost_usd): +50.0% saved [90% CI +50.0% saved, +50.0% saved]" in done.stdout
    assert "| fix-median | baseline | 0/3 | 3/3 | +100.0 pts |" in done.stdout
    # The demo's usage is jittered per cell (provider.yaml's seed): the medians come from A's own rows.
    before = statistics.median(
        r["cost_usd"] for r in rows(sweep) if (r["task"], r["arm"]) == ("add-mode", "workflow")
    )
    after_median = statistics.median(
        r["cost_usd"] / 2 for r in rows(sweep) if (r["task"], r["arm"]) == ("add-mode", "workflow")
    )
    line = f"| add-mode | workflow | 3/3 | 3/3 | +0.0 pts | ${before:.4f} | ${after_median:.4f} | −50.0% |"
    assert line in done.stdout
    page = (tmp_path / "c.html").read_text()
    assert "<h1>wfbench comparison</h1>" in page
    assert "`" not in page.split("<h2>Per task", 1)[0]  # no Markdown in the page
    assert str(tmp_path) not in page  # the sweeps as named on the command line, links relative
    assert '"after/cells/add-mode/workflow/"' in page  # B has no pages: its cells' directory
    assert "tasks/add-mode.html#arm-workflow" in page  # A has its pages beside its report


def test_compare_refuses_a_torn_results_file(demo_out, tmp_path):
    """compare decides nothing on half a file: a torn line exits 2 naming the file and the line."""
    after = tmp_path / "after"
    after.mkdir()
    (after / "results.jsonl").write_text((demo_out[0] / "results.jsonl").read_text() + '{"task": "x"')
    done = wfbench("compare", str(demo_out[0]), str(after), timeout=60)
    assert done.returncode == 2
    assert "results.jsonl" in done.stderr
    assert f"line {DEMO_CELLS + 1}" in done.stderr
