"""What the agent left in its workspace, as a git index the harness built itself.

Churn and the patch must show *every* file the agent added or changed, and the harness's own
git (which runs on the host, outside any sandbox) must never be steered by what the agent wrote.
So git never walks the workspace. This module does, in Python, never following a link:

* every regular file, symlink and executable bit is recorded; ignore rules (``.gitignore``,
  ``.git/info/exclude``, ``core.excludesFile``) are **not** consulted — an ignored file is in the
  patch like any other;
* a ``.git`` entry below the top (a nested repository, or a *gitlink* file
  ``gitdir: /some/host/repo/.git``) is listed as skipped and never opened, so no host repository
  is revealed and no FIFO planted in one can stall the harness;
* a file over the per-file limit (its apparent size: a sparse file counts at its full size), past
  the total byte budget or past the entry limit, and every FIFO, socket or device, is listed by
  name and size instead of read; a path the base tree has keeps its base entry, so it is neither
  "deleted" nor "changed" in the patch, only named in the list.

Each file is read once, with a bounded buffer, and hashed as a git blob; only blobs the base
does not already hold are written (``git hash-object -w --no-filters``). The index is written with
``update-index -z --index-info`` into a private, bare ``GIT_DIR`` with no work tree, so the diff
that follows reads no ``.gitattributes``, hook or config of the workspace. git runs with bounded
pack windows and caches and under ``RLIMIT_AS`` (:data:`GIT_ADDRESS_SPACE`). The base tree of a
snapshot's commit is listed once per snapshot (:func:`snapshot_entries`).
"""

from __future__ import annotations

import functools
import hashlib
import os
import stat
import types
from collections.abc import Mapping

import attrs

from wfbench.adapters.repo.snapshot import run_git
from wfbench.domain.errors import EvidenceCaptureError
from wfbench.domain.workspace.rules import SkippedPath

#: Files larger than this (apparent size) are listed, not diffed.
MAX_DIFF_FILE_BYTES = 16 * 1024 * 1024
#: Bytes read from the workspace for one capture; later files are listed, not diffed.
MAX_DIFF_TOTAL_BYTES = 1024**3
#: Entries indexed for one capture; later entries are listed, not diffed.
MAX_DIFF_ENTRIES = 100_000
#: Address space of each git process of a capture.
GIT_ADDRESS_SPACE = 4 * 1024**3
#: Config that bounds git's memory: pack windows, delta caches, no deltas for big blobs.
BOUNDED_GIT = (
    "-c",
    "core.packedGitWindowSize=32m",
    "-c",
    "core.packedGitLimit=256m",
    "-c",
    "core.deltaBaseCacheLimit=32m",
    "-c",
    "core.bigFileThreshold=16m",
    "-c",
    "core.protectNTFS=false",
    "-c",
    "core.protectHFS=false",
    "-c",
    "core.quotePath=false",
)
_CHUNK = 1024 * 1024


#: The workspace could not be captured because of what is in it (the agent's failure).
CaptureError = EvidenceCaptureError


@attrs.frozen
class Limits:
    """Bounds of one capture."""

    file_bytes: int = MAX_DIFF_FILE_BYTES
    total_bytes: int = MAX_DIFF_TOTAL_BYTES
    entries: int = MAX_DIFF_ENTRIES


@attrs.frozen
class Entry:
    """One indexed path: git mode, blob id, and (when the blob must be written) where its bytes are."""

    path: bytes
    mode: int
    oid: str
    source: bytes | None = None


@attrs.define
class Scan:
    """The workspace as index entries, plus what was not read."""

    entries: list[Entry] = attrs.field(factory=list)
    skipped: list[SkippedPath] = attrs.field(factory=list)
    symlinks: dict[bytes, bytes] = attrs.field(factory=dict)
    read_bytes: int = 0


