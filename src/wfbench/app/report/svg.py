"""A few helpers for hand-made inline SVG: escaped text, shapes, axes ticks, label placement.

Why hand-made SVG and not a plotting library: the report must be one self-contained file that
opens offline, and these four plots are simple marks (bars, dots, intervals, rules). Inlining
Vega-Lite (≈ 1 MB of JavaScript per report, drawn only once the script runs) would make every
report heavier than its data; a few hundred lines of SVG are readable without JavaScript, print
well, and are tested geometrically (``tests/unit/app/test_report_plots.py``: labels never
overlap, every mark has a title, hostile text stays text).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

__all__ = ["Canvas", "nice_ticks", "place_labels", "shorten"]


def _attr(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.1f}".rstrip("0").rstrip(".") if math.isfinite(value) else "0"
    return html.escape(str(value), quote=True)


def shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis."""
    return text if len(text) <= limit else text[: max(1, limit - 1)] + "…"


class Canvas:
    """An SVG document built mark by mark; :meth:`render` returns the markup."""

    def __init__(self, width: int, height: int, *, title: str, label: str) -> None:
        self.width, self.height = width, height
        self._parts: list[str] = []
        self._title = title
        self._label = label

    def add(self, tag: str, text: str | None = None, *, tip: str | None = None, **attrs: object) -> None:
        """One element; ``text`` (escaped) is its content, ``tip`` a ``<title>`` hover text."""
        names = " ".join(f'{k.rstrip("_").replace("_", "-")}="{_attr(v)}"' for k, v in attrs.items())
        inner = (f"<title>{html.escape(tip)}</title>" if tip else "") + (html.escape(text) if text else "")
        self._parts.append(f"<{tag} {names}>{inner}</{tag}>" if inner else f"<{tag} {names}/>")

    def link(self, href: str, tip: str) -> None:
        """Open an ``<a>`` around the next marks (close with :meth:`end_link`)."""
        self._parts.append(f'<a href="{html.escape(href, quote=True)}"><title>{html.escape(tip)}</title>')

    def end_link(self) -> None:
        """Close the last :meth:`link`."""
        self._parts.append("</a>")

    def text(
        self, x: float, y: float, text: str, *, anchor: str = "start", cls: str = "", tip: str | None = None
    ) -> None:
        """A text label."""
        self.add("text", text, tip=tip, x=x, y=y, text_anchor=anchor, class_=cls or "t")

    def render(self) -> str:
        """The ``<svg>`` element (scales to its container's width)."""
        head = (
            f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" role="img" viewBox="0 0 {self.width} '
            f'{self.height}"'
            f' width="{self.width}" aria-label="{html.escape(self._label, quote=True)}">'
            f"<title>{html.escape(self._title)}</title>"
        )
        return head + "".join(self._parts) + "</svg>"


#: The smallest tick step: ticks are rounded to 10 decimal places.
_TICK_RESOLUTION = 1e-9


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high] (at least two, distinct after rounding to 10 places)."""
    if not math.isfinite(low) or not math.isfinite(high):
        return [0.0, 1.0]
    if high <= low:
        high = low + 1.0
    # At least the rounding's resolution: a range of a few subnormals (a cost of 5e-324) would
    # otherwise give a step of 0 (log10 of 0) or ticks that round to the same value.
    raw = max((high - low) / max(1, count), _TICK_RESOLUTION)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.floor(low / step + 1e-9)
    last = max(first + 1, math.ceil(high / step - 1e-9))
    return [round(i * step, 10) for i in range(first, last + 1)]


def place_labels(wanted: Sequence[tuple[int, float]], min_gap: float) -> list[int]:
    """Which labels to draw: ``wanted`` is (item, y) by priority; the kept ones are ≥ ``min_gap`` apart."""
    kept: list[tuple[int, float]] = []
    for item, y in wanted:
        if all(abs(y - other) >= min_gap for _, other in kept):
            kept.append((item, y))
    return [item for item, _ in kept]
