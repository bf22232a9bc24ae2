"""Use case: re-gate persisted rows — aggregates, one decision per candidate arm, the evidence.

This is what ``wfbench gate RESULTS`` runs, and what a sweep's finish step can run on its own
rows. It receives rows (or a :class:`~wfbench.domain.ports.ResultStore`) and the time; it never
builds an adapter. Rows with the reference harness's field names are re-gated as they are.

What the rows do not say is taken as unknown, never guessed: the benchmark model is the single
``benchmark_model`` (or ``model``) the paired rows agree on, else ``None`` (which the gates
refuse); bindings the rows carry (task digests, overlay digest) are recorded, the rest is null.

Rows are read once: :func:`gate_input` consumes any iterable of rows (the JSONL store's
line-by-line reader for ``wfbench gate``) into a :class:`GateInput` — the domain's
:class:`~wfbench.domain.results.summary.RowSummary` plus the provenance the rows attest
(:class:`Attested`) — holding what the gate needs and never the rows. :func:`regate` takes rows
or a ``GateInput``; ``wfbench report`` builds one ``GateInput`` and renders both reports from its
summary, so a million-row file is decoded once.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import attrs

from wfbench.domain.promotion.evidence import EvidenceBindings, PromotionEvidence, RunStatus
from wfbench.domain.promotion.gates import Decision
from wfbench.domain.promotion.judging import PairSpec, judge_summary
from wfbench.domain.promotion.migration import PairRuntimes, declared, pair_model
from wfbench.domain.promotion.policy import (
    CANDIDATE_ARMS,
    DEFAULT_GATES,
    DEFAULT_POLICY,
    GateKind,
    PromotionPolicy,
)
from wfbench.domain.results.aggregation import AggregateTable
from wfbench.domain.results.rows import ErrorKind, Row
from wfbench.domain.results.summary import RowSummary, SummaryBuilder

if TYPE_CHECKING:  # the ports pull in every adapter-facing type; ``wfbench gate`` starts without them
    from wfbench.domain.ports import ResultStore

__all__ = [
    "Attested",
    "GateInput",
    "GateResult",
    "aware_time",
    "derive_bindings",
    "gate_input",
    "regate",
    "regate_store",
    "resolve_model",
]

#: Per-task row fields recorded as the task's binding when every row of the task agrees.
TASK_BINDING_FIELDS = (
    ("sha", "task_base_sha"),
    ("prompt_digest", "task_prompt_digest"),
    ("oracle_digest", "oracle_digest"),
    ("oracle_command_digest", "oracle_command_digest"),
    ("oracle_manifest_digest", "oracle_manifest_digest"),
    ("sandbox_dependency_content_digest", "sandbox_dependency_content_digest"),
    ("sandbox_dependency_manifest_digest", "sandbox_dependency_manifest_digest"),
)


_TASK_FIELD_NAMES = tuple(field for _, field in TASK_BINDING_FIELDS)


#: Fields whose agreement is read over an arm's rows (every arm, candidates, paired arms).
ARM_FIELDS = (
    "proposer_model",
    "effort",
    "ce_plugin_version",
    "ce_plugin_manifest_digest",
    "candidate_overlay_digest",
    "agent",
    "migrates",
)
#: The model a row was measured with: ``benchmark_model``, else ``model`` (an attested pseudo-field).
MODEL = "benchmark_model|model"

_ABSENT: Final = object()
_CONFLICT: Final = object()


def _attestable(value: Any) -> bool:
    """A value that can attest a binding: a non-empty string or a number."""
    return value not in (None, "") and isinstance(value, str | int | float)


def aware_time(value: object) -> dt.datetime | None:
    """An ISO-8601 time with a UTC offset as a datetime; ``None`` for anything else."""
    if not isinstance(value, str):
        return None
    try:
        moment = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment if moment.utcoffset() is not None else None


@attrs.frozen
class Attested:
    """What the rows attest about their provenance, collected in the same pass as the summary.

    ``by_task``: per task, each of :data:`TASK_BINDING_FIELDS` that every row of the task agrees
    on (one distinct value). ``by_arm``: per arm and field of :data:`ARM_FIELDS` (and
    :data:`MODEL`), the distinct values with the index of the row each was first seen on —
    at most two (enough to tell agreement) except for the model, whose disagreement is reported
    by name.
    """

    by_task: Mapping[str, Mapping[str, Any]]
    by_arm: Mapping[str, Mapping[str, tuple[tuple[Any, int], ...]]]
    #: The newest ``recorded_at`` (with a UTC offset) of any row, or ``None``.
    recorded_at: dt.datetime | None = None

    def agreed(self, field: str, arms: Iterable[str] | None = None) -> tuple[Any, ...]:
        """The distinct values of ``field`` over the rows of ``arms`` (default: all), first seen first."""
        seen: dict[Any, int] = {}
        for arm in self.by_arm if arms is None else arms:
            for value, index in self.by_arm.get(arm, {}).get(field, ()):
                if value not in seen or index < seen[value]:
                    seen.pop(value, None)
                    seen[value] = index
        return tuple(sorted(seen, key=seen.__getitem__))

    def single(self, field: str, arms: Iterable[str] | None = None) -> Any:
        """The one value ``field`` has over the rows of ``arms``, or ``None`` (absent or disagreeing)."""
        values = self.agreed(field, arms)
        return values[0] if len(values) == 1 else None


class AttestationBuilder:
    """Rows in one at a time (:meth:`add`); :meth:`build` is the :class:`Attested`."""

    __slots__ = ("_by_arm", "_by_task", "_index", "_last_stamp", "_recorded_at")

    def __init__(self) -> None:
        self._index = 0
        #: The last ``recorded_at`` read: the next row's is most often the same text (parsed once).
        self._last_stamp: Any = None
        self._recorded_at: dt.datetime | None = None
        self._by_task: dict[str, list[Any]] = {}
        self._by_arm: dict[str, dict[str, dict[Any, int]]] = {}

    def add(self, row: Row) -> None:
        """Observe one row's provenance fields.

        Written for a million rows: the common values (a string already held, ``None``) are
        settled without a call; anything else goes through :func:`_attestable` as before.
        """
        get = row.extra.get
        slots = self._by_task.get(row.task)
        if slots is None:
            slots = self._by_task[row.task] = [_ABSENT] * len(TASK_BINDING_FIELDS)
        for position, field in enumerate(_TASK_FIELD_NAMES):
            held = slots[position]
            if held is _CONFLICT:
                continue
            value = get(field)
            if value is None or (type(value) is str and (held is value or held == value)):
                continue  # nothing to attest, or the value held already
            if not _attestable(value):
                continue
            if held is _ABSENT:
                slots[position] = value
            elif held != value:
                slots[position] = _CONFLICT
        fields = self._by_arm.get(row.arm)
        if fields is None:
            fields = self._by_arm[row.arm] = {name: {} for name in (*ARM_FIELDS, MODEL)}
        for name in ARM_FIELDS:
            value = get(name)
            if value is not None:
                self._note(fields[name], value, cap=2)
        self._note(fields[MODEL], get("benchmark_model") or get("model"), cap=None)
        stamp = get("recorded_at")
        if stamp is not self._last_stamp and not (type(stamp) is str and stamp == self._last_stamp):
            self._last_stamp = stamp
            recorded = aware_time(stamp)
            if recorded is not None and (self._recorded_at is None or recorded > self._recorded_at):
                self._recorded_at = recorded
        self._index += 1

    def _note(self, seen: dict[Any, int], value: Any, *, cap: int | None) -> None:
        if type(value) is str and value in seen:
            return
        if _attestable(value) and value not in seen and (cap is None or len(seen) < cap):
            seen[value] = self._index

    def build(self) -> Attested:
        """What the rows added so far attest."""
        by_task = {
            task: {
                key: value
                for (key, _), value in zip(TASK_BINDING_FIELDS, slots, strict=True)
                if value is not _ABSENT and value is not _CONFLICT
            }
            for task, slots in self._by_task.items()
        }
        by_arm = {
            arm: {name: tuple(seen.items()) for name, seen in fields.items()}
            for arm, fields in self._by_arm.items()
        }
        return Attested(by_task=by_task, by_arm=by_arm, recorded_at=self._recorded_at)


@attrs.frozen
class GateInput:
    """Everything the gate reads from a stream of rows: the summary and what the rows attest."""

    summary: RowSummary
    attested: Attested


def gate_input(rows: Iterable[Row] | GateInput) -> GateInput:
    """Read ``rows`` once (the iterable is consumed) into a :class:`GateInput`."""
    if isinstance(rows, GateInput):
        return rows
    summary, attested = SummaryBuilder(), AttestationBuilder()
    for row in rows:
        summary.add(row)
        attested.add(row)
    return GateInput(summary=summary.build(), attested=attested.build())


@attrs.frozen
class GateResult:
    """Everything a re-gate produced: the aggregates, the decisions, and the evidence (if any)."""

    table: AggregateTable
    decisions: tuple[Decision, ...]
    #: ``None`` when no candidate arm has rows (nothing to promote, no promotion.json).
    evidence: PromotionEvidence | None
    model: str | None
    #: The one-pass summary the table came from (the reports render from it).
    summary: RowSummary | None = None


def _model_of(attested: Attested, arms: Iterable[str] | None = None) -> tuple[str | None, str | None]:
    models = attested.agreed(MODEL, arms)
    if len(models) == 1:
        return str(models[0]), None
    if len(models) > 1:
        return None, "rows disagree on the benchmark model (" + ", ".join(map(str, models)) + ")"
    return None, None


def pair_model_of(attested: Attested, candidate: str, incumbent: str) -> tuple[str | None, tuple[str, ...]]:
    """The pair's benchmark model and reasons (:func:`~wfbench.domain.promotion.migration.pair_model`)."""
    runtimes = PairRuntimes(
        incumbent_models=tuple(map(str, attested.agreed(MODEL, [incumbent]))),
        candidate_models=tuple(map(str, attested.agreed(MODEL, [candidate]))),
        incumbent_agents=tuple(map(str, attested.agreed("agent", [incumbent]))),
        candidate_agents=tuple(map(str, attested.agreed("agent", [candidate]))),
        migrates=declared(attested.single("migrates", [candidate])),
        models_seen=tuple(map(str, attested.agreed(MODEL, [incumbent, candidate]))),
    )
    return pair_model(candidate, incumbent, runtimes)


