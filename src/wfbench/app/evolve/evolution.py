"""Use case: ``wfbench evolve`` — generations of proposed skills, each swept and gated.

Generation 0 measures the incumbent on its own (unless ``--reuse-results`` supplies a prior
sweep). Each later generation:

1. **proposes**: the proposer session (:mod:`wfbench.app.evolve.proposer`) reads the last sweep's
   redacted evidence digest and writes a candidate overlay on a copy of the incumbent skills;
2. **validates** it like any ``--candidate-overlay`` (Markdown under the skills it may evolve,
   the size limits) and derives the candidate arms it must be judged in;
3. **sweeps** the candidate arms against their incumbents, reusing the last sweep's comparator
   rows (``--reuse-results``, with its paid canary);
4. **gates**: the sweep's ``promotion.json``; the generation promotes only if every decision does;
5. on ``promote``, the candidate becomes the next generation's incumbent: its files join the
   working copy of the incumbent skills (``<out>/incumbent``, applied to every arm evaluating
   them), and — only when asked — the evidence is applied to the user's repository through
   ``wfbench promote apply``'s use case.

Each generation is one line of ``evolution.jsonl`` (:class:`GenerationRecord`). The loop stops at
``--max-generations``, when ``--max-cost`` is spent, or after two generations in a row without
enough evidence. It continues where an earlier run stopped: the history, the incumbent and the
last sweep are read back from the output directory. A decided generation is journaled before any
of its effects, and the incumbent is rebuilt from the records, so a run killed at any point
either redoes its generation (undecided) or finishes it (:mod:`wfbench.app.evolve.state`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from wfbench.app.corpus.arm_fit import skill_presence
from wfbench.app.corpus.arms import (
    Arm,
    check_overlay_arms,
    load_overlay,
    overlay_digest,
    required_candidate_arms,
)
from wfbench.app.corpus.corpus import Corpus, load_corpus
from wfbench.app.evolve.proposer import Proposal, proposer_prompt, write_overlay
from wfbench.app.evolve.run import begin_run, end_run
from wfbench.app.evolve.state import (
    EVOLUTION_FILE,
    INCUMBENT_DIR,
    append_record,
    generation_dir,
    incumbent_files,
    pending_record,
    promoted_files,
    read_history,
    settle_incumbent,
    sync_tree,
    write_journal,
)
from wfbench.app.sweep.spend import spend_of
from wfbench.domain.errors import InputError, WfbenchError
from wfbench.domain.evolution.digest import evidence_digest
from wfbench.domain.evolution.record import (
    GenerationOutcome,
    GenerationRecord,
    Spend,
    generation_decision,
    stop_reason,
)
from wfbench.domain.ports import Clock, SweepDirectory
from wfbench.domain.results.rows import Row

__all__ = [
    "EVOLUTION_FILE",
    "EvolveConfig",
    "EvolveResult",
    "EvolveServices",
    "ProposalOrder",
    "SweepOrder",
    "allowed_skills",
    "budget_left",
    "evolve",
    "generation_arms",
    "read_history",
    "sweep_budget",
]

#: A sweep's exit code when SIGINT/SIGTERM cancelled it (``wfbench run``'s contract).
SWEEP_CANCELLED = 130


class _Cancelled(Exception):
    """The user cancelled the loop (a sweep or the proposer): the generation gets no record."""


@attrs.frozen
class EvolveConfig:
    """What to evolve, for how long, and what may be spent."""

    corpus_path: str
    out_dir: str
    generations: int
    base_arms: tuple[str, ...]
    proposer_model: str
    max_generations: int | None = None
    max_cost_usd: float | None = None
    #: A prior sweep standing in for generation 0 (its rows are the first evidence and reused).
    reuse_results: str | None = None


@attrs.frozen
class SweepOrder:
    """One sweep the loop asks for."""

    out_dir: str
    arms: tuple[str, ...]
    candidate_overlay: str | None
    incumbent_overlay: str | None
    reuse_results: str | None
    proposer_model: str | None
    #: What is left of ``--max-cost`` (the sweep's own ``--max-cost``: it stops issuing cells there).
    max_cost_usd: float | None = None


@attrs.frozen
class ProposalOrder:
    """One proposer session the loop asks for."""

    workspace: str
    incumbent: Mapping[str, bytes]
    evidence: str
    prompt: str
    label: str


@attrs.frozen
class EvolveServices:
    """What the loop needs from outside (built by the composition root)."""

    run_sweep: Callable[[SweepOrder], int]
    propose: Callable[[ProposalOrder], Proposal]
    #: The repository's committed skill files under the given roots (``{rel: bytes}``).
    committed_skills: Callable[[Sequence[str]], Mapping[str, bytes]]
    read_rows: Callable[[str], Sequence[Row]]
    clock: Clock
    note: Callable[[str], None]
    #: Apply a generation's ``promotion.json`` to the user's repository (``--apply``); a summary.
    apply: Callable[[str], Mapping[str, Any]] | None = None
    #: True once SIGINT/SIGTERM asked the loop to stop (the proposer session sees it too).
    cancelled: Callable[[], bool] = lambda: False
    #: Called after every durable change of the loop's state (see :mod:`wfbench.app.evolve.state`).
    on_step: Callable[[str], None] = lambda _step: None
    #: ``OUT`` as a port: the journals and the run file are written through it.
    directory: SweepDirectory = attrs.field(kw_only=True)


@attrs.frozen
class EvolveResult:
    """How the loop ended: every generation's record, and why it stopped (None: it ran them all)."""

    history: tuple[GenerationRecord, ...]
    stopped: str | None
    #: The user cancelled it: the interrupted generation has no record (the next run redoes it).
    cancelled: bool = False


