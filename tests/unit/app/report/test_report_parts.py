"""The reports in pieces join to exactly the documents they stream, and hold no table whole (#18).

``wfbench report`` writes ``report.md`` and ``report.html`` piece by piece
(:func:`~wfbench.app.report.render.report_parts`), so a 40,000-task sweep never holds either
document, nor any table's rows, in memory. These tests pin that the pieces are the documents
(against the one-string implementations they replaced) and that a table arrives a few rows at
a time.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.app.report.test_report import _model, _sweep
from wfbench.app.report.links import Links
from wfbench.app.report.markdown import joined_lines, markdown_parts, render_markdown
from wfbench.app.report.overview import overview_parts, render_overview
from wfbench.app.report.page import data_table, data_table_parts, esc
from wfbench.app.report.render import render_model, report_parts

relaxed = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _whole_table(
    table_id: str,
    columns: Sequence[Any],
    rows: Sequence[Sequence[Any]],
    *,
    page_size: int = 50,
    statuses: Sequence[tuple[str, str]] = (),
    suffix: str = ".html",
) -> str:
    """The data table as it was made before it streamed: one ``json.dumps`` of the whole spec."""
    spec = {
        "columns": list(columns),
        "rows": [list(row) for row in rows],
        "page": page_size,
        "statuses": [list(s) for s in statuses],
        "suffix": suffix,
    }
    text = json.dumps(spec, ensure_ascii=False, separators=(",", ":"))
    text = text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
    noscript = (
        f'<noscript><p class="muted">This table needs JavaScript ({len(rows)} rows); report.md has it as '
        "text.</p></noscript>"
    )
    return (
        f'<script type="application/json" id="{esc(table_id)}">{text}</script>'
        f'<div class="dt" data-src="{esc(table_id)}"></div>{noscript}'
    )


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**60), 2**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.sampled_from('a<>&"\\/ü—\u2028\n\t\x00'), max_size=6)
)
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=3), max_leaves=6)


@relaxed
@given(
    st.lists(st.lists(_VALUES, max_size=4), max_size=12),
    st.lists(st.tuples(st.text(max_size=3), st.text(max_size=3)), max_size=3),
    st.text(alphabet="ab<&>", max_size=4),
)
def test_a_streamed_table_is_the_table_made_whole(
    rows: list[list[Any]], statuses: list[tuple[str, str]], suffix: str
) -> None:
    """Any values (markup, quotes, control and line-separator characters, big integers, floats)."""
    columns = [{"label": "a<b>&", "num": True}]
    whole = _whole_table("t<1>", columns, rows, statuses=statuses, suffix=suffix)

    assert "".join(data_table_parts("t<1>", columns, iter(rows), statuses=statuses, suffix=suffix)) == whole
    assert data_table("t<1>", columns, rows, statuses=statuses, suffix=suffix) == whole


def test_a_long_table_arrives_a_few_hundred_rows_a_piece_and_equals_the_whole() -> None:
    """Row counts around each piece boundary; no piece holds more than 256 rows."""
    for count in (0, 1, 255, 256, 257, 512, 513, 2000):
        rows = [[f"task-{i:05d}", [f"{i}/5", i / 5], [[0, 1], [1, 0]], "<&>"] for i in range(count)]
        pieces = list(data_table_parts("big", [{"label": "task"}], iter(rows)))

        assert "".join(pieces) == _whole_table("big", [{"label": "task"}], rows), count
        assert max(piece.count('"task-') for piece in pieces) <= 256


def test_statuses_the_rows_name_as_they_are_made_are_all_in_the_table() -> None:
    """The status list is written after the last row, so codes added while rows are made are in it."""
    statuses: list[tuple[str, str]] = []

    def rows() -> Iterator[list[Any]]:
        for i in range(600):
            if i % 200 == 0:
                statuses.append((f"s{i}", f"status {i}"))
            yield [i, len(statuses) - 1]

    text = "".join(data_table_parts("t", [], rows(), statuses=statuses))
    spec = json.loads(text[text.index(">") + 1 : text.index("</script>")])

    assert spec["statuses"] == [["s0", "status 0"], ["s200", "status 200"], ["s400", "status 400"]]
    assert spec["rows"][-1] == [599, 2]
    assert "(600 rows)" in text


@relaxed
@given(
    st.lists(st.text(alphabet="a\n|é", max_size=3), max_size=40),
    st.integers(1, 5),
)
def test_joined_lines_are_the_lines_joined_with_their_trailing_newlines_folded(
    lines: list[str], per_piece: int
) -> None:
    """Empty lines, lines that end in newlines, trailing runs of them, pieces of any size."""
    pieces = list(joined_lines(iter(lines), per_piece))

    assert "".join(pieces) == "\n".join(lines).rstrip("\n") + "\n"
    assert all(pieces)


def test_both_reports_in_pieces_are_the_reports_rendered_whole() -> None:
    """The pieces ``wfbench report`` streams join to the documents ``render_model`` returns."""
    model = _model(_sweep(0.4, tasks=tuple(f"task-{i:03d}" for i in range(40))))
    markdown, page = report_parts(model)

    assert ("".join(markdown), "".join(page)) == render_model(model)
    assert "".join(markdown_parts(model)) == render_markdown(model)
    links = Links(mode="view")
    assert "".join(overview_parts(model, links)) == render_overview(model, links)


def test_no_piece_of_a_large_report_holds_a_table_whole() -> None:
    """600 tasks: 2,400 table rows in each document (paired, task and arm), at most 512 in a piece."""
    model = _model(_sweep(0.4, tasks=tuple(f"task-{i:04d}" for i in range(600))))
    markdown, page = (list(parts) for parts in report_parts(model))

    for pieces, row_start, most in ((markdown, "\n| task-", 512), (page, '["task-', 256)):
        rows = [piece.count(row_start) for piece in pieces]
        assert sum(rows) == 600 + 3 * 600
        assert max(rows) <= most
