"""Run one cell (DESIGN.md "Data flow", step 4): a private copy, sessions, checks, a row.

The cell owns a private copy of its task's snapshot for its whole life. In order: setup →
candidate overlay commit → the arm's sessions (each through the Sandbox and ModelCLI ports,
with phase-boundary and skill-fingerprint checks after each) → authored ``verify`` (read-only,
no network) → the hidden oracle, staged only now, run read-only with the network unshared,
output never persisted → churn and patch → review scoring for review tasks → the row. The
domain's :func:`sum_sessions` and :func:`classify_outcome` decide ``resolved`` and the kind.

Harness failures (:class:`SandboxError`, ``OSError``...) become ``infra-error`` rows (or
``cancelled``); a workspace that cannot be removed turns the row into ``cleanup-failure``.
Anything else propagates: a harness bug is never averaged into the evidence.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from wfbench.app.cell.context import (
    AgentFault,
    CellContext,
    CellServices,
    RunSettings,
    SetupFailed,
    checked_run,
    skill_digest,
)
from wfbench.app.cell.events import CellTimings, PhaseFinished, PhaseStarted
from wfbench.app.cell.measure import measured_fields, session_measurements
from wfbench.app.cell.oracle_run import run_oracle
from wfbench.app.cell.prompts import save_prompt
from wfbench.app.cell.review import grade_review
from wfbench.app.cell.wire import CellWire
from wfbench.app.corpus.arms import Arm, Overlay, Phase, PhaseRole, TaskKind, WorkspaceMode
from wfbench.app.corpus.binding import BoundTask, dependency_source, sha256_text
from wfbench.domain.errors import (
    STORAGE_ERRNOS,
    EvidenceCaptureError,
    SandboxError,
    SweepStorageError,
    WfbenchError,
)
from wfbench.domain.ports import CancelToken
from wfbench.domain.redaction import REDACTED, redact_text, secret_forms
from wfbench.domain.results.rows import ErrorKind, Row
from wfbench.domain.session.outcome import SessionSum, classify_outcome, sum_sessions
from wfbench.domain.session.records import SessionRecord, SessionRequest
from wfbench.domain.sweep import layout
from wfbench.domain.workspace.oracle import OracleVerdict
from wfbench.domain.workspace.rules import COMMIT_RE, PhaseBoundary, WorkspaceState, phase_verdict
from wfbench.domain.workspace.sandbox import Mount, ProcessState
from wfbench.domain.workspace.shadowing import CONFIG_FILES, has_pytest_section, shadowing_diagnostics

DETAIL_LIMIT = 2000
#: The harness-only file of a cell that names the oracle's failing/missing expected ids.
ORACLE_NAME = "oracle.json"
PATCH_LIMIT = 300_000
#: Paths not diffed that a row names (the rest is counted).
MAX_LISTED = 50
REVIEW_MOUNT = "/review-output"
OVERLAY_MOUNT = "/wfbench-overlay"
REVIEW_FILE = "review-output.json"
_BOUNDARY = {
    PhaseRole.PLAN: PhaseBoundary.PLAN_DOCUMENT,
    PhaseRole.REVIEW: PhaseBoundary.READ_ONLY,
    PhaseRole.WORK: PhaseBoundary.UNRESTRICTED,
}
_PHASE_KIND = {
    PhaseRole.PLAN: ErrorKind.PLAN_EVIDENCE_INVALID,
    PhaseRole.REVIEW: ErrorKind.REVIEW_EVIDENCE_INVALID,
    PhaseRole.WORK: ErrorKind.IMPLEMENTATION_EVIDENCE_INVALID,
}
_SAFE = re.compile(r"[^A-Za-z0-9._-]")


@attrs.frozen
class CellPlan:
    """One (task, arm, run) to run, with the overlay a candidate arm receives."""

    task: BoundTask
    arm: Arm
    run: int
    overlay: Overlay | None = None
    overlay_digest: str | None = None

    @property
    def label(self) -> str:
        """``<task>-<arm>-run<i>``: names the cell's sessions and scratch directory."""
        return _SAFE.sub("_", f"{self.task.spec.id}-{self.arm.name}-run{self.run}")

    @property
    def host_network(self) -> bool:
        """The ``network: host`` opt-out of the task or the arm (its sessions keep the host network)."""
        return "host" in (self.task.spec.network, self.arm.network)

    def artifact(self, name: str) -> str:
        """The relative path of one of the cell's artifacts: ``cells/<task>/<arm>/run-<i>/<name>``."""
        return layout.cell_file(self.task.spec.id, self.arm.name, self.run, name)


