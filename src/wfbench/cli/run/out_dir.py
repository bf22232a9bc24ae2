"""The output directory of ``wfbench run``: refused when it is a file; left clean after an early failure."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager

from wfbench.domain.errors import InputError

__all__ = ["Litter", "check_out_dir"]


def check_out_dir(out_dir: str, *, resume: bool) -> None:
    """An ``--out`` that names a file, or sits under one, is refused before anything is created."""
    field = "--resume" if resume else "--out"
    probe = out_dir
    while not os.path.exists(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            return
        probe = parent
    if not os.path.isdir(probe):
        what = "is a file, not a directory" if probe == out_dir else f"is under a file ({probe})"
        raise InputError(what, field=field, source=out_dir)


class Litter:
    """What a run created in its output directory, removed again if it fails before its first cell."""

    def __init__(self, out_dir: str) -> None:
        self.out_dir = out_dir
        self.created_dir = not os.path.exists(out_dir)
        self.preexisting = frozenset(os.listdir(out_dir)) if os.path.isdir(out_dir) else frozenset()
        self.started = False

    @contextmanager
    def cleaned_unless_started(self) -> Iterator[None]:
        """On an exception before :attr:`started` is set, remove what this run created."""
        try:
            yield
        except BaseException:
            if not self.started:
                self._clean()
            raise

    def _clean(self) -> None:
        if not os.path.isdir(self.out_dir):
            return
        if self.created_dir:
            shutil.rmtree(self.out_dir, ignore_errors=True)
            return
        for name in sorted(set(os.listdir(self.out_dir)) - self.preexisting):
            path = os.path.join(self.out_dir, name)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                with _suppress_os_error():
                    os.unlink(path)


@contextmanager
def _suppress_os_error() -> Iterator[None]:
    try:
        yield
    except OSError:
        return
