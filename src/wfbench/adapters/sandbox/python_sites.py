"""The host's Python package directories, which no sandboxed command may import from.

bwrap binds the system trees and the harness's Python runtime read-only; their ``site-packages``
and ``dist-packages`` would let ``import <pkg>`` find the host's installed copy (a ``src/``-layout
task would then test the host's code, and grading would depend on what the host happens to have).
Each one found is covered by an empty read-only tmpfs; a task's own packages live in its
environment (``/env``), which is never covered.
"""

from __future__ import annotations

import functools
import glob
import os
from collections.abc import Iterable

#: Package directories under an installation prefix (venvs, pyenv, /usr/local, Debian's /usr).
PATTERNS = (
    "lib/python3*/site-packages",
    "lib/python3*/dist-packages",
    "lib/python3/dist-packages",
    "lib64/python3*/site-packages",
    "local/lib/python3*/site-packages",
    "local/lib/python3*/dist-packages",
)


def site_dirs(prefixes: Iterable[str]) -> tuple[str, ...]:
    """Every real package directory under ``prefixes`` (``/usr`` style installation roots), sorted."""
    found: set[str] = set()
    for prefix in prefixes:
        found.update(_site_dirs_of(prefix))
    return tuple(sorted(found))


@functools.lru_cache(maxsize=256)
def _site_dirs_of(prefix: str) -> tuple[str, ...]:
    """The package directories of one installation root, looked for once per process.

    Every sandboxed command asks (about 20 ``glob`` calls over the same system trees each time);
    an installation's layout does not change while a sweep runs.
    """
    found: list[str] = []
    for pattern in PATTERNS:
        for path in glob.glob(os.path.join(prefix, pattern)):
            if os.path.isdir(path) and not os.path.islink(path) and os.path.realpath(path) == path:
                found.append(path)
    return tuple(found)
