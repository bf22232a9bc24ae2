"""The HTML shell every page shares: escaping, CSS, the table script, and a strict CSP.

Pages are self-contained: one inline style sheet and one inline script, both allowed by their
SHA-256 hash in a ``Content-Security-Policy`` (``default-src 'none'``), so the page makes no
network request and no other script can run — a hostile string that slipped past escaping
still could not execute. Agent-controlled text is escaped with :func:`esc`; table data is a JSON
block (``<script type="application/json">``, with ``<``, ``>`` and ``&`` escaped) that the
script renders with ``textContent``, never as markup.

The table script (``assets/report.js``) turns each ``<div class="dt" data-src="ID">`` into a table
that sorts (click a header), filters (task text, arm, error kind) and pages (50 rows at a time),
so a 100,000-cell sweep never puts more than a page of rows into the DOM.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import html
import importlib.resources
import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

__all__ = [
    "csp",
    "data_table",
    "data_table_parts",
    "esc",
    "page",
    "page_parts",
    "script",
    "status_class",
    "style",
]

_ASSETS = "wfbench.app.report.assets"


@functools.cache
def style() -> str:
    """The pages' style sheet (``assets/report.css``)."""
    return importlib.resources.files(_ASSETS).joinpath("report.css").read_text(encoding="utf-8")


@functools.cache
def script() -> str:
    """The table script (``assets/report.js``)."""
    return importlib.resources.files(_ASSETS).joinpath("report.js").read_text(encoding="utf-8")


def _hash(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


@functools.cache
def csp() -> str:
    """The pages' Content-Security-Policy: nothing loads; only the inline style and script (by hash) apply.

    ``connect-src 'self'``: a page of a running sweep asks its own server whether the sweep changed
    (``live.txt``), and nothing else.
    """
    return (
        "default-src 'none'; img-src data:; connect-src 'self'; "
        f"style-src '{_hash(style())}'; script-src '{_hash(script())}'; base-uri 'none'; form-action 'none'"
    )


def esc(value: object) -> str:
    """Any value as HTML text (``None`` → ``n/a``)."""
    return "n/a" if value is None else html.escape(str(value), quote=True)


def status_class(status: str) -> str:
    """The CSS class of a cell status: ``resolved``, ``unresolved``, ``excluded`` or ``error``."""
    return status if status in ("resolved", "unresolved", "excluded") else "error"


def _json_escape(text: str) -> str:
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def _json(value: object) -> str:
    return _json_escape(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


#: Table rows encoded together into one piece of a streamed page (fewer, larger writes).
_ROWS_PER_PIECE = 256


def data_table_parts(
    table_id: str,
    columns: Sequence[Any],
    rows: Iterable[Sequence[Any]],
    *,
    page_size: int = 50,
    statuses: Sequence[tuple[str, str]] = (),
    suffix: str = ".html",
) -> Iterator[str]:
    """:func:`data_table` in pieces, reading ``rows`` once: no more than a few rows' JSON at a time.

    The pieces join to exactly the text :func:`data_table` returns (one ``json.dumps`` of the whole
    spec is the concatenation of its members' encodings, and the ``<``/``>``/``&`` escape maps one
    character at a time). ``statuses`` is read after the last row, so a list the rows fill as
    they are made (:class:`~wfbench.app.report.overview.StatusCodes`) is complete when written.
    """
    yield f'<script type="application/json" id="{esc(table_id)}">{{"columns":{_json(list(columns))},"rows":['
    count = 0
    batch: list[str] = []
    for row in rows:
        batch.append(json.dumps(list(row), ensure_ascii=False, separators=(",", ":")))
        count += 1
        if len(batch) == _ROWS_PER_PIECE:
            yield _json_escape(("," if count > _ROWS_PER_PIECE else "") + ",".join(batch))
            batch = []
    if batch:
        yield _json_escape(("," if count > len(batch) else "") + ",".join(batch))
    tail = {"page": page_size, "statuses": [list(s) for s in statuses], "suffix": suffix}
    yield f"],{_json(tail)[1:]}</script>"
    yield (
        f'<div class="dt" data-src="{esc(table_id)}"></div><noscript><p class="muted">This table needs '
        f"JavaScript ({count} rows); report.md has it as text.</p></noscript>"
    )


def data_table(
    table_id: str,
    columns: Sequence[Any],
    rows: Sequence[Sequence[Any]],
    *,
    page_size: int = 50,
    statuses: Sequence[tuple[str, str]] = (),
    suffix: str = ".html",
) -> str:
    """A sortable, filterable, paged table: a JSON block and the element the script fills.

    A column is ``{"label", "num"?, "filter": "text"|"select"|"tags"?, "href": index?,
    "runs": True?, "base": index?, "tags": True?, "flag": True?, "nosort": True?}``; a value is
    its text, or ``[text, sort key]``. A row may hold more values than there are columns (link
    targets named by ``href``/``base``). A ``runs`` value is a list of ``[run, status index]``:
    each draws a dot linking to ``row[base] + "run-<i>" + suffix``, coloured and titled by
    ``statuses[index]`` (``(css class, text)``).
    """
    return "".join(
        data_table_parts(table_id, columns, rows, page_size=page_size, statuses=statuses, suffix=suffix)
    )


def page_parts(
    title: str, body: Iterable[str], *, crumbs: Sequence[tuple[str, str | None]] = ()
) -> Iterator[str]:
    """:func:`page` in pieces: the document's head, each piece of ``body`` as it comes, its tail."""
    trail = " / ".join(
        f'<a href="{esc(href)}">{esc(text)}</a>' if href else esc(text) for text, href in crumbs
    )
    yield (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp()}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="no-referrer"><link rel="icon" href="data:,">'
        f"<title>{esc(title)}</title><style>{style()}</style></head><body>"
        f'<header class="top"><strong>wfbench</strong><span class="crumbs">{trail}</span></header>'
        "<main>"
    )
    yield from body
    yield f"</main><script>{script()}</script></body></html>\n"


def page(title: str, body: str, *, crumbs: Sequence[tuple[str, str | None]] = ()) -> str:
    """A whole HTML document around ``body`` (``crumbs``: (text, href) breadcrumbs)."""
    return "".join(page_parts(title, (body,), crumbs=crumbs))
