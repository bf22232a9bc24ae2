"""Model prices and the cost of a usage: cost is computed from wire usage with the model's prices.

Prices are US dollars per million tokens for the four usage fields (input, cache write, cache
read, output). A :class:`PriceTable` holds one :class:`PriceEntry` per model, each with the page
it was read from and the day; the built-in tables (Anthropic, OpenAI, Google) are package data
read by :mod:`wfbench.adapters.gateway.price_table`, and ``--prices FILE`` overrides them. A dated
snapshot (``claude-sonnet-4-5-20250929``) prices like its model; nothing else is inferred. An
unknown model has no price: its cost is ``None`` (never 0), and a budget cannot be enforced for it.
Long-context surcharges, batch and priority tiers are not modelled.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import attrs

from wfbench.domain.session.records import Usage


@attrs.frozen
class ModelPrices:
    """USD per million tokens."""

    input: float
    cache_write: float
    cache_read: float
    output: float

    def cost_usd(self, usage: Usage) -> float | None:
        """The cost of ``usage`` rounded to a millionth of a dollar; None when input or output
        tokens are unknown (unknown is not zero)."""
        exact = self.exact_cost_usd(usage)
        return None if exact is None else round(exact, 6)

    def exact_cost_usd(self, usage: Usage) -> float | None:
        """:meth:`cost_usd` unrounded (for running sums)."""
        if usage.input_tokens is None or usage.output_tokens is None:
            return None
        total = (
            usage.input_tokens * self.input
            + (usage.cache_creation_input_tokens or 0) * self.cache_write
            + (usage.cache_read_input_tokens or 0) * self.cache_read
            + usage.output_tokens * self.output
        )
        return total / 1_000_000

    def worst_case_usd(self, input_tokens: int, output_tokens: int) -> float:
        """The most a request can cost: every input token at the dearest input price (a cache write
        costs more than plain input) and ``output_tokens`` at the output price."""
        dearest = max(self.input, self.cache_write, self.cache_read)
        return (input_tokens * dearest + output_tokens * self.output) / 1_000_000


_DATED = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2})")


@attrs.frozen
class PriceEntry:
    """One model's prices, where they were read and when (``docs/prices.md``)."""

    #: ``anthropic``, ``openai``, ``google`` (the built-in tables) or whatever a ``--prices`` file says.
    provider: str
    #: The model id as the agent sends it (lower case); a dated snapshot of it prices alike.
    model: str
    prices: ModelPrices
    #: The page the prices were read from.
    source: str
    #: ``YYYY-MM-DD``: the day they were read.
    as_of: str
    #: Where the entry came from: a built-in table (``anthropic.csv``) or the user's ``--prices`` file.
    origin: str = ""

    def matches(self, model: str) -> bool:
        """``model`` is this entry's model, or a dated snapshot of it (``-20250929``, ``-2025-09-29``)."""
        name = model.strip().lower()
        return name == self.model or (
            name.startswith(self.model) and _DATED.fullmatch(name[len(self.model) :]) is not None
        )


@attrs.frozen
class PriceTable:
    """Every priced model: the built-in tables (one per provider), optionally overridden by the user's.

    A model is priced by the entry of the same id or of which it is a dated snapshot; nothing
    else (``gpt-5.6`` is not priced like ``gpt-5``, ``claude-opus-4-7`` not like ``claude-opus-4``):
    an unknown model's cost is ``None`` (``n/a``), never a guess and never 0.
    """

    entries: tuple[PriceEntry, ...] = ()

    def entry_for(self, model: str | None) -> PriceEntry | None:
        """The entry that prices ``model``, or None (the longest matching id wins)."""
        if not model:
            return None
        found = [entry for entry in self.entries if entry.matches(model)]
        return max(found, key=lambda entry: len(entry.model)) if found else None

    def prices_for(self, model: str | None) -> ModelPrices | None:
        """The prices of ``model``, or None when it is unpriced."""
        entry = self.entry_for(model)
        return None if entry is None else entry.prices

    def unpriced(self, models: Iterable[str | None]) -> tuple[str, ...]:
        """Those of ``models`` (sorted, once each) that have no prices."""
        return tuple(sorted({m for m in models if m and self.prices_for(m) is None}))

    def overridden_by(self, other: PriceTable) -> PriceTable:
        """This table with ``other``'s entries replacing those of the same model (and adding the rest)."""
        replaced = {entry.model for entry in other.entries}
        kept = tuple(entry for entry in self.entries if entry.model not in replaced)
        return PriceTable(kept + other.entries)
