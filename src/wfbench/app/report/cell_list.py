"""``cells.html``: the viewer's cells a page at a time, read straight from ``results.jsonl``.

The overview needs every row (its aggregates, its verdict); at a million rows that is a minute's
read. This listing needs none of it: a page is the ``PAGE_ROWS`` complete lines that follow a
byte offset (:meth:`~wfbench.domain.ports.LiveSweep.follow`), and its "next" link carries the
offset past the last of them, so any page costs the same whatever its place in the file and
nothing of the sweep is held between requests (issue 33: a 1,000,000-row sweep opens at once).
While the overview is still being read, ``index.html`` is this listing's first page.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from wfbench.app.report.links import Links
from wfbench.app.report.page import esc, page_parts

__all__ = ["PAGE_ROWS", "cursor_of", "render_cell_list"]

#: Rows on one page of the listing.
PAGE_ROWS = 100


def cursor_of(query: str) -> int:
    """The byte offset named by ``after=`` in a request's query string (0 when absent or invalid)."""
    for part in query.split("&"):
        name, _, value = part.partition("=")
        if name == "after" and value.isdigit() and len(value) <= 18:
            return int(value)
    return 0


def _status(row: Mapping[str, Any]) -> str:
    kind = row.get("error_kind")
    if kind:
        return str(kind)
    return "resolved" if row.get("resolved") is True else "unresolved"


def _cell(row: Mapping[str, Any], links: Links) -> str:
    """One table row; a link to the cell's page when the row names a cell."""
    task, arm, run = row.get("task"), row.get("arm"), row.get("run")
    label = f"run-{run}" if type(run) is int else esc(run)
    if (
        isinstance(task, str)
        and isinstance(arm, str)
        and isinstance(run, int)
        and type(run) is int
        and run >= 0
    ):
        label = f'<a href="{esc(links.cell(task, arm, run))}">{label}</a>'
    cost = row.get("cost_usd")
    shown = f"{cost:.4f}" if isinstance(cost, int | float) and not isinstance(cost, bool) else "n/a"
    return (
        f"<tr><td>{esc(task)}</td><td>{esc(arm)}</td><td>{label}</td>"
        f"<td>{esc(_status(row))}</td><td>{shown}</td></tr>"
    )


def render_cell_list(
    rows: Iterable[tuple[int, Mapping[str, Any]]], *, after: int, title: str, note: str | None = None
) -> str:
    """The page of at most :data:`PAGE_ROWS` rows of ``rows`` ((offset past the line, raw row),
    read from byte ``after`` on); only the rows of this page are read from ``rows``."""
    links = Links()

    def body() -> Iterator[str]:
        yield f"<h1>{esc(title)}: cells</h1>"
        if note:
            yield f'<p class="muted">{esc(note)}</p>'
        yield (
            '<table class="cells"><thead><tr><th>task</th><th>arm</th><th>run</th><th>status</th>'
            "<th>cost $</th></tr></thead><tbody>"
        )
        count, end = 0, after
        for past, row in rows:
            yield _cell(row, links)
            count, end = count + 1, past
            if count == PAGE_ROWS:
                break
        yield "</tbody></table>"
        nav = ['<a href="cells.html">first page</a>'] if after else []
        if count == PAGE_ROWS:
            nav.append(f'<a href="cells.html?after={end}">next {PAGE_ROWS} cells</a>')
        if not count:
            nav.append("no more cells")
        yield f'<p class="pager">{" · ".join(nav)}</p>'

    crumbs = (("overview", links.overview()), ("cells", None))
    return "".join(page_parts(f"{title}: cells", body(), crumbs=crumbs))
