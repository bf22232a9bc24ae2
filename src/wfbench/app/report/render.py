"""Both report files of a sweep from its rows: ``report.md`` and ``report.html`` (one model, one pass)."""

from __future__ import annotations

from collections.abc import Iterable

from wfbench.app.report.links import Links
from wfbench.app.report.markdown import render_markdown
from wfbench.app.report.model import ReportInputs, build_model
from wfbench.app.report.overview import render_overview
from wfbench.domain.results.rows import Row

__all__ = ["render_reports"]


def render_reports(rows: Iterable[Row], inputs: ReportInputs) -> tuple[str, str]:
    """``(report.md, report.html)``; the HTML lives in the sweep directory and links into ``cells/``."""
    model = build_model(rows, inputs)
    return render_markdown(model), render_overview(model, Links(mode="report", sweep=""))
