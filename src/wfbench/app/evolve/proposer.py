"""The proposer: an agent session that writes the next candidate overlay (``wfbench evolve``).

The proposer runs through the same :class:`~wfbench.domain.ports.ModelCLI` port as every cell,
inside the sandbox, on a fresh workspace that holds only the incumbent skills
(``.claude/skills/<skill>/…``, the committed ones with the promoted files on top) and
``EVIDENCE.md``, the redacted digest of the last sweep (:mod:`wfbench.domain.evolution.digest`:
never hidden oracle bytes or labels). It may read and edit files, nothing else (no shell, no
network: like every cell's session it reaches the model only through its own metered lease of
the key proxy, a bridge on the sandbox's own loopback, and its cost is the wire's). What it
changed under the skills it may evolve becomes the candidate overlay; anything else it wrote is
ignored (and said), a deleted skill file is refused (an overlay cannot delete), and the overlay
is then validated like any ``--candidate-overlay``.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Mapping, Sequence

import attrs

from wfbench.app.cell.context import CellServices, RunSettings
from wfbench.app.cell.wire import CellWire
from wfbench.domain.ports import CancelToken
from wfbench.domain.session.records import SessionRecord, SessionRequest
from wfbench.domain.workspace.sandbox import SandboxPolicy

__all__ = ["EVIDENCE_FILE", "PROPOSER_TOOLS", "Proposal", "proposer_prompt", "run_proposer"]

EVIDENCE_FILE = "EVIDENCE.md"
#: What the proposer may use: read and edit files (no Bash, no Skill, no network tools).
PROPOSER_TOOLS = ("Read", "Grep", "Glob", "Edit", "Write")
SKILLS = ".claude/skills"
MAX_FILE_BYTES = 4 * 1024 * 1024


@attrs.frozen
class Proposal:
    """What the proposer session did: the changed skill files (``{rel: bytes}``), notes, the record.

    ``cost_usd`` is what the session cost: metered at the wire (its lease's usage at the pinned
    model's prices) when the endpoint meters, else the agent's own report; ``None`` is unknown.
    """

    record: SessionRecord
    files: Mapping[str, bytes]
    ignored: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    cost_usd: float | None = None
    #: ``wire`` (metered by the key proxy) or ``agent`` (the session's own report).
    cost_source: str = "agent"


def proposer_prompt(generation: int, skills: Sequence[str]) -> str:
    """The proposer's instructions (the generation number lets a script tell generations apart)."""
    names = ", ".join(skills)
    return (
        f"You are the skill proposer of wfbench evolve, generation {generation}.\n\n"
        f"The skills under {SKILLS}/ ({names}) are the incumbent: the workflow a headless coding agent"
        f" follows on the benchmark's tasks. {EVIDENCE_FILE} in the working directory summarises how the"
        " incumbent (and the last candidate) did: per task, how often each arm resolved it, what failed"
        " and what it cost. Read it, then improve the skills so the agent resolves more tasks, or the same"
        " tasks at a lower cost.\n\n"
        f"Edit only Markdown files under {SKILLS}/<skill>/ for these skills: {names}; keep each skill's"
        " front matter (name, description). Write every change in place. Do not delete files and do not"
        " create anything outside those directories."
    )


def _files(root: str) -> dict[str, bytes]:
    """Every regular file under ``root`` (relative POSIX path → bytes); symlinks and others are skipped."""
    out: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not os.path.islink(os.path.join(dirpath, d)))
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            if not stat.S_ISREG(os.lstat(path).st_mode):
                out[os.path.relpath(path, root).replace(os.sep, "/")] = b"\0special"
                continue
            with open(path, "rb") as handle:
                out[os.path.relpath(path, root).replace(os.sep, "/")] = handle.read(MAX_FILE_BYTES + 1)
    return out


def prepare_workspace(workspace: str, incumbent: Mapping[str, bytes], evidence: str) -> None:
    """A fresh directory holding the incumbent skill files and ``EVIDENCE.md``."""
    os.makedirs(workspace, mode=0o700)
    for rel, data in incumbent.items():
        path = os.path.join(workspace, *rel.split("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(data)
    with open(os.path.join(workspace, EVIDENCE_FILE), "w", encoding="utf-8") as handle:
        handle.write(evidence)


def run_proposer(
    *,
    workspace: str,
    incumbent: Mapping[str, bytes],
    evidence: str,
    prompt: str,
    model: str,
    services: CellServices,
    settings: RunSettings,
    cancel: CancelToken,
    label: str = "proposer",
) -> Proposal:
    """Run the proposer session on a fresh ``workspace``; the files it changed under the skills.

    Raises:
        SandboxError: the sandbox could not start the agent (a harness failure).
    """
    prepare_workspace(workspace, incumbent, evidence)
    policy = SandboxPolicy(
        workspace=workspace,
        workspace_writable=True,
        network=False,
        timeout_s=settings.session_timeout_s,
        env=dict(settings.command_env),
    )
    env, secrets = dict(settings.agent_env), dict(settings.secrets)
    wire = None
    if services.gateway is not None:
        lease = services.gateway.lease(label, model=model)
        wire = CellWire(lease, lease.prices)
    try:
        if wire is not None:  # the model only through the proposer's own metered lease
            policy, env, secrets = wire.policy(policy), wire.env(env), wire.secrets(secrets)
        request = SessionRequest(
            prompt=prompt,
            model=model,
            effort=settings.effort,
            allowed_tools=PROPOSER_TOOLS,
            disallowed_tools=("Bash", "Skill", "WebFetch", "WebSearch"),
            timeout_s=settings.session_timeout_s,
            env=env,
            secrets=secrets,
            label=label,
            withheld=settings.withheld,
        )
        metered = None if wire is None else wire.before()
        record = services.agent.run_session(request, sandbox=services.sandbox, policy=policy, cancel=cancel)
        cost, source = record.cost_usd, "agent"
        if wire is not None and metered is not None:
            record = wire.check(record, metered)
            usage = wire.sessions[-1].usage  # what check() metered over the session
            cost, source = (None if wire.prices is None else wire.prices.cost_usd(usage)), "wire"
    finally:
        if wire is not None:
            wire.lease.close()
    after = _files(workspace)
    changed = {
        rel: data
        for rel, data in after.items()
        if rel.startswith(SKILLS + "/") and incumbent.get(rel) != data
    }
    ignored = tuple(sorted(rel for rel in after if not rel.startswith(SKILLS + "/") and rel != EVIDENCE_FILE))
    deleted = tuple(sorted(rel for rel in incumbent if rel not in after))
    return Proposal(
        record=record, files=changed, ignored=ignored, deleted=deleted, cost_usd=cost, cost_source=source
    )


def write_overlay(root: str, files: Mapping[str, bytes]) -> str:
    """Write ``files`` as an overlay directory at ``root`` (replaced if present); its path."""
    if os.path.lexists(root):
        shutil.rmtree(root)
    os.makedirs(root, mode=0o755)
    for rel, data in sorted(files.items()):
        path = os.path.join(root, *rel.split("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(data)
    return root
