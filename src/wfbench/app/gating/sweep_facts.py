"""Use case: re-gate a sweep's rows with what its own ``promotion.json`` says (``wfbench gate``).

A sweep's evidence file tells a re-gate two facts the rows do not: which pairs the sweep judged
(arms with their own names, ``cand`` against ``inc``, are re-gated as they were judged, not as
"no candidate arm has rows"), and when the evidence was made. A re-gate keeps that time: stamping
it "now" would renew old rows' 90-day expiry. Only rows with no time at all, and no evidence file
beside them, fall back to the :class:`~wfbench.domain.ports.Clock`.

At 40,000 tasks ``promotion.json`` is hundreds of MB, so :func:`read_sweep_facts` decodes it once
per command and keeps only these two facts (the caller passes them on; nothing is cached between
commands).
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import attrs

from wfbench.app.gating.gating import GateInput, GateResult, aware_time, gate_input, regate
from wfbench.domain.errors import InputError
from wfbench.domain.promotion.policy import CANDIDATE_ARMS, PromotionPolicy
from wfbench.domain.results.rows import Row

if TYPE_CHECKING:  # annotations only: the ports pull in every adapter-facing type
    from wfbench.domain.ports import Clock, SweepDirectory

__all__ = [
    "EVIDENCE_NAME",
    "SweepFacts",
    "decision_policy_for",
    "default_pairs",
    "evidence_time",
    "gate_sweep",
    "read_sweep_facts",
]

#: The sweep's promotion evidence, relative to its directory.
EVIDENCE_NAME = "promotion.json"


@attrs.frozen
class SweepFacts:
    """What a sweep's ``promotion.json`` says that a re-gate needs: the judged pairs, and when."""

    pairs: Mapping[str, str] = attrs.field(factory=dict)
    generated_at: dt.datetime | None = None
    #: The rule the evidence was decided by (``None``: no evidence entry says).
    policy: str | None = None


def read_sweep_facts(directory: SweepDirectory) -> SweepFacts:
    """The facts of the sweep's ``promotion.json``, read once; no facts when it is missing or invalid."""
    try:
        data = directory.read(EVIDENCE_NAME)
        raw = None if data is None else json.loads(data)
    except (OSError, ValueError):
        return SweepFacts()
    if not isinstance(raw, dict):
        return SweepFacts()
    return SweepFacts(
        pairs=_judged_pairs(raw.get("decisions")),
        generated_at=aware_time(raw.get("generated_at")),
        policy=_judged_policy(raw),
    )


def _judged_policy(raw: Mapping[str, object]) -> str | None:
    """The rule a sweep's promotion.json was decided by: an entry without ``decision_policy`` is
    the reference's (its fields alone); ``None`` without entries."""
    entries = raw.get("policy")
    for entry in entries.values() if isinstance(entries, dict) else ():
        if isinstance(entry, dict):
            chosen = entry.get("decision_policy", "reference")
            return chosen if chosen in ("reference", "statistical") else None
    return None


def decision_policy_for(facts: SweepFacts, given: str | None, *, command: str, source: str) -> str:
    """``--policy`` when given, else the rule the sweep's promotion.json was decided by, else
    statistical. ``report`` refuses a rule other than the one promotion.json records: report.md
    and promotion.json never disagree (``gate --policy X --out`` re-decides the sweep first).

    Raises:
        InputError: ``report --policy X`` beside a promotion.json decided by another rule.
    """
    if given is None:
        return facts.policy or "statistical"
    if command == "report" and facts.policy is not None and facts.policy != given:
        raise InputError(
            f"the sweep's {EVIDENCE_NAME} was decided by the {facts.policy} policy; report.md would"
            f" disagree with it. Re-decide it first: wfbench gate {source} --policy {given} --out"
            f" {os.path.join(os.path.dirname(source), EVIDENCE_NAME)} --force",
            field="--policy",
        )
    return given


def _judged_pairs(decisions: object) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for decision in decisions if isinstance(decisions, list) else ():
        if isinstance(decision, dict):
            candidate, incumbent = decision.get("candidate_arm"), decision.get("incumbent_arm")
            if isinstance(candidate, str) and isinstance(incumbent, str):
                pairs[candidate] = incumbent
    return pairs


def default_pairs(facts: SweepFacts, given: Mapping[str, str] | None) -> dict[str, str] | None:
    """``given`` (``--pair``) when there is one; else the pairs the sweep judged, then the presets'.

    ``None``: neither was given nor judged (the gate's own presets apply).
    """
    if given is not None:
        return dict(given)
    if not facts.pairs:
        return None
    return {**facts.pairs, **{c: i for c, i in CANDIDATE_ARMS.items() if c not in facts.pairs}}


def evidence_time(facts: SweepFacts, read: GateInput, *, clock: Clock) -> dt.datetime:
    """When the evidence was made: the sweep's ``generated_at``, else the newest row, else ``clock``."""
    if facts.generated_at is not None:
        return facts.generated_at
    if read.attested.recorded_at is not None:
        return read.attested.recorded_at
    return clock.now()


def gate_sweep(
    rows: Iterable[Row] | GateInput,
    *,
    policy: PromotionPolicy,
    pairs: Mapping[str, str] | None,
    directory: SweepDirectory,
    clock: Clock,
) -> GateResult:
    """Re-gate ``rows`` (read once) of the sweep in ``directory``, as its evidence file says it was judged.

    ``pairs`` is ``--pair`` (``None``: the judged pairs, then the presets'); the evidence keeps the
    sweep's time (:func:`evidence_time`).
    """
    facts = read_sweep_facts(directory)
    read = gate_input(rows)
    chosen = default_pairs(facts, pairs)
    return regate(
        read, now=evidence_time(facts, read, clock=clock), policy=policy, pairs=chosen or CANDIDATE_ARMS
    )
