"""Where a page links to: the viewer's pages, or (in ``report.html``) the sweep's own files.

Every link is relative, so the same pages work served by ``wfbench view`` and written as files by
``--static`` (opened from disk). ``report.html`` lives in the sweep directory beside ``cells/``:
when the sweep is small enough, the viewer's task, arm and cell pages are written beside it
(``tasks/``, ``arms/``, ``cells/<task>/<arm>/run-<i>.html``: ``cell_pages``) and its links lead
there; otherwise a cell links to its artifact directory and a task to ``cells/<task>/``.
"""

from __future__ import annotations

import attrs

from wfbench.domain.sweep import layout

__all__ = ["Links"]


@attrs.frozen
class Links:
    """Link targets for pages at one depth of the site.

    ``mode`` is ``view`` (the viewer's pages) or ``report`` (``report.html`` in the sweep
    directory). ``root`` is the relative path from the page to the site root (``""``, ``"../"``);
    ``sweep`` the relative path from the site root to the sweep directory (for raw artifacts).
    """

    mode: str = "view"
    root: str = ""
    sweep: str = "raw/"
    #: In a report: the viewer's task, arm and cell pages are written beside it.
    cell_pages: bool = False

    @property
    def pages(self) -> bool:
        """Task, arm and cell links lead to pages (the viewer, or a report with its pages)."""
        return self.mode == "view" or self.cell_pages

    @property
    def cell_suffix(self) -> str:
        """What follows ``run-<i>`` in a link to a cell: its page, or its directory."""
        return ".html" if self.pages else "/"

    def at_depth(self, depth: int) -> Links:
        """The same links for a page ``depth`` directories below the root."""
        return attrs.evolve(self, root="../" * depth)

    def overview(self) -> str:
        """The overview page."""
        return f"{self.root}index.html" if self.mode == "view" else f"{self.root}report.html"

    def task(self, task: str) -> str:
        """The page of one task (in a report without pages: its cells directory)."""
        if self.pages:
            return f"{self.root}tasks/{layout.path_segment(task)}.html"
        return f"{self.root}{layout.CELLS_DIR}/{layout.path_segment(task)}/"

    def group(self, task: str, arm: str) -> str:
        """The cells of one (task, arm)."""
        if self.pages:
            return f"{self.root}tasks/{layout.path_segment(task)}.html#arm-{layout.path_segment(arm)}"
        return f"{self.root}{layout.CELLS_DIR}/{layout.path_segment(task)}/{layout.path_segment(arm)}/"

    def cell(self, task: str, arm: str, run: int) -> str:
        """The page of one cell (in a report without cell pages: its artifact directory)."""
        return f"{self.root}{layout.cell_dir(task, arm, run)}{self.cell_suffix}"

    def raw(self, rel: str) -> str:
        """A file of the sweep directory, as written."""
        return f"{self.root}{self.sweep}{rel}"
