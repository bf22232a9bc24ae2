"""The index of ``wfbench view DIR`` when DIR holds many sweeps: one row per sweep.

A row says when the sweep started, which corpus and arms it ran, how many cells it has (and,
while it runs, of how many), the decision for each candidate, its spend and its status. Rows
are counted, never kept: :class:`SweepIndex` remembers per sweep the byte offset it has read up
to and a few totals, and reads only the lines written since (:meth:`LiveSweep.follow
<wfbench.domain.ports.LiveSweep.follow>`), so refreshing the index of a running sweep costs the
new rows, and a directory of large finished sweeps is read once per viewer.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from wfbench.app.report import fmt
from wfbench.app.report.page import data_table_parts, esc, page_parts
from wfbench.domain.errors import InputError
from wfbench.domain.ports import LiveSweep, SweepCatalog
from wfbench.domain.sweep.live import SweepState, progress_text

__all__ = ["INDEX_COLUMNS", "SweepIndex", "SweepSummary", "render_index", "sweep_href"]


@attrs.frozen
class SweepSummary:
    """One sweep as the index shows it."""

    name: str
    started: str | None
    corpus: str | None
    arms: tuple[str, ...]
    cells: int
    planned: int | None
    #: ``(candidate arm, decision)`` from ``promotion.json``.
    decisions: tuple[tuple[str, str], ...]
    spend: float
    spend_unknown: int
    status: str

    @property
    def pending(self) -> bool:
        """No verdict yet: the sweep is still running."""
        return self.status.startswith("running")


@attrs.define
class _Tally:
    """What the index keeps of one sweep between refreshes (never a row)."""

    offset: int = 0
    cells: int = 0
    spend: float = 0.0
    unknown: int = 0
    first_recorded: str | None = None
    arms: dict[str, None] = attrs.field(factory=dict)
    token: str = ""
    summary: SweepSummary | None = None

    def add(self, row: Mapping[str, Any]) -> None:
        self.cells += 1
        cost = row.get("cost_usd")
        if isinstance(cost, int | float) and not isinstance(cost, bool):
            self.spend += float(cost)
        else:
            self.unknown += 1
        arm = row.get("arm")
        if isinstance(arm, str):
            self.arms.setdefault(arm)
        recorded = row.get("recorded_at")
        if isinstance(recorded, str) and (self.first_recorded is None or recorded < self.first_recorded):
            self.first_recorded = recorded


def _corpus(manifest: Mapping[str, Any]) -> str | None:
    path = manifest.get("corpus_path")
    if not isinstance(path, str) or not path:
        return None
    return "/".join(path.replace("\\", "/").split("/")[-2:])


def _decisions(promotion: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(promotion, Mapping):
        return ()
    found = []
    for item in promotion.get("decisions") or []:
        if isinstance(item, Mapping) and isinstance(item.get("candidate_arm"), str):
            found.append((item["candidate_arm"], str(item.get("decision") or "n/a")))
    return tuple(found)


def _status(state: SweepState, tally: _Tally, promotion: Any) -> str:
    if state.running:
        return progress_text(tally.cells, state.planned)
    if isinstance(promotion, Mapping) and isinstance(promotion.get("run_status"), str):
        return str(promotion["run_status"])
    return "unfinished (no promotion.json)"


class SweepIndex:
    """Summaries of every sweep of a catalog, each brought up to date on demand."""

    def __init__(self, catalog: SweepCatalog) -> None:
        self.catalog = catalog
        self._tallies: dict[str, _Tally] = {}

    def summaries(self) -> Iterator[SweepSummary]:
        """Every sweep of the catalog (listed afresh), each read only as far as it grew."""
        for name in self.catalog.names():
            summary = self.summary(name)
            if summary is not None:
                yield summary

    def summary(self, name: str) -> SweepSummary | None:
        """One sweep's summary (None: it is gone)."""
        try:
            sweep = self.catalog.open(name)
        except InputError:  # a sweep removed since the listing is just not shown
            return None
        state = sweep.state()
        tally = self._tallies.setdefault(name, _Tally())
        if tally.summary is not None and tally.token == state.token:
            return tally.summary
        if state.size < tally.offset:  # rewritten (a resume moved rows away): count again
            tally = self._tallies[name] = _Tally()
        for offset, row in sweep.follow(tally.offset):
            tally.add(row)
            tally.offset = offset
        tally.token, tally.summary = state.token, self._summarize(name, sweep, state, tally)
        return tally.summary

    @staticmethod
    def _summarize(name: str, sweep: LiveSweep, state: SweepState, tally: _Tally) -> SweepSummary:
        manifest, _ = sweep.json_file("manifest.json")
        manifest = manifest if isinstance(manifest, Mapping) else {}
        promotion, _ = sweep.json_file("promotion.json") if state.judged else (None, "missing")
        arms = manifest.get("arms")
        started = manifest.get("started_at")
        return SweepSummary(
            name=name,
            started=started if isinstance(started, str) else tally.first_recorded,
            corpus=_corpus(manifest),
            arms=tuple(str(a) for a in arms) if isinstance(arms, list) else tuple(tally.arms),
            cells=tally.cells,
            planned=state.planned,
            decisions=() if state.running else _decisions(promotion),
            spend=tally.spend,
            spend_unknown=tally.unknown,
            status=_status(state, tally, promotion),
        )