def run_cell(plan: CellPlan, *, services: CellServices, settings: RunSettings, cancel: CancelToken) -> Row:
    """Run one cell to its row; the workspace is always removed (a failed removal = cleanup-failure)."""
    started = services.clock.monotonic()
    if plan.task.snapshot is None or plan.task.failure:  # no snapshot, or its environment failed to build
        return _failure_row(plan, settings, plan.task.failure or "task was not prepared", cancel)
    scratch = tempfile.mkdtemp(prefix=f"wfbench-{plan.label}-", dir=settings.work_dir)
    workspace = os.path.join(scratch, "workspace")
    row: Row | None = None
    wire: CellWire | None = None
    ctx: CellContext | None = None
    try:
        if services.gateway is not None:
            model = plan.arm.model or settings.model  # an arm may pin its own model
            lease = services.gateway.lease(plan.label, model=model, scratch=scratch)
            wire = CellWire(lease, lease.prices)
        ctx = CellContext(
            plan.task,
            workspace,
            scratch,
            services,
            settings,
            cancel,
            wire=wire,
            cell=(plan.arm.name, plan.run),
        )
        ctx.lap_started = started
        services.workspaces.private_copy(plan.task.snapshot, workspace, cancel=cancel)
        ctx.lap("copy")
        row = _measure(plan, ctx)
    except SweepStorageError:
        raise  # the sweep directory refuses writes: a harness failure that stops the sweep, never a row
    except (WfbenchError, OSError, ValueError, RuntimeError) as exc:
        if isinstance(exc, OSError) and _under(exc, settings.out_dir) and exc.errno in STORAGE_ERRNOS:
            raise SweepStorageError.of(exc) from exc
        measured = {} if ctx is None else measured_fields(ctx.sessions, ctx.transcripts)  # paid sessions stay
        row = _failure_row(plan, settings, f"{type(exc).__name__}: {exc}", cancel, measured=measured)
    finally:
        if wire is not None:
            wire.lease.close()
        if ctx is not None:
            ctx.lap("other")
        problem = services.workspaces.remove_tree(scratch)
    if problem is not None:
        row = _cleanup_failure(row, problem)
    wall = round(services.clock.monotonic() - started, 3)
    if ctx is not None:
        ctx.lap("remove")
        key = (plan.task.spec.id, plan.arm.name, plan.run)
        _observe(ctx, CellTimings(key, wall, tuple(ctx.timings.items())))
    return attrs.evolve(row, extra={**row.extra, "cell_wall_s": wall})


def _under(exc: OSError, root: str) -> bool:
    """Whether ``exc`` names a file in ``root`` (the sweep directory); not its scratch or workspace."""
    if not exc.filename:
        return False
    path, base = os.path.abspath(os.fsdecode(exc.filename)), os.path.abspath(root)
    return path == base or path.startswith(base + os.sep)


def _measure(plan: CellPlan, ctx: CellContext) -> Row:
    """Prepare the workspace, run the sessions, check their work and build the row."""
    head, expected_digest, review_dir = _prepare(plan, ctx)
    ctx.lap("prepare")
    records = _sessions(plan, ctx, review_dir, expected_digest)
    ctx.lap("sessions")
    total = sum_sessions(records)
    wire_fields: dict[str, Any] = {}
    if ctx.wire is not None:
        total, wire_fields = ctx.wire.row(total)
    fields: dict[str, Any] = {
        **wire_fields,
        "variant_head_sha": head,
        "skill_digest": expected_digest or None,
        "transcript_artifacts": list(ctx.transcripts),
        "session_measurements": session_measurements(ctx.sessions),
    }
    diagnostics = list(total.evidence_diagnostics)
    if ctx.first_state is not None and ctx.last_state is not None:
        diagnostics += shadowing_diagnostics(
            ctx.first_state.entries,
            ctx.last_state.entries,
            _pytest_configs(ctx.first_state.entries, ctx.last_state.entries, ctx.workspace),
        )
    checks = _check(plan, ctx, total, review_dir, fields)
    if plan.task.spec.kind is TaskKind.IMPLEMENTATION:
        checks = _capture_evidence(plan, ctx, head, diagnostics=diagnostics, fields=fields, checks=checks)
        ctx.lap("capture")
    fields["evidence_diagnostics"] = [redact_text(d, ctx.redacted()) for d in diagnostics]
    return _measured_row(plan, ctx, total, records=records, checks=checks, fields=fields)


