"""What a sweep created in its directory, removed again when it fails before it started (its claim's part)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["Litter"]


class Litter:
    """What a run created in its output directory, removed again if it fails before its first cell."""

    def __init__(self, out_dir: str) -> None:
        self.out_dir = out_dir
        self.created_dir = not os.path.exists(out_dir)
        self.preexisting = frozenset(os.listdir(out_dir)) if os.path.isdir(out_dir) else frozenset()
        self._started = False

    def started(self) -> None:
        """The sweep is under way: from here on a failure keeps what it wrote."""
        self._started = True

    @contextmanager
    def cleaned_unless_started(self) -> Iterator[None]:
        """On an exception before :meth:`started`, remove what this run created."""
        try:
            yield
        except BaseException:
            if not self._started:
                self._clean()
            raise

    def _clean(self) -> None:
        import shutil  # not at import: the gate loads this module and never cleans (start-up)

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
