"""Both report files of a sweep: ``report.md`` and ``report.html`` (one model, one pass).

:func:`render_reports` renders from rows; :func:`read_for_report` is the one pass ``wfbench
report`` makes over ``results.jsonl``: each row goes to the gate's builders (the summary and
what the rows attest) and to the report's :class:`~wfbench.app.report.model.ModelBuilder` in the
same loop, and is dropped, so the command reads the file once and never holds its rows;
:func:`render_model` renders the model built from it, and :func:`report_parts` gives the same
two documents in pieces, for a writer that streams them to disk without holding either.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from wfbench.app.gating.gating import AttestationBuilder, GateInput
from wfbench.app.report.cell_pages import report_links
from wfbench.app.report.markdown import markdown_parts, render_markdown
from wfbench.app.report.model import ModelBuilder, ReportInputs, SweepModel, build_model
from wfbench.app.report.overview import overview_parts, render_overview
from wfbench.domain.results.rows import Row
from wfbench.domain.results.summary import SummaryBuilder

__all__ = ["read_for_report", "render_model", "render_reports", "report_parts"]


def render_reports(rows: Iterable[Row], inputs: ReportInputs) -> tuple[str, str]:
    """``(report.md, report.html)``; the HTML lives in the sweep directory and links into ``cells/``."""
    return render_model(build_model(rows, inputs))


def render_model(model: SweepModel) -> tuple[str, str]:
    """``(report.md, report.html)`` of ``model``."""
    return render_markdown(model), render_overview(model, report_links(model.rows))


def report_parts(model: SweepModel) -> tuple[Iterator[str], Iterator[str]]:
    """``(report.md, report.html)`` of ``model`` in pieces: each joins to :func:`render_model`'s text."""
    return markdown_parts(model), overview_parts(model, report_links(model.rows))


def read_for_report(rows: Iterable[Row]) -> tuple[GateInput, ModelBuilder]:
    """Consume ``rows`` once: the gate's input and the report's builder.

    The model is ``builder.build(gate_input.summary, inputs)``.
    """
    summary, attested, builder = SummaryBuilder(), AttestationBuilder(), ModelBuilder()
    for row in rows:
        summary.add(row)
        attested.add(row)
        builder.add(row)
    return GateInput(summary=summary.build(), attested=attested.build()), builder
