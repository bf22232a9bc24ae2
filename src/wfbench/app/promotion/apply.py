"""Use case: apply promoted evidence to a repository (``wfbench promote apply``).

Nothing is written unless the evidence is complete, current and exact
(:func:`wfbench.domain.promotion.validation.validate_for_apply`) against what this function
recomputes itself, never against what the evidence claims:

* the **task bindings** (commits, prompt, oracle and dependency digests) by binding the corpus
  again, with the sweep's own task selection;
* the **overlay** by reading and validating its directory, and its digest;
* the **required candidate arms** from what the overlay touches, and the **policy** the corpus
  decides by;
* the **target base digests** from the target repository's committed bytes at the canonical
  skill location and every mirror.

Then the overlay's files are written to every destination in one compare-and-swap transaction
(the :class:`~wfbench.domain.ports.SkillTarget` port), optionally committed on a new branch with
the evidence's sha256 in the message.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from wfbench.app.corpus.arm_fit import skill_presence
from wfbench.app.corpus.arms import (
    Arm,
    Overlay,
    TaskKind,
    load_overlay,
    overlay_digest,
    required_candidate_arms,
)
from wfbench.app.corpus.binding import BoundTask, bind_tasks, prepare_snapshots
from wfbench.app.corpus.corpus import Corpus, load_corpus
from wfbench.app.corpus.skill_bindings import overlay_destinations
from wfbench.app.sweep.sweep import selected_tasks
from wfbench.domain import strict_json
from wfbench.domain.environment.spec import BuiltEnvironment
from wfbench.domain.errors import InputError
from wfbench.domain.ports import SkillTarget, Workspaces
from wfbench.domain.promotion.evidence import EvidenceBindings
from wfbench.domain.promotion.evidence_parts import GATE_SCHEMA
from wfbench.domain.promotion.policy import DEFAULT_POLICY, GateKind, PromotionPolicy
from wfbench.domain.promotion.skill_swap import CommitSpec, SwapEntry, base_digests, sha256_bytes, skill_roots
from wfbench.domain.promotion.validation import ApplyExpectation, validate_for_apply

__all__ = ["ApplyOutcome", "ApplyRefused", "ApplyRequest", "apply_promotion", "expectation_for"]


class ApplyRefused(InputError):
    """The evidence may not be applied; ``problems`` lists every reason (one line each)."""

    def __init__(self, problems: Sequence[str], *, source: str) -> None:
        self.problems = tuple(problems)
        super().__init__(self.problems[0], source=source)


@attrs.frozen
class ApplyRequest:
    """What to apply where, and what the applier expects the evidence to be bound to."""

    evidence_path: str
    corpus_path: str
    #: Mirrors of the skills in the target (None: the corpus's ``skill_mirrors``).
    mirrors: tuple[str, ...] | None = None
    #: The overlay directory (None: the evidence's ``candidate_overlay``).
    overlay_dir: str | None = None
    #: The pinned benchmark model (None: the corpus's ``defaults.model``).
    model: str | None = None
    proposer_model: str | None = None
    effort: str | None = None
    include_expensive: bool = False
    #: ``--tasks``: the ids or globs the sweep selected (empty: every task).
    tasks: tuple[str, ...] = ()
    policy: PromotionPolicy | None = None
    #: Commit the written files: on ``branch`` (new), or on the current branch when ``commit``.
    branch: str | None = None
    commit: bool = False
    dry_run: bool = False


@attrs.frozen
class ApplyOutcome:
    """What the apply did (or, with ``dry_run``, would do)."""

    evidence_sha256: str
    overlay_digest: str
    writes: tuple[str, ...]
    entries: tuple[SwapEntry, ...] = ()
    commit: str | None = None
    already_applied: bool = False
    dry_run: bool = False


#: The largest promotion evidence ``apply`` reads (about 10× a 10,000-task gate's ~95 MB): a bigger
#: file is refused by its size, never cut short and misread as broken JSON.
MAX_EVIDENCE_BYTES = 1024 * 1024 * 1024


def _read_evidence(path: str) -> tuple[bytes, Any]:
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_EVIDENCE_BYTES + 1)
    except FileNotFoundError:
        raise InputError("promotion evidence file does not exist", source=path) from None
    except OSError as exc:
        raise InputError(f"promotion evidence is unreadable: {exc.strerror}", source=path) from None
    if len(data) > MAX_EVIDENCE_BYTES:
        raise InputError(
            f"promotion evidence is larger than {MAX_EVIDENCE_BYTES} bytes, the most `promote apply` reads",
            source=path,
        )
    try:
        raw = strict_json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"promotion evidence is not valid JSON: {exc}", source=path) from None
    if isinstance(raw, dict) and raw.get("schema") == GATE_SCHEMA:
        raise InputError(
            f"is {GATE_SCHEMA}, what `wfbench gate --json` prints (the decisions without their per-task"
            " evidence), not promotion evidence; write that with `wfbench gate RESULTS --out FILE`",
            field="schema",
            source=path,
        )
    return data, raw


def _candidate_arms(corpus: Corpus) -> list[Arm]:
    return [arm for arm in corpus.arms.values() if arm.is_candidate]


def _overlay(request: ApplyRequest, raw: Any, corpus: Corpus) -> Overlay:
    root = request.overlay_dir
    if root is None:
        recorded = raw.get("candidate_overlay") if isinstance(raw, dict) else None
        if not isinstance(recorded, str) or not recorded:
            raise InputError(
                "the evidence names no candidate_overlay; pass --overlay DIR", source=request.evidence_path
            )
        root = recorded
    return load_overlay(root, _candidate_arms(corpus))


def _policy(request: ApplyRequest, corpus: Corpus) -> PromotionPolicy:
    policy = request.policy or DEFAULT_POLICY
    chosen = corpus.defaults.policy
    return (
        policy
        if request.policy is not None or chosen is None
        else attrs.evolve(policy, decision_policy=chosen)
    )


def expectation_for(
    *,
    corpus: Corpus,
    selected: Sequence[Any],
    overlay: Overlay,
    base: dict[str, str],
    model: str | None,
    proposer_model: str | None,
    effort: str | None,
    policy: PromotionPolicy,
    claimed: Sequence[str] = (),
) -> ApplyExpectation:
    """What evidence for ``overlay`` over the bound ``selected`` tasks must say to be applied.

    The required candidate arms follow from the skills the overlay touches; an overlay of root
    instruction files only (``AGENTS.md``, ``CLAUDE.md``) may be judged in any candidate arm, so
    ``claimed`` (the evidence's list, when every entry is a candidate arm of the corpus) stands.
    """
    required = required_candidate_arms(
        overlay.skills, corpus.arms, chosen=claimed, has_skill=skill_presence(corpus)
    )
    if (
        not overlay.skills
        and claimed
        and all(corpus.arms.get(a) and corpus.arms[a].is_candidate for a in claimed)
    ):
        required = tuple(claimed)
    kinds = {task.spec.id: task.spec.kind for task in selected}
    arms = corpus.arms
    bindings = EvidenceBindings(
        benchmark_model=model,
        proposer_model=proposer_model,
        effort=effort,
        candidate_overlay_digest=overlay_digest(overlay),
        target_base_digests=base,
        selected_tasks=tuple(task.binding() for task in selected),
    )
    return ApplyExpectation(
        bindings=bindings,
        required_candidate_arms=required,
        policy=policy,
        pairs={name: arm.incumbent for name, arm in arms.items() if arm.incumbent is not None},
        gates={
            name: GateKind.REVIEW if arm.kind is TaskKind.REVIEW else GateKind.IMPLEMENTATION
            for name, arm in arms.items()
            if arm.is_candidate
        },
        arm_tasks={
            name: frozenset(task for task, kind in kinds.items() if kind is arms[name].kind)
            for name in required
        },
    )


def apply_promotion(
    request: ApplyRequest,
    *,
    target: SkillTarget,
    workspaces: Workspaces,
    now: dt.datetime,
    work_dir: str,
    environment_digest: Callable[[BoundTask], str | None] | None = None,
) -> ApplyOutcome:
    """Validate the evidence against what is recomputed here, then swap the files in.

    ``work_dir`` holds the task snapshots built to recompute the dependency digests;
    ``environment_digest`` gives the digest a task's declared environment is built under (the
    sweep recorded it in the task's binding), without building it.

    Raises:
        ApplyRefused: the evidence may not be applied (every reason listed); nothing is written.
        InputError: a bad evidence file, corpus, overlay or target (nothing is written).
        WfbenchError: the transaction failed and was rolled back.
    """
    data, raw = _read_evidence(request.evidence_path)
    corpus = load_corpus(request.corpus_path)
    overlay = _overlay(request, raw, corpus)
    mirrors = corpus.skill_mirrors if request.mirrors is None else request.mirrors
    writes = overlay_destinations(overlay, mirrors)
    dests = [path for path, _ in writes]
    evidence_sha = hashlib.sha256(data).hexdigest()
    done = _committed_at_head(target, evidence_sha, writes)
    if done is not None:  # applied and committed already (by an earlier run, perhaps one killed after)
        return ApplyOutcome(
            evidence_sha256=evidence_sha,
            overlay_digest=overlay_digest(overlay),
            writes=tuple(dests),
            already_applied=True,
            commit=done,
        )
    base = base_digests(dict(target.committed(skill_roots(overlay.skills, mirrors), dests)), dests)
    tasks = selected_tasks(corpus, include_expensive=request.include_expensive, only=request.tasks)
    bound = bind_tasks(corpus, tasks, workspaces=workspaces)
    prepared = prepare_snapshots(bound, workspaces=workspaces, parent=work_dir)
    failed = [task for task in prepared if task.failure]
    if failed:
        raise InputError(f"task {failed[0].spec.id} cannot be bound: {failed[0].failure}", source=corpus.path)
    if environment_digest is not None:
        prepared = tuple(_with_environment(task, environment_digest) for task in prepared)
    expected = expectation_for(
        corpus=corpus,
        selected=prepared,
        overlay=overlay,
        base=base,
        model=request.model or corpus.defaults.model,
        proposer_model=request.proposer_model,
        effort=request.effort,
        policy=_policy(request, corpus),
        claimed=_claimed_arms(raw),
    )
    problems = validate_for_apply(raw, expected=expected, now=now)
    if problems:
        raise ApplyRefused((*problems, *_base_differences(raw, base)), source=request.evidence_path)
    digest = overlay_digest(overlay)
    outcome = ApplyOutcome(evidence_sha256=evidence_sha, overlay_digest=digest, writes=tuple(dests))
    message = commit_message(raw, evidence_sha, digest, dests)
    commit = None
    if request.branch is not None or request.commit:
        commit = CommitSpec(message=message, branch=request.branch)
    current = target.current(dests)
    if all(current[path] == sha256_bytes(content) for path, content in writes):
        made = _finish_commit(target, commit, outcome, request)
        return attrs.evolve(outcome, already_applied=True, commit=made)
    if request.dry_run:
        return attrs.evolve(outcome, dry_run=True)
    swapped = target.swap(writes, base, message=message, commit=commit)
    return attrs.evolve(outcome, entries=swapped.entries, commit=swapped.commit)


def _committed_at_head(
    target: SkillTarget, evidence_sha: str, writes: Sequence[tuple[str, bytes]]
) -> str | None:
    """``HEAD``'s id when it is this evidence's apply commit and every destination still holds it.

    The evidence no longer binds to such a target (its committed incumbent is the candidate now),
    so this is asked before the bindings are checked.
    """
    at_head = target.applied_at_head(evidence_sha)
    if at_head is None or set(at_head[1]) != {path for path, _ in writes}:
        return None
    current = target.current([path for path, _ in writes])
    return at_head[0] if all(current[path] == sha256_bytes(data) for path, data in writes) else None


def _finish_commit(
    target: SkillTarget, commit: CommitSpec | None, outcome: ApplyOutcome, request: ApplyRequest
) -> str | None:
    """The commit of an apply whose files are already in place, when one was asked for.

    ``HEAD`` is that commit when the earlier apply got as far as committing; otherwise the files
    were written (a crash after the transaction's commit point, before git's) and are committed now,
    so a killed ``apply --branch`` run again ends like one that never died. A dry run commits nothing.
    """
    if commit is None:
        return None
    at_head = target.applied_at_head(outcome.evidence_sha256)
    if at_head is not None:
        return at_head[0]
    if request.dry_run:
        return None
    return target.commit_written(commit, outcome.writes)


def _with_environment(task: BoundTask, digest_of: Callable[[BoundTask], str | None]) -> BoundTask:
    """The task with its environment's digest (what its binding records), when it declares one."""
    if task.spec.environment is None or task.snapshot is None:
        return task
    digest = digest_of(task)
    if digest is None:
        return task
    recorded = BuiltEnvironment(digest=digest, host_path="", mount="", python=False)
    return attrs.evolve(task, environment=recorded)


def _claimed_arms(raw: Any) -> tuple[str, ...]:
    arms = raw.get("required_candidate_arms") if isinstance(raw, dict) else None
    return tuple(arms) if isinstance(arms, list) and all(isinstance(a, str) for a in arms) else ()


def _base_differences(raw: Any, base: dict[str, str]) -> list[str]:
    """Which destinations' recorded bytes differ from the target's committed ones (for the user)."""
    recorded = raw.get("target_base_digests") if isinstance(raw, dict) else None
    if not isinstance(recorded, dict) or recorded == base:
        return []
    lines = []
    for path in sorted(set(recorded) | set(base)):
        was, now = recorded.get(path), base.get(path)
        if was != now:
            measured = str(was)[:12] if was else "nothing"
            lines.append(
                f"target_base_digests: {path}: the evidence was measured on {measured},"
                f" the target has {str(now)[:12] if now else 'nothing'} committed"
                + ("" if now else " (not a destination of this apply: check --mirror)")
            )
    return lines[:20]


def commit_message(raw: Any, evidence_sha: str, digest: str, dests: Sequence[str]) -> str:
    """The commit message: what was promoted, on which evidence (its sha256), and where."""
    decisions = raw.get("decisions", []) if isinstance(raw, dict) else []
    lines = [
        f"Promote candidate skill overlay {digest[:12]}",
        "",
        f"Evidence: sha256:{evidence_sha} (promotion.json, generated {raw.get('generated_at')})",
        f"Overlay digest: {digest}",
        f"Benchmark model: {raw.get('benchmark_model')}; origin: {raw.get('candidate_origin')}",
    ]
    for decision in decisions:
        reasons = "; ".join(str(reason) for reason in decision.get("reasons", []))
        lines.append(f"{decision.get('candidate_arm')}: {decision.get('decision')} — {reasons}")
    lines += ["", "Files:", *(f"  {path}" for path in dests), "", "Applied by wfbench promote apply."]
    return "\n".join(lines) + "\n"
