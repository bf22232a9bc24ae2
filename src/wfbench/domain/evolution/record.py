"""One generation of ``wfbench evolve``: what it proposed, what the gate decided, what it cost.

A generation's record is one line of ``evolution.jsonl``. :func:`generation_decision` folds the
decisions of every candidate arm a proposal required into the generation's outcome, and
:func:`stop_reason` decides, before a generation starts, whether the loop must stop: the
generation budget, the cost budget, or two generations in a row without enough evidence. Pure:
the app measures, this decides.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from wfbench.domain.errors import InputError

__all__ = [
    "EVOLUTION_SCHEMA",
    "GenerationOutcome",
    "GenerationRecord",
    "Spend",
    "generation_decision",
    "stop_reason",
]

EVOLUTION_SCHEMA = 1
#: Generations in a row without enough evidence after which the loop stops.
INSUFFICIENT_STREAK = 2


class GenerationOutcome(enum.StrEnum):
    """How a generation ended."""

    PROMOTE = "promote"
    KEEP_INCUMBENT = "keep_incumbent"
    INSUFFICIENT_EVIDENCE = "insufficient_evidence"
    #: The proposer wrote nothing usable (no change, a refused overlay, a failed session).
    NO_PROPOSAL = "no_proposal"
    #: Generation 0: the incumbent measured on its own, the evidence the first proposal reads.
    BASELINE = "baseline"


#: Outcomes that count towards the "two in a row without evidence" stop.
_WITHOUT_EVIDENCE = frozenset({GenerationOutcome.INSUFFICIENT_EVIDENCE, GenerationOutcome.NO_PROPOSAL})


def generation_decision(decisions: Sequence[str]) -> GenerationOutcome:
    """All candidate arms promote → promote; any keeps → keep_incumbent; else insufficient_evidence.

    A proposal is applied only as a whole: one arm's doubt (or no decision at all) blocks it,
    and one arm's regression is a definite no.
    """
    if decisions and all(d == GenerationOutcome.PROMOTE for d in decisions):
        return GenerationOutcome.PROMOTE
    if any(d == GenerationOutcome.KEEP_INCUMBENT for d in decisions):
        return GenerationOutcome.KEEP_INCUMBENT
    return GenerationOutcome.INSUFFICIENT_EVIDENCE


@attrs.frozen
class Spend:
    """Dollars spent by a generation: its proposer session and its sweep's paid cells.

    ``None`` is unknown (never zero): a session or a paid cell that reported no cost. The
    sweep's figure is the sum of its paid rows' ``cost_usd`` (metered at the wire when the
    endpoint meters); ``proposer_source`` says where the proposer's came from (``wire`` or
    ``agent``, the session's own report).
    """

    proposer_usd: float | None
    sweep_usd: float | None
    #: Paid cells of the sweep without a cost.
    unmeasured_cells: int = 0
    proposer_source: str | None = None

    @property
    def total_usd(self) -> float | None:
        """Proposer plus sweep; unknown when either is unknown or a paid cell has no cost."""
        if self.proposer_usd is None or self.sweep_usd is None or self.unmeasured_cells:
            return None
        return round(self.proposer_usd + self.sweep_usd, 6)

    def to_mapping(self) -> dict[str, Any]:
        return {
            "proposer_usd": self.proposer_usd,
            "sweep_usd": self.sweep_usd,
            "unmeasured_cells": self.unmeasured_cells,
            "total_usd": self.total_usd,
            "proposer_source": self.proposer_source,
        }


def _money(raw: Any, field: str) -> float | None:
    """A dollar figure: a finite non-negative number, or ``None`` (unknown)."""
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw) or raw < 0:
        raise InputError("must be a non-negative number or null", field=field)
    return float(raw)


def _count(raw: Any, field: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
        raise InputError("must be a non-negative integer", field=field)
    return raw


def _source(raw: Any) -> str | None:
    if raw is None or raw in ("wire", "agent"):
        return raw  # type: ignore[no-any-return]
    raise InputError("must be wire, agent or null", field="spend.proposer_source")


def _text(raw: Mapping[str, Any], key: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str):
        raise InputError("must be a string", field=key)
    return value


def _optional_text(raw: Mapping[str, Any], key: str) -> str | None:
    value = raw.get(key)
    if value is not None and not isinstance(value, str):
        raise InputError("must be a string or null", field=key)
    return value


def _items(raw: Mapping[str, Any], key: str, kind: type) -> tuple[Any, ...]:
    """A list field whose every item is a ``kind`` (absent: empty)."""
    value = raw.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, kind) for item in value):
        raise InputError(f"must be a list of {'strings' if kind is str else 'objects'}", field=key)
    return tuple(value)


def _read_record(raw: Any) -> GenerationRecord:
    """:meth:`GenerationRecord.from_mapping` without the line (every refusal names its field)."""
    if not isinstance(raw, Mapping) or raw.get("schema") != EVOLUTION_SCHEMA:
        raise InputError("is not an evolution record (schema 1)")
    generation = _count(raw.get("generation"), "generation")
    try:
        outcome = GenerationOutcome(str(raw.get("outcome")))
    except ValueError:
        raise InputError("is not a known outcome", field="outcome") from None
    spend = raw.get("spend")
    if not isinstance(spend, Mapping):
        raise InputError("must be an object", field="spend")
    money = Spend(
        _money(spend.get("proposer_usd"), "spend.proposer_usd"),
        _money(spend.get("sweep_usd"), "spend.sweep_usd"),
        _count(spend.get("unmeasured_cells", 0), "spend.unmeasured_cells"),
        _source(spend.get("proposer_source")),
    )
    applied = raw.get("applied")
    if applied is not None and not isinstance(applied, Mapping):
        raise InputError("must be an object or null", field="applied")
    return GenerationRecord(
        generation=generation,
        outcome=outcome,
        started_at=_text(raw, "started_at"),
        finished_at=_text(raw, "finished_at"),
        sweep_dir=_optional_text(raw, "sweep_dir"),
        spend=money,
        incumbent_digest=_optional_text(raw, "incumbent_digest"),
        candidate_overlay=_optional_text(raw, "candidate_overlay"),
        candidate_overlay_digest=_optional_text(raw, "candidate_overlay_digest"),
        proposer_model=_optional_text(raw, "proposer_model"),
        required_candidate_arms=_items(raw, "required_candidate_arms", str),
        decisions=tuple(dict(d) for d in _items(raw, "decisions", Mapping)),
        reasons=_items(raw, "reasons", str),
        promotion=_optional_text(raw, "promotion"),
        applied=None if applied is None else dict(applied),
    )


@attrs.frozen
class GenerationRecord:
    """One line of ``evolution.jsonl``."""

    generation: int
    outcome: GenerationOutcome
    started_at: str
    finished_at: str
    sweep_dir: str | None
    spend: Spend
    incumbent_digest: str | None
    candidate_overlay: str | None = None
    candidate_overlay_digest: str | None = None
    proposer_model: str | None = None
    required_candidate_arms: tuple[str, ...] = ()
    #: ``[{candidate_arm, decision, reasons}]`` from the sweep's promotion.json.
    decisions: tuple[Mapping[str, Any], ...] = ()
    reasons: tuple[str, ...] = ()
    promotion: str | None = None
    applied: Mapping[str, Any] | None = None

    @property
    def candidate_origin(self) -> str | None:
        """``model-proposer`` for a generation with a proposal (``None`` for the baseline)."""
        return None if self.outcome is GenerationOutcome.BASELINE else "model-proposer"

    def to_mapping(self) -> dict[str, Any]:
        """The JSON object of the line."""
        return {
            "schema": EVOLUTION_SCHEMA,
            "generation": self.generation,
            "outcome": self.outcome.value,
            "decision": self.outcome.value if self.outcome in _DECIDED else None,
            "reasons": list(self.reasons),
            "decisions": [dict(d) for d in self.decisions],
            "candidate_origin": self.candidate_origin,
            "proposer_model": self.proposer_model,
            "candidate_overlay": self.candidate_overlay,
            "candidate_overlay_digest": self.candidate_overlay_digest,
            "required_candidate_arms": list(self.required_candidate_arms),
            "incumbent_digest": self.incumbent_digest,
            "spend": self.spend.to_mapping(),
            "sweep_dir": self.sweep_dir,
            "promotion": self.promotion,
            "applied": None if self.applied is None else dict(self.applied),
            "started_at": self.started_at,
            "finished_at": self.finished_at,
        }

    @classmethod
    def from_mapping(cls, raw: Any, *, line: int = 0) -> GenerationRecord:
        """Read one line back (what the loop needs to continue: numbers, outcome, spend, overlay).

        Raises:
            InputError: not a record this version wrote (naming the line and the field).
        """
        try:
            return _read_record(raw)
        except InputError as exc:
            raise exc.located(locator=f"line {line}" if line else "") from None


_DECIDED = frozenset(
    {GenerationOutcome.PROMOTE, GenerationOutcome.KEEP_INCUMBENT, GenerationOutcome.INSUFFICIENT_EVIDENCE}
)


def stop_reason(
    history: Sequence[GenerationRecord],
    *,
    max_generations: int | None,
    max_cost_usd: float | None,
) -> str | None:
    """Why the loop must not start another generation (None: it may).

    ``max_generations`` counts proposing generations (not the baseline); ``max_cost_usd`` is
    the budget over every generation's spend — unknown spend with a budget set stops the loop
    (it cannot be enforced); two generations in a row without enough evidence stop it too.
    """
    proposing = [record for record in history if record.outcome is not GenerationOutcome.BASELINE]
    if max_generations is not None and len(proposing) >= max_generations:
        return f"reached --max-generations {max_generations}"
    if max_cost_usd is not None:
        totals = [record.spend.total_usd for record in history]
        if any(total is None for total in totals):
            return "a generation's spend is unknown, so --max-cost cannot be enforced"
        spent = sum(t for t in totals if t is not None)
        if spent >= max_cost_usd:
            return f"spent ${spent:.4f} of the --max-cost ${max_cost_usd:.4f} budget"
    streak = proposing[-INSUFFICIENT_STREAK:]
    if len(streak) == INSUFFICIENT_STREAK and all(record.outcome in _WITHOUT_EVIDENCE for record in streak):
        return f"{INSUFFICIENT_STREAK} generations in a row ended without enough evidence"
    return None