def allowed_skills(corpus: Corpus, base_arms: Sequence[str]) -> tuple[str, ...]:
    """The skills a proposal may change: those whose every required candidate arm has its incumbent swept."""
    skills = {s for arm in corpus.arms.values() if arm.is_candidate for s in arm.evaluated_skills}
    allowed = []
    for skill in sorted(skills):
        required = required_candidate_arms([skill], corpus.arms, has_skill=skill_presence(corpus))
        if required and all(corpus.arms[name].incumbent in base_arms for name in required):
            allowed.append(skill)
    return tuple(allowed)


def generation_arms(
    base_arms: Sequence[str], candidates: Sequence[str], arms: Mapping[str, Arm]
) -> tuple[str, ...]:
    """The sweep's arms: the base arms, each candidate right after its incumbent."""
    out: list[str] = []
    for name in base_arms:
        out.append(name)
        out += [c for c in candidates if arms[c].incumbent == name and c not in out]
    return tuple(out)


def _stamp(clock: Clock) -> str:
    return clock.now().isoformat()


def _incumbent_arg(out_dir: str) -> str | None:
    root = os.path.join(out_dir, INCUMBENT_DIR)
    return root if incumbent_files(out_dir) else None


def _decisions(sweep_dir: str) -> list[dict[str, Any]] | None:
    try:
        with open(os.path.join(sweep_dir, "promotion.json"), encoding="utf-8") as handle:
            raw = json.load(handle)
    except (OSError, ValueError):
        return None
    decisions = raw.get("decisions") if isinstance(raw, dict) else None
    if not isinstance(decisions, list):
        return None
    return [
        {key: d.get(key) for key in ("candidate_arm", "incumbent_arm", "decision", "reasons")}
        for d in decisions
        if isinstance(d, dict)
    ]


def _sweep_spend(services: EvolveServices, sweep_dir: str) -> tuple[float | None, int]:
    try:
        rows = services.read_rows(os.path.join(sweep_dir, "results.jsonl"))
    except (OSError, WfbenchError):
        return None, 0
    spent = spend_of(rows)
    return spent.usd if spent.measured or not spent.unmeasured else None, spent.unmeasured


def _clear_interrupted(path: str) -> None:
    """A generation directory without a record (an interrupted run) is moved aside, never reused."""
    if not os.path.exists(path):
        return
    number = 1
    while os.path.exists(f"{path}.interrupted-{number}"):
        number += 1
    os.replace(path, f"{path}.interrupted-{number}")


