"""``wfbench view``: the pages of one sweep, served by path or written as files.

:class:`SweepSite` reads the sweep once (one pass over ``results.jsonl``, keeping the model and
each row's byte offset, never the rows), then renders a page per request:

- ``index.html`` — the overview (the report);
- ``tasks/<task>.html`` and ``arms/<arm>.html`` — every cell of a task, every task of an arm;
- ``cells/<task>/<arm>/run-<i>.html`` — one cell (its row is read back at its offset);
- ``raw/<path>`` — a cell's artifact as plain text (only files of cells: ``cells/…`` of a cell
  the sweep has, and the legacy flat transcripts, patches and review artifacts);
- ``live.txt`` — the sweep's live token (:class:`~wfbench.domain.sweep.live.SweepState`);
- ``cells.html?after=OFFSET`` — every cell, a page at a time, read from the file at a byte
  offset (:mod:`~wfbench.app.report.cell_list`), never from the model.

With ``background=True`` (``wfbench view``'s server) the one pass over a sweep larger than
:data:`SMALL_SWEEP_BYTES` runs on a thread: a sweep of a million rows takes a minute to read, and
until it is read ``index.html`` is the first page of ``cells.html`` (which reloads into the
overview when the pass ends), other pages answer 503, and the server answers at once (issue 33).

Over a :class:`~wfbench.domain.ports.LiveSweep`, every request first checks the sweep's state and
reads the sweep again when it changed (new rows, a verdict written, the run ended). While a
process still runs the sweep, the overview says ``running, k of N cells``, the verdict is
``pending`` (a ``promotion.json`` left by an earlier run is not this run's), and the overview,
task and arm pages poll ``live.txt`` and reload when it changes.

:meth:`SweepSite.write_static` writes the same pages (no ``raw/``: links point into the sweep
directory itself) through a writer the caller provides, a cell page at a time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from wfbench.app.report.cell_list import cursor_of, render_cell_list
from wfbench.app.report.links import Links
from wfbench.domain.ports import LiveSweep, SweepSource
from wfbench.domain.sweep import layout
from wfbench.domain.sweep.live import SweepState, progress_text

if TYPE_CHECKING:
    from wfbench.app.report.model import SweepModel
    from wfbench.domain.results.rows import Row

# The model, the overview and the cell pages are imported where they are first used (the pass,
# a page): ``wfbench view`` of a large sweep listens before it has read a row (issue 33).

__all__ = ["Response", "SweepSite"]

HTML = "text/html; charset=utf-8"
TEXT = "text/plain; charset=utf-8"
#: A sweep with more bytes of rows than this is read on a thread when asked (``background``); a
#: smaller one is read before the first request, in well under a second, as it always was.
SMALL_SWEEP_BYTES = 8 << 20
#: ``live.txt`` while the background pass runs; the loading page reloads when it changes.
LOADING_TOKEN = "loading"  # noqa: S105 - a page state, not a secret


@attrs.frozen
class Response:
    """One page or file: HTTP status, content type, body."""

    status: int
    content_type: str
    body: bytes


class SweepSite:
    """The viewer's pages of one sweep."""

    def __init__(
        self,
        source: SweepSource,
        *,
        title: str | None = None,
        home: str | None = None,
        background: bool = False,
    ) -> None:
        self.source = source
        self.title = title
        #: The directory index, relative to this sweep's root (``../../index.html``); None: no index.
        self.home = home
        self.live: SweepState | None = _state(source)
        #: Rows read by the pass so far; set once the model is there; why the pass failed.
        self.rows_read = 0
        self.ready = threading.Event()
        self._failure: str | None = None
        if background and self.live is not None and self.live.size > SMALL_SWEEP_BYTES:
            threading.Thread(target=self._load_in_background, name="wfbench-view-read", daemon=True).start()
        else:
            self._load()
            self.ready.set()

    def _load_in_background(self) -> None:
        try:
            self._load()
        except Exception as exc:  # shown on every page instead of dying with the thread
            self._failure = f"{type(exc).__name__}: {exc}"
        finally:
            self.ready.set()

    def _load(self) -> None:
        from wfbench.app.report.model import ReportInputs, build_model

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
            self.rows_read += 1
            yield row

    # -- pages -----------------------------------------------------------------

    def overview(self, links: Links) -> str:
        """The overview page."""
        from wfbench.app.report.overview import render_overview

        return render_overview(self.model, links)

    def cell_page(self, key: tuple[str, str, int], links: Links, row: Mapping[str, Any] | None = None) -> str:
        """The page of one cell (its row read back unless given)."""
        from wfbench.app.report.cell_page import render_cell_page

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
        path, _, query = path.split("#", 1)[0].partition("?")
        path = path.lstrip("/")
        if path == "cells.html":
            return self._cells(query)
        if not self.ready.is_set():
            return self._reading(path)
        if self._failure is not None:
            return Response(500, TEXT, f"reading the sweep failed: {self._failure}\n".encode())
        self.refresh()
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

    def _cells(self, query: str, note: str | None = None) -> Response:
        """A page of ``cells.html``: the rows that follow the query's ``after`` offset."""
        if not isinstance(self.source, LiveSweep):
            return Response(404, TEXT, b"not found\n")
        rows = self.source.follow(cursor_of(query))
        try:
            text = render_cell_list(
                rows, after=cursor_of(query), title=self.title or "wfbench sweep", note=note
            )
        finally:
            close = getattr(rows, "close", None)
            if close is not None:
                close()  # the file the listing read from
        return _html(text)

    def _reading(self, path: str) -> Response:
        """While the background pass runs: the index is the cell listing, live.txt says so, the rest waits."""
        if path == "live.txt":
            return Response(200, TEXT, LOADING_TOKEN.encode())
        if path in ("", "index.html"):
            note = (
                f"Reading the sweep ({self.rows_read:,} rows so far): the overview replaces this list when"
                " every row is read."
            )
            page = self._cells("", note=note)
            marker = _live_marker("live.txt", LOADING_TOKEN)
            return _html(page.body.decode().replace("</main>", marker + "</main>", 1))
        message = f"still reading the sweep ({self.rows_read:,} rows so far); try again shortly\n"
        return Response(503, TEXT, message.encode())

    def _group(self, kind: str, segment: str) -> Response:
        from wfbench.app.report.group_pages import render_arm_page, render_task_page

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
            marker = _live_marker("../" * depth + "live.txt", self.live.token)
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
        from wfbench.app.report.cell_page import ARTIFACT_LIMIT

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
        from wfbench.app.report.group_pages import render_arm_page, render_task_page

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


def _live_marker(src: str, token: str) -> str:
    from wfbench.app.report.sweep_index import live_marker

    return live_marker(src, token)


def _state(source: SweepSource) -> SweepState | None:
    """The sweep's live state when the source can tell it (a sweep directory), else None."""
    return source.state() if isinstance(source, LiveSweep) else None


def _still_writing(problem: Any, running: bool) -> bool:
    """A torn last line of a running sweep: a row being written, not a damaged file."""
    return running and "no line end" in str(getattr(problem, "reason", ""))


def _html(text: str) -> Response:
    return Response(200, HTML, text.encode())
