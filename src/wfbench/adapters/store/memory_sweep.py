"""An in-memory ``SweepDirectory``: the fake that ships for tests and users (beside ``FakeClock``).

It keeps every file as bytes and records each write and read in order, so a test asserts on what
a use case wrote and read (``files``, ``writes``, ``reads``) without a disk.
"""

from __future__ import annotations

import json
from typing import Any

import attrs

from wfbench.adapters.store.sweep_files import checked_parts

__all__ = ["MemorySweepDirectory"]


@attrs.define
class MemorySweepDirectory:
    """Files by relative path; ``writes`` and ``reads`` list every path written and read, in order."""

    files: dict[str, bytes] = attrs.field(factory=dict)
    writes: list[str] = attrs.field(factory=list)
    reads: list[str] = attrs.field(factory=list)

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
