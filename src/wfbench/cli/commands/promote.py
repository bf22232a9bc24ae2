"""``wfbench promote apply`` and ``wfbench promote recover``: put a promoted skill into a repository.

``apply`` refuses anything but complete, current and exact ``promote`` evidence — every reason
on its own line, exit 2, nothing written — then writes the candidate overlay to the canonical
skill location and every mirror in one crash-safe compare-and-swap transaction, optionally
committed on a new branch. ``recover`` finishes a transaction a crash interrupted (``apply``
does that first too).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from wfbench.cli.exit_codes import OK, USAGE, exit_codes_help

if TYPE_CHECKING:
    from wfbench.app.promotion.apply import ApplyOutcome, ApplyRequest

Policy = Literal["reference", "statistical"]

APPLY_EPILOG = (
    "\b\nExamples:\n"
    "  wfbench promote apply results/X/promotion.json --corpus corpus.yaml --target .\n"
    "  wfbench promote apply promotion.json --corpus corpus.yaml --target . --mirror plugin/skills \\\n"
    "      --branch skills/promote-2026-03     # also commit the files on a new branch\n"
    "  wfbench promote apply promotion.json --corpus corpus.yaml --target . --dry-run\n"
    "\n\b\nWhat is checked (each refusal is one line; exit 2; nothing written):\n"
    "  schema 6, a complete sweep, every decision promote and recomputed identically from its own\n"
    "  aggregates; the task bindings, model, proposer, effort, policy and required arms equal what\n"
    "  the corpus gives now; the overlay's digest; target_base_digests equal to the target's\n"
    "  committed bytes at every destination; generated at most 5 minutes in the future; not expired.\n"
    "\n"
    + exit_codes_help(
        (
            (OK, "applied (or, with --dry-run, what would be written was shown)"),
            (USAGE, "refused: the evidence, corpus or target does not qualify (nothing written)"),
        )
    )
)

RECOVER_EPILOG = (
    "\b\nExamples:\n"
    "  wfbench promote recover --target .     # finish (or roll back) an apply a crash cut short\n"
    "\n"
    + exit_codes_help(
        (
            (OK, "nothing to recover, or the interrupted apply was finished"),
            (USAGE, "the journal or the target cannot be recovered (one line says why)"),
        )
    )
)

_Target = Annotated[
    Path,
    typer.Option(
        "--target", metavar="REPO", help="The repository whose skills are replaced (its top level)."
    ),
]


_Evidence = Annotated[Path, typer.Argument(metavar="PROMOTION_JSON", help="The sweep's promotion.json.")]
_Corpus = Annotated[
    Path, typer.Option("--corpus", metavar="CORPUS", help="The corpus the evidence was measured on.")
]
_Mirror = Annotated[
    list[str] | None,
    typer.Option(
        "--mirror",
        metavar="PATH",
        help="A directory of the target shipping a copy of the skills (<PATH>/<skill>/…);"
        " repeatable. Default: the corpus's skill_mirrors.",
        show_default=False,
    ),
]
_Overlay = Annotated[
    Path | None,
    typer.Option(
        "--overlay",
        metavar="DIR",
        help="The candidate overlay (default: the evidence's candidate_overlay).",
        show_default=False,
    ),
]
_Model = Annotated[
    str | None,
    typer.Option(
        "--model",
        metavar="MODEL",
        help="The pinned benchmark model (default: the corpus's).",
        show_default=False,
    ),
]
_ProposerModel = Annotated[
    str | None,
    typer.Option(
        "--proposer-model",
        metavar="MODEL",
        help="The model that proposed the overlay (wfbench evolve); omit for a manual overlay.",
        show_default=False,
    ),
]
_Effort = Annotated[
    str | None,
    typer.Option("--effort", metavar="EFFORT", help="The sweep's reasoning effort.", show_default=False),
]
_IncludeExpensive = Annotated[
    bool, typer.Option("--include-expensive", help="The sweep also ran tasks marked expensive.")
]
_Tasks = Annotated[
    list[str] | None,
    typer.Option(
        "--tasks",
        metavar="ID[,ID...]",
        help="The tasks the sweep selected (ids or globs, as given to run; default: all).",
        show_default=False,
    ),
]
_DecisionPolicy = Annotated[
    Policy | None,
    typer.Option(
        "--policy", help="The rule that decided (default: the corpus's, else reference).", show_default=False
    ),
]
_Branch = Annotated[
    str | None,
    typer.Option(
        "--branch",
        metavar="NAME",
        help="Also commit the files on this new branch (checked out; the evidence digest in the message).",
        show_default=False,
    ),
]
_Commit = Annotated[bool, typer.Option("--commit", help="Also commit the files on the current branch.")]
_DryRun = Annotated[bool, typer.Option("--dry-run", help="Validate and list the files; write nothing.")]
_Sandbox = Annotated[
    str,
    typer.Option(
        "--sandbox", help="The sandbox backend the sweep ran under (task environment digests depend on it)."
    ),
]


def register(app: typer.Typer) -> None:
    """Add the ``promote`` command group (``apply``, ``recover``) to ``app``."""
    promote = typer.Typer(
        name="promote",
        help="Apply promoted skill evidence to a repository, transactionally.",
        no_args_is_help=True,
    )
    promote.command(
        "apply", epilog=APPLY_EPILOG, short_help="Write a promoted overlay to a repository (all or nothing)."
    )(apply)
    promote.command("recover", epilog=RECOVER_EPILOG, short_help="Finish an apply a crash interrupted.")(
        recover
    )
    app.add_typer(promote)


def apply(  # noqa: PLR0917 - Typer maps each parameter to one option
    evidence: _Evidence,
    target: _Target,
    corpus: _Corpus,
    mirror: _Mirror = None,
    overlay: _Overlay = None,
    model: _Model = None,
    proposer_model: _ProposerModel = None,
    effort: _Effort = None,
    include_expensive: _IncludeExpensive = False,
    tasks: _Tasks = None,
    decision_policy: _DecisionPolicy = None,
    branch: _Branch = None,
    commit: _Commit = False,
    dry_run: _DryRun = False,
    sandbox: _Sandbox = "bwrap",
) -> None:
    """Validate PROMOTION_JSON and write its overlay to REPO's skills and mirrors in one transaction."""
    import attrs

    from wfbench.app.promotion.apply import ApplyRequest
    from wfbench.domain.errors import InputError
    from wfbench.domain.promotion.policy import DEFAULT_POLICY
    from wfbench.domain.sweep.task_selection import parse_patterns

    if branch is not None and commit:
        raise InputError("give --branch NAME or --commit, not both", field="--branch")
    policy = (
        None if decision_policy is None else attrs.evolve(DEFAULT_POLICY, decision_policy=decision_policy)
    )
    request = ApplyRequest(
        evidence_path=str(evidence),
        corpus_path=str(corpus),
        mirrors=None if mirror is None else tuple(mirror),
        overlay_dir=None if overlay is None else str(overlay),
        model=model,
        proposer_model=proposer_model,
        effort=effort,
        include_expensive=include_expensive,
        tasks=parse_patterns(tasks or []),
        policy=policy,
        branch=branch,
        commit=commit,
        dry_run=dry_run,
    )
    outcome, root = _apply(request, evidence, target, sandbox)
    _echo_outcome(outcome, root=root, branch=branch)
    raise typer.Exit(OK)


