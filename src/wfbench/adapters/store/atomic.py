"""The one durable whole-file write: every file a sweep replaces goes through here.

A unique temporary name in the target's own directory (``tempfile.mkstemp``, so two writers of
the same file never share a temporary), the bytes fsynced, one ``rename(2)`` over the target, the
directory fsynced. A crash at any moment leaves the old file or the new one, never a mix; a
temporary left by a crash starts with ``.`` and ends with ``.tmp``, so no reader of the
directory's data files takes it for one.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["TEMP_SUFFIX", "fsync_dir", "write_bytes_atomic"]

#: How a temporary of :func:`write_bytes_atomic` ends (it also starts with ``.``).
TEMP_SUFFIX = ".tmp"


def fsync_dir(directory: str | os.PathLike[str]) -> None:
    """Make a rename or creation in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes, *, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data``: temp file in the same directory, fsync, rename, fsync dir.

    A crash at any moment leaves either the old file or the new one, never a mix.

    Raises:
        OSError: the file could not be written; the old one (if any) is intact and the
            temporary is removed.
    """
    import tempfile  # not at import: a gate that writes nothing never needs it (start-up)

    target = Path(path)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=TEMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    fsync_dir(target.parent)
