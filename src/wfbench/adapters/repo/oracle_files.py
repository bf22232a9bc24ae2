"""Hidden oracle files: captured into memory before any clone exists, staged only for the oracle run.

Lifecycle (reference: scheduler_tasks.md §3.4): :func:`capture_oracle` reads the declared files
from the corpus when the corpus is loaded (bounded, no symlinks, nothing outside the corpus);
the bytes stay in memory. :func:`stage_oracle` writes them to a fresh private directory (0500,
files 0400) only after the agent's last session has exited; the caller mounts it read-only for
the oracle command. :func:`erase_oracle` checks the staged bytes are unchanged and removes the
stage before the patch is captured.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence

from wfbench.adapters.sandbox.common import force_remove
from wfbench.domain.errors import InputError, SandboxError
from wfbench.domain.workspace.oracle import (
    OracleBundle,
    OracleFile,
    OracleFileSpec,
    OracleLimits,
    declaration_problems,
)


def _read_regular(path: str, limit: int) -> bytes:
    """Read a regular, non-symlink file of at most ``limit`` bytes; OSError/ValueError otherwise."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        before = os.fstat(fd)
        if not stat.S_ISREG(before.st_mode):
            raise ValueError("is not a regular file")
        if before.st_size > limit:
            raise ValueError(f"is {before.st_size} bytes, over the per-file limit of {limit}")
        data = os.read(fd, limit + 1)
        after = os.fstat(fd)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise ValueError(f"grew over the per-file limit of {limit} bytes")
    if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns) or len(
        data
    ) != after.st_size:
        raise ValueError("changed while it was read")
    return data


def _source_path(corpus: str, source: str) -> str:
    """The real path of ``source`` under ``corpus``; ValueError for a symlink anywhere on the way."""
    path = os.path.join(corpus, source)
    parts = source.split("/")
    for depth in range(1, len(parts) + 1):
        if os.path.islink(os.path.join(corpus, *parts[:depth])):
            prefix = "/".join(parts[:depth])
            raise ValueError("is a symlink" if depth == len(parts) else f"has a symlinked parent ({prefix})")
    if os.path.realpath(path) != os.path.join(corpus, source):
        raise ValueError("resolves outside the corpus")
    if not os.path.lexists(path):
        raise ValueError("does not exist")
    return path


def capture_oracle(
    corpus_dir: str,
    files: Sequence[OracleFileSpec],
    limits: OracleLimits | None = None,
    *,
    task_id: str = "",
    source: str = "",
) -> OracleBundle:
    """Read the declared oracle files into memory, with digests, sorted by target.

    ``source`` (the task file) and ``task_id`` name the culprit in the error.

    Raises:
        InputError: a declaration rule is broken, or a file is missing, a symlink, outside the
            corpus, over the per-file or total limit; the message names the path (field
            ``oracle.files``).
    """
    limits = limits or OracleLimits()

    def refuse(path: str, reason: str) -> InputError:
        what = f"{path}: {reason}" if path else reason
        return InputError(what, source=source, locator=task_id, field="oracle.files")

    for path, reason in declaration_problems(files, limits):
        raise refuse(path, reason)
    corpus = os.path.realpath(corpus_dir)
    if not os.path.isdir(corpus):
        raise refuse(corpus_dir, "corpus directory does not exist")
    captured: list[OracleFile] = []
    total = 0
    for spec in files:
        try:
            data = _read_regular(_source_path(corpus, spec.source), limits.max_file_bytes)
        except FileNotFoundError:
            raise refuse(spec.source, "does not exist") from None
        except OSError as exc:
            reason = "is a symlink" if exc.errno == 40 else (exc.strerror or str(exc))  # ELOOP
            raise refuse(spec.source, reason) from None
        except ValueError as exc:
            raise refuse(spec.source, str(exc)) from None
        total += len(data)
        if total > limits.max_total_bytes:
            raise refuse(
                spec.source, f"oracle files exceed the total limit of {limits.max_total_bytes} bytes"
            )
        captured.append(OracleFile.of(spec.target, data))
    return OracleBundle(tuple(sorted(captured, key=lambda f: f.target)))


def stage_oracle(bundle: OracleBundle, dest: str) -> str:
    """Write the bundle under a new directory ``dest`` (files 0400, directories 0500); return ``dest``.

    Call only after the agent's last session has exited; mount ``dest`` read-only.

    Raises:
        SandboxError: ``dest`` exists or cannot be written (a partial stage is removed).
    """
    try:
        os.mkdir(dest, 0o700)
    except OSError as exc:
        raise SandboxError(f"cannot create the oracle stage {dest}: {exc}") from exc
    try:
        for item in bundle.files:
            path = os.path.join(dest, item.target)
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o400)
            with os.fdopen(fd, "wb") as handle:
                handle.write(item.data)
                handle.flush()
                os.fsync(handle.fileno())
        for dirpath, _dirs, _files in os.walk(dest, topdown=False):
            os.chmod(dirpath, 0o500)
    except OSError as exc:
        force_remove(dest)
        raise SandboxError(f"cannot stage the oracle at {dest}: {exc}") from exc
    return dest


def erase_oracle(bundle: OracleBundle, stage: str) -> bool:
    """Remove the stage; True when its files were still exactly the bundle's bytes.

    Raises:
        SandboxError: the stage could not be removed (the row becomes ``cleanup-failure``).
    """
    intact = True
    for item in bundle.files:
        try:
            intact = intact and _read_regular(os.path.join(stage, item.target), item.size) == item.data
        except (OSError, ValueError):
            intact = False
    failure = force_remove(stage)
    if failure:
        raise SandboxError(f"cannot erase the oracle stage: {failure}")
    return intact