def _apply(request: ApplyRequest, evidence: Path, target: Path, sandbox: str) -> tuple[ApplyOutcome, str]:
    """Recover an interrupted transaction, then run the use case (its outcome, the target's root).

    A refusal prints each reason on its own line and exits 2.
    """
    from wfbench.adapters.repo.skill_target import GitSkillTarget
    from wfbench.adapters.repo.workspace import GitWorkspaces
    from wfbench.adapters.store.clock import SystemClock
    from wfbench.app.promotion.apply import ApplyRefused, apply_promotion

    skill_target = GitSkillTarget(str(target))
    recovered = skill_target.recover()
    if recovered is not None:
        typer.echo(_recovered_line(recovered), err=True)
    with tempfile.TemporaryDirectory(prefix="wfbench-apply-") as work_dir:
        try:
            outcome = apply_promotion(
                request,
                target=skill_target,
                workspaces=GitWorkspaces(),
                now=SystemClock().now(),
                work_dir=work_dir,
                environment_digest=environment_digester(sandbox),
            )
        except ApplyRefused as exc:
            for problem in exc.problems:
                print(f"wfbench: error: promote apply: {evidence}: {problem}", file=sys.stderr)
            raise typer.Exit(USAGE) from None
    return outcome, skill_target.root


def _echo_outcome(outcome: ApplyOutcome, *, root: str, branch: str | None) -> None:
    """Say what the apply did: already applied, a dry run's file list, or the files written."""
    if outcome.already_applied:
        typer.echo(f"already applied: every destination holds the overlay {outcome.overlay_digest[:12]}")
    elif outcome.dry_run:
        typer.echo(f"dry run: the evidence is valid; would write {len(outcome.writes)} file(s):")
        typer.echo("\n".join(f"  {path}" for path in outcome.writes))
        return
    else:
        typer.echo(f"applied overlay {outcome.overlay_digest[:12]} to {root}:")
        typer.echo("\n".join(f"  {entry.path}" for entry in outcome.entries))
        typer.echo(f"evidence sha256:{outcome.evidence_sha256}")
    if outcome.commit is not None:
        typer.echo(f"committed {outcome.commit[:12]}" + (f" on branch {branch}" if branch else ""))