class _Loop:
    def __init__(self, config: EvolveConfig, services: EvolveServices, corpus: Corpus) -> None:
        self.config = config
        self.services = services
        self.corpus = corpus
        self.allowed = allowed_skills(corpus, config.base_arms)
        if not self.allowed:
            raise InputError(
                "no candidate arm's incumbent is among the arms, so no skill can be evolved"
                f" (arms: {', '.join(config.base_arms)})",
                field="--arms",
            )

    def baseline(self) -> GenerationRecord:
        started = _stamp(self.services.clock)
        sweep = os.path.join(generation_dir(self.config.out_dir, 0), "sweep")
        _clear_interrupted(generation_dir(self.config.out_dir, 0))
        self.services.note("[evolve] generation 0: measuring the incumbent")
        code = self.services.run_sweep(
            SweepOrder(
                sweep,
                self.config.base_arms,
                None,
                _incumbent_arg(self.config.out_dir),
                self.config.reuse_results,
                None,
                max_cost_usd=self.config.max_cost_usd,
            )
        )
        self._check_cancelled(code)
        self.services.on_step("swept")
        usd, unmeasured = _sweep_spend(self.services, sweep)
        return GenerationRecord(
            generation=0,
            outcome=GenerationOutcome.BASELINE,
            started_at=started,
            finished_at=_stamp(self.services.clock),
            sweep_dir=sweep,
            spend=Spend(0.0, usd, unmeasured),
            incumbent_digest=self._incumbent_digest(),
            reasons=("the incumbent measured on its own",),
        )

    def _check_cancelled(self, code: int | None = None) -> None:
        if code == SWEEP_CANCELLED or self.services.cancelled():
            raise _Cancelled

    def _incumbent_digest(self) -> str | None:
        root = _incumbent_arg(self.config.out_dir)
        return None if root is None else overlay_digest(load_overlay(root, self._candidates()))

    def _candidates(self) -> list[Arm]:
        return [arm for arm in self.corpus.arms.values() if arm.is_candidate]

    def settle(self, history: Sequence[GenerationRecord]) -> None:
        """``<out>/incumbent`` made what the records say (see :func:`settle_incumbent`)."""
        files = promoted_files(self.config.out_dir, history, self._candidates())
        settle_incumbent(self.config.out_dir, files, self.services.on_step)

    def incumbent(self) -> dict[str, bytes]:
        roots = [f".claude/skills/{skill}" for skill in self.allowed]
        committed = dict(self.services.committed_skills(roots))
        promoted = {
            rel: data
            for rel, data in incumbent_files(self.config.out_dir).items()
            if rel.split("/")[2] in self.allowed
        }
        return {**committed, **promoted}

    def generation(
        self, number: int, last_sweep: str | None, budget_left: float | None = None
    ) -> GenerationRecord:
        clock, out = self.services.clock, generation_dir(self.config.out_dir, number)
        started = _stamp(clock)
        _clear_interrupted(out)
        os.makedirs(out)
        proposal = self._propose(number, last_sweep, out)
        record = GenerationRecord(
            generation=number,
            outcome=GenerationOutcome.NO_PROPOSAL,
            started_at=started,
            finished_at=started,
            sweep_dir=None,
            spend=Spend(proposal.cost_usd, 0.0, proposer_source=proposal.cost_source),
            incumbent_digest=self._incumbent_digest(),
            proposer_model=self.config.proposer_model,
        )
        problem, overlay_dir, required = self._validate(proposal, out)
        if problem is not None:
            self.services.note(f"[evolve] generation {number}: no usable proposal — {problem}")
            return attrs.evolve(record, reasons=(problem,), finished_at=_stamp(clock))
        assert overlay_dir is not None
        arms = generation_arms(self.config.base_arms, required, self.corpus.arms)
        sweep = os.path.join(out, "sweep")
        self.services.note(f"[evolve] generation {number}: sweeping {', '.join(arms)}")
        code = self.services.run_sweep(
            SweepOrder(
                sweep,
                arms,
                overlay_dir,
                _incumbent_arg(self.config.out_dir),
                last_sweep,
                self.config.proposer_model,
                max_cost_usd=sweep_budget(budget_left, proposal.cost_usd),
            )
        )
        self._check_cancelled(code)
        self.services.on_step("swept")
        decisions = _decisions(sweep)
        usd, unmeasured = _sweep_spend(self.services, sweep)
        outcome = generation_decision([str(d["decision"]) for d in decisions or []])
        reasons = tuple(f"{d['candidate_arm']}: {d['decision']}" for d in decisions or ()) or (
            f"the sweep wrote no promotion.json (exit {code})",
        )
        digest_of = overlay_digest(load_overlay(overlay_dir, self._candidates()))
        sync_tree(overlay_dir)  # the overlay is what the incumbent is rebuilt from once promoted
        return attrs.evolve(
            record,
            outcome=outcome,
            sweep_dir=sweep,
            spend=Spend(proposal.cost_usd, usd, unmeasured, proposer_source=proposal.cost_source),
            candidate_overlay=overlay_dir,
            candidate_overlay_digest=digest_of,
            required_candidate_arms=required,
            decisions=tuple(decisions or ()),
            reasons=reasons,
            promotion=os.path.join(sweep, "promotion.json") if decisions is not None else None,
            finished_at=_stamp(clock),
        )

    def _propose(self, number: int, last_sweep: str | None, out: str) -> Proposal:
        """The proposer's session over a redacted digest of the last sweep's evidence."""
        rows = (
            []
            if last_sweep is None
            else list(self.services.read_rows(os.path.join(last_sweep, "results.jsonl")))
        )
        prompts = {task.id: task.prompt for task in self.corpus.tasks}
        digest = evidence_digest(
            rows,
            prompts=prompts,
            decisions=(last_sweep and _decisions(last_sweep)) or (),
            title=f"Evidence from the last sweep (before generation {number})",
        )
        self.services.note(f"[evolve] generation {number}: proposing ({self.config.proposer_model})")
        proposal = self.services.propose(
            ProposalOrder(
                workspace=os.path.join(out, "proposer", "workspace"),
                incumbent=self.incumbent(),
                evidence=digest,
                prompt=proposer_prompt(number, self.allowed),
                label=f"proposer-gen{number}",
            )
        )
        self._check_cancelled()
        return proposal

    def _validate(self, proposal: Proposal, out: str) -> tuple[str | None, str | None, tuple[str, ...]]:
        record = proposal.record
        if not record.ok:
            kind = record.error_kind.value if record.error_kind else "not ok"
            return f"the proposer session failed ({kind}): {record.error_detail or ''}".strip(), None, ()
        if proposal.deleted:
            return f"the proposer deleted {', '.join(proposal.deleted)} (an overlay cannot delete)", None, ()
        if not proposal.files:
            return "the proposer changed no skill file", None, ()
        overlay_dir = write_overlay(os.path.join(out, "overlay"), proposal.files)
        try:
            overlay = load_overlay(
                overlay_dir, [a for a in self._candidates() if set(a.evaluated_skills) & set(self.allowed)]
            )
            required = required_candidate_arms(
                overlay.skills, self.corpus.arms, has_skill=skill_presence(self.corpus)
            )
            chosen = generation_arms(self.config.base_arms, required, self.corpus.arms)
            check_overlay_arms(
                overlay,
                [self.corpus.arms[a] for a in chosen],
                self.corpus.arms,
                has_skill=skill_presence(self.corpus),
            )
        except InputError as exc:
            return f"the proposal is not a valid overlay: {exc.reason}", None, ()
        if proposal.ignored:
            self.services.note(
                f"[evolve] ignored what the proposer wrote outside the skills: {', '.join(proposal.ignored)}"
            )
        return None, overlay_dir, required