def _prepare(plan: CellPlan, ctx: CellContext) -> tuple[str, str, str]:
    """Set the workspace up for the sessions: its HEAD commit, the skills' digest, the review directory."""
    spec = plan.task.spec
    if spec.setup:
        _setup(ctx, spec.setup)
    incumbent = ctx.settings.incumbent_overlay
    committed = False
    if incumbent is not None and set(incumbent.skills) & set(plan.arm.evaluated_skills):
        _apply_overlay(ctx, incumbent, message="incumbent skills")
        committed = True
    if plan.overlay is not None:
        _apply_overlay(ctx, plan.overlay)
        committed = True
    ctx.dependency_mounts = _dependency_mounts(ctx)
    snapshot = plan.task.snapshot
    assert snapshot is not None
    if spec.setup or committed:  # the workspace made commits of its own: ask its git, in the sandbox
        head = checked_run(
            ctx, ["git", "-c", "core.fsmonitor=false", "rev-parse", "HEAD"], writable=False
        ).strip()
    else:  # nothing ran in the copy yet: HEAD is the snapshot's commit
        head = snapshot.commit
    if not COMMIT_RE.match(head):
        raise SandboxError(f"HEAD after setup is not a commit id: {head[:80]!r}")
    expected_digest = skill_digest(ctx.workspace, plan.arm.evaluated_skills, _instructions(plan))
    review_dir = os.path.join(ctx.scratch, "review-output")
    os.mkdir(review_dir, 0o700)
    if ctx.disk_budget_bytes is not None:
        ctx.start_usage = ctx.services.workspaces.disk_usage(ctx.workspace)
    return head, expected_digest, review_dir


@attrs.frozen
class _Checks:
    """What checking a cell's work found (``None``: that check did not run) and the agent's fault."""

    verify_ok: bool | None = None
    oracle_ok: bool | None = None
    review_valid: bool | None = None
    fault: AgentFault | None = None


def _check(
    plan: CellPlan, ctx: CellContext, total: SessionSum, review_dir: str, fields: dict[str, Any]
) -> _Checks:
    """The authored tests (when the sessions ended ok), then the review's grade or the hidden oracle."""
    spec = plan.task.spec
    verify_ok: bool | None = None
    oracle_ok: bool | None = None
    review_valid: bool | None = None
    fault: AgentFault | None = None
    try:
        if total.ok:
            verify_ok, fields["authored_test_output"], detail = _verify(ctx, review_dir, spec.kind)
            fields["verify_output"] = fields["authored_test_output"]
            if detail is not None:
                fault = AgentFault(ErrorKind.VERIFY_FAILED, detail)
            ctx.lap("verify")
        if spec.kind is TaskKind.REVIEW:
            grade = grade_review(
                os.path.join(review_dir, REVIEW_FILE),
                plan.task.hidden_oracle(),
                ctx.settings.directory,
                plan.artifact(layout.REVIEW_NAME),
                secrets=ctx.redacted(),
            )
            review_valid, oracle_ok = grade.evidence_valid, grade.oracle_passed
            fields.update(grade.row_fields)
            fields["oracle_output"] = grade.oracle_output
            ctx.lap("review")
        elif total.ok:
            verdict = run_oracle(ctx, plan.task)
            oracle_ok = verdict.passed
            fields["oracle_evidence"] = verdict.evidence
            fields.update(_oracle_outcome(ctx, plan, verdict))
            if verdict.reward is not None:
                fields["oracle_reward"] = verdict.reward
            fields["oracle_output"] = (
                "hidden oracle passed" if oracle_ok else f"hidden oracle failed: {verdict.detail}"
            )
            if not oracle_ok and fault is None:
                fault = AgentFault(ErrorKind.ORACLE_FAILED, f"hidden oracle failed: {verdict.detail}")
            ctx.lap("oracle")
    except AgentFault as exc:
        fault = exc
    return _Checks(verify_ok, oracle_ok, review_valid, fault)


def _capture_evidence(
    plan: CellPlan,
    ctx: CellContext,
    head: str,
    *,
    diagnostics: list[str],
    fields: dict[str, Any],
    checks: _Checks,
) -> _Checks:
    """An implementation's churn and patch into ``fields``; a failed capture is the arm's fault."""
    try:
        fields.update(_churn_and_patch(ctx, plan, head, diagnostics))
    except EvidenceCaptureError as exc:
        fault = checks.fault or AgentFault(
            ErrorKind.IMPLEMENTATION_EVIDENCE_INVALID, f"capturing the workspace failed: {exc}"
        )
        return attrs.evolve(checks, fault=fault)
    return checks


