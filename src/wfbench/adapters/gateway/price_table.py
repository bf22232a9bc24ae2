"""The price tables: the built-in ones (package data, one CSV per provider) and the user's ``--prices FILE``.

A price file is CSV (a spreadsheet opens it; one model per line, so an error names its line):

    provider,model,input,cache_write,cache_read,output,source,as_of
    openai,gpt-5.5,5.00,5.00,0.50,30.00,https://developers.openai.com/api/docs/pricing,2026-06-04

Prices are USD per million tokens, non-negative finite numbers; ``as_of`` is ``YYYY-MM-DD``;
``source`` is where they were read (required: a price nobody can trace is not evidence). Lines
whose first cell starts with ``#`` and blank lines are comments. A user's file overrides the
built-in entry of each model it names and adds the others (:meth:`PriceTable.overridden_by`).
A bad file fails with one :class:`~wfbench.domain.errors.InputError` naming the file, the line
and the field (exit 2). CSV because its rows are lines: the standard ``csv`` module reads it.
"""

from __future__ import annotations

import csv
import datetime
import functools
import io
import math
from importlib import resources

from wfbench.domain.errors import InputError
from wfbench.domain.metering.prices import ModelPrices, PriceEntry, PriceTable

__all__ = ["COLUMNS", "PROVIDERS", "builtin_prices", "load_prices", "parse_prices"]

COLUMNS = ("provider", "model", "input", "cache_write", "cache_read", "output", "source", "as_of")
#: The built-in tables, in the order they are read (package data next to this module).
PROVIDERS = ("anthropic", "openai", "google")
_PRICE_COLUMNS = ("input", "cache_write", "cache_read", "output")


@functools.cache
def builtin_prices() -> PriceTable:
    """Every built-in table (read once per process)."""
    entries: list[PriceEntry] = []
    folder = resources.files("wfbench.adapters.gateway").joinpath("prices")
    for provider in PROVIDERS:
        name = f"{provider}.csv"
        table = parse_prices(folder.joinpath(name).read_text(encoding="utf-8"), source=name)
        wrong = [entry for entry in table.entries if entry.provider != provider]
        if wrong:  # a packaging mistake, caught by the tests
            raise InputError(f"names provider {wrong[0].provider!r}", source=name, field="provider")
        entries.extend(table.entries)
    return PriceTable(tuple(entries))


def load_prices(path: str | None) -> PriceTable:
    """The built-in tables, overridden by the file at ``path`` (``--prices``) when one is given.

    Raises:
        InputError: the file cannot be read, or a line of it is not a valid price (file, line, field).
    """
    table = builtin_prices()
    if path is None:
        return table
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InputError(f"cannot be read: {reason}", source=path, field="--prices") from None
    return table.overridden_by(parse_prices(text, source=path))


def parse_prices(text: str, *, source: str) -> PriceTable:
    """The entries of one price file's text (see the module docstring).

    Raises:
        InputError: no header, an unknown or missing column, a bad value, a model twice.
    """
    reader = csv.reader(io.StringIO(text))
    header: list[str] | None = None
    entries: list[PriceEntry] = []
    seen: dict[str, int] = {}
    for cells in reader:
        line = reader.line_num
        if not cells or not "".join(cells).strip() or cells[0].lstrip().startswith("#"):
            continue
        if header is None:
            header = _header(cells, source, line)
            continue
        entry = _entry(dict(zip(header, cells, strict=False)), len(cells), len(header), source, line)
        if entry.model in seen:
            raise InputError(
                f"{entry.model} is priced twice (first on line {seen[entry.model]})",
                source=source,
                locator=f"line {line}",
                field="model",
            )
        seen[entry.model] = line
        entries.append(entry)
    if header is None:
        raise InputError(f"no header line ({','.join(COLUMNS)})", source=source)
    return PriceTable(tuple(entries))


def _header(cells: list[str], source: str, line: int) -> list[str]:
    names = [cell.strip().lower() for cell in cells]
    unknown = [name for name in names if name not in COLUMNS]
    missing = [name for name in COLUMNS if name not in names]
    if unknown or missing:
        what = f"unknown column {unknown[0]!r}" if unknown else f"missing column {missing[0]!r}"
        raise InputError(
            f"{what}; the header is {','.join(COLUMNS)}",
            source=source,
            locator=f"line {line}",
            field="header",
        )
    return names


def _entry(row: dict[str, str], width: int, expected: int, source: str, line: int) -> PriceEntry:
    where = {"source": source, "locator": f"line {line}"}
    if width != expected:
        raise InputError(f"{width} cells, the header has {expected}", **where)
    values = {name: value.strip() for name, value in row.items()}
    for name in ("provider", "model", "source"):
        if not values[name]:
            raise InputError("is empty", field=name, **where)
    prices = [_price(values[name], name, where) for name in _PRICE_COLUMNS]
    try:
        datetime.date.fromisoformat(values["as_of"])
    except ValueError:
        raise InputError(f"{values['as_of']!r} is not a date (YYYY-MM-DD)", field="as_of", **where) from None
    return PriceEntry(
        provider=values["provider"].lower(),
        model=values["model"].lower(),
        prices=ModelPrices(*prices),
        source=values["source"],
        as_of=values["as_of"],
        origin=source,
    )


def _price(value: str, name: str, where: dict[str, str]) -> float:
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or number < 0:
        raise InputError(f"{value!r} is not a price (USD per million tokens, 0 or more)", field=name, **where)
    return number
