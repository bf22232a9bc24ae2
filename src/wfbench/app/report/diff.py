"""A unified diff as an HTML table: files, hunks, added/removed lines, syntax highlighting.

The patch is parsed line by line (``diff --git`` file headers, ``@@`` hunk headers, ``+``/``-``/
context lines, with old and new line numbers). Each hunk's old and new text are highlighted by
Pygments with the lexer its file name selects (so a string spanning lines is coloured as one),
and the highlighted lines are zipped back onto the diff rows. Pygments escapes everything it
emits; a file whose lexer cannot be found, or a patch too large (:data:`HIGHLIGHT_LIMIT`), is
shown escaped without colours.
"""

from __future__ import annotations

import html
import re

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_for_filename
from pygments.util import ClassNotFound

__all__ = ["HIGHLIGHT_LIMIT", "render_diff"]

HIGHLIGHT_LIMIT = 400_000
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")
_FILE = re.compile(r"^diff --git a/(.*) b/(.*)$")


def _lines_html(lines: list[str], name: str, enabled: bool) -> list[str]:
    """``lines`` as escaped (and, when possible, highlighted) HTML, one string per line."""
    plain = [html.escape(line) for line in lines]
    if not enabled or not lines:
        return plain
    try:
        lexer = get_lexer_for_filename(name, stripnl=False, stripall=False, ensurenl=True)
    except ClassNotFound:
        return plain
    out = highlight("\n".join(lines) + "\n", lexer, HtmlFormatter(nowrap=True)).split("\n")
    return out[: len(lines)] if len(out) >= len(lines) else plain


class _Hunk:
    def __init__(self, header: str, old: int, new: int) -> None:
        self.header, self.old_start, self.new_start = header, old, new
        self.lines: list[tuple[str, str]] = []

    def rows(self, name: str, enabled: bool) -> list[str]:
        old_text = [text for sign, text in self.lines if sign in " -"]
        new_text = [text for sign, text in self.lines if sign in " +"]
        old_html, new_html = (
            iter(_lines_html(old_text, name, enabled)),
            iter(_lines_html(new_text, name, enabled)),
        )
        rows = [
            '<tr class="hunk"><td class="ln"></td><td '
            f'class="ln"></td><td>{html.escape(self.header)}</td></tr>'
        ]
        old, new = self.old_start, self.new_start
        for sign, text in self.lines:
            if sign == "\\":
                rows.append(
                    '<tr class="meta"><td class="ln"></td><td '
                    f'class="ln"></td><td>{html.escape(text)}</td></tr>'
                )
                continue
            if sign == "-":
                body, cls, cells = next(old_html), "del", (str(old), "")
                old += 1
            elif sign == "+":
                body, cls, cells = next(new_html), "add", ("", str(new))
                new += 1
            else:
                body = next(old_html)
                next(new_html)
                cls, cells = "ctx", (str(old), str(new))
                old += 1
                new += 1
            rows.append(
                f'<tr class="{cls}"><td class="ln">{cells[0]}</td><td class="ln">{cells[1]}</td>'
                f'<td class="hl">{html.escape(sign) if sign != " " else "&nbsp;"}{body}</td></tr>'
            )
        return rows


def render_diff(text: str) -> str:
    """The patch ``text`` as one ``<table class="diff">`` (an empty patch says so)."""
    if not text.strip():
        return '<p class="muted">The patch is empty: the agent changed no file.</p>'
    enabled = len(text) <= HIGHLIGHT_LIMIT
    rows: list[str] = []
    name = ""
    hunk: _Hunk | None = None

    def flush() -> None:
        nonlocal hunk
        if hunk is not None:
            rows.extend(hunk.rows(name, enabled))
            hunk = None

    for line in text.split("\n"):
        if line.startswith("diff --git "):
            flush()
            match = _FILE.match(line)
            name = match.group(2) if match else line[11:]
            rows.append(f'<tr class="file"><td colspan="3">{html.escape(name)}</td></tr>')
        elif (match := _HUNK.match(line)) is not None:
            flush()
            hunk = _Hunk(line, int(match.group(1)), int(match.group(2)))
        elif hunk is not None and line[:1] in ("+", "-", " ", "\\"):
            hunk.lines.append((line[:1], line[1:]))
        elif hunk is not None and line == "":
            continue
        else:
            flush()
            if line.strip():
                rows.append(
                    '<tr class="meta"><td class="ln"></td><td class="ln"></td><td '
                    f'class="muted">{html.escape(line)}</td></tr>'
                )
    flush()
    return '<table class="diff">' + "".join(rows) + "</table>"