def budget_left(max_cost_usd: float | None, history: Sequence[GenerationRecord]) -> float | None:
    """What is left of ``--max-cost`` after every generation so far (None: no budget).

    Called only when :func:`stop_reason` let the loop go on, so every total is known.
    """
    if max_cost_usd is None:
        return None
    spent = sum(record.spend.total_usd or 0.0 for record in history)
    return max(0.0, round(max_cost_usd - spent, 6))


def sweep_budget(left: float | None, proposer_usd: float | None) -> float | None:
    """The sweep's own ``--max-cost``: what the proposer left of the budget (never negative).

    A proposer whose cost is unknown leaves nothing: a budget that cannot be checked is spent.
    """
    if left is None:
        return None
    if proposer_usd is None:
        return 0.0
    return max(0.0, round(left - proposer_usd, 6))


def evolve(config: EvolveConfig, services: EvolveServices) -> EvolveResult:
    """Run up to ``config.generations`` generations (see the module docstring); the records.

    Raises:
        InputError: a bad corpus, arms or history (nothing is run).
    """
    os.makedirs(config.out_dir, exist_ok=True)
    corpus = load_corpus(config.corpus_path)
    loop = _Loop(config, services, corpus)
    history = read_history(config.out_dir)
    try:
        return _run(config, services, loop, history)
    except _Cancelled:
        services.note("[evolve] cancelled: the interrupted generation has no record (run again to redo it)")
        return EvolveResult(tuple(history), "cancelled", cancelled=True)