def _measured_row(
    plan: CellPlan,
    ctx: CellContext,
    total: SessionSum,
    *,
    records: Sequence[SessionRecord],
    checks: _Checks,
    fields: dict[str, Any],
) -> Row:
    """Classify the outcome from the sessions and the checks, and build the row."""
    fault = checks.fault
    evidence_kind = (
        fault.kind if fault is not None and fault.kind is ErrorKind.IMPLEMENTATION_EVIDENCE_INVALID else None
    )
    outcome = classify_outcome(
        ok=total.ok,
        error_kind=total.error_kind or evidence_kind,
        authored_tests_passed=checks.verify_ok,
        oracle_passed=checks.oracle_ok,
        review_evidence_valid=checks.review_valid,
    )
    if total.error_kind is None and fault is not None:
        fields["error_detail"] = redact_text(fault.detail, ctx.redacted())[:DETAIL_LIMIT]
    fields.update(
        authored_tests_passed=checks.verify_ok,
        oracle_passed=checks.oracle_ok,
        review_evidence_valid=checks.review_valid,
        plan_produced=any(r.ok for r in records) if plan.arm.phases[0].role is PhaseRole.PLAN else True,
    )
    return _row(
        plan,
        ctx.settings,
        total,
        resolved=outcome.resolved,
        kind=outcome.error_kind,
        fields=fields,
        ok=total.ok and checks.review_valid is not False,
    )


def _setup(ctx: CellContext, command: str) -> None:
    ctx.phase = "setup"
    result = ctx.services.sandbox.run(  # set -eu: a failing line fails the setup (docs/corpus.md)
        ["/bin/sh", "-c", "set -eu\n" + command],
        policy=ctx.policy(writable=True, timeout_s=600.0),
        cancel=ctx.cancel,
    )
    if not result.ok:
        tail = (result.stdout[-600:] + result.stderr_tail[-600:]).decode("utf-8", "replace")
        raise SetupFailed(f"setup failed ({result.state}, exit {result.returncode}): {tail.strip()}")


def _apply_overlay(ctx: CellContext, overlay: Overlay, *, message: str = "candidate overlay") -> None:
    """Copy the overlay's skill and instruction files into the workspace and commit them (in the sandbox)."""
    mount = Mount(overlay.root, OVERLAY_MOUNT)
    policy = ctx.policy(writable=True, mounts=(mount,))
    source = ctx.services.sandbox.mount_path(OVERLAY_MOUNT, policy)
    steps = []
    if overlay.skills:
        steps.append('mkdir -p .claude/skills && cp -R "$1/.claude/skills/." .claude/skills/')
        steps.append("git add -f .claude/skills")
    steps += [f'rm -f {name} && cp "$1/{name}" {name} && git add -f {name}' for name in overlay.instructions]
    script = " && ".join(
        [
            *steps,
            "git -c user.name=wfbench -c user.email=wfbench@localhost -c core.hooksPath=/dev/null"
            f' commit -q --no-verify -m "{message}"',
        ]
    )
    result = ctx.services.sandbox.run(
        ["/bin/sh", "-c", script, "overlay", source], policy=policy, cancel=ctx.cancel
    )
    if not result.ok:
        raise SetupFailed(
            f"applying the {message} failed: {result.stderr_tail[-400:].decode('utf-8', 'replace')}"
        )


def _sessions(plan: CellPlan, ctx: CellContext, review_dir: str, expected_digest: str) -> list[SessionRecord]:
    records: list[SessionRecord] = []
    plan_doc = ""
    for phase in plan.arm.phases:
        record, produced = _phase(plan, ctx, phase, review_dir, plan_doc)
        after_digest = skill_digest(ctx.workspace, plan.arm.evaluated_skills, _instructions(plan))
        if after_digest != expected_digest and record.error_kind is None:
            detail = f"{phase.name} phase changed the evaluated skill fingerprint"
            record = attrs.evolve(record, ok=False, error_kind=_PHASE_KIND[phase.role], error_detail=detail)
        records.append(record)
        ctx.sessions.append((phase.name, record))
        plan_doc = produced or plan_doc
        if not record.ok:
            break
    return records


