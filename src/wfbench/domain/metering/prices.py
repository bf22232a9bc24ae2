"""Model prices and the cost of a usage: cost is computed from wire usage with the pinned model's prices.

Prices are US dollars per million tokens for the four usage fields (input, cache write, cache
read, output), from Anthropic's public price list (``docs/security.md`` names the date it was
read). A model id matches the longest family prefix in :data:`PRICE_TABLE`, so dated ids
(``claude-sonnet-4-5-20250929``) price like their family. An unknown model has no price: its
cost is ``None`` (never 0), and a budget cannot be enforced for it. Long-context surcharges and
batch discounts are not modelled.
"""

from __future__ import annotations

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


#: Longest matching prefix wins. Read from https://docs.anthropic.com/en/docs/about-claude/pricing.
PRICE_TABLE: tuple[tuple[str, ModelPrices], ...] = (
    ("claude-opus-4-5", ModelPrices(5.0, 6.25, 0.50, 25.0)),
    ("claude-opus-4", ModelPrices(15.0, 18.75, 1.50, 75.0)),
    ("claude-3-opus", ModelPrices(15.0, 18.75, 1.50, 75.0)),
    ("claude-sonnet-4", ModelPrices(3.0, 3.75, 0.30, 15.0)),
    ("claude-3-7-sonnet", ModelPrices(3.0, 3.75, 0.30, 15.0)),
    ("claude-3-5-sonnet", ModelPrices(3.0, 3.75, 0.30, 15.0)),
    ("claude-haiku-4-5", ModelPrices(1.0, 1.25, 0.10, 5.0)),
    ("claude-3-5-haiku", ModelPrices(0.80, 1.0, 0.08, 4.0)),
    ("claude-3-haiku", ModelPrices(0.25, 0.30, 0.03, 1.25)),
)


def prices_for(model: str) -> ModelPrices | None:
    """The prices of ``model`` (longest family prefix, case-insensitive), or None when unpriced."""
    name = model.strip().lower()
    matches = [(len(prefix), prices) for prefix, prices in PRICE_TABLE if name.startswith(prefix)]
    return max(matches, key=lambda match: match[0])[1] if matches else None
