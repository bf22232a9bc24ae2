"""The output directory of ``wfbench run``: refused when it is a file (before anything is created)."""

from __future__ import annotations

import os

from wfbench.domain.errors import InputError

__all__ = ["check_out_dir"]


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
