"""The sweeps under one directory, for ``wfbench view DIR`` when DIR holds many sweeps.

A sweep is a directory holding a regular ``results.jsonl``; they are looked for in DIR itself
and up to :data:`MAX_DEPTH` levels below it (``results/<sweep>``, ``results/<corpus>/<sweep>``),
never through a symlink, never inside a sweep (its ``cells/`` and ``demo-corpus/`` are not
sweeps). Each listing walks the directory again, so a sweep started after the viewer appears.
"""

from __future__ import annotations

import os
import stat

from wfbench.adapters.store.sweep_dir import RESULTS_NAME, SweepDirectory
from wfbench.domain.errors import InputError

__all__ = ["MAX_DEPTH", "SweepTree"]

MAX_DEPTH = 3
#: Directories that a walk skips: dot-directories, the viewer's own static output, virtualenvs.
_SKIP = ("node_modules", "__pycache__")


def _holds_results(path: str) -> bool:
    try:
        return stat.S_ISREG(os.lstat(os.path.join(path, RESULTS_NAME)).st_mode)
    except OSError:
        return False


class SweepTree:
    """Every sweep under ``root`` (the ``SweepCatalog`` port)."""

    def __init__(self, root: str) -> None:
        self.root = os.path.realpath(root)

    def names(self) -> tuple[str, ...]:
        """Each sweep's path relative to ``root`` (``.`` for the root itself), sorted."""
        found: list[str] = []
        self._walk(self.root, "", 0, found)
        return tuple(sorted(found))

    def _walk(self, path: str, rel: str, depth: int, found: list[str]) -> None:
        if _holds_results(path):
            found.append(rel or ".")
            return
        if depth >= MAX_DEPTH:
            return
        try:
            entries = sorted(os.scandir(path), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            if entry.name.startswith(".") or entry.name in _SKIP:
                continue
            if entry.is_dir(follow_symlinks=False):
                self._walk(entry.path, f"{rel}/{entry.name}" if rel else entry.name, depth + 1, found)

    def open(self, name: str) -> SweepDirectory:
        """The sweep ``name`` of :meth:`names`.

        Raises:
            InputError: ``name`` is not a sweep under ``root``.
        """
        parts = name.split("/")
        if name != "." and any(p in ("", ".", "..") or p.startswith(".") for p in parts):
            raise InputError("is not a sweep of this directory", source=name)
        path = self.root if name == "." else os.path.join(self.root, *parts)
        current = self.root
        for part in [] if name == "." else parts:
            current = os.path.join(current, part)
            if not stat.S_ISDIR(_lstat_mode(current)):
                raise InputError("is not a sweep of this directory", source=name)
        if not _holds_results(path):
            raise InputError("is not a sweep of this directory", source=name)
        return SweepDirectory(path)


def _lstat_mode(path: str) -> int:
    try:
        return os.lstat(path).st_mode
    except OSError:
        return 0
