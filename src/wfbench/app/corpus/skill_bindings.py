"""The incumbent skill bytes a candidate overlay replaces: ``target_base_digests``.

A sweep records, in ``promotion.json``, the sha256 of every file of the skills its overlay
touches — at the canonical location (``.claude/skills/<skill>/``) and at every mirror the
corpus declares (``skill_mirrors``) — as the candidate arms' tasks had them committed, plus
``absent`` for every file the overlay adds. ``wfbench promote apply`` recomputes the same map
from the target repository's ``HEAD`` and refuses evidence whose map differs: the bytes a
promotion replaces are exactly the bytes it was measured against.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence

from wfbench.app.corpus.arms import Arm, Overlay
from wfbench.app.corpus.binding import BoundTask
from wfbench.domain.errors import InputError
from wfbench.domain.promotion.skill_swap import base_digests, destinations, skill_roots

__all__ = ["overlay_destinations", "read_tree_files", "sweep_base_digests"]

MAX_SKILL_FILE_BYTES = 4 * 1024 * 1024


def overlay_destinations(overlay: Overlay, mirrors: Sequence[str]) -> tuple[tuple[str, bytes], ...]:
    """Every (destination, bytes) the overlay writes (canonical and mirrors)."""
    return destinations(overlay.files, mirrors, root_files=overlay.instructions)


def read_tree_files(root: str, roots: Sequence[str]) -> dict[str, bytes]:
    """Every regular file under each of ``roots`` (relative to ``root``), never through a symlink.

    Raises:
        InputError: a symlink or special file under a root, or a root reached through a symlink.
    """
    files: dict[str, bytes] = {}
    for rel in roots:
        top = os.path.join(root, *rel.split("/"))
        probe = root
        for part in rel.split("/"):
            probe = os.path.join(probe, part)
            if os.path.islink(probe):
                raise InputError(f"{os.path.relpath(probe, root)} is a symlink", field="skills")
        if not os.path.isdir(top):
            continue
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames.sort()
            for name in sorted(dirnames) + sorted(filenames):
                path = os.path.join(dirpath, name)
                mode = os.lstat(path).st_mode
                if stat.S_ISDIR(mode):
                    continue
                key = os.path.relpath(path, root).replace(os.sep, "/")
                if not stat.S_ISREG(mode):
                    raise InputError(f"{key} is not a regular file", field="skills")
                with open(path, "rb") as handle:
                    files[key] = handle.read(MAX_SKILL_FILE_BYTES + 1)
    return files


def _read_file(root: str, rel: str) -> bytes | None:
    """The bytes of one file (None when absent); a symlink on its path or a special file is refused."""
    path = root
    for part in rel.split("/"):
        path = os.path.join(path, part)
        if os.path.islink(path):
            raise InputError(f"{os.path.relpath(path, root)} is a symlink", field="skills")
    if not os.path.lexists(path):
        return None
    if not stat.S_ISREG(os.lstat(path).st_mode):
        raise InputError(f"{rel} is not a regular file", field="skills")
    with open(path, "rb") as handle:
        return handle.read(MAX_SKILL_FILE_BYTES + 1)


def sweep_base_digests(
    tasks: Sequence[BoundTask],
    arms: Sequence[Arm],
    overlay: Overlay | None,
    mirrors: Sequence[str],
    incumbent_overlay: Overlay | None = None,
) -> tuple[dict[str, str], str | None]:
    """``target_base_digests`` for a sweep, and why it is empty when the tasks cannot bind one.

    Every prepared task a candidate arm runs on must hold the same incumbent bytes; otherwise
    (or without an overlay) the map is empty, and apply refuses the evidence. ``incumbent_overlay`` (the
    skills earlier generations promoted, ``wfbench evolve``) is what the incumbent ran with on top
    of the committed skills, at the canonical location and every mirror alike.
    """
    if overlay is None:
        return {}, None
    kinds = {arm.kind for arm in arms if arm.is_candidate}
    dests = [path for path, _ in overlay_destinations(overlay, mirrors)]
    roots = skill_roots(overlay.skills, mirrors)
    maps: list[Mapping[str, str]] = []
    for task in tasks:
        if task.spec.kind not in kinds or task.snapshot is None:
            continue
        try:
            incumbent: dict[str, bytes | None] = dict(read_tree_files(task.snapshot.path, roots))
            base = incumbent_overlay
            for path in dests:
                if path not in incumbent:
                    incumbent[path] = _read_file(task.snapshot.path, path)
            if base is not None:
                incumbent.update(destinations(base.files, mirrors, root_files=base.instructions))
        except InputError as exc:
            return {}, f"{task.spec.id}: {exc.message}"
        digests = base_digests(incumbent, dests)
        if maps and digests != maps[0]:
            return {}, f"{task.spec.id}: its committed skills differ from the other candidate tasks'"
        maps.append(digests)
    if not maps:
        return {}, "no prepared task of a candidate arm"
    return dict(maps[0]), None
