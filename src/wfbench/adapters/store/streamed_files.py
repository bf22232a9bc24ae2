"""Text files written piece by piece, and replaced all at once when every one is whole.

:func:`write_texts_atomic` is :func:`~wfbench.adapters.store.jsonl_store.write_text_atomic` for a
document too large to hold as one string (``wfbench report`` at a million rows: a 100 MB page
that, held whole, cost more memory than every aggregate of the sweep): each file's pieces go to
a temp file beside it as they come, and only when every file is written and fsynced is each
renamed over its target. A failure while any piece is made (a bug in a renderer, a full disk)
removes every temp file and leaves every target as it was, so a reader never sees a file half
written, nor a new ``report.md`` beside the old ``report.html``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from wfbench.adapters.store.atomic import fsync_dir

__all__ = ["write_texts_atomic"]

#: Bytes gathered before each write to the temp file.
_BUFFER = 1 << 20


def write_texts_atomic(files: Sequence[tuple[str | os.PathLike[str], Iterable[str]]]) -> None:
    """Write each ``(path, pieces)`` to ``path`` (UTF-8, text as given, no newline translation).

    The pieces are read in order, file after file, and written as they come; nothing replaces a
    target until every file is whole. Raises whatever making a piece or writing it raised
    (``OSError``, ``UnicodeEncodeError``), after removing the temp files.
    """
    staged: list[tuple[str, Path]] = []
    try:
        for path, pieces in files:
            target = Path(path)
            fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
            staged.append((tmp_name, target))
            with open(fd, "w", encoding="utf-8", errors="strict", newline="", buffering=_BUFFER) as out:
                for piece in pieces:
                    out.write(piece)
                out.flush()
                os.fsync(out.fileno())
            os.chmod(tmp_name, 0o644)
    except BaseException:
        for tmp_name, _ in staged:
            Path(tmp_name).unlink(missing_ok=True)
        raise
    for index, (tmp_name, target) in enumerate(staged):
        try:
            os.replace(tmp_name, target)
        except BaseException:
            for later, _ in staged[index:]:
                Path(later).unlink(missing_ok=True)
            raise
    for directory in dict.fromkeys(target.parent for _, target in staged):
        fsync_dir(directory)
