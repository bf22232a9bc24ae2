"""``--resume``: move the rows a cancellation made out of ``results.jsonl``, crash-safely.

Which rows move is the domain's rule (:func:`wfbench.domain.sweep.resume.split_for_resume`); this
module only moves bytes. A moved row is not lost: it ends, byte for byte, at the end of
``results.cancelled.jsonl`` beside ``results.jsonl`` (one line per row, in the same order), and
its cell has no row any more, so the resumed sweep runs it again.

Three files take part, each only ever replaced whole by a rename (temp file in the same
directory, ``fsync``, ``rename``, ``fsync`` of the directory), so none is ever seen torn:

* ``R`` = ``results.jsonl``;
* ``C`` = ``results.cancelled.jsonl`` (absent until the first move);
* ``P`` = ``results.cancelled.jsonl.pending``: the complete next content of ``C``, i.e. the
  current ``C`` followed by the moved lines.

The move, in three steps (:func:`move_cancelled_rows` runs them after :func:`recover`):

1. :func:`stage` writes ``P`` (only when there is something to move).
2. :func:`commit` replaces ``R`` by its kept lines. **This rename is the commit point.**
3. :func:`publish` renames ``P`` over ``C``.

Why a kill at any moment leaves either the old or the new state, and never loses or duplicates a
row. The *logical* side file is ``P`` when ``P`` exists and ``R`` holds no cancellation residue,
else ``C``. ``R`` holds residue before step 2 (``P`` is written only when something moves) and
none after it (the rule removes every residue row), and nothing else writes ``R`` meanwhile: the
caller holds the output directory's lock, and a fresh run into a directory with ``P`` or ``C``
is refused (:mod:`wfbench.adapters.store.claim`). So:

* killed during step 1, before its rename: a ``*.tmp`` is left (the resume's start removes
  ``*.tmp`` files); ``R``, ``C`` are the old state;
* killed between steps 1 and 2 (or during step 2, before its rename): ``P`` exists but ``R``
  still holds the residue: old state. :func:`recover` deletes ``P`` and the move starts over,
  computing ``P`` again from the unchanged ``C``, so nothing is appended twice;
* killed between steps 2 and 3: ``R`` is new and holds no residue, ``P`` holds ``C`` plus the
  moved rows: new state. :func:`recover` finishes step 3;
* killed after step 3: new state, no ``P``.

A plain "append to ``C``, then rewrite ``R``" cannot tell, after a kill between the two, whether
the rows at the end of ``C`` are this move's or an earlier move's identical bytes (a cancelled
row has no timestamp when its run raised), so it would either duplicate or lose them; the
pending file makes the outcome depend only on which rename happened.
"""

from __future__ import annotations

import os

import attrs

from wfbench.adapters.store.atomic import fsync_dir, write_bytes_atomic
from wfbench.adapters.store.jsonl_store import read_rows
from wfbench.domain.errors import InputError
from wfbench.domain.sweep.resume import is_cancellation_residue, split_for_resume

__all__ = [
    "CANCELLED_NAME",
    "PENDING_NAME",
    "RESULTS_NAME",
    "Move",
    "commit",
    "move_cancelled_rows",
    "plan_move",
    "publish",
    "recover",
    "stage",
]

RESULTS_NAME = "results.jsonl"
CANCELLED_NAME = "results.cancelled.jsonl"
PENDING_NAME = "results.cancelled.jsonl.pending"


@attrs.frozen
class Move:
    """The bytes after a move: ``results`` is the next ``R``, ``side`` the next ``C``; ``moved`` rows move."""

    results: bytes
    side: bytes
    moved: int


def plan_move(out_dir: str) -> Move | None:
    """What moving the cancellation residue of ``out_dir`` would write; None when nothing moves.

    Raises:
        InputError: a line of ``results.jsonl`` is invalid (the resume is refused; nothing changes).
    """
    results = os.path.join(out_dir, RESULTS_NAME)
    if not os.path.isfile(results):
        return None
    rows = read_rows(results)
    with open(results, "rb") as handle:
        lines = _lines(handle.read())
    filled = [number for number, line in enumerate(lines) if line.strip()]
    if len(filled) != len(rows):  # read_rows parses exactly the non-blank lines; anything else is a bug
        raise InputError(f"read {len(rows)} rows from {len(filled)} lines", source=results)
    split = split_for_resume(rows)
    if not split.set_aside:
        return None
    leaving = {filled[index] for index in split.set_aside}
    kept = b"".join(line for number, line in enumerate(lines) if number not in leaving)
    moved = b"".join(_terminated(lines[number]) for number in sorted(leaving))
    return Move(results=kept, side=_read(os.path.join(out_dir, CANCELLED_NAME)) + moved, moved=len(leaving))


def stage(out_dir: str, move: Move) -> None:
    """Step 1: write ``results.cancelled.jsonl.pending`` (the next side file), atomically and durably."""
    write_bytes_atomic(os.path.join(out_dir, PENDING_NAME), move.side)


def commit(out_dir: str, move: Move) -> None:
    """Step 2, the commit point: replace ``results.jsonl`` by the kept lines, atomically and durably."""
    write_bytes_atomic(os.path.join(out_dir, RESULTS_NAME), move.results)


def publish(out_dir: str) -> None:
    """Step 3: rename the pending side file over ``results.cancelled.jsonl`` and make it durable."""
    os.replace(os.path.join(out_dir, PENDING_NAME), os.path.join(out_dir, CANCELLED_NAME))
    fsync_dir(out_dir)


def recover(out_dir: str) -> str | None:
    """Finish or undo a move a kill interrupted (see the module docstring); what it did, or None.

    Raises:
        InputError: a line of ``results.jsonl`` is invalid.
    """
    pending = os.path.join(out_dir, PENDING_NAME)
    if not os.path.isfile(pending):
        return None
    results = os.path.join(out_dir, RESULTS_NAME)
    committed = not os.path.isfile(results) or not any(
        is_cancellation_residue(row) for row in read_rows(results)
    )
    if committed:
        publish(out_dir)
        side = os.path.join(out_dir, CANCELLED_NAME)
        return f"finished moving cancelled rows to {side} (a kill had interrupted it after its commit)"
    os.unlink(pending)
    fsync_dir(out_dir)
    return f"discarded {pending}: the interrupted move had not committed; moving again"


def move_cancelled_rows(out_dir: str) -> tuple[int, tuple[str, ...]]:
    """Recover an interrupted move, then move the cancellation residue: (rows moved, notes).

    Raises:
        InputError: a line of ``results.jsonl`` is invalid.
        OSError: a file could not be written; the state is the old or the new one.
    """
    notes: list[str] = []
    if (recovered := recover(out_dir)) is not None:
        notes.append(recovered)
    move = plan_move(out_dir)
    if move is None:
        return 0, tuple(notes)
    stage(out_dir, move)
    commit(out_dir, move)
    publish(out_dir)
    return move.moved, tuple(notes)


def _lines(data: bytes) -> list[bytes]:
    """``data`` cut after each newline, as :func:`read_rows` counts lines (only ``\\n`` ends one)."""
    parts = data.split(b"\n")
    return [part + b"\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _terminated(line: bytes) -> bytes:
    return line if line.endswith(b"\n") else line + b"\n"


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return b""
    return _terminated(data) if data else data
