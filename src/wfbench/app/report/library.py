"""``wfbench view DIR`` over a directory of sweeps: an index, each sweep's pages, and comparisons.

- ``index.html`` — one row per sweep (:mod:`wfbench.app.report.sweep_index`), sortable and
  filterable; ticking two sweeps links to their comparison;
- ``s/<sweep>/…`` — the pages of one sweep, exactly as ``wfbench view <sweep>`` serves them
  (:class:`~wfbench.app.report.site.SweepSite`), with a link back to the index;
- ``compare.html?a=<sweep>&b=<sweep>`` — the two sweeps side by side (``wfbench compare``), each
  (task, arm) linking to its cells in either sweep;
- ``live.txt`` — the listing's live token: it changes when a sweep appears or any sweep changes,
  and the index reloads.

A sweep's pages are built when first asked for and kept for the :data:`KEEP_SITES` sweeps used
last (each holds its model, never its rows); the index counts each sweep's rows once and then
only the rows written since.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Mapping
from urllib.parse import parse_qs, unquote

from wfbench.app.report.compare import compare_sweeps, render_comparison_html
from wfbench.app.report.links import Links
from wfbench.app.report.model import ReportInputs
from wfbench.app.report.page import esc, page
from wfbench.app.report.site import HTML, TEXT, Response, SweepSite
from wfbench.app.report.sweep_index import SweepIndex, render_index
from wfbench.domain.errors import InputError
from wfbench.domain.ports import LiveSweep, SweepCatalog

__all__ = ["KEEP_SITES", "SweepLibrary"]

KEEP_SITES = 8


class SweepLibrary:
    """The viewer's pages of every sweep under one directory."""

    def __init__(self, catalog: SweepCatalog, *, root: str) -> None:
        self.catalog = catalog
        self.root = root
        self.index = SweepIndex(catalog)
        self._sites: OrderedDict[str, SweepSite] = OrderedDict()

    def render(self, path: str) -> Response:
        """The response for a request path; 404 for anything else."""
        path, _, query = path.partition("?")
        path = path.split("#", 1)[0].lstrip("/")
        if path in ("", "index.html"):
            summaries = sorted(self.index.summaries(), key=lambda s: s.started or "", reverse=True)
            return Response(200, HTML, render_index(self.root, iter(summaries), token=self._token()).encode())
        if path == "live.txt":
            return Response(200, TEXT, self._token().encode())
        if path == "compare.html":
            return self._compare(parse_qs(query))
        if path.startswith("s/"):
            return self._sweep(path[2:], query)
        return Response(404, TEXT, b"not found\n")

    def _token(self) -> str:
        """Changes when a sweep appears, disappears or changes."""
        digest = hashlib.sha256()
        for name in self.catalog.names():
            digest.update(name.encode() + b"\0")
            try:
                digest.update(self.catalog.open(name).state().token.encode() + b"\n")
            except InputError:
                continue
        return digest.hexdigest()[:16]

    def _sweep(self, rest: str, query: str) -> Response:
        parts = [unquote(p) for p in rest.split("/")]
        for cut in range(len(parts) - 1, 0, -1):
            name = "/".join(parts[:cut])
            if name in self.catalog.names():
                site = self._site(name)
                return site.render("/".join(rest.split("/")[cut:]) + (f"?{query}" if query else ""))
        return Response(404, TEXT, b"not found\n")

    def _site(self, name: str) -> SweepSite:
        site = self._sites.pop(name, None)
        if site is None:
            depth = name.count("/") + 2  # s/<name>/
            site = SweepSite(
                self.catalog.open(name), title=f"wfbench sweep {name}", home="../" * depth + "index.html"
            )
        self._sites[name] = site
        while len(self._sites) > KEEP_SITES:
            self._sites.popitem(last=False)
        return site

    def _compare(self, query: Mapping[str, list[str]]) -> Response:
        names = [(query.get(k) or [""])[0] for k in ("a", "b")]
        known = self.catalog.names()
        if any(n not in known for n in names):
            body = (
                '<h1>Compare two sweeps</h1><p class="problem">Tick two sweeps on the index to compare '
                "them.</p>"
            )
            return Response(
                404, HTML, page("wfbench comparison", body, crumbs=(("sweeps", "index.html"),)).encode()
            )
        sweeps = [self.catalog.open(n) for n in names]
        try:
            rows = [tuple(row for _, row in _strict_scan(s)) for s in sweeps]
        except InputError as exc:
            body = f'<h1>Compare two sweeps</h1><p class="problem">{esc(exc)}</p>'
            return Response(
                200, HTML, page("wfbench comparison", body, crumbs=(("sweeps", "index.html"),)).encode()
            )
        inputs = tuple(_inputs(s) for s in sweeps)
        comparison = compare_sweeps(
            rows[0], rows[1], names=(names[0], names[1]), inputs=(inputs[0], inputs[1])
        )
        links = tuple(Links(root="s/" + n + "/") for n in names)
        text = render_comparison_html(comparison, links=(links[0], links[1]))
        text = text.replace(
            '<span class="crumbs">', '<span class="crumbs"><a href="index.html">all sweeps</a> / ', 1
        )
        return Response(200, HTML, text.encode())


def _strict_scan(sweep: LiveSweep):  # type: ignore[no-untyped-def]
    """Every row of a sweep; a line that is not a row is an InputError (a comparison needs them all)."""
    problems: list[object] = []
    found = list(sweep.scan(problems))
    if problems:
        raise InputError(f"{problems[0]}: a comparison needs every row", source="results.jsonl")
    return found


def _inputs(sweep: LiveSweep) -> ReportInputs:
    promotion, _ = sweep.json_file("promotion.json")
    manifest, _ = sweep.json_file("manifest.json")
    return ReportInputs(
        promotion=promotion if isinstance(promotion, Mapping) else None,
        manifest=manifest if isinstance(manifest, Mapping) else None,
    )
