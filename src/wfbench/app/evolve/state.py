"""The evolve loop's durable state: ``evolution.jsonl``, each generation's journal, the incumbent.

A generation has effects beyond its sweep: its line in ``evolution.jsonl`` and, on ``promote``,
the candidate's files in the incumbent working copy (``<out>/incumbent``) the next generation
runs against. They must never disagree, whenever the process is killed. So:

1. **The journal is the commit point.** Once a generation is decided, its complete record is
   written to ``gen-NNN/generation.json`` (a temporary file, fsynced, renamed, the directory
   fsynced) before anything else changes. A generation without a journal never happened: the
   next run moves its directory aside and redoes it. A generation with a journal but no line in
   ``evolution.jsonl`` is finished from the journal (never redone: its sweep is not paid twice).
2. **The incumbent is derived, never edited.** It is the committed skills with the files of every
   promoted generation's overlay on top, in order; ``<out>/incumbent`` only caches the promoted
   files. Every run rebuilds it from the records (each overlay checked against the digest its
   record holds) and replaces it only when it differs (staged beside it, renamed in), so a kill
   in the middle of a swap, or between a journal and its line, is repaired by the next run.
3. **The line is appended last** (flushed, fsynced). A torn last line (no newline: the process
   died in the write) is dropped when that generation's journal holds the record.

``on_step`` is called after every durable change (the crash trials kill the process there).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence

from wfbench.app.corpus.arms import Arm, load_overlay, overlay_digest
from wfbench.domain.errors import InputError
from wfbench.domain.evolution.record import GenerationOutcome, GenerationRecord
from wfbench.domain.ports import SweepDirectory

__all__ = [
    "EVOLUTION_FILE",
    "INCUMBENT_DIR",
    "JOURNAL_FILE",
    "append_record",
    "fsync_dir",
    "generation_dir",
    "generation_name",
    "incumbent_files",
    "pending_record",
    "promoted_files",
    "read_history",
    "settle_incumbent",
    "sync_tree",
    "write_journal",
]

EVOLUTION_FILE = "evolution.jsonl"
INCUMBENT_DIR = "incumbent"
JOURNAL_FILE = "generation.json"

Step = Callable[[str], None]


def generation_name(generation: int) -> str:
    """``gen-NNN``: a generation's directory, relative to ``<out>``."""
    return f"gen-{generation:03d}"


def generation_dir(out_dir: str, generation: int) -> str:
    """``<out>/gen-NNN``."""
    return os.path.join(out_dir, generation_name(generation))


def fsync_dir(path: str) -> None:
    """Make a rename or creation in the directory ``path`` durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_durably(path: str, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


# --- evolution.jsonl ---------------------------------------------------------------------------


def _complete_lines(path: str) -> tuple[list[str], bool]:
    """The file's whole lines, and whether a torn tail (no final newline) follows them."""
    with open(path, "rb") as handle:
        data = handle.read()
    whole, _sep, tail = data.rpartition(b"\n")
    lines = whole.decode("utf-8").split("\n") if whole or _sep else []
    return lines, bool(tail)


def read_history(out_dir: str) -> list[GenerationRecord]:
    """The records of ``evolution.jsonl`` (empty when there is none).

    A torn last line is left out when the journal of the generation after the last whole line
    exists (the process died appending it; :func:`append_record` repairs the file).

    Raises:
        InputError: a torn or foreign line (naming the file and line).
    """
    path = os.path.join(out_dir, EVOLUTION_FILE)
    if not os.path.exists(path):
        return []
    lines, torn = _complete_lines(path)
    records = []
    for number, line in enumerate(lines, start=1):
        try:
            raw = json.loads(line)
        except ValueError:
            raise InputError("is not a JSON line", source=path, locator=f"line {number}") from None
        try:
            records.append(GenerationRecord.from_mapping(raw, line=number))
        except InputError as exc:
            raise exc.located(source=path) from None
    if torn:
        after = [records[-1].generation + 1] if records else [0, 1]
        if not any(_journal_exists(out_dir, number) for number in after):
            raise InputError("is not a JSON line", source=path, locator=f"line {len(lines) + 1}")
    return records


def append_record(out_dir: str, record: GenerationRecord) -> None:
    """Append the record's line (a torn tail left by a killed append is cut first)."""
    path = os.path.join(out_dir, EVOLUTION_FILE)
    if os.path.exists(path):
        with open(path, "rb") as handle:
            data = handle.read()
        keep = data.rfind(b"\n") + 1
        if keep != len(data):
            with open(path, "r+b") as handle:
                handle.truncate(keep)
                os.fsync(handle.fileno())
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record.to_mapping(), sort_keys=False) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