def recover(target: _Target) -> None:
    """Finish (forward or back) an interrupted apply transaction in REPO; say what was done."""
    from wfbench.adapters.repo.skill_target import GitSkillTarget

    recovered = GitSkillTarget(str(target)).recover()
    typer.echo("no interrupted apply" if recovered is None else _recovered_line(recovered))


def _recovered_line(recovered: object) -> str:
    direction = getattr(recovered, "direction", "")
    paths = getattr(recovered, "paths", ())
    txid = getattr(recovered, "txid", "")
    state = "completed (new bytes)" if str(direction) == "forward" else "rolled back (old bytes)"
    return f"recovered an interrupted apply {txid[:12]}: {state} for {len(paths)} file(s)"


def environment_digester(sandbox_name: str) -> Any:
    """``task → the digest its declared environment is built under`` (computed, never built)."""
    import os

    from wfbench.cli.bootstrap import build_environments

    if sandbox_name == "bwrap":
        from wfbench.adapters.sandbox.bwrap import BwrapSandbox

        backend: Any = BwrapSandbox()
    elif sandbox_name in ("podman", "docker"):
        from wfbench.adapters.sandbox.podman import DockerSandbox, PodmanSandbox
        from wfbench.cli.bootstrap import DEFAULT_PODMAN_IMAGE, DOCKER_IMAGE_ENV, PODMAN_IMAGE_ENV

        oci, env_name = (
            (DockerSandbox, DOCKER_IMAGE_ENV)
            if sandbox_name == "docker"
            else (PodmanSandbox, PODMAN_IMAGE_ENV)
        )
        backend = oci(os.environ.get(env_name) or DEFAULT_PODMAN_IMAGE)
    else:
        from wfbench.adapters.sandbox.host import UnsafeHostSandbox

        backend = UnsafeHostSandbox()
    environments: Any = build_environments(backend, os.environ)

    def digest(task: Any) -> str | None:
        spec = task.spec.environment
        found: str | None = environments.digest(spec, snapshot=task.snapshot, task_env=dict(task.spec.env))
        return found

    return digest
