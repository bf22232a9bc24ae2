"""One crash-safe, all-or-nothing swap of skill files in a repository's working tree.

``wfbench promote apply`` writes a promoted overlay to the canonical skill location and every
mirror. No file system can replace several files in several directories atomically, so this is
a write-ahead transaction (the decisions are pure: :mod:`wfbench.domain.promotion.skill_swap`):

1. **lock** ``<state>/lock`` (``flock``: released by the kernel if the process dies);
2. **recover** an earlier transaction a crash interrupted (see below);
3. **journal** ``prepared`` (every entry, every directory it will create), fsynced;
4. **stage** each new file and **back up** each replaced file under ``<state>/<txid>/``, fsynced;
5. **compare-and-swap**: every bound destination still holds its recorded base bytes;
6. **commit point**: the journal says ``committed`` (atomic rename, fsynced);
7. **install** each staged file with ``rename(2)`` (atomic per file), fsyncing each directory;
8. the caller's ``after_install`` (the optional git commit) — a failure there rolls back;
9. **done**: the journal is removed, then the staging directory.

A kill at any moment leaves a journal; the next transaction on the repository (or
:meth:`SkillTransaction.recover`) finishes it: forward to all new bytes once the commit point is
on disk, back to all old bytes before it. Destinations whose bytes are neither the old nor the
new ones (someone edited them meanwhile) stop recovery with the journal kept.

``<state>`` is inside the repository's git directory (``.git/wfbench-apply``), on the same file
system as the working tree (checked), and never in the working tree itself. Paths are never
followed through symlinks: a destination or any of its parents that is a symlink is refused.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import stat
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence

import attrs

from wfbench.adapters.store.atomic import fsync_dir, write_bytes_atomic
from wfbench.domain.errors import InputError, WfbenchError
from wfbench.domain.promotion.skill_swap import (
    ABSENT,
    Direction,
    Journal,
    JournalState,
    Step,
    SwapEntry,
    recovery,
    recovery_step,
    sha256_bytes,
    swap_conflicts,
)

__all__ = ["Recovered", "SkillTransaction", "SwapConflict", "TransactionError"]

JOURNAL = "journal.json"
MAX_FILE_BYTES = 4 * 1024 * 1024


class TransactionError(WfbenchError):
    """The transaction could not run or finish (nothing, or everything, was changed: see message)."""


class SwapConflict(InputError):
    """A destination no longer holds the bytes the evidence was recorded against (exit 2)."""


@attrs.frozen
class Recovered:
    """What recovery did to an interrupted transaction."""

    txid: str
    direction: Direction
    paths: tuple[str, ...]


class SkillTransaction:
    """Transactions over the working tree at ``root``, journaled under ``state_dir``.

    ``on_step`` is called with a step name after every durable change (tests kill the process
    there to prove every interruption recovers).
    """

    def __init__(self, root: str, state_dir: str, *, on_step: Callable[[str], None] | None = None) -> None:
        self.root = os.path.realpath(root)
        self.state_dir = state_dir
        self._on_step = on_step or (lambda _name: None)

    # --- reading ------------------------------------------------------------------------

    def current_digests(self, paths: Sequence[str]) -> dict[str, str]:
        """sha256 of what each path holds now (ABSENT when missing).

        Raises:
            InputError: a path or one of its parents is a symlink or not a regular file/directory.
        """
        return {path: self._digest(path) for path in paths}

    def _digest(self, rel: str) -> str:
        data = self._read(rel)
        return ABSENT if data is None else sha256_bytes(data)

    def _read(self, rel: str) -> bytes | None:
        path = self._checked(rel)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise InputError("is a symlink; destinations are never followed", field=rel) from None
            raise
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise InputError("is not a regular file", field=rel)
            data = handle.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise InputError(f"is larger than {MAX_FILE_BYTES} bytes", field=rel)
        return data

    def _checked(self, rel: str) -> str:
        """The absolute path of ``rel``; every existing parent must be a real directory."""
        path = self.root
        parts = rel.split("/")
        for part in parts[:-1]:
            path = os.path.join(path, part)
            try:
                mode = os.lstat(path).st_mode
            except FileNotFoundError:
                break
            if stat.S_ISLNK(mode):
                raise InputError(
                    f"destination parent {os.path.relpath(path, self.root)} is a symlink", field=rel
                )
            if not stat.S_ISDIR(mode):
                raise InputError(
                    f"destination parent {os.path.relpath(path, self.root)} is not a directory", field=rel
                )
        return os.path.join(self.root, *parts)

    # --- the transaction ----------------------------------------------------------------

    def apply(
        self,
        writes: Sequence[tuple[str, bytes]],
        expected: Mapping[str, str],
        *,
        message: str | None = None,
        after_install: Callable[[], None] | None = None,
    ) -> tuple[SwapEntry, ...]:
        """Swap every ``(path, bytes)`` of ``writes`` in one transaction; the entries swapped.

        ``expected`` (``target_base_digests``) must cover every path written; every path it
        binds must hold its recorded digest until the commit point.

        Raises:
            SwapConflict: a bound path does not hold its recorded bytes (nothing changed).
            InputError: a destination is unsafe (symlink, special file), or unbound.
            TransactionError: the transaction failed and was rolled back (nothing changed), or
                recovery of an earlier one found a conflict.
        """
        unbound = sorted({path for path, _ in writes} - set(expected))
        if unbound:
            raise InputError(
                f"is written but has no recorded base digest: {unbound[0]}", field="target_base_digests"
            )
        with self._locked():
            self._recover_locked()
            conflicts = swap_conflicts(expected, self.current_digests(sorted(expected)))
            if conflicts:
                raise SwapConflict("; ".join(conflicts), field="target")
            entries = tuple(SwapEntry(path, expected[path], sha256_bytes(data)) for path, data in writes)
            journal = Journal(
                txid=uuid.uuid4().hex,
                state=JournalState.PREPARED,
                entries=entries,
                created_dirs=self._missing_dirs([path for path, _ in writes]),
                message=message,
            )
            try:
                self._prepare(journal, dict(writes), expected)
            except BaseException:
                self._rollback(journal)
                raise
            committed = attrs.evolve(journal, state=JournalState.COMMITTED)
            self._write_journal(committed)
            self._step("committed")
            try:
                self._run(committed, Direction.FORWARD)
                if after_install is not None:
                    after_install()
                    self._step("after-install")
            except Exception as exc:
                self._rollback(committed)
                raise TransactionError(f"the apply failed and was rolled back: {exc}") from exc
            self._done(committed)
            return entries

    def recover(self) -> Recovered | None:
        """Finish a transaction a crash interrupted (under the lock); None when there was none.

        Raises:
            TransactionError: a destination holds bytes that are neither old nor new (journal kept).
        """
        with self._locked():
            return self._recover_locked()

    # --- steps --------------------------------------------------------------------------

    def _step(self, name: str) -> None:
        self._on_step(name)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        os.makedirs(self.state_dir, mode=0o700, exist_ok=True)
        fd = os.open(os.path.join(self.state_dir, "lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise TransactionError("another apply holds this repository's apply lock") from None
            yield
        finally:
            os.close(fd)

    def _journal_path(self) -> str:
        return os.path.join(self.state_dir, JOURNAL)

    def _stage_dir(self, txid: str) -> str:
        return os.path.join(self.state_dir, txid)

    def _write_journal(self, journal: Journal) -> None:
        write_bytes_atomic(self._journal_path(), json.dumps(journal.to_mapping(), indent=1).encode() + b"\n")

    def _missing_dirs(self, paths: Sequence[str]) -> tuple[str, ...]:
        missing: list[str] = []
        for rel in paths:
            parts = rel.split("/")[:-1]
            for depth in range(1, len(parts) + 1):
                sub = "/".join(parts[:depth])
                if sub not in missing and not os.path.lexists(os.path.join(self.root, sub)):
                    missing.append(sub)
        return tuple(missing)

    def _prepare(self, journal: Journal, data: Mapping[str, bytes], expected: Mapping[str, str]) -> None:
        """Journal ``prepared``, then stage new bytes and back up old ones (all fsynced)."""
        self._write_journal(journal)
        self._step("journal-prepared")
        stage = self._stage_dir(journal.txid)
        os.mkdir(stage, 0o700)
        fsync_dir(self.state_dir)
        self._step("stage-dir")
        for rel in journal.created_dirs:
            os.mkdir(self._checked(rel), 0o755)
            fsync_dir(os.path.dirname(os.path.join(self.root, rel)))
            self._step(f"mkdir:{rel}")
        if os.stat(stage).st_dev != os.stat(self.root).st_dev:
            raise TransactionError("the git directory is on another file system than the working tree")
        for index, entry in enumerate(journal.entries):
            dest = self._checked(entry.path)
            mode = 0o644
            if entry.base != ABSENT:
                mode = stat.S_IMODE(os.lstat(dest).st_mode)
                self._copy_durably(dest, os.path.join(stage, f"{index}.old"), mode)
                self._step(f"backup:{entry.path}")
            self._write_durably(os.path.join(stage, f"{index}.new"), data[entry.path], mode)
            self._step(f"stage:{entry.path}")
            if os.stat(os.path.dirname(dest)).st_dev != os.stat(stage).st_dev:
                raise TransactionError(f"{entry.path} is on another file system than the git directory")
        fsync_dir(stage)
        conflicts = swap_conflicts(expected, self.current_digests(sorted(expected)))
        if conflicts:  # the tree changed while staging: nothing has been replaced yet
            raise SwapConflict("; ".join(conflicts), field="target")

    @staticmethod
    def _write_durably(path: str, data: bytes, mode: int) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())

    def _copy_durably(self, source: str, dest: str, mode: int) -> None:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
        self._write_durably(dest, data, mode)

    def _run(self, journal: Journal, direction: Direction) -> None:
        """Bring every destination to ``direction``'s bytes (idempotent); raises on a conflict."""
        stage = self._stage_dir(journal.txid)
        for index, entry in enumerate(journal.entries):
            dest = self._checked(entry.path)
            step = recovery_step(entry, self._digest(entry.path), direction)
            if step is Step.CONFLICT:
                raise TransactionError(
                    f"{entry.path} holds bytes that are neither the old nor the new ones; the journal"
                    f" is kept in {self.state_dir} (restore the file, then run the apply again)"
                )
            if step is Step.INSTALL_NEW:
                os.replace(os.path.join(stage, f"{index}.new"), dest)
            elif step is Step.RESTORE_BASE:
                os.replace(os.path.join(stage, f"{index}.old"), dest)
            elif step is Step.REMOVE:
                os.unlink(dest)
            if step is not Step.NOTHING:
                fsync_dir(os.path.dirname(dest))
                self._step(f"{direction.value}:{entry.path}")
        if direction is Direction.BACK:
            for rel in reversed(journal.created_dirs):
                with contextlib.suppress(FileNotFoundError, OSError):
                    os.rmdir(os.path.join(self.root, rel))
                    fsync_dir(os.path.dirname(os.path.join(self.root, rel)))
                    self._step(f"rmdir:{rel}")

    def _rollback(self, journal: Journal) -> None:
        if journal.state is JournalState.COMMITTED:
            journal = attrs.evolve(journal, state=JournalState.ROLLING_BACK)
            self._write_journal(journal)
            self._step("rolling-back")
        self._run(journal, Direction.BACK)
        self._done(journal)

    def _done(self, journal: Journal) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._journal_path())
        fsync_dir(self.state_dir)
        self._step("journal-removed")
        shutil.rmtree(self._stage_dir(journal.txid), ignore_errors=True)
        self._step("cleaned")

    def _recover_locked(self) -> Recovered | None:
        path = self._journal_path()
        try:
            with open(path, "rb") as handle:
                raw = json.loads(handle.read())
        except FileNotFoundError:
            self._sweep_orphans()
            return None
        except (OSError, ValueError) as exc:
            raise TransactionError(f"the apply journal {path} is unreadable: {exc}") from None
        try:
            journal = Journal.from_mapping(raw)
        except InputError as exc:
            raise TransactionError(f"the apply journal {path} is invalid: {exc}") from None
        direction = recovery(journal)
        if direction is Direction.BACK:
            self._rollback(journal)
        else:
            self._run(journal, Direction.FORWARD)
            self._done(journal)
        return Recovered(journal.txid, direction, tuple(e.path for e in journal.entries))

    def _sweep_orphans(self) -> None:
        """Staging directories left after their journal was removed (a kill during clean-up)."""
        for name in os.listdir(self.state_dir):
            if name not in (JOURNAL, "lock") and os.path.isdir(os.path.join(self.state_dir, name)):
                shutil.rmtree(os.path.join(self.state_dir, name), ignore_errors=True)