def _phase(
    plan: CellPlan, ctx: CellContext, phase: Phase, review_dir: str, plan_doc: str
) -> tuple[SessionRecord, str]:
    mounts = (Mount(review_dir, REVIEW_MOUNT, writable=True),) if phase.role is PhaseRole.REVIEW else ()
    ctx.phase = f"session-{phase.name}"
    plugins = tuple(os.path.realpath(d) for d in phase.plugin_dirs)  # read-only, where the agent is told
    policy = ctx.policy(
        writable=phase.workspace is WorkspaceMode.WRITABLE,
        network=plan.host_network,
        mounts=mounts + tuple(Mount(d, d) for d in plugins),
        timeout_s=ctx.session_timeout_s,
        read_only_paths=(
            *_skill_paths(ctx.workspace, plan.arm),
            *_instructions(plan, present_in=ctx.workspace),
        ),
        dependencies=True,
    )
    env, secrets = dict(ctx.settings.agent_env), dict(ctx.settings.secrets)
    if ctx.wire is not None:  # the model endpoint is the cell's lease, on the sandbox's own loopback
        policy, env, secrets = ctx.wire.policy(policy), ctx.wire.env(env), ctx.wire.secrets(secrets)
    review_dir_seen = ctx.services.sandbox.mount_path(REVIEW_MOUNT, policy) if mounts else ""
    review_output = f"{review_dir_seen}/{REVIEW_FILE}" if mounts else ""
    skills = _skill_paths(ctx.workspace, plan.arm) if "Skill" not in phase.disallowed_tools else ()
    request = SessionRequest(
        prompt=phase.render(task=plan.task.spec.prompt, plan=plan_doc, review_output=review_output),
        model=plan.arm.model or ctx.settings.model,
        effort=ctx.settings.effort,
        allowed_tools=phase.tools,
        disallowed_tools=phase.disallowed_tools,
        mcp_config_json=phase.mcp_config_json,
        plugin_dirs=tuple(ctx.services.sandbox.mount_path(d, policy) for d in plugins),
        add_dirs=(review_dir_seen,) if mounts else (),
        expected_skill=phase.skill,
        skill_paths={path.rsplit("/", 1)[-1]: path for path in skills},
        timeout_s=ctx.session_timeout_s,
        env=env,
        secrets=secrets,
        label=f"{plan.label}-{phase.name}",
        withheld=ctx.settings.withheld,
    )
    save_prompt(
        ctx, plan.artifact(layout.PROMPTS_NAME), phase=phase.name, role=phase.role.value, request=request
    )
    before = ctx.services.workspaces.state(ctx.workspace)
    agent = ctx.services.agent_for(None if plan.arm.agent is None else plan.arm.agent.key)
    key = (plan.task.spec.id, plan.arm.name, plan.run)
    _observe(ctx, PhaseStarted(key, phase.name))
    began = ctx.services.clock.monotonic()
    metered = ctx.wire.before() if ctx.wire is not None else None
    record = agent.run_session(request, sandbox=ctx.services.sandbox, policy=policy, cancel=ctx.cancel)
    if ctx.wire is not None and metered is not None:
        record = ctx.wire.check(record, metered)  # the row's usage and cost are the wire's
    wall = round(ctx.services.clock.monotonic() - began, 3)
    kind = None if record.error_kind is None else record.error_kind.value
    _observe(ctx, PhaseFinished(key, phase.name, wall, record.ok, kind, record.cost_usd))
    _save_transcript(ctx, plan, phase, record)
    after = ctx.services.workspaces.state(ctx.workspace)
    ctx.first_state = ctx.first_state or before
    ctx.last_state = after
    if _BOUNDARY[phase.role] is not PhaseBoundary.UNRESTRICTED:
        before, after = _without_ignored(ctx, before, after)
    verdict = phase_verdict(before, after, _BOUNDARY[phase.role])
    reasons = list(verdict.reasons)
    if (over := _over_disk_budget(ctx)) is not None:
        reasons.append(over)
    if reasons and record.error_kind is None:
        detail = "; ".join(reasons)[:DETAIL_LIMIT]
        record = attrs.evolve(record, ok=False, error_kind=_PHASE_KIND[phase.role], error_detail=detail)
    return record, verdict.plan_document or ""


def _over_disk_budget(ctx: CellContext) -> str | None:
    """Why the workspace grew past the disk budget during the sessions, or None."""
    budget = ctx.disk_budget_bytes
    if budget is None or ctx.start_usage is None:
        return None
    grown = ctx.services.workspaces.disk_usage(ctx.workspace) - ctx.start_usage
    if grown <= budget:
        return None
    source = (
        "the task's limits.storage" if ctx.task.spec.limits.storage_bytes else "wfbench run --disk-budget"
    )
    return (
        f"the workspace grew by {grown} bytes on disk during the sessions, over the disk budget of"
        f" {budget} bytes ({source})"
    )


