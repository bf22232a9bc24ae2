"""The viewer's cell listing: pages read at a byte cursor, and an index that answers before the pass ends."""

from __future__ import annotations

import json
import threading
from typing import Any

from tests.unit.app.report.test_view_pages import FakeSweep
from wfbench.app.report import site as site_module
from wfbench.app.report.cell_list import PAGE_ROWS, cursor_of
from wfbench.app.report.site import LOADING_TOKEN, SweepSite
from wfbench.domain.sweep.live import SweepState


def _row(i: int) -> dict[str, Any]:
    return {"task": f"t{i:04d}", "arm": "workflow", "run": 0, "ok": True, "resolved": i % 2 == 0}


class FakeLiveSweep(FakeSweep):
    """A finished sweep on the LiveSweep port; ``scan`` waits for ``release`` and counts what it read."""

    def __init__(self, rows: list[dict[str, Any]], *, release: threading.Event | None = None) -> None:
        super().__init__(rows, {})
        self.release = release
        self.followed: list[int] = []

    def state(self) -> SweepState:
        return SweepState(size=sum(len(line) + 1 for line in self.lines), running=False)

    def scan(self, problems=None):
        if self.release is not None:
            self.release.wait(10)
        yield from super().scan(problems)

    def follow(self, start):
        offset = 0
        for line in self.lines:
            end = offset + len(line) + 1
            if offset >= start:
                self.followed.append(offset)
                yield end, json.loads(line)
            offset = end


def _links(body: bytes) -> list[str]:
    text = body.decode()
    return [part.split('"', 1)[0] for part in text.split('href="')[1:]]


def test_the_cell_listing_pages_by_byte_cursor_and_reads_only_its_page():
    sweep = FakeLiveSweep([_row(i) for i in range(PAGE_ROWS * 2 + 5)])
    site = SweepSite(sweep, title="big")

    first = site.render("/cells.html")
    assert first.status == 200
    assert first.body.count(b"<tr><td>") == PAGE_ROWS
    assert len(sweep.followed) == PAGE_ROWS  # the listing stopped reading at its page's end
    (next_link,) = [link for link in _links(first.body) if link.startswith("cells.html?after=")]

    sweep.followed.clear()
    second = site.render("/" + next_link)
    assert b"t0100" in second.body
    assert b"t0099" not in second.body
    assert sweep.followed[0] == cursor_of(next_link.split("?", 1)[1])

    last = site.render(f"/cells.html?after={sum(len(line) + 1 for line in sweep.lines[: PAGE_ROWS * 2])}")
    assert last.body.count(b"<tr><td>") == 5
    assert not [link for link in _links(last.body) if "after=" in link]  # no page after the last


def test_a_cursor_that_is_not_a_number_starts_at_the_top():
    assert cursor_of("after=12") == 12
    assert cursor_of("x=1&after=-3") == 0
    assert cursor_of("after=1e9") == 0
    assert cursor_of("") == 0


def test_cells_link_to_their_pages_and_escape_what_the_row_says():
    sweep = FakeLiveSweep([{**_row(1), "task": "<b>t</b>", "error_kind": "session-error"}])
    body = SweepSite(sweep, title="x").render("/cells.html").body
    assert b"&lt;b&gt;t&lt;/b&gt;" in body
    assert b"<b>t</b>" not in body
    assert b"session-error" in body
    assert any(link.startswith("cells/") and link.endswith("/workflow/run-0.html") for link in _links(body))


def test_while_a_large_sweep_is_read_in_the_background_the_index_is_the_cell_listing(monkeypatch):
    monkeypatch.setattr(site_module, "SMALL_SWEEP_BYTES", 10)
    release = threading.Event()
    sweep = FakeLiveSweep([_row(i) for i in range(3)], release=release)
    site = SweepSite(sweep, title="big", background=True)
    try:
        index = site.render("/")
        assert index.status == 200
        assert b"Reading the sweep" in index.body
        assert b"t0002" in index.body
        assert f'data-token="{LOADING_TOKEN}"'.encode() in index.body  # it reloads when the pass ends
        assert site.render("/live.txt").body == LOADING_TOKEN.encode()
        assert site.render("/tasks/t0001.html").status == 503
    finally:
        release.set()
    assert site.ready.wait(10)
    overview = site.render("/")
    assert b"Reading the sweep" not in overview.body
    assert site.render("/live.txt").body != LOADING_TOKEN.encode()
    assert site.render("/tasks/t0001.html").status == 200


def test_a_small_sweep_is_read_before_the_first_request_as_it_always_was():
    release = threading.Event()
    sweep = FakeLiveSweep([_row(i) for i in range(3)], release=release)
    threading.Timer(0.2, release.set).start()  # a pass on a thread would not be done on return
    site = SweepSite(sweep, title="small", background=True)
    assert site.ready.is_set()
    assert site.render("/").body == SweepSite(sweep, title="small").render("/").body