# --- the journal -------------------------------------------------------------------------------


def _journal(out_dir: str, generation: int) -> str:
    return os.path.join(generation_dir(out_dir, generation), JOURNAL_FILE)


def _journal_exists(out_dir: str, generation: int) -> bool:
    return os.path.isfile(_journal(out_dir, generation))


def write_journal(directory: SweepDirectory, record: GenerationRecord) -> None:
    """Write the decided generation's record as its journal, durably, through ``directory`` (``OUT``)."""
    data = (json.dumps(record.to_mapping(), sort_keys=False, indent=1) + "\n").encode("utf-8")
    directory.write(f"{generation_name(record.generation)}/{JOURNAL_FILE}", data)


def pending_record(out_dir: str, generation: int) -> GenerationRecord | None:
    """The journaled record of ``generation`` (decided, not yet in ``evolution.jsonl``), if any.

    Raises:
        InputError: the journal is not a record of that generation (naming the file).
    """
    path = _journal(out_dir, generation)
    if not os.path.isfile(path):
        return None
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        record = GenerationRecord.from_mapping(json.loads(data))
    except ValueError:
        raise InputError("is not a JSON generation record", source=path) from None
    except InputError as exc:
        raise exc.located(source=path) from None
    if record.generation != generation:
        raise InputError(f"holds generation {record.generation}, not {generation}", source=path)
    return record


# --- the incumbent ------------------------------------------------------------------------------


def incumbent_files(out_dir: str) -> dict[str, bytes]:
    """The files of ``<out>/incumbent`` (relative POSIX path → bytes; empty when there is none)."""
    root = os.path.join(out_dir, INCUMBENT_DIR)
    files: dict[str, bytes] = {}
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as handle:
                files[os.path.relpath(path, root).replace(os.sep, "/")] = handle.read()
    return files


def promoted_files(
    out_dir: str, history: Iterable[GenerationRecord], candidates: Sequence[Arm]
) -> dict[str, bytes]:
    """The incumbent's promoted files: every promoted generation's overlay on the last, in order.

    Raises:
        InputError: a promoted generation's overlay is missing or no longer has its recorded digest.
    """
    merged: dict[str, bytes] = {}
    for record in history:
        if record.outcome is not GenerationOutcome.PROMOTE:
            continue
        root = os.path.join(generation_dir(out_dir, record.generation), "overlay")
        where = f"generation {record.generation}"
        try:
            overlay = load_overlay(root, candidates)
        except InputError as exc:
            raise InputError(
                f"its promoted overlay is unreadable: {exc.reason}", source=root, locator=where
            ) from None
        if overlay_digest(overlay) != record.candidate_overlay_digest:
            raise InputError(
                "its promoted overlay no longer has the digest its record holds",
                source=root,
                locator=where,
                field="candidate_overlay_digest",
            )
        merged.update(dict(overlay.files))
    return merged


def sync_tree(root: str) -> None:
    """fsync every file and directory under ``root`` (a tree written without it, made durable)."""
    for dirpath, _dirs, names in os.walk(root, topdown=False):
        for name in names:
            fd = os.open(os.path.join(dirpath, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_dir(dirpath)


def _write_tree(root: str, files: Mapping[str, bytes]) -> None:
    os.makedirs(root, mode=0o755)
    for rel, data in sorted(files.items()):
        path = os.path.join(root, *rel.split("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        _write_durably(path, data)
    for dirpath, _dirs, _names in os.walk(root, topdown=False):
        fsync_dir(dirpath)


def settle_incumbent(out_dir: str, files: Mapping[str, bytes], on_step: Step) -> bool:
    """Make ``<out>/incumbent`` hold exactly ``files`` (idempotent); whether it had to change.

    The new tree is staged at ``incumbent.next``; the old one is renamed to ``incumbent.old``, the
    new one renamed in, the old one removed. A leftover of a killed swap is cleared first: the
    records, not these directories, say what the incumbent is.
    """
    root = os.path.join(out_dir, INCUMBENT_DIR)
    staged, old = root + ".next", root + ".old"
    for leftover in (staged, old):
        if os.path.lexists(leftover):
            shutil.rmtree(leftover)
    if incumbent_files(out_dir) == dict(files) and (files or not os.path.lexists(root)):
        return False
    if files:
        _write_tree(staged, files)
        on_step("incumbent-staged")
    if os.path.lexists(root):
        os.replace(root, old)
        fsync_dir(out_dir)
        on_step("incumbent-aside")
    if files:
        os.replace(staged, root)
        fsync_dir(out_dir)
        on_step("incumbent-swapped")
    if os.path.lexists(old):
        shutil.rmtree(old)
        on_step("incumbent-cleaned")
    return True