def _without_ignored(
    ctx: CellContext, before: WorkspaceState, after: WorkspaceState
) -> tuple[WorkspaceState, WorkspaceState]:
    """Both states without the changed paths the base commit's ``.gitignore`` ignores (``__pycache__/``…).

    Only the snapshot's rules count (never a ``.gitignore`` the agent wrote); a tracked path never is.
    """
    snapshot = ctx.task.snapshot
    assert snapshot is not None
    changed = sorted(
        p for p in set(before.entries) | set(after.entries) if before.entries.get(p) != after.entries.get(p)
    )
    if not changed:
        return before, after
    kinds = {p: after.kind(p) or before.kind(p) for p in changed}
    asked = [p + "/" if kinds[p] == "d" else p for p in changed]
    ignored = {p.rstrip("/") for p in ctx.services.workspaces.ignored(snapshot, asked)}
    if not ignored:
        return before, after

    def keep(path: str) -> bool:
        return not any(path == i or path.startswith(i + "/") for i in ignored)

    return (
        attrs.evolve(before, entries={p: f for p, f in before.entries.items() if keep(p)}),
        attrs.evolve(after, entries={p: f for p, f in after.entries.items() if keep(p)}),
    )


def _observe(ctx: CellContext, event: object) -> None:
    """Tell the sweep's observers (a live view, ``--json``, ``wfbench.log``) about a phase."""
    if ctx.services.observe is not None:
        ctx.services.observe(event)


def _dependency_mounts(ctx: CellContext) -> tuple[Mount, ...]:
    """Each read-only dependency: the snapshot's copy of its source, mounted at ``<workspace>/<target>``.

    The snapshot is the bound commit's tree, so every cell sees the digested content; a target
    missing from the workspace gets an empty mount point (a directory or a file, like its source).
    """
    snapshot = ctx.task.snapshot
    assert snapshot is not None
    root = ctx.services.sandbox.workspace_path(ctx.policy(writable=False))
    mounts: list[Mount] = []
    for dependency in ctx.task.spec.dependencies:
        host = dependency_source(snapshot, dependency)
        _mount_point(ctx.workspace, dependency.target, directory=os.path.isdir(host))
        mounts.append(Mount(host, f"{root}/{dependency.target}"))
    return tuple(mounts)


def _mount_point(workspace: str, target: str, *, directory: bool) -> None:
    """Create ``target`` inside ``workspace`` if absent, never through a symlink."""
    path = workspace
    parts = target.split("/")
    for index, part in enumerate(parts):
        path = os.path.join(path, part)
        if os.path.islink(path):
            raise SandboxError(f"dependency target {target!r} passes through a symlink in the workspace")
        if os.path.lexists(path):
            continue
        if index < len(parts) - 1 or directory:
            os.mkdir(path, 0o755)
        else:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644))


def _instructions(plan: CellPlan, present_in: str | None = None) -> tuple[str, ...]:
    """The instruction files (``AGENTS.md``…) a candidate's overlay put into the workspace."""
    files = plan.overlay.instructions if plan.arm.is_candidate and plan.overlay is not None else ()
    if present_in is None:
        return files
    return tuple(
        f
        for f in files
        if os.path.isfile(os.path.join(present_in, f)) and not os.path.islink(os.path.join(present_in, f))
    )


def _skill_paths(workspace: str, arm: Arm) -> tuple[str, ...]:
    paths = (f".claude/skills/{skill}" for skill in arm.evaluated_skills)
    return tuple(
        p
        for p in paths
        if os.path.isdir(os.path.join(workspace, p)) and not os.path.islink(os.path.join(workspace, p))
    )


def _save_transcript(ctx: CellContext, plan: CellPlan, phase: Phase, record: SessionRecord) -> None:
    """Write the session's transcript into the cell's ``transcripts/`` and rewrite its ``index.json``."""
    if not record.transcript:
        return
    session = _SAFE.sub("_", record.session_id or "unknown")[:128]
    rel = plan.artifact(f"{layout.TRANSCRIPTS_DIR}/{phase.name}-{session}.jsonl")
    _write_artifact(ctx, rel, record.transcript)
    ctx.transcripts.append(
        {
            "path": rel,
            "sha256": record.transcript_sha256,
            "bytes": len(record.transcript),
            "source": "parent-captured-stream-json",
        }
    )
    ctx.transcript_index.append(
        {
            "phase": phase.name,
            "role": phase.role.value,
            "session_id": record.session_id,
            "path": rel,
            "ok": record.ok,
            "error_kind": None if record.error_kind is None else record.error_kind.value,
        }
    )
    index = json.dumps({"transcripts": ctx.transcript_index}, indent=2).encode() + b"\n"
    _write_artifact(ctx, plan.artifact(f"{layout.TRANSCRIPTS_DIR}/{layout.TRANSCRIPT_INDEX_NAME}"), index)