def pair_specs(
    attested: Attested, pairs: Sequence[tuple[str, str]], gates: Mapping[str, GateKind] | None = None
) -> list[PairSpec]:
    """The pairs to judge; when their incumbents run on more than one agent, each pair is in the
    Holm family of its incumbent's agent (one decision per agent), else all share one (``None``)."""
    agents = {c: attested.single("agent", [i]) for c, i in pairs}
    several = len(set(agents.values())) > 1
    return [
        PairSpec(c, i, (gates or {}).get(c), family=str(agents[c]) if several and agents[c] else None)
        for c, i in pairs
    ]


def resolve_model(rows: Iterable[Row] | GateInput) -> tuple[str | None, str | None]:
    """The benchmark model the rows agree on, and a problem when they name more than one."""
    return _model_of(gate_input(rows).attested)


def derive_bindings(
    rows: Iterable[Row] | GateInput, *, model: str | None, candidates: Sequence[str]
) -> EvidenceBindings:
    """What the rows themselves attest: model, proposer, effort, overlay digest, task digests."""
    read = gate_input(rows)
    attested = read.attested
    tasks = tuple({"id": task, **attested.by_task.get(task, {})} for task in read.summary.tasks)
    plugin = {
        "version": attested.single("ce_plugin_version"),
        "manifest_digest": attested.single("ce_plugin_manifest_digest"),
    }
    return EvidenceBindings(
        benchmark_model=model,
        proposer_model=attested.single("proposer_model"),
        effort=attested.single("effort"),
        candidate_overlay_digest=attested.single("candidate_overlay_digest", candidates),
        selected_tasks=tasks,
        ce_plugin=plugin if any(plugin.values()) else None,
    )


