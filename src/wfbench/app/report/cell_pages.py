"""The viewer's pages beside ``report.html``: ``tasks/<task>.html``, ``arms/<arm>.html`` and
``cells/<task>/<arm>/run-<i>.html`` for each cell of a sweep.

``report.html`` is opened from disk, without ``wfbench view``; its dots and counts link to these
pages (the pages the viewer shows: prompts, transcript, patch, review, oracle, row) rather than
to raw directory listings. A sweep of more than :data:`CELL_PAGES_LIMIT` cells gets none (the
report links the cells' directories and says ``wfbench view DIR``): a page is some tens of
kilobytes, and a report must not write gigabytes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from wfbench.app.report.cell_page import render_cell_page
from wfbench.app.report.group_pages import render_arm_page, render_task_page
from wfbench.app.report.links import Links
from wfbench.app.report.model import SweepModel
from wfbench.domain.ports import ArtifactSource
from wfbench.domain.ports import SweepDirectory as SweepFiles
from wfbench.domain.results.rows import Row
from wfbench.domain.sweep import layout

__all__ = ["CELL_PAGES_LIMIT", "DirectoryArtifacts", "report_links", "write_cell_pages"]

CELL_PAGES_LIMIT = 5000


def report_links(cells: int) -> Links:
    """The links of ``report.html`` for a sweep of ``cells`` rows (cell pages when it gets them)."""
    return Links(mode="report", sweep="", cell_pages=0 < cells <= CELL_PAGES_LIMIT)


@attrs.frozen
class _Artifact:
    path: str
    state: str
    data: bytes = b""
    size: int | None = None
    detail: str | None = None

    @property
    def readable(self) -> bool:
        return self.state in ("ok", "too-large")

    def text(self) -> str:
        return self.data.decode("utf-8", "replace")


class DirectoryArtifacts:
    """The ``ArtifactSource`` port over the ``SweepDirectory`` port's :meth:`read` (the sweep's end)."""

    def __init__(self, directory: SweepFiles) -> None:
        self.directory = directory

    def artifact(self, rel: str, *, limit: int) -> _Artifact:
        """The file ``rel``, at most ``limit`` bytes (``unsafe`` for a path leaving the directory)."""
        try:
            data = self.directory.read(rel)
        except ValueError as exc:
            return _Artifact(rel, "unsafe", detail=str(exc))
        except OSError as exc:
            return _Artifact(rel, "unreadable", detail=exc.strerror)
        if data is None:
            return _Artifact(rel, "missing")
        return _Artifact(rel, "too-large" if len(data) > limit else "ok", data[:limit], len(data))


def write_cell_pages(
    model: SweepModel,
    rows: Callable[[], Iterable[Row]],
    *,
    source: ArtifactSource,
    write: Callable[[str, bytes], None],
) -> int:
    """Write the task and arm pages and each cell's page (its first row, as the viewer shows).

    ``rows`` is read once, so a file is streamed, never held. Returns the pages written: none for
    a sweep over :data:`CELL_PAGES_LIMIT` cells.
    """
    base = report_links(model.rows)
    if not base.cell_pages:
        return 0
    for task in model.tasks:
        page = render_task_page(model, task, base.at_depth(1))
        write(f"tasks/{layout.path_segment(task)}.html", page.encode())
    for arm in model.arms:
        write(f"arms/{layout.path_segment(arm)}.html", render_arm_page(model, arm, base.at_depth(1)).encode())
    links = base.at_depth(3)
    seen: set[tuple[str, str, int]] = set()
    for row in rows():
        if row.cell in seen:
            continue
        seen.add(row.cell)
        ordered = sorted({c.run for c in model.cells_of(row.task, row.arm)} | {row.run})
        index = ordered.index(row.run)
        neighbours = (
            ordered[index - 1] if index > 0 else None,
            ordered[index + 1] if index < len(ordered) - 1 else None,
        )
        mapping: Mapping[str, Any] = row.to_mapping()
        text = render_cell_page(mapping, row.cell, source=source, links=links, neighbours=neighbours)
        write(f"{layout.cell_dir(*row.cell)}.html", text.encode())
    return len(seen) + len(model.tasks) + len(model.arms)
