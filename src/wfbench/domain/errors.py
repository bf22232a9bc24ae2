"""Harness errors: failures of wfbench's inputs or infrastructure, never of the agent.

Failures of the *agent* are values (a row with an ``error_kind``). Failures of the *harness*
are exceptions defined here and raised at the edge; the CLI maps them to exit codes.
"""

from __future__ import annotations

import errno

#: The errno values of storage that refuses writes: a full disk, a quota, a read-only mount, an I/O error.
STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO})


class WfbenchError(Exception):
    """Base class for every error wfbench raises on purpose."""

    exit_code = 1


class InputError(WfbenchError):
    """Bad input: a file, id or line, and a field, named in one message. Exit code 2.

    ``source`` is the file (or ``<stdin>``); ``locator`` the id or ``line N``; ``field`` the
    offending field; ``reason`` what is wrong with it. Any of the first three may be empty when
    it does not apply (a file that is not JSON at all has no field).
    """

    exit_code = 2

    def __init__(self, reason: str, *, source: str = "", locator: str = "", field: str = "") -> None:
        self.reason = reason
        self.source = source
        self.locator = locator
        self.field = field
        super().__init__(self.message)

    @property
    def message(self) -> str:
        where = ": ".join(part for part in (self.source, self.locator) if part)
        what = f"{self.field}: {self.reason}" if self.field else self.reason
        return f"{where}: {what}" if where else what

    def located(self, *, source: str = "", locator: str = "") -> InputError:
        """Return a copy with the file and/or id filled in (keeps what is already set)."""
        return InputError(
            self.reason,
            source=self.source or source,
            locator=self.locator or locator,
            field=self.field,
        )


class ReviewArtifactError(InputError):
    """The agent's review artifact is unusable; ``reason`` is the one cause.

    The causes are listed in ``docs/review-scoring.md``, "The artifact".
    """


class SandboxUnavailable(WfbenchError):
    """The sandbox backend cannot start (preflight failed); the sweep never falls back to the host."""


class SandboxError(WfbenchError):
    """A sandboxed command could not be run for a reason of the harness, not of the command."""


class EvidenceCaptureError(SandboxError):
    """The workspace could not be captured (churn, patch) because of what the agent left in it.

    Unlike other sandbox errors this is the arm's failure (``implementation-evidence-invalid``),
    never an ``infra-error``.
    """


class SweepStorageError(WfbenchError):
    """The sweep's own directory refuses writes (full, over quota, read-only, failing). Exit code 1.

    A harness failure, never a row: writing a cell's artifacts or a row there failed, so the sweep
    stops at once (running cells are cancelled, nothing more is written). Every row already in
    ``results.jsonl`` is whole; once there is room again, ``--resume`` continues the sweep.
    """

    def __init__(self, reason: str, *, path: str = "", errno_: int | None = None) -> None:
        self.reason = reason
        self.path = path
        self.errno = errno_
        where = f" ({path})" if path else ""
        super().__init__(
            f"{reason}{where}: the sweep directory cannot be written; stopped the sweep. Every row already"
            " in results.jsonl is whole (free space, then continue with --resume DIR)"
        )

    @classmethod
    def of(cls, exc: OSError, *, path: str = "") -> SweepStorageError:
        """The failure ``exc`` (its errno in :data:`STORAGE_ERRNOS`) of ``path`` (default: its file name)."""
        return cls(exc.strerror or str(exc), path=path or str(exc.filename or ""), errno_=exc.errno)
