"""Bind a corpus's tasks to immutable inputs before any session: commits, oracles, snapshots.

Binding is split in two so that a bad corpus fails before anything is built:

* :func:`bind_tasks` resolves each task's ``ref`` to a commit and captures its hidden oracle
  files into memory with digests (an :class:`InputError` names the file, the task and the
  field). It runs before any clone exists.
* :func:`prepare_snapshots` builds one sanitized snapshot per (repository, commit). A task whose
  snapshot cannot be built keeps the failure as a value: its cells become ``infra-error`` rows.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence

import attrs

from wfbench.app.corpus.corpus import Corpus, Dependency, OracleSpec, TaskSpec
from wfbench.domain.environment.spec import BuiltEnvironment
from wfbench.domain.errors import InputError, WfbenchError
from wfbench.domain.ports import Workspaces
from wfbench.domain.workspace.oracle import OracleBundle
from wfbench.domain.workspace.rules import Snapshot


def sha256_text(text: str) -> str:
    """Hex sha256 of UTF-8 text (prompt, setup and verify digests)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_json(value: object) -> str:
    """Hex sha256 of canonical JSON (sorted keys, no spaces)."""
    return sha256_text(json.dumps(value, sort_keys=True, separators=(",", ":")))


#: The provenance digests of :attr:`BoundTask.asset_digests`, stamped on every row.
ASSET_DIGEST_FIELDS = (
    "task_asset_snapshot_digest",
    "task_asset_manifest_digest",
    "sandbox_dependency_manifest_digest",
    "sandbox_dependency_content_digest",
)


@attrs.frozen
class BoundTask:
    """A task with its commit and oracle captured; ``snapshot`` is set once prepared.

    ``failure`` says why preparation failed (the task's cells become ``infra-error`` rows).
    """

    spec: TaskSpec
    commit: str
    oracle: OracleBundle
    snapshot: Snapshot | None = None
    failure: str | None = None
    #: The task's built environment (None: the task declares none, or it is not built yet).
    environment: BuiltEnvironment | None = None
    #: Where the hidden oracle comes from when ``oracle`` does not hold it: a cluster node fetches
    #: it from the driver only when the cell needs it, after its agent sessions (docs/distributed.md).
    oracle_loader: Callable[[], OracleBundle] | None = attrs.field(default=None, eq=False, repr=False)

    def hidden_oracle(self) -> OracleBundle:
        """The hidden oracle: ``oracle``, or what ``oracle_loader`` fetches (only after the sessions)."""
        return self.oracle if self.oracle_loader is None else self.oracle_loader()

    @property
    def environment_digest(self) -> str | None:
        """The digest of the task's built environment (``None`` without one): on every row."""
        return None if self.environment is None else self.environment.digest

    @property
    def oracle_digests(self) -> dict[str, str]:
        """The three oracle digests every row of the task carries."""
        return {
            "oracle_digest": self.hidden_oracle().digest(_oracle_identity(self.spec.oracle)),
            "oracle_command_digest": sha256_text(self.spec.oracle.command),
            "oracle_manifest_digest": self.hidden_oracle().manifest_digest,
        }

    @property
    def asset_digests(self) -> dict[str, str | None]:
        """Digests of what a cell is measured on besides the prompt and oracle (``None`` unprepared).

        ``task_asset_manifest_digest`` covers the snapshot's tree and the setup and verify
        commands; the dependency digests cover the declared read-only paths (their content is
        part of the snapshot's tree, since dependencies are paths of the repository).
        """
        if self.snapshot is None:
            return dict.fromkeys(ASSET_DIGEST_FIELDS)
        spec = self.spec
        declared = [{"source": d.source, "target": d.target} for d in spec.dependencies]
        manifest = {"schema_version": 1, "dependencies": declared}
        return {
            "task_asset_snapshot_digest": self.snapshot.commit,
            "task_asset_manifest_digest": sha256_json(self._asset_manifest()),
            "sandbox_dependency_manifest_digest": sha256_json(manifest),
            "sandbox_dependency_content_digest": sha256_json({**manifest, "tree": self.snapshot.tree}),
        }

    def _asset_manifest(self) -> dict[str, object]:
        """What the asset digest covers: the tree, setup, verify and — when declared — the environment.

        A task with neither an environment nor variables keeps the original manifest (and digest),
        so rows of earlier sweeps stay comparable.
        """
        assert self.snapshot is not None
        spec = self.spec
        manifest: dict[str, object] = {
            "schema_version": 1,
            "tree": self.snapshot.tree,
            "setup": spec.setup,
            "verify": spec.verify,
        }
        if spec.environment is not None or spec.env:
            manifest["environment_digest"] = self.environment_digest
            manifest["env"] = dict(spec.env)
        return manifest

    def binding(self) -> dict[str, object]:
        """The task binding recorded in ``promotion.json`` (``selected_tasks``)."""
        spec = self.spec
        return {
            "id": spec.id,
            "class": spec.task_class,
            "kind": spec.kind.value,
            "ref": spec.ref,
            "sha": self.commit,
            "prompt_digest": sha256_text(spec.prompt),
            "setup_digest": None if spec.setup is None else sha256_text(spec.setup),
            "verify_digest": sha256_text(spec.verify),
            "environment_digest": self.environment_digest,
            "limits_digest": spec.limits.digest(),
            **self.oracle_digests,
            "sandbox_dependency_content_digest": self.asset_digests["sandbox_dependency_content_digest"],
            "sandbox_dependency_manifest_digest": self.asset_digests["sandbox_dependency_manifest_digest"],
            "oracle_files": [
                {"target": f.target, "sha256": f.sha256, "size": f.size} for f in self.hidden_oracle().files
            ],
        }


