"""An in-memory ``SweepDirectory``: the fake that ships for tests and users (beside ``FakeClock``).

It keeps every file as bytes and records each write and read in order, so a test asserts on what
a use case wrote and read (``files``, ``writes``, ``reads``) without a disk. Its rows
(``results``, which a test may hand a memory result store) and the rows a resume set aside
(``cancelled``) are lists of rows; :meth:`MemorySweepDirectory.claim` keeps the port's rules.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from typing import Any

import attrs

from wfbench.adapters.store.sweep_files import checked_parts
from wfbench.domain.errors import InputError
from wfbench.domain.ports import SweepClaim
from wfbench.domain.results.rows import Row
from wfbench.domain.sweep.manifest import MANIFEST_NAME, RunManifest
from wfbench.domain.sweep.resume import split_for_resume

__all__ = ["MemoryClaim", "MemorySweepDirectory"]


@attrs.define
class MemoryClaim:
    """One claim of a :class:`MemorySweepDirectory`; ``is_started`` once the sweep said so."""

    is_started: bool = False

    def started(self) -> None:
        """The sweep is under way."""
        self.is_started = True


@attrs.define
class MemorySweepDirectory:
    """Files by relative path; ``writes`` and ``reads`` list every path written and read, in order."""

    files: dict[str, bytes] = attrs.field(factory=dict)
    writes: list[str] = attrs.field(factory=list)
    reads: list[str] = attrs.field(factory=list)
    #: The rows of ``results.jsonl`` and of ``results.cancelled.jsonl``, in order.
    results: list[Row] = attrs.field(factory=list)
    cancelled: list[Row] = attrs.field(factory=list)
    #: The claim held now (None: the directory is free); ``notes`` what the claims told.
    held: MemoryClaim | None = None
    notes: list[str] = attrs.field(factory=list)

    def write(self, rel: str, data: bytes) -> None:
        """Keep ``data`` as ``rel`` (checked as the file adapter checks it)."""
        checked_parts(rel)
        self.files[rel] = bytes(data)
        self.writes.append(rel)

    def read(self, rel: str) -> bytes | None:
        """The bytes of ``rel``; ``None`` when it was never written."""
        checked_parts(rel)
        self.reads.append(rel)
        return self.files.get(rel)

    def json(self, rel: str) -> Any:
        """The JSON document written as ``rel`` (a test's convenience).

        Raises:
            KeyError: nothing was written there.
        """
        return json.loads(self.files[rel])

    def write_manifest(self, manifest: RunManifest) -> None:
        """Keep ``manifest`` as ``manifest.json`` (sorted JSON)."""
        self.write(MANIFEST_NAME, json.dumps(manifest.to_mapping(), sort_keys=True).encode("utf-8"))

    @contextlib.contextmanager
    def claim(self, *, resume: bool, note: Callable[[str], None]) -> Iterator[SweepClaim]:
        """Hold the directory for one sweep: the port's refusals and a resume's move of cancelled rows.

        Raises:
            InputError: another claim is held; a fresh sweep while ``results`` holds rows.
        """
        if self.held is not None:
            raise InputError("another wfbench run is using this output directory", source="memory")
        if not resume and (self.results or self.cancelled):
            raise InputError("already holds rows; continue that sweep with --resume", source="memory")
        if resume:
            self._set_aside(note)
        claim = self.held = MemoryClaim()
        before = dict(self.files)
        try:
            yield claim
        except BaseException:
            if not claim.is_started:
                self.files = before
            raise
        finally:
            self.held = None

    def _set_aside(self, note: Callable[[str], None]) -> None:
        split = split_for_resume(self.results)
        if not split.set_aside:
            return
        leaving = set(split.set_aside)
        self.cancelled += [row for index, row in enumerate(self.results) if index in leaving]
        self.results[:] = [row for index, row in enumerate(self.results) if index not in leaving]
        text = f"resume: {len(leaving)} row(s) of cells the interruption cancelled moved aside"
        self.notes.append(text)
        note(text)
