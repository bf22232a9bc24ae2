"""Formatting of report values: every unknown prints ``n/a``, never ``None`` or 0."""

from __future__ import annotations

from typing import Any

__all__ = ["METRIC_UNITS", "count", "metric_delta", "metric_value", "money", "na", "pct", "pts", "ratio"]

NA = "n/a"

#: How each promotion metric prints: (unit label, format spec, prefix).
METRIC_UNITS: dict[str, tuple[str, str, str]] = {
    "cost_usd": ("$", ".4f", "$"),
    "output_tokens": ("tokens", ",.0f", ""),
    "input_tokens": ("tokens", ",.0f", ""),
    "duration_s": ("s", ".1f", ""),
    "num_turns": ("turns", ".1f", ""),
    "review_weighted_f1": ("F1", ".3f", ""),
}


def _number(value: Any) -> float | None:
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def na(value: Any, spec: str = "") -> str:
    """``value`` formatted with ``spec``; ``n/a`` for ``None`` (and for anything not a number with a spec)."""
    if value is None:
        return NA
    if spec:
        number = _number(value)
        return NA if number is None else format(number, spec)
    return str(value)


def money(value: Any, digits: int = 4) -> str:
    """``$0.1615``; ``−$0.04`` for a negative amount; ``n/a`` when unknown."""
    number = _number(value)
    if number is None:
        return NA
    sign = "−" if number < 0 else ""
    return f"{sign}${abs(number):.{digits}f}"


def spend(known_usd: float, unknown: int, cells: int, digits: int = 4) -> str:
    """A sum of cells' costs that never shows unknown spend as zero.

    ``$0.1615`` when every cell's cost is known; ``n/a`` when none is (``cells`` of them without
    a cost: an unpriced model, or an agent that reported none); else the partial sum with the
    count of cells it leaves out: ``$0.1615 + n/a (3 of 8 cells without a cost)``.
    """
    if unknown <= 0:
        return money(known_usd, digits)
    if unknown >= cells:
        return f"{NA} ({cells} cell(s) without a cost)" if cells else NA
    return f"{money(known_usd, digits)} + {NA} ({unknown} of {cells} cells without a cost)"


def pct(value: Any, *, signed: bool = True, digits: int = 1) -> str:
    """``+24.9%`` (signed) or ``24.9%``; ``n/a`` when unknown."""
    number = _number(value)
    if number is None:
        return NA
    text = f"{number:+.{digits}f}%" if signed else f"{number:.{digits}f}%"
    return text.replace("-", "−")


def pts(value: Any, digits: int = 1) -> str:
    """A difference in percentage points: ``+33.3 pts``."""
    number = _number(value)
    return NA if number is None else f"{number:+.{digits}f} pts".replace("-", "−")


def ratio(numerator: int | None, denominator: int | None) -> str:
    """``2/3``; ``n/a`` when either is unknown."""
    return NA if numerator is None or denominator is None else f"{numerator}/{denominator}"


def count(value: Any) -> str:
    """An integer count, ``n/a`` when unknown."""
    number = _number(value)
    return NA if number is None else f"{int(number):,}"


def metric_value(metric: str, value: Any) -> str:
    """A value of ``metric`` in its own unit (``$0.1213``, ``3,540 tokens``)."""
    unit, spec, prefix = METRIC_UNITS.get(metric, ("", ".4g", ""))
    number = _number(value)
    if number is None:
        return NA
    if prefix:
        return money(number, int(spec[1:-1]) if spec.startswith(".") else 4)
    text = format(number, spec)
    return f"{text} {unit}".strip()


def metric_delta(metric: str, value: Any) -> str:
    """A signed difference of ``metric`` in its unit (``−$0.0402``, ``+120 tokens``)."""
    number = _number(value)
    if number is None:
        return NA
    text = metric_value(metric, abs(number))
    sign = "−" if number < 0 else "+"
    return sign + text
