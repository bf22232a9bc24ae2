"""The sweep directory on disk: the file adapter of the ``SweepDirectory`` port.

Every write goes through :func:`wfbench.adapters.store.atomic.write_bytes_atomic` (unique
temporary, fsync, rename, fsync of the directory).
"""

from __future__ import annotations

import os

from wfbench.adapters.store.atomic import write_bytes_atomic

__all__ = ["FileSweepDirectory", "checked_parts"]


def checked_parts(rel: str) -> list[str]:
    """The parts of a relative ``/``-separated path inside the directory.

    Raises:
        ValueError: ``rel`` is absolute, empty, or has an empty, ``.`` or ``..`` part.
    """
    parts = rel.split("/")
    if not rel or rel.startswith("/") or os.path.isabs(rel) or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"not a path inside the sweep directory: {rel!r}")
    return parts


class FileSweepDirectory:
    """A sweep's directory at ``root`` (made on the first write when missing)."""

    def __init__(self, root: str) -> None:
        self.root = os.path.abspath(root)

    def path(self, rel: str) -> str:
        """The absolute path of ``rel`` (checked as :func:`checked_parts` does)."""
        return os.path.join(self.root, *checked_parts(rel))

    def write(self, rel: str, data: bytes) -> None:
        """Replace ``rel`` with ``data`` durably, its directories made (0700) when missing."""
        path = self.path(rel)
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        write_bytes_atomic(path, data)

    def read(self, rel: str) -> bytes | None:
        """The bytes of ``rel``; ``None`` when it is missing."""
        try:
            with open(self.path(rel), "rb") as handle:
                return handle.read()
        except FileNotFoundError:
            return None