def _write_artifact(ctx: CellContext, rel: str, data: bytes) -> None:
    """Write one of the cell's artifacts (``rel`` under the sweep directory), replacing it whole."""
    ctx.settings.directory.write(rel, data)


def _verify(ctx: CellContext, review_dir: str, kind: TaskKind) -> tuple[bool, str, str | None]:
    """Run the authored verify read-only: (passed, redacted output, why it did not finish or None).

    A verify that times out or leaves processes behind ran the agent's code: the arm's failure
    (``verify-failed``). A sandbox that cannot run it, or a cancelled sweep, raises SandboxError.
    """
    mounts = (Mount(review_dir, REVIEW_MOUNT),) if kind is TaskKind.REVIEW else ()
    ctx.phase = "verify"
    policy = ctx.policy(writable=False, mounts=mounts, dependencies=True)
    env: Mapping[str, str] = policy.env
    if mounts:
        env = {
            **env,
            "WFBENCH_REVIEW_OUTPUT": ctx.services.sandbox.mount_path(REVIEW_MOUNT, policy)
            + "/"
            + REVIEW_FILE,
        }
    policy = attrs.evolve(policy, env=env)
    result = ctx.services.sandbox.run(
        ["/bin/sh", "-c", ctx.task.spec.verify], policy=policy, cancel=ctx.cancel
    )
    output = (result.stdout[-4000:] + b"\n" + result.stderr_tail[-2000:]).decode("utf-8", "replace")[-4000:]
    clean = redact_text(output, ctx.redacted())
    if result.state in (ProcessState.TIMEOUT, ProcessState.FORCED_KILL):
        limit = f" after {ctx.verify_timeout_s:g} s" if result.timed_out else ""
        return False, clean, f"verify did not finish ({result.state}{limit}): {result.detail}".rstrip(": ")
    if result.state is not ProcessState.EXITED:
        raise SandboxError(f"verify did not finish ({result.state}): {result.detail}")
    return result.ok, clean, None


def _churn_and_patch(ctx: CellContext, plan: CellPlan, head: str, diagnostics: list[str]) -> dict[str, Any]:
    """Churn and the bounded patch (written under --out); paths not diffed go to ``diagnostics`` too."""
    snapshot = plan.task.snapshot
    assert snapshot is not None
    patch = ctx.services.workspaces.capture_patch(ctx.workspace, snapshot, PATCH_LIMIT, base_commit=head)
    churn = patch.churn or ctx.services.workspaces.churn(ctx.workspace, snapshot, base_commit=head)
    diagnostics += [f"not diffed: {item.describe()}" for item in patch.skipped[:MAX_LISTED]]
    if len(patch.skipped) > MAX_LISTED:
        diagnostics.append(f"not diffed: … and {len(patch.skipped) - MAX_LISTED} more")
    data = patch.data
    for form in secret_forms(ctx.redacted()):  # the agent may have written a secret
        data = data.replace(form.encode(), REDACTED.encode())
    rel = plan.artifact(layout.PATCH_NAME)
    _write_artifact(ctx, rel, data)
    return {
        "patch_artifact": rel,
        "diff_files": churn.files,
        "diff_insertions": churn.insertions,
        "diff_deletions": churn.deletions,
        "patch_truncated": patch.truncated,
        "undiffed_files": [
            {"path": item.path, "bytes": item.size, "reason": item.reason}
            for item in patch.skipped[:MAX_LISTED]
        ],
    }


def _row(
    plan: CellPlan,
    settings: RunSettings,
    total: SessionSum,
    *,
    resolved: bool,
    kind: ErrorKind | None,
    fields: Mapping[str, Any],
    ok: bool,
) -> Row:
    usage = total.usage
    mapping: dict[str, Any] = {
        **_identity(plan, settings),
        "ok": ok,
        "resolved": resolved,
        "error_kind": None if kind is None else kind.value,
        "error_detail": None if total.error_detail is None else str(total.error_detail)[:DETAIL_LIMIT],
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
        "output_tokens": usage.output_tokens,
        "cost_usd": total.cost_usd,
        "duration_s": total.duration_s,
        "num_turns": total.num_turns,
        "session_ids": list(total.session_ids),
        "skill_invoked": total.skill_invoked,
        "transcript_missing": total.transcript_missing,
        "evidence_diagnostics": list(total.evidence_diagnostics),
        "tool_use_counts": dict(total.tool_use_counts),
        **fields,
    }
    return Row.from_mapping(mapping)


