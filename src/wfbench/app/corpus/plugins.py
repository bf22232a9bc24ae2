"""Agent plugins an arm loads (``plugin_dirs``), and their identity.

A Claude Code plugin is a directory with ``.claude-plugin/plugin.json`` (its ``name`` and
``version``) and ``skills/<skill>/SKILL.md``; ``--plugin-dir`` loads it, and its skills are
invoked as ``<plugin>:<skill>`` (the skill evidence matches the name after the last ``:``).

An arm that loads a plugin is identified by the plugin, not by skill bytes in the repository:
:func:`plugin_identity` is its ``version`` and a **manifest digest** over every file of every
plugin directory (paths and bytes, length-prefixed, sorted). Rows of such an arm record both
(``ce_plugin_version``, ``ce_plugin_manifest_digest``, the reference's field names), comparator
reuse compares them, and ``promotion.json`` records them as ``ce_plugin``.

The comparator presets ``ce_workflow``, ``ce_workflow_direct`` and ``ce_review`` load the
corpus's ``ce_plugin`` (the reference's external compound-engineering plugin) and evaluate its
``ce-plan``, ``ce-work`` and ``ce-code-review`` skills.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Sequence
from typing import Any

import attrs

from wfbench.domain.errors import InputError

__all__ = ["CE_SKILLS", "MAX_PLUGIN_BYTES", "PluginIdentity", "plugin_identity"]

#: The compound-engineering skills the ce_* presets evaluate (plan, work, review).
CE_SKILLS = ("ce-plan", "ce-work", "ce-code-review")
MAX_PLUGIN_BYTES = 16 * 1024 * 1024
MAX_PLUGIN_FILES = 4096


@attrs.frozen
class PluginIdentity:
    """What a plugin arm loads: its directories, its name and version, and the manifest digest."""

    dirs: tuple[str, ...]
    name: str | None
    version: str | None
    manifest_digest: str

    def to_mapping(self) -> dict[str, Any]:
        """``promotion.json``'s ``ce_plugin`` (and the rows' fields)."""
        return {"name": self.name, "version": self.version, "manifest_digest": self.manifest_digest}


def _manifest(root: str, where: str) -> dict[str, Any]:
    path = os.path.join(root, ".claude-plugin", "plugin.json")
    try:
        with open(path, encoding="utf-8") as handle:
            raw = json.load(handle)
    except FileNotFoundError:
        raise InputError(f"{root} has no .claude-plugin/plugin.json", field=where) from None
    except (OSError, ValueError) as exc:
        raise InputError(f"{path} is not readable JSON: {exc}", field=where) from None
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not raw["name"]:
        raise InputError(f"{path} must be an object with a non-empty name", field=where)
    if raw.get("version") is not None and not isinstance(raw["version"], str):
        raise InputError(f"{path}: version must be a string", field=where)
    return raw


def plugin_identity(
    dirs: Sequence[str], *, field: str = "plugin_dirs", skills: Sequence[str] = ()
) -> PluginIdentity:
    """The identity of the plugin directories ``dirs`` (each must hold ``.claude-plugin/plugin.json``).

    ``skills`` must each exist as ``skills/<skill>/SKILL.md`` in one of the directories.

    Raises:
        InputError: a directory is missing, holds a symlink or special file, has no valid
            plugin.json, lacks a required skill, or is over the size or file limits.
    """
    digest = hashlib.sha256()
    names, versions = [], []
    total = files = 0
    for root in sorted(os.path.realpath(d) for d in dirs):
        if not os.path.isdir(root):
            raise InputError(f"{root} is not a directory", field=field)
        manifest = _manifest(root, field)
        names.append(manifest["name"])
        versions.append(manifest.get("version"))
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for name in sorted(filenames) + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                mode = os.lstat(path).st_mode
                if not stat.S_ISREG(mode):
                    raise InputError(f"{root}: {rel} is a symlink or special file", field=field)
                files += 1
                with open(path, "rb") as handle:
                    data = handle.read(MAX_PLUGIN_BYTES + 1)
                total += len(data)
                if total > MAX_PLUGIN_BYTES or files > MAX_PLUGIN_FILES:
                    raise InputError(
                        f"{root} exceeds {MAX_PLUGIN_BYTES} bytes or {MAX_PLUGIN_FILES} files", field=field
                    )
                for part in (f"{manifest['name']}/{rel}".encode(), data):
                    digest.update(len(part).to_bytes(8, "big"))
                    digest.update(part)
    for skill in skills:
        if not any(os.path.isfile(os.path.join(d, "skills", skill, "SKILL.md")) for d in dirs):
            raise InputError(f"the plugin has no skills/{skill}/SKILL.md", field=field)
    return PluginIdentity(
        dirs=tuple(os.path.realpath(d) for d in dirs),
        name=names[0] if len(set(names)) == 1 else None,
        version=versions[0] if len(set(versions)) == 1 else None,
        manifest_digest=digest.hexdigest(),
    )
