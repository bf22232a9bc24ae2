"""The values ``gate``'s options take, and how they are read, without the CLI framework.

``wfbench gate`` is answered without importing Typer when its command line is plain
(:mod:`wfbench.cli.commands.gate_front`); both it and the Typer options of :mod:`.gate` read
their values here, so the two cannot read them differently.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from wfbench.domain.errors import InputError

#: The promotion metrics (``wfbench.domain.promotion.policy.PROMOTION_METRICS``; pinned equal by a test).
Metric = Literal["cost_usd", "output_tokens", "duration_s", "num_turns"]
#: The decision policies (``wfbench.domain.promotion.policy.DecisionPolicy``; pinned equal by a test).
Policy = Literal["reference", "statistical"]
#: The decisions ``--fail-on`` may name (``DecisionKind``; pinned equal by a test).
DECISIONS = ("promote", "keep_incumbent", "insufficient_evidence")


def parse_fail_on(value: str | None) -> frozenset[str]:
    """``--fail-on keep_incumbent,insufficient_evidence`` as a set of decision names.

    Raises:
        InputError: an unknown decision name (naming the option and the choices).
    """
    names = frozenset(part for part in (value or "").replace(",", " ").split())
    unknown = sorted(names - set(DECISIONS))
    if unknown:
        raise InputError(
            f"unknown decision {unknown[0]!r} (choose from {', '.join(DECISIONS)})", field="--fail-on"
        )
    return names


def failing_decisions(decisions: list[str], fail_on: frozenset[str]) -> list[str]:
    """The decisions ``--fail-on`` names; with no decision at all, ``insufficient_evidence`` stands in."""
    judged = decisions or ["insufficient_evidence"]
    return [kind for kind in judged if kind in fail_on]


def parse_pairs(specs: Sequence[str] | None) -> dict[str, str] | None:
    """``["cand=inc", ...]`` as a pairing map; ``None`` when no ``--pair`` was given."""
    if not specs:
        return None
    pairs: dict[str, str] = {}
    for spec in specs:
        candidate, sep, incumbent = spec.partition("=")
        if not sep or not candidate or not incumbent or candidate == incumbent:
            raise InputError(f"expected CANDIDATE=INCUMBENT, got {spec!r}", field="--pair")
        pairs[candidate] = incumbent
    return pairs
