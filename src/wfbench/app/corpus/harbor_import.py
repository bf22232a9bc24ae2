"""``wfbench tasks import harbor DIR... --out CORPUS_DIR``: Harbor tasks as a wfbench corpus (docs/harbor.md).

Every task is read and mapped first (:mod:`wfbench.app.corpus.harbor`): one refused key fails the
import before anything is written. Then each task directory is copied into the corpus
(``tasks/<id>/``: its Dockerfile and context, tests and solution stay the task's own files), its
image is built once and its working directory captured as ``repos/<id>/`` (a one-commit
repository: :class:`~wfbench.domain.ports.ImageWorkdirs`), and ``corpus.yaml`` is written with
``harbor-import.txt``, every note of the mapping (what was reported rather than mapped).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from typing import Any

import attrs
import yaml

from wfbench.app.corpus.harbor import HarborTask, ImportOptions, MappedTask, map_task, read_task
from wfbench.domain.environment.capture import CaptureRequest
from wfbench.domain.errors import InputError
from wfbench.domain.ports import ImageWorkdirs

__all__ = ["ImportReport", "import_harbor", "plan_import"]

NOTES_NAME = "harbor-import.txt"


@attrs.frozen
class ImportReport:
    """The corpus written, its tasks, and the notes (keys reported rather than mapped)."""

    corpus: str
    tasks: tuple[str, ...]
    notes: tuple[str, ...]


def plan_import(
    directories: Sequence[str], options: ImportOptions
) -> tuple[tuple[HarborTask, MappedTask], ...]:
    """Read and map every task (nothing written).

    Raises:
        InputError: a task is missing a part, a key is refused, or two tasks share an id.
    """
    planned = []
    seen: set[str] = set()
    for directory in directories:
        harbor = read_task(directory)
        if harbor.id in seen:
            raise InputError("two tasks have this id (directory name)", source=directory, locator=harbor.id)
        seen.add(harbor.id)
        planned.append((harbor, map_task(harbor, options, base=f"tasks/{harbor.id}")))
    return tuple(planned)


def _request(harbor: HarborTask, mapped: MappedTask, out_dir: str) -> CaptureRequest:
    environment = mapped.task["environment"]
    base = os.path.join(out_dir, "tasks", harbor.id)
    return CaptureRequest(
        task=harbor.id,
        containerfile=None if "image" in environment else os.path.join(base, "environment", "Dockerfile"),
        context=None if "image" in environment else os.path.join(base, "environment"),
        image=environment.get("image"),
        workdir=mapped.workdir,
        timeout_s=float(environment.get("timeout", 600)),
    )


def import_harbor(
    directories: Sequence[str], *, out_dir: str, options: ImportOptions, images: ImageWorkdirs
) -> ImportReport:
    """Write the corpus for the Harbor tasks in ``directories`` under ``out_dir``.

    Raises:
        InputError: a task is refused (nothing written then), or its image does not build.
    """
    planned = plan_import(directories, options)
    if os.path.exists(os.path.join(out_dir, "corpus.yaml")):
        raise InputError("already holds a corpus.yaml (choose a new --out)", source=out_dir, field="--out")
    tasks: list[dict[str, Any]] = []
    notes: list[str] = []
    for harbor, mapped in planned:
        target = os.path.join(out_dir, "tasks", harbor.id)
        shutil.copytree(
            harbor.directory, target, ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True
        )
        captured = images.capture(
            _request(harbor, mapped, out_dir), os.path.join(out_dir, "repos", harbor.id)
        )
        entry = dict(mapped.task)
        entry["repo"], entry["ref"] = f"repos/{harbor.id}", "HEAD"
        entry["environment"] = {**entry["environment"], "workdir": captured.workdir}
        tasks.append(_ordered(entry))
        notes += mapped.notes
        notes += [f"{harbor.id}: workdir {captured.workdir}: left out {path}" for path in captured.left_out]
        notes.append(
            f"{harbor.id}: captured {captured.files} file(s) of {captured.workdir}"
            f" as commit {captured.commit[:12]}"
        )
    corpus = {
        "name": os.path.basename(os.path.abspath(out_dir)),
        "defaults": {"arms": ["baseline"]},
        "tasks": tasks,
    }
    header = "# Imported by `wfbench tasks import harbor` (docs/harbor.md); notes: harbor-import.txt\n"
    _write(
        os.path.join(out_dir, "corpus.yaml"),
        header + yaml.dump(corpus, Dumper=_Dumper, sort_keys=False, width=100, allow_unicode=True),
    )
    _write(os.path.join(out_dir, NOTES_NAME), "".join(f"{line}\n" for line in notes))
    return ImportReport(os.path.join(out_dir, "corpus.yaml"), tuple(t["id"] for t in tasks), tuple(notes))


_ORDER = (
    "id",
    "class",
    "kind",
    "repo",
    "ref",
    "prompt",
    "verify",
    "environment",
    "env",
    "network",
    "limits",
    "oracle",
    "gold_script",
)


def _ordered(entry: dict[str, Any]) -> dict[str, Any]:
    return {key: entry[key] for key in (*_ORDER, *sorted(set(entry) - set(_ORDER))) if key in entry}


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (prompts, instructions) as YAML literal blocks, as an author writes them."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def _write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
