"""Seeded usage jitter: the scripted provider's runs may cost a little more or less, reproducibly.

A script's ``jitter: {seed: 7, usage: 0.15}`` scales every scripted usage field of a
conversation by one factor ``1 + usage·(2u − 1)``, ``u`` in ``[0, 1)`` drawn from a SHA-256 of the
seed, the **cell** that sent the request and the rule that answered it, named by what it matches
(:attr:`~wfbench.adapters.provider.script.Conversation.jitter_key`: its ``when`` strings, protocol
and offered tools), not by its place: a rule inserted or moved leaves every other rule's draws as
they were. The cell is named by the
``x-wfbench-cell-label`` header, which wfbench's key proxy adds for a sweep's own scripted provider (the
cell's label, ``<task>-<arm>-run<i>``); without it every conversation of a rule gets the same factor.

So the same sweep gets the same usage on every machine and in any order of its cells (nothing is
drawn from a shared stream), while runs of one task and the two arms of a pair differ — what a
pilot needs for ``wfbench plan`` to see run-to-run variance offline. Scripted zeros stay 0, omitted
fields stay omitted, ``raw_usage`` is sent as written.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

import attrs

from wfbench.domain.errors import InputError

__all__ = ["CELL_HEADER", "UsageJitter", "parse_jitter"]

#: The request header naming the cell (lower case, as the provider reads headers).
CELL_HEADER = "x-wfbench-cell-label"
_SCALE = float(2**64)


@attrs.frozen
class UsageJitter:
    """``seed`` and ``usage``, the largest relative change of a conversation's usage (0 ≤ usage < 1)."""

    seed: int
    usage: float

    def factor(self, cell: str, rule: str) -> float:
        """The factor every usage field of rule ``rule`'s conversation in ``cell`` is scaled by."""
        digest = hashlib.sha256(f"{self.seed}\0{cell}\0{rule}".encode()).digest()
        draw = int.from_bytes(digest[:8], "big") / _SCALE
        return 1.0 + self.usage * (2.0 * draw - 1.0)

    def scale(self, value: int | None, factor: float) -> int | None:
        """``value`` scaled and rounded to a whole token count (``None`` stays ``None``)."""
        return None if value is None else max(0, round(value * factor))


def parse_jitter(raw: object, *, source: str) -> UsageJitter:
    """``{seed: int, usage: number in [0, 1)}``.

    Raises:
        InputError: not such a mapping (naming the file and the field).
    """
    if not isinstance(raw, Mapping):
        raise InputError("must be a mapping with `seed` and `usage`", source=source, field="jitter")
    unknown = sorted(str(key) for key in raw if key not in ("seed", "usage"))
    if unknown:
        raise InputError("unknown key (allowed: seed, usage)", source=source, field=f"jitter.{unknown[0]}")
    seed, usage = raw.get("seed"), raw.get("usage")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputError("must be an integer", source=source, field="jitter.seed")
    if isinstance(usage, bool) or not isinstance(usage, int | float) or not 0 <= usage < 1:
        raise InputError(
            "must be a number from 0 up to (not including) 1: the largest relative change",
            source=source,
            field="jitter.usage",
        )
    return UsageJitter(seed=seed, usage=float(usage))
