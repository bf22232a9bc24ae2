"""``wfbench tasks export harbor CORPUS --out DIR``: a corpus's implementation tasks as Harbor tasks.

Per task, ``DIR/<id>/``:

* ``instruction.md`` = the prompt; ``task.toml`` = Harbor's schema (``version``, ``[metadata]``
  category = the class, ``[verifier]``/``[agent]`` timeouts, ``[environment]`` build timeout and
  ``network_mode`` — ``public`` only for a ``network: host`` task);
* ``environment/Dockerfile``: ``FROM`` the base image, the task's variables as ``ENV``, the
  snapshot of ``ref`` (no history) copied to ``/app`` (the image's ``WORKDIR``), then
  ``wfbench-build.sh``: the environment's ``install`` commands and ``setup`` (run once at build
  time, as a cell runs it first);
* ``tests/``: the hidden oracle's files, and ``test.sh`` that runs the oracle's command in ``/app``
  with ``$WFBENCH_ORACLE_ROOT=/tests`` (a JUnit report, when the oracle names one, goes to
  ``/logs/verifier``), then writes ``reward.txt`` (1 when it exited 0, else 0);
* ``solution/solve.sh`` (+ ``gold.patch``) when the task has a gold patch or script.

Review tasks (graded by labels, not a command) and tasks whose oracle is already a reward oracle
are reported and skipped.
"""

from __future__ import annotations

import os
import shlex
import shutil
import tempfile
from collections.abc import Sequence

import attrs

from wfbench.app.corpus.corpus import Corpus, TaskSpec
from wfbench.domain.ports import Workspaces

__all__ = ["ExportReport", "build_script", "dockerfile", "export_corpus", "task_toml", "test_script"]

WORKDIR = "/app"


@attrs.frozen
class ExportReport:
    """The Harbor tasks written and what was skipped or approximated."""

    tasks: tuple[str, ...]
    notes: tuple[str, ...]


def _toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def task_toml(spec: TaskSpec, *, verify_timeout_s: float = 600.0, agent_timeout_s: float = 5400.0) -> str:
    """Harbor's ``task.toml`` for ``spec`` (only keys of Harbor's published schema).

    The task's own ``limits`` win over the given timeouts; its ``cpus``/``memory``/``storage`` become
    ``[environment] cpus``/``memory_mb``/``storage_mb`` (MiB, rounded up).
    """
    limits = spec.limits
    build = spec.environment.timeout_s if spec.environment is not None else 600.0
    network = "public" if spec.network == "host" else "no-network"
    resources = "".join(
        f"{key} = {value}\n"
        for key, value in (
            ("cpus", None if limits.cpus is None else f"{limits.cpus:g}"),
            ("memory_mb", _mib(limits.memory_bytes)),
            ("storage_mb", _mib(limits.storage_bytes)),
        )
        if value is not None
    )
    return (
        'version = "1.0"\n\n'
        "[metadata]\n"
        f"category = {_toml_string(spec.task_class)}\n"
        'tags = ["wfbench"]\n\n'
        "[verifier]\n"
        f"timeout_sec = {float(limits.verifier_timeout_s or verify_timeout_s)}\n\n"
        "[agent]\n"
        f"timeout_sec = {float(limits.agent_timeout_s or agent_timeout_s)}\n\n"
        "[environment]\n"
        f"build_timeout_sec = {float(build)}\n"
        f'network_mode = "{network}"\n'
        f'workdir = "{WORKDIR}"\n'
        f"{resources}"
    )