def git(
    args: list[str],
    env: Mapping[str, str],
    what: str,
    *,
    stdin: bytes | None = None,
    limit: int = 64 * 1024**2,
) -> bytes:
    """Run a bounded git command; its stdout. Raises CaptureError naming ``what``."""
    result = run_git(
        [*BOUNDED_GIT, *args], env=env, stdin=stdin, stdout_limit=limit, address_space=GIT_ADDRESS_SPACE
    )
    if not result.ok or result.stdout_overflow:
        tail = result.stderr_tail.decode("utf-8", "replace").strip()[-300:]
        why = "output over its limit" if result.ok else f"{result.state}, exit {result.returncode}"
        raise CaptureError(f"{what} failed ({why}): {tail or result.detail}")
    return result.stdout


def blob_id(data_len: int, chunks: list[bytes], sha256: bool) -> str:
    """The git blob id of the bytes in ``chunks``."""
    digest = hashlib.sha256() if sha256 else hashlib.sha1()  # noqa: S324 - git's object naming, not security
    digest.update(b"blob %d\x00" % data_len)
    for chunk in chunks:
        digest.update(chunk)
    return digest.hexdigest()


def _hash_file(path: bytes, info: os.stat_result, sha256: bool) -> str:
    """Blob id of a regular file read with a bounded buffer; OSError when it is not what lstat said."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino):
            raise OSError(f"{os.fsdecode(path)} changed while it was read")
        digest = hashlib.sha256() if sha256 else hashlib.sha1()  # noqa: S324 - git's object naming
        digest.update(b"blob %d\x00" % opened.st_size)
        remaining = opened.st_size
        while remaining > 0:
            chunk = os.read(fd, min(_CHUNK, remaining))
            if not chunk:
                raise OSError(f"{os.fsdecode(path)} shrank while it was read")
            digest.update(chunk)
            remaining -= len(chunk)
        if os.read(fd, 1):
            raise OSError(f"{os.fsdecode(path)} grew while it was read")
    finally:
        os.close(fd)
    return digest.hexdigest()


def _kind(mode: int) -> str:
    kinds = (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    )
    for test, name in kinds:
        if test(mode):
            return name
    return "a special file"


def scan(workspace: str, limits: Limits, *, sha256: bool = False) -> Scan:
    """Walk ``workspace`` (never following links; the top-level ``.git`` left out) into index entries."""
    found = Scan()
    root = os.fsencode(workspace)
    stack: list[bytes] = [b""]
    count = 0
    while stack:
        rel_dir = stack.pop()
        with os.scandir(os.path.join(root, rel_dir) if rel_dir else root) as listing:
            items = sorted(listing, key=lambda item: item.name)
        for item in items:
            rel = rel_dir + b"/" + item.name if rel_dir else item.name
            if item.name.lower() == b".git":
                if rel_dir or item.name != b".git":
                    found.skipped.append(
                        SkippedPath(os.fsdecode(rel), "nested repository or gitlink, not followed")
                    )
                continue
            info = item.stat(follow_symlinks=False)
            if stat.S_ISDIR(info.st_mode):
                stack.append(rel)
                continue
            count += 1
            if count > limits.entries:
                found.skipped.append(
                    SkippedPath(os.fsdecode(rel), f"past the limit of {limits.entries} entries")
                )
                continue
            _record(found, root, rel, info, limits, sha256)
    return found


def _record(  # noqa: PLR0917 - one walk step's state, passed positionally from scan() only
    found: Scan, root: bytes, rel: bytes, info: os.stat_result, limits: Limits, sha256: bool
) -> None:
    name = os.fsdecode(rel)
    if stat.S_ISLNK(info.st_mode):
        target = os.readlink(os.path.join(root, rel))
        found.entries.append(Entry(rel, 0o120000, blob_id(len(target), [target], sha256), source=None))
        found.symlinks[rel] = target
        return
    if not stat.S_ISREG(info.st_mode):
        found.skipped.append(SkippedPath(name, f"{_kind(info.st_mode)}, not read", None))
        return
    if info.st_size > limits.file_bytes:
        found.skipped.append(
            SkippedPath(name, f"over the per-file limit of {limits.file_bytes} bytes", info.st_size)
        )
        return
    if found.read_bytes + info.st_size > limits.total_bytes:
        found.skipped.append(
            SkippedPath(name, f"past the total limit of {limits.total_bytes} bytes", info.st_size)
        )
        return
    path = os.path.join(root, rel)
    oid = _hash_file(path, info, sha256)
    found.read_bytes += info.st_size
    mode = 0o100755 if info.st_mode & stat.S_IXUSR else 0o100644
    found.entries.append(Entry(rel, mode, oid, source=path))


def base_entries(env: Mapping[str, str], base: str) -> dict[bytes, tuple[int, str]]:
    """path -> (mode, oid) of every blob and gitlink of the base tree (a harness-owned commit)."""
    out = git(["ls-tree", "-r", "-z", "--full-tree", base], env, "listing the base tree", limit=1024**3)
    return _parse_tree(out)


@functools.lru_cache(maxsize=16)
def snapshot_entries(git_dir: str, base: str) -> Mapping[bytes, tuple[int, str]]:
    """:func:`base_entries` of a commit of the harness-owned snapshot repository at ``git_dir``.

    Listed once per (snapshot, commit) and shared by every cell of the task: a commit's tree never
    changes, and the snapshot repository is the harness's own (no agent writes to it). Read-only:
    callers must not change the mapping.
    """
    return types.MappingProxyType(base_entries({"GIT_DIR": git_dir}, base))


def _parse_tree(out: bytes) -> dict[bytes, tuple[int, str]]:
    entries: dict[bytes, tuple[int, str]] = {}
    for record in out.split(b"\x00"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        mode, _kind_name, oid = meta.split(b" ")
        entries[path] = (int(mode, 8), oid.decode("ascii"))
    return entries


def _c_quote(path: bytes) -> bytes:
    """A path as ``git hash-object --stdin-paths`` reads it (C-quoted when it needs quoting)."""
    if not any(byte < 0x20 or byte in (0x22, 0x5C, 0x7F) for byte in path):
        return path
    out = bytearray(b'"')
    for byte in path:
        if byte in (0x22, 0x5C):
            out += b"\\" + bytes([byte])
        elif byte < 0x20 or byte == 0x7F:
            out += b"\\%03o" % byte
        else:
            out.append(byte)
    return bytes(out + b'"')


def write_index(
    env: Mapping[str, str], found: Scan, base: Mapping[bytes, tuple[int, str]], scratch: str
) -> None:
    """Write the blobs the base lacks, then the private index: the scan, skipped paths as in the base."""
    known = {oid for _mode, oid in base.values()}
    to_write: list[tuple[Entry, bytes]] = []
    for number, entry in enumerate(found.entries):
        if entry.oid in known:
            continue
        source = entry.source
        if source is None:  # a symlink: its target's bytes, staged in a harness file
            source = os.fsencode(os.path.join(scratch, f"link-{number}"))
            with open(source, "wb") as handle:
                handle.write(found.symlinks[entry.path])
        to_write.append((entry, source))
        known.add(entry.oid)
    if to_write:
        paths = b"".join(_c_quote(source) + b"\n" for _entry, source in to_write)
        written = git(
            ["hash-object", "-w", "--no-filters", "--stdin-paths"], env, "writing blobs", stdin=paths
        )
        oids = written.decode("ascii").split()
        for (entry, _source), oid in zip(to_write, oids, strict=True):
            if oid != entry.oid:
                raise CaptureError(f"{os.fsdecode(entry.path)} changed while it was captured")
    records = [b"%o %s\t%s\x00" % (e.mode, e.oid.encode(), e.path) for e in found.entries]
    indexed = {e.path for e in found.entries}
    for skipped in found.skipped:
        path = os.fsencode(skipped.path)
        if path in base and path not in indexed:
            mode, oid = base[path]
            records.append(b"%o %s\t%s\x00" % (mode, oid.encode(), path))
    git(["update-index", "-z", "--index-info"], env, "writing the private index", stdin=b"".join(records))
