"""Task selection: which tasks of a corpus a sweep, gate or release works on, by id or glob pattern.

Pure: the patterns come from the caller (the CLI's ``--tasks`` option), the ids from the corpus.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence

from wfbench.domain.errors import InputError

GLOB_CHARS = frozenset("*?[")


def parse_patterns(values: Sequence[str]) -> tuple[str, ...]:
    """Split pattern values on commas and spaces: ``["a,b", "fix-*"]`` is ``("a", "b", "fix-*")``."""
    return tuple(part for value in values for part in value.replace(",", " ").split())


def select_ids(ids: Sequence[str], patterns: Sequence[str]) -> frozenset[str]:
    """The ids ``patterns`` select (all when there are none); ids are matched exactly, globs with fnmatch.

    Raises:
        InputError: a pattern matches no id (naming it and the ids there are; its field is
            ``--tasks``, the option every command takes the patterns from).
    """
    if not patterns:
        return frozenset(ids)
    chosen: set[str] = set()
    for pattern in patterns:
        matched = (
            [i for i in ids if fnmatch.fnmatchcase(i, pattern)]
            if GLOB_CHARS & set(pattern)
            else [i for i in ids if i == pattern]
        )
        if not matched:
            known = ", ".join(ids[:20]) + (" …" if len(ids) > 20 else "")
            raise InputError(f"{pattern!r} matches no task (tasks: {known})", field="--tasks")
        chosen.update(matched)
    return frozenset(chosen)