def _mib(size: int | None) -> int | None:
    return None if size is None else -(-size // 1024**2)


#: The environment's install commands, then ``setup``, as one script beside the Dockerfile (a
#: Dockerfile ``RUN`` line cannot hold a newline, and a command may).
BUILD_SCRIPT = "wfbench-build.sh"


def build_script(spec: TaskSpec) -> str | None:
    """``set -eu``, each install command, then ``setup``; None when there is nothing to run."""
    commands = [
        *(spec.environment.install if spec.environment is not None else ()),
        *([spec.setup] if spec.setup else []),
    ]
    if not commands:
        return None
    return "set -eu\n" + "".join(f"{command.rstrip()}\n" for command in commands)


def dockerfile(spec: TaskSpec, base_image: str) -> str:
    """``environment/Dockerfile``: base image, variables, the snapshot at /app, the build script."""
    lines = [f"FROM {base_image}", f"WORKDIR {WORKDIR}"]
    lines += [f"ENV {name}={shlex.quote(value)}" for name, value in spec.env]
    lines.append(f"COPY workspace/ {WORKDIR}/")
    if build_script(spec) is not None:
        lines.append(f"COPY {BUILD_SCRIPT} /tmp/{BUILD_SCRIPT}")
        lines.append(f"RUN /bin/sh /tmp/{BUILD_SCRIPT} && rm /tmp/{BUILD_SCRIPT}")
    return "\n".join(lines) + "\n"


def test_script(spec: TaskSpec) -> str:
    """Harbor's ``tests/test.sh``: the oracle's command in /app, its verdict as ``reward.txt``."""
    report = ""
    if spec.oracle.report == "junit":
        report = "export WFBENCH_ORACLE_REPORT=/logs/verifier/junit.xml\n"
    return (
        "#!/bin/bash\n"
        "# Written by `wfbench tasks export harbor`: the task's hidden oracle, graded by exit status.\n"
        "mkdir -p /logs/verifier\n"
        "export WFBENCH_ORACLE_ROOT=/tests\n"
        f"{report}"
        f"cd {WORKDIR}\n"
        f"/bin/sh -c {shlex.quote(spec.oracle.command)}\n"
        "status=$?\n"
        'if [ "$status" -eq 0 ]; then reward=1; else reward=0; fi\n'
        'echo "$reward" > /logs/verifier/reward.txt\n'
        "exit 0\n"
    )


def _solution(spec: TaskSpec, dest: str) -> bool:
    os.makedirs(dest, exist_ok=True)
    if spec.gold_patch is not None:
        shutil.copyfile(spec.gold_patch, os.path.join(dest, "gold.patch"))
        body = (
            f"cd {WORKDIR}\ngit apply /solution/gold.patch 2>/dev/null || patch -p1 < /solution/gold.patch\n"
        )
    elif spec.gold_script is not None:
        shutil.copyfile(spec.gold_script, os.path.join(dest, "gold.sh"))
        body = f"cd {WORKDIR}\nbash /solution/gold.sh\n"
    else:
        os.rmdir(dest)
        return False
    _write(os.path.join(dest, "solve.sh"), "#!/bin/bash\nset -euo pipefail\n" + body, executable=True)
    return True


def _write(path: str, text: str, *, executable: bool = False) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    if executable:
        os.chmod(path, 0o755)  # noqa: S103 - Harbor runs test.sh and solve.sh as programs


def _workspace(spec: TaskSpec, dest: str, workspaces: Workspaces) -> None:
    """The snapshot of ``spec.ref`` (files only, no history) at ``dest``."""
    with tempfile.TemporaryDirectory(prefix="wfbench-harbor-export-") as scratch:
        snapshot = workspaces.build_snapshot(spec.repo, spec.ref, os.path.join(scratch, "snapshot"))
        shutil.copytree(snapshot.path, dest, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        for root, dirs, files in os.walk(dest):  # a snapshot is read-only; the export is the user's
            for name in [*dirs, *files]:
                path = os.path.join(root, name)
                if not os.path.islink(path):
                    os.chmod(path, 0o755 if os.path.isdir(path) else 0o644)


def _skip_reason(spec: TaskSpec) -> str | None:
    if spec.kind.value != "implementation":
        return "a review task is graded by labels, which Harbor has no place for"
    if spec.oracle.report == "reward":
        return "already a reward oracle (imported from Harbor: its own directory is the Harbor task)"
    if spec.environment is not None and spec.environment.image is not None:
        return "an image environment: its image is the Harbor task's own"
    return None


def export_corpus(corpus: Corpus, *, out_dir: str, base_image: str, workspaces: Workspaces) -> ExportReport:
    """Write every exportable task of ``corpus`` under ``out_dir`` (one Harbor task directory each)."""
    written: list[str] = []
    notes: list[str] = []
    for spec in corpus.tasks:
        reason = _skip_reason(spec)
        if reason:
            notes.append(f"{spec.id}: skipped: {reason}")
            continue
        root = os.path.join(out_dir, spec.id)
        _write(os.path.join(root, "instruction.md"), spec.prompt.rstrip("\n") + "\n")
        _write(os.path.join(root, "task.toml"), task_toml(spec))
        _write(os.path.join(root, "environment", "Dockerfile"), dockerfile(spec, base_image))
        script = build_script(spec)
        if script is not None:
            _write(os.path.join(root, "environment", BUILD_SCRIPT), script)
        _workspace(spec, os.path.join(root, "environment", "workspace"), workspaces)
        for source, target in corpus_oracle_files(spec, corpus.root):
            path = os.path.join(root, "tests", *target.split("/"))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            shutil.copyfile(source, path)
        _write(os.path.join(root, "tests", "test.sh"), test_script(spec), executable=True)
        if not _solution(spec, os.path.join(root, "solution")):
            notes.append(f"{spec.id}: no gold patch or script: no solution/solve.sh")
        if spec.environment is not None and spec.environment.python not in (None, "harness"):
            notes.append(
                f"{spec.id}: environment.python {spec.environment.python}: choose --base-image to match"
            )
        if spec.verify.strip() not in ("", "true"):
            notes.append(
                f"{spec.id}: verify (the model-visible tests) has no Harbor counterpart; not exported"
            )
        written.append(spec.id)
    return ExportReport(tuple(written), tuple(notes))


def corpus_oracle_files(spec: TaskSpec, root: str) -> Sequence[tuple[str, str]]:
    """(absolute source, target under ``tests/``) of each hidden oracle file."""
    return [(os.path.join(root, f.source), f.target) for f in spec.oracle.files]
