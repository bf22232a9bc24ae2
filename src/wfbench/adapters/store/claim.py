"""Crash safety around a sweep: claim the output directory, own a scratch tree, clean up after a kill.

A sweep killed with SIGKILL runs no ``finally``: its sandboxes die with it (``--die-with-parent``)
but its scratch tree stays in ``$TMPDIR`` and its output directory may end in a torn line or a
half-written ``*.tmp`` report. The next run repairs what is safe to repair and refuses what is not:

* :func:`claim_out_dir` locks ``<out>/.wfbench.lock`` (``flock``; the kernel releases it when the
  holder dies, however it dies), so two sweeps never append to one ``results.jsonl``. A fresh run
  into a directory that already holds rows is refused (``--resume`` continues it); a resume refuses
  duplicate cells, moves a torn last line (never a row that was reported complete: a row's
  progress line is printed only after its fsync) to ``results.jsonl.torn``, removes stale
  ``*.tmp`` files and moves the rows a cancellation made to ``results.cancelled.jsonl``
  (:mod:`wfbench.adapters.store.cancelled_rows`), so their cells run again.
* :func:`sweep_scratch` (opened by the claim) creates the sweep's ``wfbench-sweep-*`` tree with
  a locked ``owner.lock`` inside and routes every :mod:`tempfile` directory of the run into it
  (work trees, private git dirs, sandbox roots, the bwrap preflight's root). It first removes
  the trees of dead sweeps: a tree whose ``owner.lock`` can be locked has no living owner. Trees
  without an ``owner.lock`` (another tool's, or one still being created) are never touched.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import tempfile
import time
from collections.abc import Callable, Iterator

from wfbench.adapters.sandbox.common import force_remove
from wfbench.adapters.sandbox.stale_sockets import remove_stale_socket_dirs
from wfbench.adapters.store import cancelled_rows
from wfbench.domain.errors import InputError
from wfbench.domain.sweep.layout import CELLS_DIR

__all__ = [
    "LOCK_NAME",
    "OWNER_NAME",
    "SCRATCH_PREFIX",
    "OutDirClaim",
    "claim_out_dir",
    "remove_stale_scratch",
    "sweep_scratch",
]

LOCK_NAME = ".wfbench.lock"
OWNER_NAME = "owner.lock"
SCRATCH_PREFIX = "wfbench-sweep-"
RESULTS_NAME = "results.jsonl"
TORN_NAME = "results.jsonl.torn"
#: An empty, ownerless scratch dir this old is the remains of a removal cut short (a younger one
#: may be a tree another sweep is creating right now).
EMPTY_TREE_AGE_S = 60.0

Note = Callable[[str], None]


class OutDirClaim:
    """A sweep's hold on its output directory and its scratch tree, until :meth:`release`.

    ``scratch`` is the owner-locked ``wfbench-sweep-*`` tree every :mod:`tempfile` directory of
    the run is created in while the claim is held. If the process dies, the kernel drops both locks
    and the next run's start removes the tree.
    """

    def __init__(self, out_dir: str, fd: int, scratch: contextlib.AbstractContextManager[str]) -> None:
        self._fd: int | None = None
        self._scratch: contextlib.AbstractContextManager[str] | None = None
        self.scratch = scratch.__enter__()  # if this raises, nothing is held yet
        self.out_dir, self._fd, self._scratch = out_dir, fd, scratch

    def release(self) -> None:
        """Remove the scratch tree, undo the tempfile routing, remove and drop the lock (idempotent).

        The lock file is unlinked while still locked, so no litter is left; a claimer that opened
        the old file meanwhile sees, after locking it, that it is no longer the file at the path,
        and starts over (:func:`claim_out_dir`).
        """
        scratch, self._scratch = self._scratch, None
        fd, self._fd = self._fd, None
        try:
            if scratch is not None:
                scratch.__exit__(None, None, None)
        finally:
            if fd is not None:
                with contextlib.suppress(OSError):
                    if _same_file(fd, os.path.join(self.out_dir, LOCK_NAME)):
                        os.unlink(os.path.join(self.out_dir, LOCK_NAME))
                os.close(fd)

    def __enter__(self) -> OutDirClaim:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.release()


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


def claim_out_dir(
    out_dir: str, *, resume: bool, note: Note, scratch_parent: str | None = None
) -> OutDirClaim:
    """Lock ``out_dir`` (created), make it safe to append to, and open the sweep's scratch tree.

    Stale scratch trees of killed sweeps under ``scratch_parent`` (default: the temp directory)
    are removed first, each named in a note. See the module docstring.

    Raises:
        InputError: another process holds the directory; a fresh run would append to existing rows;
            or (resume) ``results.jsonl`` repeats a cell.
    """
    os.makedirs(out_dir, exist_ok=True)
    fd = _locked(os.path.join(out_dir, LOCK_NAME), out_dir)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        _prepare_out_dir(out_dir, resume=resume, note=note)
        return OutDirClaim(out_dir, fd, sweep_scratch(note=note, parent=scratch_parent))
    except BaseException:
        os.close(fd)
        raise


def _same_file(fd: int, path: str) -> bool:
    try:
        here, there = os.fstat(fd), os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def _locked(lock_path: str, out_dir: str) -> int:
    """Open and lock ``lock_path``; retry when the file was removed by its releaser meanwhile."""
    while True:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        if not _try_lock(fd):
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise InputError(
                f"another wfbench run (pid {holder}) is using this output directory; refusing to run a"
                " second sweep into it",
                source=out_dir,
            )
        if _same_file(fd, lock_path):
            return fd
        os.close(fd)  # unlinked by the previous holder after we opened it: lock the new file


def _prepare_out_dir(out_dir: str, *, resume: bool, note: Note) -> None:
    results = os.path.join(out_dir, RESULTS_NAME)
    if not resume:
        for name in (RESULTS_NAME, cancelled_rows.CANCELLED_NAME, cancelled_rows.PENDING_NAME):
            held = os.path.join(out_dir, name)
            if os.path.isfile(held) and os.path.getsize(held) > 0:
                raise InputError(
                    f"already holds rows; continue that sweep with `--resume {out_dir}` or choose a new"
                    " --out",
                    source=held,
                )
        return
    for path in _partial_files(out_dir):
        os.unlink(path)
        note(f"removed a partial file of the interrupted sweep: {path}")
    if os.path.isfile(results):
        _cut_torn_tail(results, note)
        _refuse_duplicate_cells(results)
    _set_aside_cancelled_rows(out_dir, note)


def _partial_files(out_dir: str) -> list[str]:
    """``*.tmp`` regular files in ``out_dir`` and anywhere under its ``cells/`` (never through a symlink)."""
    found = [os.path.join(out_dir, name) for name in sorted(os.listdir(out_dir))]
    cells = os.path.join(out_dir, CELLS_DIR)
    if os.path.isdir(cells) and not os.path.islink(cells):
        for dirpath, dirnames, filenames in os.walk(cells):
            dirnames[:] = sorted(d for d in dirnames if not os.path.islink(os.path.join(dirpath, d)))
            found += [os.path.join(dirpath, name) for name in sorted(filenames)]
    return [p for p in found if p.endswith(".tmp") and os.path.isfile(p) and not os.path.islink(p)]


def _set_aside_cancelled_rows(out_dir: str, note: Note) -> None:
    """Move the rows a cancellation made to ``results.cancelled.jsonl``: their cells run again."""
    moved, notes = cancelled_rows.move_cancelled_rows(out_dir)
    for text in notes:
        note(text)
    if moved:
        side = os.path.join(out_dir, cancelled_rows.CANCELLED_NAME)
        note(
            f"resume: {moved} row(s) of cells the interruption cancelled are not evidence; moved them"
            f" to {side} — their cells run again"
        )


def _cut_torn_tail(results: str, note: Note) -> None:
    """Move an unterminated last line to ``results.jsonl.torn`` and truncate it off."""
    with open(results, "rb+") as handle:
        data = handle.read()
        if not data or data.endswith(b"\n"):
            return
        keep = data.rfind(b"\n") + 1
        torn = os.path.join(os.path.dirname(results), TORN_NAME)
        with open(torn, "ab") as side:
            side.write(data[keep:] + b"\n")
            side.flush()
            os.fsync(side.fileno())
        handle.truncate(keep)
        handle.flush()
        os.fsync(handle.fileno())
    line = data.count(b"\n") + 1
    note(
        f"{results}: line {line} was torn by the interruption ({len(data) - keep} bytes,"
        f" never reported complete); moved it to {torn} — its cell runs again"
    )


def _refuse_duplicate_cells(results: str) -> None:
    from wfbench.adapters.store.jsonl_store import read_rows

    seen: dict[tuple[str, str, int], int] = {}
    for number, row in enumerate(read_rows(results), start=1):
        first = seen.setdefault(row.cell, number)
        if first != number:
            task, arm, run = row.cell
            raise InputError(
                f"cell {task}/{arm}/run {run} already has a row (row {first}); a results file with"
                " duplicate cells cannot be resumed",
                source=results,
                locator=f"row {number}",
            )


@contextlib.contextmanager
def sweep_scratch(*, note: Note, parent: str | None = None) -> Iterator[str]:
    """This sweep's scratch tree (owner-locked), with :mod:`tempfile` routed into it; removed at exit.

    Stale trees of dead sweeps under ``parent`` (default: the temp directory) are removed first, and
    so are the bridge-socket directories of dead processes (:mod:`wfbench.adapters.sandbox.stale_sockets`).
    """
    where = parent or tempfile.gettempdir()
    removed, failed = remove_stale_scratch(where)
    for path in removed:
        note(f"removed the scratch tree of a killed sweep: {path}")
    for problem in failed:
        note(f"WARNING: cannot remove the scratch tree of a killed sweep: {problem}")
    remove_stale_socket_dirs()  # silently: they hold only a socket (and other sweeps' notes stay exact)
    root = tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=where)
    fd = _locked_owner_file(root)
    tmp = os.path.join(root, "tmp")
    os.mkdir(tmp, 0o700)
    previous, tempfile.tempdir = tempfile.tempdir, tmp
    try:
        yield root
    finally:
        tempfile.tempdir = previous
        leftover = _remove_tree(root)
        os.close(fd)
        if leftover:
            note(f"WARNING: cannot remove this sweep's scratch tree: {leftover}")


def _locked_owner_file(root: str) -> int:
    """Create ``owner.lock`` already locked: lock a private name first, then rename it into place."""
    pending = os.path.join(root, f".{OWNER_NAME}.{os.getpid()}")
    fd = os.open(pending, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(fd, f"{os.getpid()}\n".encode("ascii"))
    os.rename(pending, os.path.join(root, OWNER_NAME))
    return fd


def remove_stale_scratch(parent: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Remove the ``wfbench-sweep-*`` trees under ``parent`` whose owner is dead: (removed, failures)."""
    removed: list[str] = []
    failed: list[str] = []
    try:
        names = sorted(os.listdir(parent))
    except OSError:
        return (), ()
    for name in names:
        path = os.path.join(parent, name)
        if not name.startswith(SCRATCH_PREFIX) or os.path.islink(path) or not os.path.isdir(path):
            continue
        try:
            fd = os.open(os.path.join(path, OWNER_NAME), os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            if _old_and_empty(path):  # its owner died between unlinking owner.lock and rmdir
                problem = _rmdir(path)
                (failed if problem else removed).append(problem or path)
            continue  # otherwise: not a tree this mechanism created, or one being created
        try:
            if not _try_lock(fd):
                continue  # a living sweep holds it
            problem = _remove_tree(path)
        finally:
            os.close(fd)
        (failed if problem else removed).append(problem or path)
    return tuple(removed), tuple(failed)


def _remove_tree(root: str) -> str | None:
    """Remove a scratch tree with its ``owner.lock`` last, so a removal cut short stays recognizable."""
    try:
        names = os.listdir(root)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{root}: {exc}"
    for name in sorted(names):
        if name != OWNER_NAME and (problem := force_remove(os.path.join(root, name))):
            return problem
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(root, OWNER_NAME))
    return _rmdir(root)


def _rmdir(path: str) -> str | None:
    try:
        os.rmdir(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{path}: {exc}"
    return None


def _old_and_empty(path: str) -> bool:
    try:
        return not os.listdir(path) and time.time() - os.stat(path).st_mtime > EMPTY_TREE_AGE_S
    except OSError:
        return False
