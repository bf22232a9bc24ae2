"""Where a sweep directory keeps each cell's artifacts, in the current layout and the legacy one.

Current layout: everything one (task, arm, run) cell left behind lives under its own directory,
``cells/<task>/<arm>/run-<i>/`` — ``patch.diff``, ``review.json`` (the redacted review
artifact), ``transcripts/<phase>-<session>.jsonl`` and ``transcripts/index.json`` (which
transcript is which phase). A row names its own files by these relative paths
(``patch_artifact``, ``review_artifact``, ``transcript_artifacts[].path``), so readers follow
the row instead of guessing.

Legacy layout (sweeps written before the per-cell directories): ``<task>-<arm>-run<i>.patch``,
``<task>-<arm>-run<i>.review.json`` and ``transcripts/<task>-<arm>-run<i>-<phase>-<session>.jsonl``,
flat in the sweep root. Old rows carry no ``patch_artifact``; :func:`patch_candidates` names
where their patch would be. Both layouts stay readable by ``gate``, ``report``, ``view``,
``--resume`` and ``--reuse-results``.

Path segments come from task ids and arm names, which the corpus restricts to
``[A-Za-z0-9._-]``; a row read from elsewhere may hold anything, so every segment is reduced to
that alphabet here (never ``.``, ``..`` or empty), and :func:`is_cell_artifact_path` accepts a
path only when it lies inside the named cell's own directory.
"""

from __future__ import annotations

import re

__all__ = [
    "CELLS_DIR",
    "PATCH_NAME",
    "PROMPTS_NAME",
    "REVIEW_NAME",
    "TRANSCRIPTS_DIR",
    "TRANSCRIPT_INDEX_NAME",
    "cell_dir",
    "cell_file",
    "is_cell_artifact_path",
    "legacy_label",
    "legacy_patch_path",
    "legacy_review_path",
    "patch_candidates",
    "path_segment",
]

CELLS_DIR = "cells"
PATCH_NAME = "patch.diff"
REVIEW_NAME = "review.json"
#: The prompt each phase of the cell sent, as the harness built it (``wfbench view`` shows them).
PROMPTS_NAME = "prompts.json"
TRANSCRIPTS_DIR = "transcripts"
TRANSCRIPT_INDEX_NAME = "index.json"

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_NAME = re.compile(r"[A-Za-z0-9._-]{1,200}")
_SEGMENT_LIMIT = 128


def path_segment(text: str) -> str:
    """``text`` as one safe path segment: ``[A-Za-z0-9._-]``, at most 129 characters, no leading dot."""
    segment = _UNSAFE.sub("_", text)[:_SEGMENT_LIMIT]
    return segment if segment and not segment.startswith(".") else f"_{segment}"


def cell_dir(task: str, arm: str, run: int) -> str:
    """``cells/<task>/<arm>/run-<i>``: the cell's directory, relative to the sweep directory."""
    return f"{CELLS_DIR}/{path_segment(task)}/{path_segment(arm)}/run-{int(run)}"


def cell_file(task: str, arm: str, run: int, name: str) -> str:
    """A file of the cell's directory (``name`` may hold ``/``, e.g. ``transcripts/index.json``)."""
    return f"{cell_dir(task, arm, run)}/{name}"


def legacy_label(task: str, arm: str, run: int) -> str:
    """``<task>-<arm>-run<i>``, the prefix the legacy flat layout named a cell's files with."""
    return _UNSAFE.sub("_", f"{task}-{arm}-run{run}")


def legacy_patch_path(task: str, arm: str, run: int) -> str:
    """Where the legacy layout kept the cell's patch."""
    return f"{legacy_label(task, arm, run)}.patch"


def legacy_review_path(task: str, arm: str, run: int) -> str:
    """Where the legacy layout kept the cell's review artifact."""
    return f"{legacy_label(task, arm, run)}.review.json"


def patch_candidates(task: str, arm: str, run: int, recorded: object = None) -> tuple[str, ...]:
    """Where the cell's patch may be, best first: the row's ``patch_artifact``, the cell directory, legacy."""
    own = cell_file(task, arm, run, PATCH_NAME)
    first = (
        (recorded,) if isinstance(recorded, str) and is_cell_artifact_path(recorded, task, arm, run) else ()
    )
    return tuple(dict.fromkeys((*first, own, legacy_patch_path(task, arm, run))))


def is_cell_artifact_path(path: str, task: str, arm: str, run: int, *, transcript: bool = False) -> bool:
    """True when ``path`` is a plain relative file path of this cell, in either layout.

    Current layout: ``cells/<task>/<arm>/run-<i>/<name>``, or ``…/transcripts/<name>``. Legacy:
    ``transcripts/<name>``, or a root file name starting with the cell's label. With
    ``transcript``, only the two transcript forms. A name is ``[A-Za-z0-9._-]{1,200}`` and never
    starts with a dot, so no accepted path can leave its directory.
    """
    parts = path.split("/")
    if any(not _NAME.fullmatch(part) or part.startswith(".") for part in parts):
        return False
    own = cell_dir(task, arm, run).split("/")
    if parts[: len(own)] == own:
        rest = parts[len(own) :]
        if len(rest) == 2:
            return rest[0] == TRANSCRIPTS_DIR
        return len(rest) == 1 and not transcript
    if len(parts) == 2:
        return parts[0] == TRANSCRIPTS_DIR
    return not transcript and len(parts) == 1 and parts[0].startswith(legacy_label(task, arm, run) + ".")
