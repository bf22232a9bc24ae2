"""``wfbench view``: the pages of one sweep, served by path or written as files.

:class:`SweepSite` reads the sweep once (one pass over ``results.jsonl``, keeping the model and
each row's byte offset, never the rows), then renders a page per request:

- ``index.html`` — the overview (the report);
- ``tasks/<task>.html`` and ``arms/<arm>.html`` — every cell of a task, every task of an arm;
- ``cells/<task>/<arm>/run-<i>.html`` — one cell (its row is read back at its offset);
- ``raw/<path>`` — a cell's artifact as plain text (only files of cells: ``cells/…`` of a cell
  the sweep has, and the legacy flat transcripts, patches and review artifacts);
- ``live.txt`` — the sweep's live token (:class:`~wfbench.domain.sweep.live.SweepState`).

Over a :class:`~wfbench.domain.ports.LiveSweep`, every request first checks the sweep's state and
reads the sweep again when it changed (new rows, a verdict written, the run ended). While a
process still runs the sweep, the overview says ``running, k of N cells``, the verdict is
``pending`` (a ``promotion.json`` left by an earlier run is not this run's), and the overview,
task and arm pages poll ``live.txt`` and reload when it changes.

:meth:`SweepSite.write_static` writes the same pages (no ``raw/``: links point into the sweep
directory itself) through a writer the caller provides, a cell page at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import attrs

from wfbench.app.report.cell_page import ARTIFACT_LIMIT, render_cell_page
from wfbench.app.report.group_pages import render_arm_page, render_task_page
from wfbench.app.report.links import Links
from wfbench.app.report.model import ReportInputs, SweepModel, build_model
from wfbench.app.report.overview import render_overview
from wfbench.app.report.sweep_index import live_marker
from wfbench.domain.ports import LiveSweep, SweepSource
from wfbench.domain.results.rows import Row
from wfbench.domain.sweep import layout
from wfbench.domain.sweep.live import SweepState, progress_text

__all__ = ["Response", "SweepSite"]

HTML = "text/html; charset=utf-8"
TEXT = "text/plain; charset=utf-8"


@attrs.frozen
class Response:
    """One page or file: HTTP status, content type, body."""

    status: int
    content_type: str
    body: bytes


class SweepSite:
    """The viewer's pages of one sweep."""

    def __init__(self, source: SweepSource, *, title: str | None = None, home: str | None = None) -> None:
        self.source = source
        self.title = title
        #: The directory index, relative to this sweep's root (``../../index.html``); None: no index.
        self.home = home
        self.live: SweepState | None = _state(source)
        self._load()

    def _load(self) -> None:
        source, running = self.source, self.live is not None and self.live.running
        problems: list[Any] = []
        self.offsets: dict[tuple[str, str, int], int] = {}
        promotion, _ = source.json_file("promotion.json") if not running else (None, "running")
        manifest, _ = source.json_file("manifest.json")
        inputs = ReportInputs(
            title=self.title or "wfbench sweep",
            promotion=promotion if isinstance(promotion, Mapping) else None,
            manifest=manifest if isinstance(manifest, Mapping) else None,
        )
        self.model: SweepModel = build_model(self._rows(problems), inputs)
        reasons = tuple(f"line {p.line}: {p.reason}" for p in problems if not _still_writing(p, running))
        if reasons:
            self.model = attrs.evolve(self.model, inputs=attrs.evolve(inputs, problems=reasons))
        if running and self.live is not None:
            status = progress_text(self.model.rows, self.live.planned)
            self.model = attrs.evolve(self.model, run_status=status, pending=True, verdicts=())
        self.task_by_segment = {layout.path_segment(t): t for t in self.model.tasks}
        self.arm_by_segment = {layout.path_segment(a): a for a in self.model.arms}

    def refresh(self) -> None:
        """Read the sweep again if it changed since the last request (a live sweep only)."""
        state = _state(self.source)
        if state is not None and self.live is not None and state.token != self.live.token:
            self.live = state
            self._load()

    def _rows(self, problems: list[Any]) -> Iterator[Row]:
        for offset, row in self.source.scan(problems):
            self.offsets.setdefault(row.cell, offset)
            yield row

    # -- pages -----------------------------------------------------------------

    def overview(self, links: Links) -> str:
        """The overview page."""
        return render_overview(self.model, links)

    def cell_page(self, key: tuple[str, str, int], links: Links, row: Mapping[str, Any] | None = None) -> str:
        """The page of one cell (its row read back unless given)."""
        if row is None and key in self.offsets:
            row = self.source.row_at(self.offsets[key])
        runs = [c.run for c in self.model.cells_of(key[0], key[1])]
        index = runs.index(key[2]) if key[2] in runs else -1
        neighbours = (
            runs[index - 1] if index > 0 else None,
            runs[index + 1] if 0 <= index < len(runs) - 1 else None,
        )
        return render_cell_page(row, key, source=self.source, links=links, neighbours=neighbours)

    def render(self, path: str) -> Response:
        """The response for a request path (``/``, ``/tasks/x.html``…); 404 for anything else."""
        self.refresh()
        path = path.split("?", 1)[0].split("#", 1)[0].lstrip("/")
        if path in ("", "index.html"):
            return self._page(self.overview(Links()), 0, live=True)
        if path == "live.txt":
            return Response(200, TEXT, (self.live.token if self.live else "static").encode())
        parts = path.split("/")
        if len(parts) == 2 and parts[0] in ("tasks", "arms") and parts[1].endswith(".html"):
            return self._group(parts[0], parts[1][: -len(".html")])
        if len(parts) == 4 and parts[0] == layout.CELLS_DIR and parts[3].endswith(".html"):
            key = self._cell_key(parts[1], parts[2], parts[3][: -len(".html")])
            if key is not None:
                return self._page(self.cell_page(key, Links().at_depth(3)), 3, live=False)
        if parts[0] == "raw" and len(parts) > 1:
            return self._raw("/".join(parts[1:]))
        return Response(404, TEXT, b"not found\n")

    def _group(self, kind: str, segment: str) -> Response:
        links = Links().at_depth(1)
        if kind == "tasks" and segment in self.task_by_segment:
            return self._page(
                render_task_page(self.model, self.task_by_segment[segment], links), 1, live=True
            )
        if kind == "arms" and segment in self.arm_by_segment:
            return self._page(render_arm_page(self.model, self.arm_by_segment[segment], links), 1, live=True)
        return Response(404, TEXT, b"not found\n")

    def _page(self, text: str, depth: int, *, live: bool) -> Response:
        """A page, with a link to the directory index and, while the sweep runs, the live marker."""
        if self.home is not None:
            home = "../" * depth + self.home
            text = text.replace(
                '<span class="crumbs">', f'<span class="crumbs"><a href="{home}">all sweeps</a> / ', 1
            )
        if live and self.live is not None and self.live.running:
            marker = live_marker("../" * depth + "live.txt", self.live.token)
            text = text.replace("</main>", marker + "</main>", 1)
        return _html(text)

    def _cell_key(self, task_seg: str, arm_seg: str, run_part: str) -> tuple[str, str, int] | None:
        task, arm = self.task_by_segment.get(task_seg), self.arm_by_segment.get(arm_seg)
        if task is None or arm is None or not run_part.startswith("run-") or not run_part[4:].isdigit():
            return None
        run = int(run_part[4:])
        return (task, arm, run) if any(c.run == run for c in self.model.cells_of(task, arm)) else None

    def _raw_allowed(self, rel: str) -> bool:
        parts = rel.split("/")
        if parts[0] == layout.CELLS_DIR and len(parts) >= 5:
            return self._cell_key(parts[1], parts[2], parts[3]) is not None
        if len(parts) == 2 and parts[0] == layout.TRANSCRIPTS_DIR:
            return True
        return len(parts) == 1 and rel.endswith((".patch", ".review.json"))

    def _raw(self, rel: str) -> Response:
        if not self._raw_allowed(rel):
            return Response(404, TEXT, b"not found\n")
        artifact = self.source.artifact(rel, limit=ARTIFACT_LIMIT)
        if not artifact.readable:
            return Response(404, TEXT, f"{rel}: {artifact.state}\n".encode())
        return Response(200, TEXT, artifact.data)

    # -- static ----------------------------------------------------------------

    def write_static(self, write: Callable[[str, bytes], None], *, sweep_prefix: str) -> int:
        """Write every page through ``write(relative path, bytes)``; raw links go to ``sweep_prefix``.

        Returns the number of pages written. Cell pages are rendered in one more pass over the
        rows, so memory stays that of the model.
        """
        base = Links(sweep=sweep_prefix)
        write("index.html", self.overview(base).encode())
        count = 1
        for task in self.model.tasks:
            write(
                f"tasks/{layout.path_segment(task)}.html",
                render_task_page(self.model, task, base.at_depth(1)).encode(),
            )
            count += 1
        for arm in self.model.arms:
            write(
                f"arms/{layout.path_segment(arm)}.html",
                render_arm_page(self.model, arm, base.at_depth(1)).encode(),
            )
            count += 1
        cell_links = base.at_depth(3)
        for offset, row in self.source.scan():
            if self.offsets.get(row.cell) != offset:  # a duplicate row of a cell: the first one is shown
                continue
            page_html = self.cell_page(row.cell, cell_links, row.to_mapping())
            write(f"{layout.cell_dir(*row.cell)}.html", page_html.encode())
            count += 1
        return count


def _state(source: SweepSource) -> SweepState | None:
    """The sweep's live state when the source can tell it (a sweep directory), else None."""
    return source.state() if isinstance(source, LiveSweep) else None


def _still_writing(problem: Any, running: bool) -> bool:
    """A torn last line of a running sweep: a row being written, not a damaged file."""
    return running and "no line end" in str(getattr(problem, "reason", ""))


def _html(text: str) -> Response:
    return Response(200, HTML, text.encode())