def _inferred_status(summary: RowSummary) -> RunStatus:
    cancelled = summary.count_kind(ErrorKind.CANCELLED) > 0
    return RunStatus.ABORTED if cancelled else RunStatus.COMPLETE


def regate(
    rows: Iterable[Row] | GateInput,
    *,
    now: dt.datetime,
    policy: PromotionPolicy = DEFAULT_POLICY,
    pairs: Mapping[str, str] = CANDIDATE_ARMS,
    gates: Mapping[str, GateKind] = DEFAULT_GATES,
    run_status: RunStatus | None = None,
    bindings: EvidenceBindings | None = None,
) -> GateResult:
    """Aggregate ``rows`` (read once) and judge every candidate arm of ``pairs`` that has rows.

    ``gates`` names the gate per candidate arm (others are inferred from the data);
    ``run_status`` defaults to ``aborted`` when a row was cancelled, else ``complete``;
    ``bindings`` default to what the rows attest (:func:`derive_bindings`).
    """
    read = gate_input(rows)
    table = read.summary.table
    present = set(table.arms())
    candidates = [arm for arm in pairs if arm in present]
    model, _ = _model_of(read.attested, {*candidates, *(pairs[arm] for arm in candidates)})
    if bindings is not None:
        model = bindings.benchmark_model
    specs = pair_specs(read.attested, [(c, pairs[c]) for c in candidates], gates)
    # each pair with its own model: a declared migration decides across it, an undeclared one cannot
    own = {candidate: pair_model_of(read.attested, candidate, pairs[candidate]) for candidate in candidates}
    pair_models = {  # refused (no model, a reason): None; else the pair's own model, the bindings', the rows'
        candidate: None if pair is None and notes else (pair or model)
        for candidate, (pair, notes) in own.items()
    }
    judged = judge_summary(read.summary, specs, model=model, policy=policy, pair_models=pair_models)
    decisions = [_with_pair_notes(decision, own[decision.candidate_arm][1]) for decision in judged]
    evidence = None
    if decisions:
        evidence = PromotionEvidence.build(
            decisions,
            policy=policy,
            generated_at=now,
            run_status=run_status or _inferred_status(read.summary),
            bindings=bindings or derive_bindings(read, model=model, candidates=candidates),
        )
        decisions = list(evidence.decisions)
    return GateResult(
        table=table, decisions=tuple(decisions), evidence=evidence, model=model, summary=read.summary
    )


def _with_pair_notes(decision: Decision, notes: tuple[str, ...]) -> Decision:
    """``decision`` with the pair's own notes (its models) first, under every policy's verdict too.

    They are facts about the pair, not one policy's: the deciding verdict must keep the decision's
    reasons, or the evidence ``gate`` writes is refused when read back (``from_mapping``).
    """
    if not notes:
        return decision
    verdicts = tuple(attrs.evolve(v, reasons=(*notes, *v.reasons)) for v in decision.verdicts)
    return attrs.evolve(decision, reasons=(*notes, *decision.reasons), verdicts=verdicts)


def regate_store(store: ResultStore, *, now: dt.datetime, **options: Any) -> GateResult:
    """:func:`regate` over every row of ``store`` (raises what ``store.rows()`` raises)."""
    return regate(store.rows(), now=now, **options)