def bind_tasks(corpus: Corpus, tasks: Sequence[TaskSpec], *, workspaces: Workspaces) -> tuple[BoundTask, ...]:
    """Resolve every task's ref and capture its oracle, before any clone.

    Raises:
        InputError: naming the corpus file, the task id and the field.
    """
    bound: list[BoundTask] = []
    for spec in tasks:
        try:
            _refuse_sources_inside(corpus.root, spec)
            commit = workspaces.resolve_commit(spec.repo, spec.ref)
            oracle = workspaces.capture_oracle(
                corpus.root, spec.oracle.files, task_id=spec.id, source=corpus.path
            )
        except InputError as exc:
            raise exc.located(source=corpus.path, locator=spec.id) from None
        bound.append(BoundTask(spec=spec, commit=commit, oracle=oracle))
    return tuple(bound)


def _refuse_sources_inside(root: str, spec: TaskSpec) -> None:
    """An oracle or label file inside the task's repository would be in the agent's snapshot.

    Raises:
        InputError: naming the field (``oracle.files[i].source`` or ``labels``) and the repository.
    """
    repo = os.path.realpath(spec.repo)
    for number, item in enumerate(spec.oracle.files):
        path = os.path.realpath(os.path.join(root, item.source))
        if path == repo or path.startswith(repo + os.sep):
            labels = item.target == "review-labels.json" and spec.kind.value == "review"
            field = "labels" if labels else f"oracle.files[{number}].source"
            raise InputError(
                f"{item.source} is inside the task's repository {spec.repo}: the agent would see it"
                " (keep hidden files in the corpus, outside the repository)",
                field=field,
            )


def dependency_source(snapshot: Snapshot, dependency: Dependency) -> str:
    """The resolved host path of ``dependency``'s source in ``snapshot`` (what is mounted read-only).

    A symlink is followed only when it resolves inside the snapshot, never into ``.git``.

    Raises:
        InputError: the source is missing at the bound commit or resolves outside the repository.
    """
    root = os.path.realpath(snapshot.path)
    resolved = os.path.realpath(os.path.join(root, dependency.source))
    inside = os.path.relpath(resolved, root)
    if inside == "." or inside.startswith("..") or inside.split(os.sep)[0] == ".git":
        raise InputError(f"{dependency.source} resolves outside the repository", field="dependencies")
    if not os.path.exists(resolved):
        reason = f"{dependency.source} does not exist at {snapshot.source_commit[:12]}"
        raise InputError(reason, field="dependencies")
    return resolved


def prepare_snapshots(
    tasks: Sequence[BoundTask], *, workspaces: Workspaces, parent: str
) -> tuple[BoundTask, ...]:
    """One snapshot per (repository, commit) under ``parent``; failures become task values."""
    built: dict[tuple[str, str], Snapshot | str] = {}
    prepared: list[BoundTask] = []
    for task in tasks:
        key = (task.spec.repo, task.commit)
        if key not in built:
            dest = os.path.join(parent, f"snapshot-{len(built)}-{task.commit[:12]}")
            try:
                built[key] = workspaces.build_snapshot(
                    task.spec.repo, task.spec.ref, dest, commit=task.commit
                )
            except (WfbenchError, OSError) as exc:
                built[key] = f"task preparation failed: {type(exc).__name__}: {exc}"
        result = built[key]
        if not isinstance(result, str):
            try:
                for dependency in task.spec.dependencies:
                    dependency_source(result, dependency)
            except InputError as exc:
                result = f"task preparation failed: {exc.message}"
        if isinstance(result, str):
            prepared.append(attrs.evolve(task, failure=result))
        else:
            prepared.append(attrs.evolve(task, snapshot=result))
    return tuple(prepared)


def _oracle_identity(spec: OracleSpec) -> str:
    """The oracle's command, plus its report rules when it has any (old digests stay as they were)."""
    if spec.report is None:
        return str(spec.command)
    return "\x00".join([spec.command, f"report={spec.report}", *(f"expect={e}" for e in spec.expect)])
