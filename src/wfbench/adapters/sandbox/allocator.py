"""The harness process's C allocator (glibc ``malloc``): fewer arenas, free pages given back.

A sweep runs its cells on ``--workers`` threads, and every cell starts more short-lived threads
(the output drains of each managed process, the scripted provider's and the key proxy's
connection handlers). glibc gives each new thread its own malloc arena until there are eight per
core, and each arena's heap only grows to the highest point its threads ever used: with 16
workers a 2,000-cell sweep's resident memory crept up by a few KiB per cell while the Python heap
(``tracemalloc``, the object count, pymalloc's arenas) stayed flat (``docs/performance.md``,
"The scale check"). So ``wfbench run`` caps the arenas (:func:`cap_arenas`, ``mallopt
(M_ARENA_MAX)``) before its threads start, and the sweep hands free pages back every so many rows
(:func:`release_free_memory`, ``malloc_trim(0)``: a few milliseconds).

Both are no-ops that return ``False`` where the C library is not glibc (musl, macOS), and
:func:`cap_arenas` leaves an arena limit the user set (``MALLOC_ARENA_MAX``) alone.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Mapping
from typing import Any

#: glibc's ``M_ARENA_MAX`` option of ``mallopt``.
M_ARENA_MAX = -8
#: Arenas a sweep's threads share: the main one and one more. Python allocates under its GIL, so
#: more arenas buy no speed, only more heaps that each keep their own high-water mark.
ARENA_LIMIT = 2
#: The environment variable through which glibc reads an arena limit the user chose.
ARENA_ENV = "MALLOC_ARENA_MAX"


def _glibc() -> Any | None:
    """This process's C library when it is glibc (it has ``mallopt`` and ``malloc_trim``), else None."""
    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return None
    if not (hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim")):
        return None
    return libc


def cap_arenas(
    limit: int = ARENA_LIMIT, *, environ: Mapping[str, str] = os.environ, libc: Any | None = None
) -> bool:
    """Let at most ``limit`` malloc arenas serve this process's threads; True if the limit was set.

    Call it before the threads start (an arena, once made, stays). A ``MALLOC_ARENA_MAX`` in
    ``environ`` is the user's choice and wins: nothing is set then.
    """
    if ARENA_ENV in environ:
        return False
    lib = libc if libc is not None else _glibc()
    return lib is not None and bool(lib.mallopt(M_ARENA_MAX, limit))


def release_free_memory(*, libc: Any | None = None) -> bool:
    """Give the free pages of every malloc arena back to the system (``malloc_trim(0)``); True if glibc."""
    lib = libc if libc is not None else _glibc()
    if lib is None:
        return False
    lib.malloc_trim(0)
    return True