def _first_number(config: EvolveConfig, history: Sequence[GenerationRecord]) -> int:
    """The next generation's number: after the last record, else 0 (1 with ``--reuse-results``)."""
    if history:
        return history[-1].generation + 1
    return 0 if config.reuse_results is None else 1


def _decided(
    config: EvolveConfig,
    services: EvolveServices,
    loop: _Loop,
    history: list[GenerationRecord],
    record: GenerationRecord,
) -> GenerationRecord:
    """Journal the decided generation (its commit point), then make its effects and append its line."""
    write_journal(services.directory, record)
    services.on_step("journal")
    return _finish(config, services, loop, history, record)


def _finish(
    config: EvolveConfig,
    services: EvolveServices,
    loop: _Loop,
    history: list[GenerationRecord],
    record: GenerationRecord,
) -> GenerationRecord:
    """The journaled generation's effects, each idempotent: a run killed here redoes them from its journal."""
    loop.settle([*history, record])
    if (
        record.outcome is GenerationOutcome.PROMOTE
        and services.apply is not None
        and record.promotion is not None
        and record.applied is None
    ):
        record = attrs.evolve(record, applied=dict(services.apply(record.promotion)))
        write_journal(services.directory, record)
        services.on_step("journal-applied")
    if record.outcome is not GenerationOutcome.BASELINE:
        services.note(
            f"[evolve] generation {record.generation}: {record.outcome.value} — {'; '.join(record.reasons)}"
            f" (spent {record.spend.total_usd if record.spend.total_usd is not None else 'n/a'})"
        )
    append_record(config.out_dir, record)
    services.on_step("recorded")
    history.append(record)
    return record


def _last_sweep(config: EvolveConfig, history: Sequence[GenerationRecord]) -> str | None:
    for record in reversed(history):
        if record.sweep_dir is not None:
            return record.sweep_dir
    return config.reuse_results


def _run(
    config: EvolveConfig, services: EvolveServices, loop: _Loop, history: list[GenerationRecord]
) -> EvolveResult:
    pending = pending_record(config.out_dir, _first_number(config, history))
    if pending is not None:
        services.note(
            f"[evolve] generation {pending.generation} was decided but not recorded:"
            " finishing it from its journal"
        )
        _finish(config, services, loop, history, pending)
    else:
        loop.settle(history)
    plan = begin_run(
        config.out_dir,
        directory=services.directory,
        last_recorded=history[-1].generation if history else 0,
        generations=config.generations,
        started_at=_stamp(services.clock),
    )
    services.on_step("run-started")
    if plan.resumed:
        services.note(
            f"[evolve] finishing the run that was interrupted: --generations {plan.generations} counts"
            f" from generation {plan.after}, so it ends at generation {plan.last}"
        )
    if not history and config.reuse_results is None:
        _decided(config, services, loop, history, loop.baseline())
    last_sweep = _last_sweep(config, history)
    next_number = _first_number(config, history)
    stopped: str | None = None
    while next_number <= plan.last:
        stopped = stop_reason(
            history, max_generations=config.max_generations, max_cost_usd=config.max_cost_usd
        )
        if stopped is not None:
            services.note(f"[evolve] stopping: {stopped}")
            break
        record = loop.generation(next_number, last_sweep, budget_left(config.max_cost_usd, history))
        _decided(config, services, loop, history, record)
        last_sweep = _last_sweep(config, history)
        next_number += 1
    else:
        stopped = stop_reason(
            history, max_generations=config.max_generations, max_cost_usd=config.max_cost_usd
        )
    end_run(config.out_dir)
    return EvolveResult(tuple(history), stopped)
