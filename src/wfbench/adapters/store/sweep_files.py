"""The sweep directory on disk: the file adapter of the ``SweepDirectory`` port.

Every write goes through :func:`wfbench.adapters.store.atomic.write_bytes_atomic` (unique
temporary, fsync, rename, fsync of the directory). The claim is
:func:`wfbench.adapters.store.claim.claim_out_dir` (lock, a resume's repairs, cancelled rows set
aside) inside a :class:`~wfbench.adapters.store.litter.Litter` (an early failure leaves nothing).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator

from wfbench.adapters.store.atomic import write_bytes_atomic
from wfbench.adapters.store.json_indent import dumps_indented
from wfbench.adapters.store.litter import Litter
from wfbench.domain.errors import STORAGE_ERRNOS, InputError, SweepStorageError
from wfbench.domain.ports import SweepClaim
from wfbench.domain.sweep.manifest import MANIFEST_NAME, RunManifest

__all__ = ["FileSweepDirectory", "checked_parts"]


def checked_parts(rel: str) -> list[str]:
    """The parts of a relative ``/``-separated path inside the directory.

    Raises:
        ValueError: ``rel`` is absolute, empty, or has an empty, ``.`` or ``..`` part.
    """
    parts = rel.split("/")
    if not rel or rel.startswith("/") or os.path.isabs(rel) or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"not a path inside the sweep directory: {rel!r}")
    return parts


class FileSweepDirectory:
    """A sweep's directory at ``root`` (made on the first write when missing)."""

    def __init__(self, root: str) -> None:
        self.root = os.path.abspath(root)

    def path(self, rel: str) -> str:
        """The absolute path of ``rel`` (checked as :func:`checked_parts` does)."""
        return os.path.join(self.root, *checked_parts(rel))

    def write(self, rel: str, data: bytes) -> None:
        """Replace ``rel`` with ``data`` durably, its directories made (0700) when missing.

        Raises:
            SweepStorageError: the directory refuses writes (full, quota, read-only, I/O error).
            OSError: any other failure; the previous content is intact either way.
        """
        path = self.path(rel)
        try:
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            write_bytes_atomic(path, data)
        except OSError as exc:
            if exc.errno in STORAGE_ERRNOS:
                raise SweepStorageError.of(exc, path=path) from exc
            raise

    def read(self, rel: str) -> bytes | None:
        """The bytes of ``rel``; ``None`` when it is missing."""
        try:
            with open(self.path(rel), "rb") as handle:
                return handle.read()
        except FileNotFoundError:
            return None

    def write_manifest(self, manifest: RunManifest) -> None:
        """Replace ``manifest.json`` with ``manifest`` as indented JSON, durably."""
        self.write(MANIFEST_NAME, (dumps_indented(manifest.to_mapping()) + "\n").encode("utf-8"))

    @contextlib.contextmanager
    def claim(self, *, resume: bool, note: Callable[[str], None]) -> Iterator[SweepClaim]:
        """Hold the directory for one sweep (see :meth:`wfbench.domain.ports.SweepDirectory.claim`).

        Raises:
            InputError: as the port says; an OS error claiming it names ``--out`` (``--resume``).
        """
        from wfbench.adapters.store.claim import claim_out_dir

        litter = Litter(self.root)
        with litter.cleaned_unless_started():
            try:
                held = claim_out_dir(self.root, resume=resume, note=note)
            except OSError as exc:
                raise InputError(
                    f"cannot use it as the output directory: {exc.strerror or exc}",
                    field="--resume" if resume else "--out",
                    source=self.root,
                ) from None
            with held:
                yield litter