def sweep_href(name: str) -> str:
    """The index's link to a sweep's overview (relative to the index)."""
    return "s/" + "/".join(_quote(p) for p in name.split("/")) + "/index.html"


def _quote(part: str) -> str:
    from urllib.parse import quote

    return quote(part, safe="")


INDEX_COLUMNS = [
    {"label": "started", "filter": "text"},
    {"label": "sweep", "filter": "text", "href": 9},
    {"label": "corpus", "filter": "select"},
    {"label": "arms", "tags": True, "filter": "tags"},
    {"label": "cells", "num": True},
    {"label": "decisions", "tags": True, "filter": "tags", "flag": False},
    {"label": "spend", "num": True},
    {"label": "status", "filter": "select"},
    {"label": "compare", "pick": 1, "nosort": True},
]


def _row(summary: SweepSummary) -> list[Any]:
    cells = f"{summary.cells:,}" + (f" of {summary.planned:,}" if summary.pending and summary.planned else "")
    decisions = (
        ["pending"] if summary.pending else [f"{arm}: {kind}" for arm, kind in summary.decisions] or ["none"]
    )
    spend = fmt.money(summary.spend, 2) + (
        f" (+{summary.spend_unknown} unknown)" if summary.spend_unknown else ""
    )
    status = "running" if summary.pending else summary.status
    return [
        [(summary.started or "n/a")[:19].replace("T", " "), summary.started or ""],
        summary.name,
        summary.corpus or "n/a",
        list(summary.arms),
        [cells, summary.cells],
        decisions,
        [spend, summary.spend],
        [summary.status if summary.pending else status, summary.status],
        summary.name,
        sweep_href(summary.name),
    ]


def render_index(root: str, summaries: Iterator[SweepSummary], *, token: str) -> str:
    """The index page of the sweeps under ``root`` (``token``: the live-refresh token of the listing)."""
    count = [0]

    def rows() -> Iterator[list[Any]]:
        for summary in summaries:
            count[0] += 1
            yield _row(summary)

    def body() -> Iterator[str]:
        yield (
            f"<h1>Sweeps under {esc(root)}</h1>"
            '<p class="muted">Newest first by start; click a header to sort, filter by corpus, arm, '
            "decision or status. Tick two sweeps to compare them. The page refreshes while a sweep "
            "runs.</p>"
            '<p class="compare-pick"><a id="compare-link" hidden href="compare.html">compare the two '
            "ticked sweeps</a></p>"
        )
        yield from data_table_parts("sweeps", INDEX_COLUMNS, rows(), suffix=".html")
        yield live_marker("live.txt", token)
        if not count[0]:
            yield '<p class="problem">No sweep here: no directory holding a results.jsonl was found.</p>'

    return "".join(page_parts("wfbench sweeps", body(), crumbs=(("sweeps", None),)))


def live_marker(src: str, token: str) -> str:
    """The element the page script polls: it reloads the page when ``src`` no longer says ``token``."""
    return f'<div id="live" hidden data-src="{esc(src)}" data-token="{esc(token)}"></div>'