def _identity(plan: CellPlan, settings: RunSettings) -> dict[str, Any]:
    task = plan.task
    snapshot = task.snapshot
    runtime = settings.runtime_for(plan.arm.name)
    model = plan.arm.model or settings.model
    return {
        "task": task.spec.id,
        "class": task.spec.task_class,
        "run": plan.run,
        "arm": plan.arm.name,
        "kind": task.spec.kind.value,
        "sandbox_backend": settings.sandbox_backend,
        "network": "host" if plan.host_network else "model-only",
        "model": model,
        "benchmark_model": model,
        "effort": settings.effort,
        "task_ref": task.spec.ref,
        "task_base_sha": task.commit,
        "sanitized_task_sha": None if snapshot is None else snapshot.commit,
        "task_prompt_digest": sha256_text(task.spec.prompt),
        "task_limits_digest": task.spec.limits.digest(),
        "candidate_overlay_digest": plan.overlay_digest if plan.arm.is_candidate else None,
        "runtime_digest": settings.runtime_digest if runtime is None else runtime.runtime_digest,
        **({} if runtime is None else {"agent": runtime.agent, "agent_version": runtime.agent_version}),
        **_plugin_fields(plan.arm),
        **({"migrates": ",".join(plan.arm.migrates)} if plan.arm.migrates else {}),
        "recorded_at": settings.now().isoformat(),
        **task.oracle_digests,
        **task.asset_digests,
        "environment_digest": task.environment_digest,
    }


def _plugin_fields(arm: Arm) -> dict[str, Any]:
    """A plugin arm's identity (the reference's ``ce_plugin_*`` names); nothing for other arms."""
    if arm.plugin is None:
        return {}
    return {"ce_plugin_version": arm.plugin.version, "ce_plugin_manifest_digest": arm.plugin.manifest_digest}


def _failure_row(
    plan: CellPlan,
    settings: RunSettings,
    detail: str,
    cancel: CancelToken,
    *,
    measured: Mapping[str, Any] | None = None,
) -> Row:
    """The row of a cell the harness could not finish; ``measured`` keeps what its sessions measured."""
    kind = ErrorKind.CANCELLED if cancel.is_set() else ErrorKind.INFRA_ERROR
    mapping = {
        **_identity(plan, settings),
        "session_ids": [],
        "skill_invoked": None,
        **(measured or {}),
        "ok": False,
        "resolved": False,
        "error_kind": kind.value,
        "error_detail": detail[:DETAIL_LIMIT],
        "transcript_missing": False,
    }
    return Row.from_mapping(mapping)


def _cleanup_failure(row: Row | None, problem: str) -> Row:
    assert row is not None
    primary = row.error_kind.value if row.error_kind else "none"
    detail = f"primary={primary}: {row.extra.get('error_detail') or ''}; cleanup: {problem}"[:DETAIL_LIMIT]
    return attrs.evolve(
        row,
        ok=False,
        resolved=False,
        error_kind=ErrorKind.CLEANUP_FAILURE,
        extra={**row.extra, "error_detail": detail},
    )


def _pytest_configs(before: Mapping[str, str], after: Mapping[str, str], workspace: str) -> frozenset[str]:
    """Changed ``setup.cfg``/``pyproject.toml``/``tox.ini`` paths whose text now configures pytest."""
    found = set()
    for path, fingerprint in after.items():
        if path.rsplit("/", 1)[-1] not in CONFIG_FILES or before.get(path) == fingerprint:
            continue
        try:  # the agent's file: no symlink, no FIFO, bounded
            fd = os.open(os.path.join(workspace, path), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            try:
                data = os.read(fd, 1024 * 1024) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
            finally:
                os.close(fd)
        except OSError:
            continue
        text = data.decode("utf-8", "replace")
        if has_pytest_section(text):
            found.add(path)
    return frozenset(found)


def _oracle_outcome(ctx: CellContext, plan: CellPlan, verdict: OracleVerdict) -> dict[str, Any]:
    """The oracle's outcome class for the row; the expected ids that failed or were missing go to the
    harness-only ``oracle.json`` in the cell directory (for the task's author: never in a row, a
    transcript, the evolve digest or anything an agent reads)."""
    if verdict.outcome is None:
        return {}
    rel = plan.artifact(ORACLE_NAME)
    body = {
        "outcome": verdict.outcome.value,
        "detail": verdict.detail,
        "failing_ids": list(verdict.failing_ids),
    }
    _write_artifact(ctx, rel, (json.dumps(body, indent=2) + "\n").encode())
    return {"oracle_outcome": verdict.outcome.value, "oracle_outcome_artifact": rel}
