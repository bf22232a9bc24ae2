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
from collections.abc import Sequence
from typing import Any

__all__ = ["csp", "data_table", "esc", "page", "script", "status_class", "style"]

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
    """The pages' Content-Security-Policy: nothing loads; only the inline style and script (by hash) apply."""
    return (
        "default-src 'none'; img-src data:; "
        f"style-src '{_hash(style())}'; script-src '{_hash(script())}'; base-uri 'none'; form-action 'none'"
    )


def esc(value: object) -> str:
    """Any value as HTML text (``None`` → ``n/a``)."""
    return "n/a" if value is None else html.escape(str(value), quote=True)


def status_class(status: str) -> str:
    """The CSS class of a cell status: ``resolved``, ``unresolved``, ``excluded`` or ``error``."""
    return status if status in ("resolved", "unresolved", "excluded") else "error"


def _json_block(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


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
    spec = {
        "columns": list(columns),
        "rows": [list(row) for row in rows],
        "page": page_size,
        "statuses": [list(s) for s in statuses],
        "suffix": suffix,
    }
    noscript = (
        f'<noscript><p class="muted">This table needs JavaScript ({len(rows)} rows); report.md has it as '
        "text.</p></noscript>"
    )
    return (
        f'<script type="application/json" id="{esc(table_id)}">{_json_block(spec)}</script>'
        f'<div class="dt" data-src="{esc(table_id)}"></div>{noscript}'
    )


def page(title: str, body: str, *, crumbs: Sequence[tuple[str, str | None]] = ()) -> str:
    """A whole HTML document around ``body`` (``crumbs``: (text, href) breadcrumbs)."""
    trail = " / ".join(
        f'<a href="{esc(href)}">{esc(text)}</a>' if href else esc(text) for text, href in crumbs
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp()}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="no-referrer"><link rel="icon" href="data:,">'
        f"<title>{esc(title)}</title><style>{style()}</style></head><body>"
        f'<header class="top"><strong>wfbench</strong><span class="crumbs">{trail}</span></header>'
        f"<main>{body}</main><script>{script()}</script></body></html>\n"
    )
